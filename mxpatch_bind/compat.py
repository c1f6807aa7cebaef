"""Drop-in constructors for the Deformable-ConvNets fork's ``MutableModule`` and ``Module``.

A public module: migrating a fork-based project is the one import line
``from mxpatch_bind.compat import MutableModule`` (``python -m mxpatch_bind migrate --write``
makes that change). The constructors take the fork's arguments with the fork's defaults and
return stock ``mx.mod.Module`` objects; the few behaviours of the fork that stock MXNet lacks
(``max_data_shapes``, ``fit(prefix=, state=)``, the fork's default ``rescale_grad``, and
two modified copies' ``fit(iter_size=)`` and ``fit(allow_extra=)``) are
attached to the returned instance as bound methods, so its class stays whatever a
per-device bind gives (``isinstance(module, mx.mod.Module)`` holds throughout).
"""

from __future__ import annotations

import logging
import math
import numbers
import types
from typing import Any, Optional, Sequence

from ._mxnet_env import import_mxnet

# Through import_mxnet: a broken environment (numpy 1.24, no libmxnet.so) is named with its
# fix at the migration's one import line, not as numpy's AttributeError.
mx = import_mxnet()
from mxnet.io import DataDesc  # noqa: E402  (MXNet is imported, or named broken, above)

from ._channel_operator import ChannelOperator  # noqa: E402
from ._family_ops import *  # noqa: E402,F401,F403  (the family's operators, one module each)
from ._family_ops import FAMILY_OPERATORS  # noqa: E402
from ._fork_methods import fork_fit, fork_init_optimizer  # noqa: E402
from .errors import ShapeSpecError  # noqa: E402
from .module.shapes import FORK_INPUTS, is_device_entry  # noqa: E402
from .module.transactions import all_or_nothing  # noqa: E402

__all__ = ["MutableModule", "Module", "fixed_param_names_from_prefix", "ChannelOperator",
           *FAMILY_OPERATORS]

# The fork's defaults, as module-level values (one object each, as the fork's were).
_CPU = mx.cpu()
_SHAPES_FORM = ("a list of (name, shape) pairs, or one such list per context, e.g. "
                "[('data', (1, 3, 600, 1000))]")


