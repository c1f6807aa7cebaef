"""The free functions ``bind`` / ``reshape`` and the per-device module classes (private).

``install()`` puts :func:`bind` and :func:`reshape` behind ``Module.bind`` / ``Module.reshape``
through the wrapt wrappers of ``wrappers.py``. A module bound per device also has its
class switched, in place, to a subclass of its own class (``isinstance`` stays true) whose
``bind``/``reshape``/``forward`` understand per-device shapes: stock ``Module.forward`` and
``Module.reshape`` crash on per-device lists, so the behaviour has to travel with the module
and keep working after ``uninstall()``.

Every entry point (the free functions, the wrappers, the class methods) reaches
:func:`_per_device_spec`, which decides "stock or per device" once and parses once; the
parsed :class:`~mxpatch_bind.module.shapes.DeviceShapes` is what travels further down, and a module
method handed one takes it as it is.
"""

from collections import namedtuple
from typing import Any, Optional, Sequence, Union

from mxnet import ndarray as nd
from mxnet.base import MXNetError
from mxnet.module import BucketingModule, Module

from ..errors import UnsupportedMXNetError
from . import distributed, memory, shapes
from .executor_group import PerDeviceExecutorGroup
from .forward import explain_refused_reshape, forward_flat, is_per_device, prepare
from .shapes import DeviceShapes
from .transactions import all_or_nothing

__all__ = ["bind", "reshape", "adopt_module", "is_per_device"]

# A shape spec as callers pass it: stock [(name, shape) | DataDesc, ...], one such list per
# device, or a DeviceShapes this package already parsed.
ShapeSpec = Union[Sequence[Any], DeviceShapes]

def bind(module: Module, data_shapes: ShapeSpec, label_shapes: Optional[ShapeSpec] = None,
         for_training: bool = True, inputs_need_grad: bool = False, force_rebind: bool = False,
         shared_module: Optional[Module] = None, grad_req: Any = 'write') -> None:
    """Binds the symbols to construct executors, one input shape per device if asked.

    ``Module.bind`` with per-device shape lists. With a stock (flat) spec it calls
    ``module.bind`` unchanged; with a per-device spec it binds executor *i* on context *i*
    with device *i*'s shapes. Usable directly, without :func:`mxpatch_bind.install`.

    Parameters
    ----------
    module : mxnet.module.Module
        The module to bind.
    data_shapes : list of (str, tuple) or DataDesc, or one such list per context
        Typically ``data_iter.provide_data``. Per device:
        ``[[('data', (2, 3, 32, 48))], [('data', (3, 3, 40, 24))]]``; batch sizes may differ.
        ``DataDesc`` dtype and layout are honoured (the batch axis comes from the layout).
    label_shapes : list of (str, tuple) or DataDesc, or one such list per context, or None
        Typically ``data_iter.provide_label``. A per-device list whose entries are all
        ``None`` means no labels.
    for_training : bool
        Default ``True``. Whether the executors are bound for training (gradients allocated).
    inputs_need_grad : bool
        Default ``False``. Whether gradients with respect to the inputs are computed.
    force_rebind : bool
        Default ``False``. Rebind even if already bound (parameters are kept).
    shared_module : Module
        Default ``None``. A bound, initialised module whose parameters, gradients and
        memory this one shares (bucketing). Its shapes may be per device or stock.
    grad_req : str, list of str, dict of str to str
        ``'write'``, ``'add'`` or ``'null'``, for all arguments (str) or per argument
        (list, dict). Default ``'write'``.

    Raises
    ------
    ShapeSpecError
        A malformed per-device spec, before anything changes.
    MXNetError
        MXNet could not bind (e.g. out of memory): the module is exactly as before,
        its class included.

    Notes
    -----
    The executor group's ``batch_size`` is the total number of samples on all devices, so
    ``init_optimizer`` sets ``rescale_grad = 1/total`` (the Deformable-ConvNets fork used
    1/number-of-devices); on a ``dist_*_sync`` kvstore, the total over all workers' devices.
    ``module.data_shapes``, ``label_shapes`` and ``output_shapes`` are per-device lists on a
    per-device module. Parameters stay on the CPU as stock keeps them. On a module that is
    already bound (and ``force_rebind=False``) it logs MXNet's "Already bound" warning and
    changes nothing, the module's class included, as ``Module.bind`` does.

    Examples
    --------
    >>> import mxnet as mx
    >>> import mxpatch_bind
    >>> net = mx.sym.Convolution(mx.sym.Variable('data'), num_filter=4, kernel=(3, 3),
    ...                          name='conv')
    >>> mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    >>> mxpatch_bind.bind(mod, [[('data', (2, 3, 32, 48))], [('data', (3, 3, 40, 24))]])
    >>> [shape for (_, shape), in mod.output_shapes]
    [(2, 4, 30, 46), (3, 4, 38, 22)]
    """
    spec = _per_device_spec(module, data_shapes, label_shapes)
    if spec is None:
        return module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                           force_rebind, shared_module, grad_req)
    return _call_per_device(module, "bind", (spec, None, for_training, inputs_need_grad,
                                             force_rebind, shared_module, grad_req))


