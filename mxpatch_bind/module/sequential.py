"""Per-device shapes through ``mxnet.module.SequentialModule`` (private).

Stock ``SequentialModule.bind`` sets ``binded = True`` first, feeds each module's
``output_shapes`` to the next one as a flat list, and ``forward`` / ``backward`` hand merged
outputs and gradients down the chain. None of that survives per-device shapes: the bind stops
on an ``assert`` with the container half-bound, and merging outputs of differently shaped
devices fails. Here a per-device bind validates the chain first, binds every module per
device (device i's outputs are device i's inputs of the next module), and switches the
container, in place, to a subclass whose ``forward`` / ``backward`` pass per-device lists
down the chain without merging. ``isinstance(module, SequentialModule)`` stays true and the
behaviour keeps working after ``uninstall()``, as for ``Module``.
"""

import contextlib
import copy

from mxnet.io import DataDesc
from mxnet.module import Module, SequentialModule

from ..errors import ShapeSpecError
from . import binding, shapes
from .transactions import all_or_nothing

__all__ = ["PerDeviceSequentialModule"]

_TAKE_LABELS = SequentialModule.META_TAKE_LABELS
_AUTO_WIRING = SequentialModule.META_AUTO_WIRING


class PerDeviceSequentialModule(SequentialModule):
    """The class a ``SequentialModule`` bound per device switches to.

    Examples
    --------
    >>> import mxnet as mx
    >>> import mxpatch_bind
    >>> contexts = [mx.cpu(0), mx.cpu(1)]
    >>> conv = mx.sym.Convolution(mx.sym.Variable('data'), num_filter=2, kernel=(3, 3),
    ...                           name='conv')
    >>> pool = mx.sym.Pooling(mx.sym.Variable('features'), kernel=(2, 2), stride=(2, 2),
    ...                       pool_type='max')
    >>> seq = mx.mod.SequentialModule()
    >>> _ = seq.add(mx.mod.Module(conv, label_names=None, context=contexts))
    >>> _ = seq.add(mx.mod.Module(pool, data_names=['features'], label_names=None,
    ...                           context=contexts), auto_wiring=True)
    >>> with mxpatch_bind.patched():
    ...     seq.bind([[('data', (1, 3, 10, 12))], [('data', (2, 3, 8, 6))]])
    >>> [shape for (_, shape), in seq.output_shapes]
    [(1, 2, 4, 5), (2, 2, 3, 2)]
    >>> isinstance(seq, mx.mod.SequentialModule)
    True
    """

    __repr__ = binding.module_repr

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Binds every module of the chain; per device when the shapes are per device.

        Parameters
        ----------
        data_shapes : list of (str, tuple) or DataDesc, or one such list per context
            The first module's inputs. Per device, module k+1's inputs on device i are
            module k's outputs on device i (renamed to its ``data_names`` with
            ``auto_wiring=True``).
        label_shapes : list of (str, tuple) or DataDesc, or one such list per context, or None
            Given to every module added with ``take_labels=True``.
        for_training, inputs_need_grad, force_rebind, grad_req
            As for ``SequentialModule.bind``.
        shared_module : None
            Must be ``None``, as for ``SequentialModule.bind``.

        Raises
        ------
        ShapeSpecError
            A per-device spec that does not fit the chain (device count, input names, an
            auto-wired module's input count); nothing is bound.
        TypeError
            A module of the chain is not a ``mxnet.module.Module``.
        ValueError
            ``shared_module`` given, an empty chain, or ``inputs_need_grad`` without
            ``for_training``.

        Notes
        -----
        If MXNet fails part-way, the container and every module of the chain are put
        back exactly as they were (class and attributes).
        """
        if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
            return super().bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                                force_rebind, shared_module, grad_req)
        _check_chain(self, data_shapes, for_training, inputs_need_grad, shared_module)
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return None
        with contextlib.ExitStack() as rollback:  # the chain and each module: all or nothing
            for obj in [self] + list(self._modules):
                rollback.enter_context(all_or_nothing(obj))
            _bind_chain(self, data_shapes, label_shapes, for_training, inputs_need_grad,
                        force_rebind, grad_req)
        adopt_sequential(self)
        # Set last, as Module.bind does (stock SequentialModule sets it first).
        self.binded = True
        return None

    def forward(self, data_batch, is_train=None):
        """Forward through the chain; a per-device batch stays per device all the way.

        Upstream: mxnet.module.sequential_module.SequentialModule.forward
        """
        if shapes.batch_form(data_batch) == shapes.STOCK:
            return super().forward(data_batch, is_train)
        if not (self.binded and self.params_initialized):
            raise RuntimeError("forward() needs a bound SequentialModule with initialised "
                               "parameters")
        data, provide_data, labels, provide_label = _device_fields(data_batch)
        for index, (module, meta) in enumerate(zip(self._modules, self._metas)):
            if index > 0:
                data, provide_data = _device_outputs(self._modules[index - 1], module)
            # A shallow copy keeps bucket_key, pad and index, as stock's forward does.
            batch = copy.copy(data_batch[0] if isinstance(data_batch, list) else data_batch)
            batch.data, batch.provide_data = data, provide_data
            takes_labels = bool(meta.get(_TAKE_LABELS))
            batch.label = labels if takes_labels else None
            batch.provide_label = provide_label if takes_labels else None
            module.forward(batch, is_train=is_train)
        return None

    def backward(self, out_grads=None):
        """Backward through the chain; per-device modules pass per-device gradients.

        Upstream: mxnet.module.sequential_module.SequentialModule.backward
        """
        if not all(binding.is_per_device(module) for module in self._modules):
            return super().backward(out_grads)
        if not (self.binded and self.params_initialized):
            raise RuntimeError("backward() needs a bound SequentialModule with initialised "
                               "parameters")
        for index in range(len(self._modules) - 1, -1, -1):
            module = self._modules[index]
            module.backward(out_grads=out_grads)
            if index > 0:
                out_grads = _per_device(module.get_input_grads(merge_multi_context=False))
        return None


def adopt_sequential(module):
    """Switch a ``SequentialModule`` to its per-device class in place (idempotent)."""
    if not isinstance(module, PerDeviceSequentialModule):
        module.__class__ = binding.per_device_class(
            type(module), ((SequentialModule, PerDeviceSequentialModule),))
    return module


# --------------------------------------------------------------------------- binding
def _check_chain(seq, data_shapes, for_training, inputs_need_grad, shared_module):
    """Refuse what a per-device chain cannot bind, before anything changes."""
    if shared_module is not None:
        raise ValueError("a SequentialModule cannot bind with a shared_module; got "
                         f"{shared_module!r}")
    if inputs_need_grad and not for_training:
        raise ValueError("inputs_need_grad=True needs for_training=True")
    if not seq._modules:
        raise ValueError("cannot bind an empty SequentialModule; add() modules first")
    for index, module in enumerate(seq._modules):
        if not isinstance(module, Module):
            raise TypeError(
                "per-device shapes need every module of a SequentialModule to be a "
                f"mxnet.module.Module; layer {index} is {module!r}. Bind with stock (flat) shapes, "
                "or replace it by a Module (a nested SequentialModule: add its modules to this "
                "one)")
    num_devices = len(seq._modules[0]._context)
    for index, module in enumerate(seq._modules):
        if len(module._context) != num_devices:
            raise ShapeSpecError(
                "per-device shapes need every module of a SequentialModule on the same number of "
                f"contexts: layer 0 has {num_devices}, layer {index} ({module!r}) has "
                f"{len(module._context)}")
    if len(data_shapes) != num_devices:
        # The first module's parse names every other defect of the spec; the count is
        # checked here because auto-wiring renames each device's entries first.
        raise ShapeSpecError(f"data_shapes must have one entry per context ({num_devices}), got "
                             f"{len(data_shapes)}: {data_shapes!r}")
    _check_wiring(seq, data_shapes)


def _check_wiring(seq, data_shapes):
    """Each module's inputs must be the previous module's outputs: in order, or by count
    with ``auto_wiring`` (stock feeds outputs to the next module by position)."""
    first, first_meta = seq._modules[0], seq._metas[0]
    if first_meta.get(_AUTO_WIRING):
        for device, entries in enumerate(data_shapes):
            if isinstance(entries, (list, tuple)) and len(entries) != len(first.data_names):
                raise ShapeSpecError(
                    f"layer 0 (auto_wiring) takes {len(first.data_names)} inputs "
                    f"{list(first.data_names)!r} but device {device}'s data_shapes has "
                    f"{len(entries)}: {entries!r}")
    for index in range(1, len(seq._modules)):
        module, meta = seq._modules[index], seq._metas[index]
        outputs, wanted = list(seq._modules[index - 1].output_names), list(module.data_names)
        if meta.get(_AUTO_WIRING) and len(outputs) != len(wanted):
            raise ShapeSpecError(
                f"layer {index} (auto_wiring) takes {len(wanted)} inputs {wanted!r} but layer "
                f"{index - 1} gives {len(outputs)} outputs {outputs!r}")
        if not meta.get(_AUTO_WIRING) and outputs != wanted:
            raise ShapeSpecError(
                f"layer {index} takes the inputs {wanted!r} but layer {index - 1} gives the "
                f"outputs {outputs!r}; add it with auto_wiring=True to feed them by position")


def _bind_chain(seq, data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                grad_req):
    """``SequentialModule.bind``'s loop with per-device shapes.

    Upstream: mxnet.module.sequential_module.SequentialModule.bind
    """
    device_data = data_shapes
    takes_any_labels = False
    for index, (module, meta) in enumerate(zip(seq._modules, seq._metas)):
        takes_labels = bool(meta.get(_TAKE_LABELS))
        takes_any_labels = takes_any_labels or takes_labels
        if meta.get(_AUTO_WIRING):
            device_data = [_renamed(device, module.data_names) for device in device_data]
        # The free function binds per device with or without install().
        binding.bind(module, device_data, label_shapes if takes_labels else None,
                     for_training, bool(inputs_need_grad or (for_training and index > 0)),
                     force_rebind, None, grad_req)
        device_data = module.output_shapes  # one list per device
    # The same labels go to every module that takes them, as in stock.
    seq._label_shapes = label_shapes if takes_any_labels else None
    # Stock never records these, so its get_input_grads() always fails its assert.
    seq.for_training, seq.inputs_need_grad = for_training, inputs_need_grad


def _renamed(device_descs, names):
    """One device's descs under new names; a malformed entry is left for the parse to report."""
    if not isinstance(device_descs, (list, tuple)):
        return device_descs
    return [_renamed_desc(desc, name) for name, desc in zip(names, device_descs)]


def _renamed_desc(desc, name):
    if isinstance(desc, DataDesc):
        return DataDesc(name, desc.shape, desc.dtype, desc.layout)
    if isinstance(desc, (list, tuple)) and len(desc) >= 2:
        return (name,) + tuple(desc[1:])
    return desc


# --------------------------------------------------------------------------- computation
def _device_fields(data_batch):
    """``data``, ``provide_data``, ``label``, ``provide_label`` as per-device lists (or None)."""
    if not isinstance(data_batch, list):
        return (data_batch.data, data_batch.provide_data, data_batch.label,
                data_batch.provide_label)
    data = [batch.data for batch in data_batch]
    provide_data = _unless_absent([batch.provide_data for batch in data_batch])
    labels = _unless_absent([batch.label for batch in data_batch])
    provide_label = _unless_absent([batch.provide_label for batch in data_batch])
    return data, provide_data, labels, provide_label


def _unless_absent(per_device):
    """The list as given, or None when no batch has the field: the first module checks a
    mix as a Module checks a list of batches (labels on some devices only: refused)."""
    return per_device if any(entry is not None for entry in per_device) else None


def _device_outputs(module, next_module):
    """``module``'s outputs, one list per device, named as ``next_module``'s inputs."""
    outputs = _per_device(module.get_outputs(merge_multi_context=False))
    provide_data = [[DataDesc(name, array.shape, array.dtype)
                     for name, array in zip(next_module.data_names, device)]
                    for device in outputs]
    return outputs, provide_data


def _per_device(per_name):
    """``[[name0_dev0, name0_dev1], ...]`` (MXNet's unmerged form) -> one list per device."""
    return [list(device) for device in zip(*per_name)]