def MutableModule(symbol: Any, data_names: Optional[Sequence[str]],
                  label_names: Optional[Sequence[str]], logger: Any = logging,
                  context: Any = _CPU, work_load_list: Optional[Sequence[float]] = None,
                  max_data_shapes: Optional[Sequence[Any]] = None,
                  max_label_shapes: Optional[Sequence[Any]] = None,
                  fixed_param_prefix: Optional[Sequence[str]] = None,
                  fixed_param_rule: str = 'substring',
                  epoch_end_callback_first: bool = False) -> Any:
    """The fork's ``MutableModule``, as a stock ``mx.mod.Module`` that binds per device.

    Same parameters and defaults as ``core/module.py``'s ``MutableModule`` in
    Deformable-ConvNets (and its copies in FCIS, Relation Networks, FGFA, DFF).
    :func:`mxpatch_bind.install` is ensured, so per-device ``provide_data`` /
    ``provide_label`` and per-device batches work as they did with the fork; a shape change
    reshapes the devices that changed instead of rebinding.

    Parameters
    ----------
    symbol : Symbol
        The network.
    data_names, label_names : list of str
        Input names (``label_names`` may be ``None``).
    logger : Logger
        Default ``logging``.
    context : Context or list of Context
        Default ``mx.cpu()``.
    work_load_list : list of number
        Default ``None`` (uniform). One positive number per context. The fork's loaders split
        images by it; the module itself uses it only for flat (stock-form) batches.
    max_data_shapes, max_label_shapes : list of (str, tuple), or one such list per context
        Default ``None``. The first bind (``bind`` or ``fit``) allocates every device at these
        shapes (inputs not listed take device 0's shape, as in the fork) and then reshapes
        to the shapes asked for, so later batches up to the maximum reuse that memory (their
        arrays are views). The fork read device 0's list only; here each device's own list
        is used (the fork's scripts pass the same list for every device).
    fixed_param_prefix : list of str
        Default ``None``. Frozen parameters, by the copy's rule: every argument of ``symbol``
        whose name *contains* one of the strings (see :func:`fixed_param_names_from_prefix`).
    fixed_param_rule : {'substring', 'startswith'}
        Default ``'substring'``, the rule of Deformable-ConvNets, Relation Networks and
        mx-rcnn (``prefix in name``). FCIS, FGFA, Deep-Feature-Flow and AdaScale froze by
        ``name.startswith(prefix)``: pass ``'startswith'`` for their code (``docs/family.rst``).
    epoch_end_callback_first : bool
        Default ``False``. ``True``: ``fit`` calls each ``epoch_end_callback`` once before
        the first epoch, right after ``init_optimizer``, as ``callback(-1, symbol,
        arg_params, aux_params)`` with ``fit``'s own ``arg_params`` / ``aux_params``, as
        Relation Networks' copy did (its ``do_checkpoint`` then saved ``prefix-0000``).
        ``migrate --write`` passes it where the deleted copy did that.

    Returns
    -------
    mxnet.module.Module
        A stock module with ``fixed_param_names`` set, and with per-instance ``bind`` (when
        maximum shapes are given), ``fit`` (also accepts the fork's ``prefix`` and ``state``,
        and 3DCE's ``iter_size`` and road_obj_detect's ``allow_extra`` by keyword)
        and ``init_optimizer`` (the fork's default ``rescale_grad``).

    Raises
    ------
    TypeError
        ``fixed_param_prefix`` is not a list of str (a bare str would freeze every argument
        containing any of its letters under the fork's rule).
    ShapeSpecError
        Malformed ``max_data_shapes`` / ``max_label_shapes``, or names that are not inputs.
    ValueError
        ``work_load_list`` does not hold one positive number per context; unknown names;
        an unknown ``fixed_param_rule``.

    Notes
    -----
    ``init_optimizer`` without ``rescale_grad`` in ``optimizer_params`` uses the fork's
    default, ``1 / number of devices`` (times the number of workers on a store that adds
    up the workers: ``dist_*_sync`` and ``'horovod'``), not stock's ``1 / samples`` nor
    the Horovod store's ``1 / samples of all workers``. Nothing is installed or changed when
    an argument is refused.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import MutableModule
    >>> net = mx.sym.Convolution(mx.sym.Variable('data'), num_filter=2, kernel=(3, 3),
    ...                          name='conv1')
    >>> net = mx.sym.Pooling(net, global_pool=True, kernel=(1, 1), pool_type='max')
    >>> mod = MutableModule(net, ['data'], None, context=[mx.cpu(0), mx.cpu(1)],
    ...                     max_data_shapes=[('data', (1, 3, 16, 16))],
    ...                     fixed_param_prefix=['conv1'])
    >>> isinstance(mod, mx.mod.Module), mod._fixed_param_names
    (True, ['conv1_weight', 'conv1_bias'])
    >>> mod.bind([[('data', (1, 3, 8, 12))], [('data', (1, 3, 12, 8))]], None)
    >>> [[d.shape for d in device] for device in mod.data_shapes]
    [[(1, 3, 8, 12)], [(1, 3, 12, 8)]]
    >>> import mxpatch_bind; mxpatch_bind.uninstall()  # the doctest's own clean-up
    """
    if not isinstance(epoch_end_callback_first, bool):
        raise TypeError(f"epoch_end_callback_first={epoch_end_callback_first!r}: expected "
                        "True or False")
    contexts = _as_contexts(context)
    fixed_param_names = fixed_param_names_from_prefix(symbol, fixed_param_prefix,
                                                      fixed_param_rule)
    _check_work_load_list(work_load_list, contexts)
    input_names = list(data_names or []) + list(label_names or [])
    max_shapes = _max_shapes_per_device(max_data_shapes, max_label_shapes, input_names,
                                        len(contexts))
    module = mx.mod.Module(symbol, data_names, label_names, logger=logger, context=contexts,
                           work_load_list=work_load_list, fixed_param_names=fixed_param_names)
    _ensure_installed()
    _attach(module, "init_optimizer", fork_init_optimizer)
    _attach(module, "fit", fork_fit)
    module._epoch_end_callback_first = epoch_end_callback_first
    setattr(module, FORK_INPUTS, True)  # an input's first axis need not count samples
    if max_shapes is not None:
        _attach(module, "bind", _max_shape_bind(max_shapes))
    return module