def reshape(module: Module, data_shapes: ShapeSpec,
            label_shapes: Optional[ShapeSpec] = None) -> None:
    """Reshapes a bound module for new input shapes, one shape per device if asked.

    ``Module.reshape`` with per-device shape lists. Only devices whose shapes changed are
    reshaped, from the first-bound executors as stock does (memory is reused; nothing is
    rebound); nothing happens when no shape changed. A module may move between stock and
    per-device form. With a stock spec it calls ``module.reshape`` unchanged.

    Parameters
    ----------
    module : mxnet.module.Module
        A bound module.
    data_shapes : list of (str, tuple) or DataDesc, or one such list per context
        Typically ``data_iter.provide_data``.
    label_shapes : list of (str, tuple) or DataDesc, or one such list per context, or None
        Typically ``data_iter.provide_label``.

    Raises
    ------
    ShapeSpecError
        A malformed per-device spec; the module keeps its previous shapes and stays usable.
    MXNetError
        MXNet could not reshape a device: the module is exactly as before.

    Examples
    --------
    >>> import mxnet as mx
    >>> import mxpatch_bind
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    >>> mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    >>> mod.bind([('data', (4, 5))])
    >>> mxpatch_bind.reshape(mod, [[('data', (1, 5))], [('data', (3, 5))]])
    >>> [[d.shape for d in device] for device in mod.data_shapes]
    [[(1, 5)], [(3, 5)]]
    """
    spec = _per_device_spec(module, data_shapes, label_shapes)
    if spec is None:
        return module.reshape(data_shapes, label_shapes)
    return _call_per_device(module, "reshape", (spec, None))


# --------------------------------------------------------------------------- the one path
def _per_device_spec(module, data_shapes, label_shapes):
    """The one place a call is classified: ``None`` for a stock spec, else the parsed spec.

    A :class:`DeviceShapes` (what the package itself passes down) is taken as it is, after a
    check that it fits this module; anything else per device is parsed here, once.
    """
    if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
        return None
    _require_module(module)
    return shapes.parse_device_shapes(data_shapes, label_shapes, module.data_names,
                                      module.label_names, len(module._context),
                                      shapes.checks_samples_per_input(module))


def _require_module(module):
    if isinstance(module, Module):
        return
    if any(cls.__qualname__ == "Module" and cls.__module__ == Module.__module__
           for cls in type(module).__mro__):
        raise UnsupportedMXNetError(
            f"{module!r} is of a mxnet.module.module.Module class made by importlib.reload after "
            "mxpatch_bind's module core was built on the one before it; reload mxnet.module "
            "after mxnet.module.module, then call mxpatch_bind.install(), which builds the core "
            "again on the reloaded classes")
    raise TypeError(f"per-device shapes need a mxnet.module.Module; got {module!r} (a "
                    "BucketingModule binds per device through install() or patched())")


def _call_per_device(module, method, args):
    """``module.bind`` / ``module.reshape`` with a parsed spec, without install().

    The module's own method runs, so a subclass's override takes part; an override
    (SVRGModule's binds an auxiliary module too) calls other modules' methods, so it runs
    under a temporary patch. A failure leaves the module as it was, its class included, and
    so does a call that changed nothing (``bind`` on a bound module only warns).
    """
    original_class = type(module)
    with all_or_nothing(module):
        adopt_module(module)
        if _overrides_module_method(original_class, method):
            from ..patching import patched  # binding.py is loaded by patching; import late
            with patched():
                getattr(module, method)(*args)
        else:
            getattr(module, method)(*args)
    if not is_per_device(module):
        module.__class__ = original_class