def Module(symbol: Any, data_names: Optional[Sequence[str]] = ('data',),
           label_names: Optional[Sequence[str]] = ('softmax_label',), logger: Any = logging,
           context: Any = _CPU, work_load_list: Optional[Sequence[float]] = None,
           fixed_param_names: Optional[Sequence[str]] = None,
           state_names: Optional[Sequence[str]] = None) -> Any:
    """The fork's ``Module``, as a stock ``mx.mod.Module`` that binds per device.

    Same parameters and defaults as ``core/module.py``'s ``Module`` in Deformable-ConvNets
    (stock's, without ``group2ctxs`` / ``compression_params``). :func:`mxpatch_bind.install`
    is ensured; ``init_optimizer`` without ``rescale_grad`` uses the fork's default,
    ``1 / number of devices`` (times the workers on a ``dist_*_sync`` kvstore).
    ``mod._preload_opt_states = path`` is honoured by stock ``init_optimizer``, as in the fork.

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names, state_names, fixed_param_names : list of str
    logger : Logger
        Default ``logging``.
    context : Context or list of Context
        Default ``mx.cpu()``.
    work_load_list : list of number
        Default ``None`` (uniform); one positive number per context.

    Returns
    -------
    mxnet.module.Module

    Raises
    ------
    ValueError
        Unknown input or parameter names (stock's check), or a bad ``work_load_list``.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import Module
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    >>> mod = Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    >>> mod.bind([[('data', (1, 5))], [('data', (3, 5))]])
    >>> mod.init_params(); mod.init_optimizer()
    >>> mod._optimizer.rescale_grad  # the fork's 1 / number of devices
    0.5
    >>> import mxpatch_bind; mxpatch_bind.uninstall()  # the doctest's own clean-up
    """
    contexts = _as_contexts(context)
    _check_work_load_list(work_load_list, contexts)
    module = mx.mod.Module(symbol, data_names, label_names, logger=logger, context=contexts,
                           work_load_list=work_load_list, fixed_param_names=fixed_param_names,
                           state_names=state_names)
    _ensure_installed()
    _attach(module, "init_optimizer", fork_init_optimizer)
    setattr(module, FORK_INPUTS, True)
    return module