# bind's options after the two shape arguments, in its signature's order.
BindOptions = namedtuple("BindOptions", ["for_training", "inputs_need_grad", "force_rebind",
                                         "shared_module", "grad_req"])


def _bind_per_device(module, spec, options):
    """Bind ``module`` with a parsed per-device ``spec``: one executor per device.

    Stock's body with a per-device executor group; every argument is checked before anything
    changes, and a failure inside MXNet leaves the module as it was.

    Upstream: mxnet.module.module.Module.bind
    """
    if options.inputs_need_grad and not options.for_training:
        raise ValueError("inputs_need_grad=True needs for_training=True; got for_training="
                         f"{options.for_training!r}")
    shared_group = _shared_group(module, options.shared_module)
    if module.binded and not options.force_rebind:
        module.logger.warning('Already bound, ignoring bind()')
        return
    memory.cap_mkldnn_cache()  # per-device shapes are many; oneDNN caches one entry per shape
    with all_or_nothing(module):
        if options.force_rebind:
            module._reset_bind()
        group = PerDeviceExecutorGroup(
            module._symbol, module._context, module._work_load_list, spec,
            module._param_names, options.for_training, options.inputs_need_grad, shared_group,
            logger=module.logger, fixed_param_names=module._fixed_param_names,
            grad_req=options.grad_req, state_names=module._state_names,
            group2ctxs=module._group2ctxs)
        arg_params, aux_params = _params_for(module, group, options.shared_module)
        module.for_training = options.for_training
        module.inputs_need_grad = options.inputs_need_grad
        module._grad_req = options.grad_req
        module._data_shapes, module._label_shapes = spec.data, spec.label
        module._exec_group = group
        module._total_exec_bytes = group._total_exec_bytes
        module._arg_params, module._aux_params = arg_params, aux_params
        if options.shared_module is not None:
            module.params_initialized = True
            if options.shared_module.optimizer_initialized:
                module.borrow_optimizer(options.shared_module)
        adopt_module(module)
        # Set last, as stock does: a failed bind leaves the module unbound.
        module.binded = True


def _shared_group(module, shared_module):
    if shared_module is None:
        return None
    if not (isinstance(shared_module, Module) and shared_module.binded
            and shared_module.params_initialized):
        raise ValueError("shared_module must be a bound Module with initialised parameters; got "
                         f"{shared_module!r}")
    if len(shared_module._exec_group.execs) < len(module._context):
        raise ValueError(f"shared_module runs on {len(shared_module._exec_group.execs)} devices "
                         f"but this module needs {len(module._context)}")
    return shared_module._exec_group


def _params_for(module, group, shared_module):
    """The CPU parameter dictionaries, exactly as stock ``Module.bind`` makes them.

    Upstream: mxnet.module.module.Module.bind
    """
    if shared_module is not None:
        return shared_module._arg_params, shared_module._aux_params
    if module.params_initialized:
        # Re-binding: copy the already initialised parameters to the new executors.
        group.set_params(module._arg_params, module._aux_params)
        return module._arg_params, module._aux_params
    arg_params = {name: nd.zeros(shape=x[0].shape, dtype=x[0].dtype, stype=x[0].stype)
                  for name, x in zip(module._param_names, group.param_arrays)}
    aux_params = {name: nd.zeros(x[0].shape, dtype=x[0].dtype)
                  for name, x in zip(module._aux_names, group.aux_arrays)}
    return arg_params, aux_params


def _reshape_per_device(module, spec):
    """Reshape a bound module to a parsed per-device ``spec``, all or nothing."""
    if not module.binded:
        raise RuntimeError("reshape() needs a bound module; call bind() first")
    with all_or_nothing(module):
        group = PerDeviceExecutorGroup.adopt(module._exec_group)
        group.reshape(spec)
        module._data_shapes, module._label_shapes = spec.data, spec.label
        adopt_module(module)


# --------------------------------------------------------------------------- module classes
_CORE = __name__.rpartition(".")[0] + "."  # mxpatch_bind.module.: where our classes live