def fixed_param_names_from_prefix(symbol: Any, fixed_param_prefix: Optional[Sequence[str]],
                                  rule: str = 'substring') -> list[str]:
    """The parameters the fork's ``MutableModule`` froze for ``fixed_param_prefix``.

    The copy's rule, kept exactly. ``'substring'`` (Deformable-ConvNets, Relation Networks,
    mx-rcnn): every name in ``symbol.list_arguments()`` that *contains* one of the strings,
    so ``'gamma'`` freezes every BatchNorm scale. ``'startswith'`` (FCIS, FGFA,
    Deep-Feature-Flow, AdaScale): every name that begins with one. The fork listed a name
    once per matching string; duplicates are dropped here (the frozen set is the same),
    keeping the order of first match.

    Parameters
    ----------
    symbol : Symbol
    fixed_param_prefix : list of str or None
    rule : {'substring', 'startswith'}
        Default ``'substring'``.

    Returns
    -------
    list of str

    Raises
    ------
    TypeError
        ``fixed_param_prefix`` is a str, or not a list of str.
    ValueError
        ``rule`` is neither ``'substring'`` nor ``'startswith'``.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import fixed_param_names_from_prefix
    >>> net = mx.sym.BatchNorm(mx.sym.Convolution(mx.sym.Variable('data'), num_filter=2,
    ...                        kernel=(3, 3), name='conv1'), name='bn_conv1')
    >>> fixed_param_names_from_prefix(net, ['conv1'])  # bn_conv1_* contain 'conv1' too
    ['conv1_weight', 'conv1_bias', 'bn_conv1_gamma', 'bn_conv1_beta']
    >>> fixed_param_names_from_prefix(net, ['conv1', 'gamma'], rule='startswith')
    ['conv1_weight', 'conv1_bias']
    """
    matches_rule = _FIXED_PARAM_RULES.get(rule) if isinstance(rule, str) else None
    if matches_rule is None:
        raise ValueError(f"fixed_param_rule must be one of {sorted(_FIXED_PARAM_RULES)}; got "
                         f"{rule!r}")
    if fixed_param_prefix is None:
        return []
    prefixes = None if isinstance(fixed_param_prefix, str) else _list_or_none(fixed_param_prefix)
    if prefixes is None or not all(isinstance(p, str) for p in prefixes):
        raise TypeError("fixed_param_prefix must be a list of str, e.g. ['conv1', 'gamma']; got "
                        f"{fixed_param_prefix!r}")
    matches = [name for name in symbol.list_arguments()
               for prefix in prefixes if matches_rule(name, prefix)]
    return list(dict.fromkeys(matches))


# How each copy of the fork turned fixed_param_prefix into names (docs/family.rst).
_FIXED_PARAM_RULES = {
    "substring": lambda name, prefix: prefix in name,
    "startswith": str.startswith,
}


# --------------------------------------------------------------------------- argument checks
def _list_or_none(value):
    try:
        return list(value)
    except TypeError:
        return None


def _iterable(value, what):
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{what} must be a list; got {value!r}") from None


def _as_contexts(context):
    contexts = [context] if isinstance(context, mx.Context) else _iterable(context, "context")
    if not contexts or not all(isinstance(c, mx.Context) for c in contexts):
        raise TypeError("context must be a Context or a non-empty list of Context, e.g. "
                        f"[mx.gpu(0), mx.gpu(1)]; got {context!r}")
    return contexts


def _check_work_load_list(work_load_list, contexts):
    if work_load_list is None:
        return
    loads = _iterable(work_load_list, "work_load_list")
    if len(loads) != len(contexts) or not all(_is_load(w) for w in loads):
        raise ValueError("work_load_list must hold one finite positive number per context ("
                         f"{len(contexts)}); got {work_load_list!r}")


def _is_load(value):
    # bool is a number to Python, but work_load_list=[True, 2] is a mistake; inf and NaN
    # reach MXNet's slicing as NaN ("cannot convert float NaN to integer").
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _max_shapes_per_device(max_data_shapes, max_label_shapes, input_names, num_devices):
    """``[{name: shape}]`` per device from the fork's max shapes, or None when neither is set."""
    if max_data_shapes is None and max_label_shapes is None:
        return None
    per_device = [{} for _ in range(num_devices)]
    for what, spec in (("max_data_shapes", max_data_shapes),
                       ("max_label_shapes", max_label_shapes)):
        if spec is None:
            continue
        for device, entries in enumerate(_device_entries(spec, what, num_devices)):
            per_device[device].update(_parse_max_entries(entries, what, input_names))
    return per_device