def module_repr(module):
    """What ``repr`` shows of a module of a per-device class: the class it was made as, its
    contexts and its shapes, in the form they are bound in.

    Examples
    --------
    >>> import mxnet as mx
    >>> import mxpatch_bind
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    >>> mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    >>> mxpatch_bind.bind(mod, [[('data', (1, 5))], [('data', (3, 5))]])
    >>> mod  # doctest: +NORMALIZE_WHITESPACE
    <mxnet.module.module.Module on [cpu(0), cpu(1)], bound per device (mxpatch_bind):
     data [[('data', (1, 5))], [('data', (3, 5))]]>
    """
    made_as = type(module)
    while made_as.__module__.startswith(_CORE):  # ours: PerDeviceModule, PerDeviceSVRGModule
        made_as = made_as.__bases__[0]
    contexts = getattr(module, "_context", None)
    where = "" if contexts is None else f" on {list(contexts)!r}"
    if not module.binded:
        return f"<{made_as.__module__}.{made_as.__qualname__}{where}, not bound>"
    data, labels = module.data_shapes, module.label_shapes
    per_device = shapes.spec_form(data) == shapes.PER_DEVICE
    text = (f"<{made_as.__module__}.{made_as.__qualname__}{where}, bound "
            f"{'per device' if per_device else 'in stock form'} (mxpatch_bind): data "
            f"{_pairs(data, per_device)!r}")
    if labels is not None:
        text += f", label {_pairs(labels, per_device)!r}"
    return text + ">"


def _pairs(descs, per_device):
    """DataDescs as the ``(name, shape)`` pairs a user writes them as."""
    if per_device:
        return [_pairs(device, False) for device in descs]
    return [(desc.name, tuple(desc.shape)) for desc in descs]