def _device_entries(spec, what, num_devices):
    """Each device's max entries. The family's forms: one flat list; one list per context;
    one list for every context (its testers' ``[[('data', ...)]]``, of which the fork read
    element 0 alone); and pairs after the lists (its ``rois``), which count for every
    device (the fork ignored them)."""
    entries = _iterable(spec, what)
    device_lists = [entry for entry in entries if is_device_entry(entry)]
    if not device_lists:
        return [entries] * num_devices
    shared = [entry for entry in entries if not is_device_entry(entry)]
    if len(device_lists) == 1:
        device_lists = device_lists * num_devices
    elif len(device_lists) != num_devices:
        raise ShapeSpecError(f"{what} has {len(device_lists)} per-device lists for {num_devices} "
                             f"contexts; expected {_SHAPES_FORM}, or one list for every context; "
                             f"got {spec!r}")
    return [list(device) + shared for device in device_lists]


def _parse_max_entries(entries, what, input_names):
    parsed = {}
    for entry in entries:
        if (not isinstance(entry, (list, tuple)) or len(entry) < 2
                or not isinstance(entry[0], str) or not _is_shape(entry[1])):
            raise ShapeSpecError(f"{what} entry {entry!r} is not a (name, shape) pair; expected "
                                 f"{_SHAPES_FORM}")
        name, shape = entry[0], tuple(int(n) for n in entry[1])
        if name not in input_names:
            raise ShapeSpecError(f"{what} names {name!r}, which is not one of the module's inputs "
                                 f"{input_names!r}")
        parsed[name] = shape
    return parsed


def _is_shape(shape):
    return (isinstance(shape, (list, tuple)) and len(shape) > 0
            and all(isinstance(n, numbers.Integral) and n > 0 for n in shape))


# --------------------------------------------------------------------------- installation
def _ensure_installed():
    """Install the patch unless it is in effect; that reference is held for the process,
    like an ``install()`` at start-up (``mxpatch_bind.uninstall()`` drops it)."""
    import mxpatch_bind

    if not mxpatch_bind.is_installed():
        mxpatch_bind.install()


def _attach(module, name, function):
    """Bind ``function`` to this one module as its method ``name`` (its class is untouched:
    a per-device bind may still switch it, and the instance attribute survives that)."""
    setattr(module, name, types.MethodType(function, module))


# --------------------------------------------------------------------------- fork behaviours
def _max_shape_bind(max_shapes):
    """A ``bind`` that allocates at the maximum shapes first, as the fork's MutableModule."""

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Bind at the maximum shapes (``max_data_shapes`` / ``max_label_shapes``), then
        reshape to ``data_shapes`` / ``label_shapes``: memory is taken once, at the maximum,
        and batches up to it are views into it. Parameters as ``Module.bind``."""
        class_bind = type(self).bind
        if self.binded and not force_rebind:
            return class_bind(self, data_shapes, label_shapes, for_training, inputs_need_grad,
                              force_rebind, shared_module, grad_req)
        # Two steps, one transition: a reshape refused after the bind at the maximum (a
        # misspelt name, a zero batch) leaves the module as constructed, unbound.
        with all_or_nothing(self):
            class_bind(self, _at_max(data_shapes, max_shapes),
                       _at_max(label_shapes, max_shapes), for_training, inputs_need_grad,
                       force_rebind, shared_module, grad_req)
            self.reshape(data_shapes, label_shapes)
        return None

    return bind


def _at_max(spec, max_shapes):
    """The first bind's spec: per device, device 0's entries with the listed inputs at their
    maximum shapes (the fork's rule, so every device starts alike); a flat spec likewise."""
    if spec is None:
        return None
    if spec and all(e is None or is_device_entry(e) for e in spec):
        if spec[0] is None or len(spec) != len(max_shapes):
            return spec  # no labels, or a device count that bind itself refuses
        return [_entries_at_max(spec[0], maxima) for maxima in max_shapes[:len(spec)]]
    return _entries_at_max(spec, max_shapes[0])


def _entries_at_max(entries, maxima):
    out = []
    for entry in entries:
        name = entry[0]
        if name not in maxima:
            out.append(entry)
        elif isinstance(entry, DataDesc):
            out.append(DataDesc(name, maxima[name], entry.dtype, entry.layout))
        else:
            out.append((name, maxima[name]))
    return out