class PerDeviceModule(Module):
    """The class a ``Module`` bound per device switches to (for a subclass of ``Module``, a
    class derived from both, with this one after the subclass: the subclass's own methods
    run, and their ``super()`` calls reach these)."""

    __repr__ = module_repr

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """``Module.bind`` that also takes per-device specs (see :func:`mxpatch_bind.bind`)."""
        spec = _per_device_spec(self, data_shapes, label_shapes)
        if spec is None:
            # Stock bind resets the binding before building executors: undo it on failure.
            with all_or_nothing(self):
                return super().bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                                    force_rebind, shared_module, grad_req)
        return _bind_per_device(self, spec, BindOptions(for_training, inputs_need_grad,
                                                        force_rebind, shared_module, grad_req))

    def reshape(self, data_shapes, label_shapes=None):
        """``Module.reshape`` that also takes per-device specs, all or nothing in both forms."""
        spec = _per_device_spec(self, data_shapes, label_shapes)
        if spec is not None:
            return _reshape_per_device(self, spec)
        # Stock reshape sets _data_shapes before the executors reshape: undo it on failure.
        with all_or_nothing(self):
            return super().reshape(data_shapes, label_shapes)

    def forward(self, data_batch, is_train=None):
        """``Module.forward`` for every batch form; a per-device batch is checked before any
        array is copied and reshapes the devices whose shapes differ, as stock forward does.

        A module bound in stock form fed a per-device batch reshapes to per device (never
        rebinds), as it reshapes for a flat batch of new shapes.

        Raises
        ------
        BatchError
            The batch does not fit the module; nothing has changed.
        """
        if not (self.binded and self.params_initialized):
            raise RuntimeError("forward() needs a bound module with initialised parameters")
        prepared = prepare(self, data_batch, is_train)
        if prepared is None:
            return forward_flat(self, data_batch, is_train)
        checked, spec = prepared
        if spec is not None:
            try:
                self.reshape(spec)  # the module's own, as stock forward calls it
            except MXNetError as error:
                explain_refused_reshape(self, spec, error)  # a BatchError when it can say why
                raise
        return self._exec_group.forward_devices(checked.data, checked.label, is_train)

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Installs and initializes optimizers; on a ``dist_*_sync`` kvstore with the
        samples of all workers' devices counted.

        Parameters
        ----------
        kvstore : str or KVStore
            Default ``'local'``.
        optimizer : str or Optimizer
            Default ``'sgd'``.
        optimizer_params : dict
            Default ``(('learning_rate', 0.01),)``.
        force_init : bool
            Default ``False``. Re-initialize an optimizer that is already installed.

        Notes
        -----
        With an optimizer given by name and no ``rescale_grad`` in ``optimizer_params``, a
        ``dist_*_sync`` kvstore (given by name or as a ``KVStore``) gets ``rescale_grad =
        1/(samples on all devices of all workers)``, added up with one kvstore reduction
        that every worker takes part in; stock assumes every worker holds this worker's
        number of samples. ``dist_async`` and local kvstores keep stock's ``1/(samples on
        this worker's devices)``. As in stock, the value is fixed here: later reshapes to
        other batch sizes do not change it.
        """
        # Stock rescales by 1/(batch_size * num_workers) on a dist_*_sync kvstore, which holds
        # only when every worker has this worker's number of samples; count them instead.
        # dist_async keeps stock's 1/(this worker's samples): its servers apply each push alone.
        if _counts_job_samples(self, kvstore, optimizer, optimizer_params, force_init):
            if isinstance(kvstore, str):
                from mxnet import kvstore as kvs
                kvstore = kvs.create(kvstore)
            total = distributed.global_sample_count(kvstore, self._exec_group.batch_size)
            optimizer_params = dict(optimizer_params, rescale_grad=1.0 / total)
        return super().init_optimizer(kvstore, optimizer, optimizer_params, force_init)


class PerDeviceBucketingModule(BucketingModule):
    """The class a ``BucketingModule`` whose default bucket is bound per device switches to."""

    __repr__ = module_repr

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """``BucketingModule.switch_bucket``; a new key's bucket binds per device, and a
        failure leaves the bucketing module (its buckets, its current bucket) as before."""
        # Stock switch_bucket builds a fresh Module and calls whatever Module.bind is then
        # (stock once uninstalled); for a new key with per-device shapes, hand it a module
        # that already binds per device.
        if (not self.binded or bucket_key in self._buckets
                or shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK):
            return super().switch_bucket(bucket_key, data_shapes, label_shapes)
        with all_or_nothing(self):
            module = adopt_module(self._new_bucket_module(bucket_key))
            self._buckets[bucket_key] = module
            super().switch_bucket(bucket_key, data_shapes, label_shapes)
            # Stock installs the monitor only on the buckets it creates itself.
            if self._monitor is not None:
                module.install_monitor(self._monitor)

    def _new_bucket_module(self, bucket_key):
        """The unbound Module stock ``switch_bucket`` builds for a new key.

        Upstream: mxnet.module.bucketing_module.BucketingModule.switch_bucket
        """
        symbol, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)


# Where a class's per-device class is kept: in the class's own __dict__. The derived class
# refers to its base through __bases__, so any cache holding it strongly (lru_cache, or as a
# WeakKeyDictionary value) would keep the base alive forever; kept on the base, the two form
# one cycle that the garbage collector frees once neither is used.
_PER_DEVICE_CLASS = "_mxpatch_bind_per_device_class"


def per_device_class(cls, classes):
    """The per-device class of ``cls``, made once and kept on ``cls``.

    ``classes`` holds ``(stock class, per-device class)`` pairs: a stock class maps to its own;
    a subclass of one gets a class deriving from both, the subclass first.
    """
    for stock, per_device in classes:
        if cls is stock:
            return per_device
    derived = vars(cls).get(_PER_DEVICE_CLASS)  # vars: a subclass must not find its base's
    if derived is None:
        per_device = next(ours for stock, ours in classes if issubclass(cls, stock))
        # (cls, per_device): the MRO puts cls's own methods first and ours right before
        # the stock class's, so an override's super() call reaches the per-device behaviour.
        derived = type("PerDevice" + cls.__name__, (cls, per_device),
                       {"__module__": per_device.__module__, "__doc__": cls.__doc__})
        type.__setattr__(cls, _PER_DEVICE_CLASS, derived)
    return derived


def adopt_module(module):
    """Switch ``module`` to its per-device class in place (idempotent); returns it."""
    if not isinstance(module, (PerDeviceModule, PerDeviceBucketingModule)):
        module.__class__ = per_device_class(type(module), (
            (BucketingModule, PerDeviceBucketingModule), (Module, PerDeviceModule)))
    return module


def _counts_job_samples(module, kvstore, optimizer, optimizer_params, force_init):
    """Whether ``init_optimizer`` needs the job's sample count: a dist_*_sync kvstore, an
    optimizer given by name without ``rescale_grad``, and an init that stock will carry out.

    Every worker runs the same script, so all of them make the same decision, as the
    collective count needs."""
    return (distributed.is_sync_dist(kvstore) and isinstance(optimizer, str)
            and "rescale_grad" not in dict(optimizer_params)
            and module.binded and module.params_initialized
            and (force_init or not module.optimizer_initialized))


def _overrides_module_method(cls, name):
    """Whether a subclass of ``Module`` defines its own ``name``."""
    for klass in cls.__mro__:
        if klass in (Module, PerDeviceModule):
            return False
        if name in vars(klass):
            return True
    return False
