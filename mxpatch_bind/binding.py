"""The free functions ``bind`` / ``reshape`` and the per-device module classes (private).

``install()`` puts :func:`bind` and :func:`reshape` behind ``Module.bind`` / ``Module.reshape``
through the wrapt wrappers at the end of this file. A module bound per device also has its
class switched, in place, to a subclass of its own class (``isinstance`` stays true) whose
``bind``/``reshape``/``forward`` understand per-device shapes: stock ``Module.forward`` and
``Module.reshape`` crash on per-device lists, so the behaviour has to travel with the module
and keep working after ``uninstall()``.
"""

import functools

from mxnet import ndarray as nd
from mxnet.io import DataDesc
from mxnet.module import BucketingModule, Module

from . import distributed, memory, shapes
from .executor_group import PerDeviceExecutorGroup, is_device_batch

__all__ = ["bind", "reshape", "adopt_module", "is_per_device"]


def bind(module, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
         force_rebind=False, shared_module=None, grad_req='write'):
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

    Notes
    -----
    The executor group's ``batch_size`` is the total number of samples on all devices, so
    ``init_optimizer`` sets ``rescale_grad = 1/total`` (the Deformable-ConvNets fork used
    1/number-of-devices); on a ``dist_*_sync`` kvstore, the total over all workers' devices.
    ``module.data_shapes``, ``label_shapes`` and ``output_shapes`` are per-device lists on a
    per-device module. Parameters stay on the CPU as stock keeps them.

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
    args = (data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
            shared_module, grad_req)
    if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
        return module.bind(*args)
    return _call_per_device(module, "bind", args)


def reshape(module, data_shapes, label_shapes=None):
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
    if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
        return module.reshape(data_shapes, label_shapes)
    return _call_per_device(module, "reshape", (data_shapes, label_shapes))


def is_per_device(module):
    """Whether ``module`` is a ``Module`` currently bound with per-device shapes."""
    group = getattr(module, "_exec_group", None)
    return isinstance(group, PerDeviceExecutorGroup) and group.per_device


# --------------------------------------------------------------------------- implementation
def _require_module(module):
    if not isinstance(module, Module):
        raise TypeError("per-device shapes need a mxnet.module.Module; got %r (a BucketingModule "
                        "binds per device through install() or patched())" % (module,))


def _call_per_device(module, method, args):
    """``module.bind`` / ``module.reshape`` with a per-device spec, without install().

    The spec is validated first, so a malformed one changes nothing. The module's own method
    runs, so a subclass's override takes part; an override (SVRGModule's binds an auxiliary
    module too) calls other modules' methods, so it runs under a temporary patch.
    """
    _require_module(module)
    _parse(module, args[0], args[1])
    original_class = type(module)
    adopt_module(module)
    try:
        if _overrides_module_method(original_class, method):
            from .patching import patched  # binding.py is loaded by patching; import late
            with patched():
                return getattr(module, method)(*args)
        return getattr(module, method)(*args)
    except BaseException:
        module.__class__ = original_class
        raise


def _parse(module, data_shapes, label_shapes):
    return shapes.parse_device_shapes(data_shapes, label_shapes, module.data_names,
                                      module.label_names, len(module._context))


def _bind_per_device(module, data_shapes, label_shapes=None, for_training=True,
                     inputs_need_grad=False, force_rebind=False, shared_module=None,
                     grad_req='write'):
    _require_module(module)
    spec = _parse(module, data_shapes, label_shapes)
    if inputs_need_grad and not for_training:
        raise ValueError("inputs_need_grad=True needs for_training=True")
    shared_group = _shared_group(module, shared_module)
    memory.cap_mkldnn_cache()  # per-device shapes are many; oneDNN caches one entry per shape
    if force_rebind:
        module._reset_bind()
    if module.binded:
        module.logger.warning('Already bound, ignoring bind()')
        return
    group = PerDeviceExecutorGroup(
        module._symbol, module._context, module._work_load_list, spec, module._param_names,
        for_training, inputs_need_grad, shared_group, logger=module.logger,
        fixed_param_names=module._fixed_param_names, grad_req=grad_req,
        state_names=module._state_names, group2ctxs=module._group2ctxs)
    arg_params, aux_params = _params_for(module, group, shared_module)
    module.for_training = for_training
    module.inputs_need_grad = inputs_need_grad
    module._grad_req = grad_req
    module._data_shapes, module._label_shapes = spec.data, spec.label
    module._exec_group = group
    module._total_exec_bytes = group._total_exec_bytes
    module._arg_params, module._aux_params = arg_params, aux_params
    if shared_module is not None:
        module.params_initialized = True
        if shared_module.optimizer_initialized:
            module.borrow_optimizer(shared_module)
    adopt_module(module)
    # Set last, as stock does: a failed bind leaves the module unbound.
    module.binded = True


def _shared_group(module, shared_module):
    if shared_module is None:
        return None
    if not (isinstance(shared_module, Module) and shared_module.binded
            and shared_module.params_initialized):
        raise ValueError("shared_module must be a bound Module with initialised parameters; "
                         "got %r" % (shared_module,))
    if len(shared_module._exec_group.execs) < len(module._context):
        raise ValueError("shared_module runs on %d devices but this module needs %d"
                         % (len(shared_module._exec_group.execs), len(module._context)))
    return shared_module._exec_group


def _params_for(module, group, shared_module):
    """The CPU parameter dictionaries, exactly as stock ``Module.bind`` makes them."""
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


def _reshape_per_device(module, data_shapes, label_shapes=None):
    _require_module(module)
    if not module.binded:
        raise RuntimeError("reshape() needs a bound module; call bind() first")
    spec = _parse(module, data_shapes, label_shapes)
    group = PerDeviceExecutorGroup.adopt(module._exec_group)
    group.reshape(spec)
    module._data_shapes, module._label_shapes = spec.data, spec.label
    adopt_module(module)


# --------------------------------------------------------------------------- module classes
class PerDeviceModule(Module):
    """The class a ``Module`` bound per device switches to (for a subclass of ``Module``, a
    class derived from both, with this one after the subclass: the subclass's own methods
    run, and their ``super()`` calls reach these)."""

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
            return super().bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                                force_rebind, shared_module, grad_req)
        return _bind_per_device(self, data_shapes, label_shapes, for_training,
                                inputs_need_grad, force_rebind, shared_module, grad_req)

    def reshape(self, data_shapes, label_shapes=None):
        if shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK:
            return super().reshape(data_shapes, label_shapes)
        return _reshape_per_device(self, data_shapes, label_shapes)

    def forward(self, data_batch, is_train=None):
        if not (self.binded and self.params_initialized):
            raise RuntimeError("forward() needs a bound module with initialised parameters")
        if is_device_batch(data_batch) or _is_varied_batch_list(data_batch):
            _reshape_to_batch(self, data_batch)
            return self._exec_group.forward(data_batch, is_train)
        if is_per_device(self) and not _fits_merged(self, data_batch):
            # A flat batch the devices cannot share out: move back to stock form first.
            self.reshape(*_flat_descs(self, data_batch))
        if is_per_device(self):
            return self._exec_group.forward(data_batch, is_train)
        return super().forward(data_batch, is_train)

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

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        # Stock switch_bucket builds a fresh Module and calls whatever Module.bind is then
        # (stock once uninstalled); for a new key with per-device shapes, hand it a module
        # that already binds per device.
        if (not self.binded or bucket_key in self._buckets
                or shapes.spec_form(data_shapes, label_shapes) == shapes.STOCK):
            return super().switch_bucket(bucket_key, data_shapes, label_shapes)
        module = adopt_module(self._new_bucket_module(bucket_key))
        self._buckets[bucket_key] = module
        try:
            super().switch_bucket(bucket_key, data_shapes, label_shapes)
        except BaseException:
            del self._buckets[bucket_key]
            raise
        # Stock installs the monitor only on the buckets it creates itself.
        if self._monitor is not None:
            module.install_monitor(self._monitor)

    def _new_bucket_module(self, bucket_key):
        symbol, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)


@functools.lru_cache(maxsize=None)
def _per_device_class(cls):
    bucketing = issubclass(cls, BucketingModule)
    per_device = PerDeviceBucketingModule if bucketing else PerDeviceModule
    if cls in (Module, BucketingModule):
        return per_device
    # (cls, per_device): the MRO puts cls's own methods first and ours right before
    # Module's, so an override's super() call reaches the per-device behaviour.
    return type("PerDevice" + cls.__name__, (cls, per_device),
                {"__module__": __name__, "__doc__": cls.__doc__})


def adopt_module(module):
    """Switch ``module`` to its per-device class in place (idempotent); returns it."""
    if not isinstance(module, (PerDeviceModule, PerDeviceBucketingModule)):
        module.__class__ = _per_device_class(type(module))
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


# --------------------------------------------------------------------------- forward helpers
def _is_varied_batch_list(data_batch):
    """A pre-sliced list of DataBatch, which stock only accepts with equal shapes."""
    return isinstance(data_batch, list) and bool(data_batch) and hasattr(data_batch[0], "data")


def _device_arrays(data_batch, field):
    """Per-device lists of arrays of ``field`` ('data' or 'label') in either device form."""
    if isinstance(data_batch, list):
        return [getattr(batch, field) for batch in data_batch]
    return getattr(data_batch, field)


def _device_provided(data_batch, field):
    """Per-device ``provide_data``/``provide_label`` if the batch carries them, else None."""
    if isinstance(data_batch, list):
        provided = [getattr(batch, field, None) for batch in data_batch]
        return provided if all(provided) else None
    provided = getattr(data_batch, field, None)
    if provided and shapes.spec_form(provided) == shapes.PER_DEVICE:
        return provided
    return None


def _templates(module, field):
    """The module's current descs for ``field``, flat (device 0's when per device)."""
    descs = module._data_shapes if field == "data" else module._label_shapes
    if descs and is_per_device(module):
        return descs[0]
    return descs


def _descs_like(module, field, device_arrays):
    """One list of DataDesc per device: the arrays' shapes, the module's names, dtypes, layouts."""
    templates = _templates(module, field)
    names = module.data_names if field == "data" else module.label_names
    if templates:
        return [[DataDesc(t.name, a.shape, t.dtype, t.layout) for t, a in zip(templates, arrays)]
                for arrays in device_arrays]
    return [[DataDesc(n, a.shape) for n, a in zip(names, arrays)] for arrays in device_arrays]


def _reshape_to_batch(module, data_batch):
    """Reshape the devices whose data shapes differ from the batch's, as stock forward does."""
    data_arrays = _device_arrays(data_batch, "data")
    wanted = [[tuple(a.shape) for a in arrays] for arrays in data_arrays]
    if is_per_device(module):
        current = [[tuple(d.shape) for d in device] for device in module._data_shapes]
        if current == wanted:
            return
    data_shapes = (_device_provided(data_batch, "provide_data")
                   or _descs_like(module, "data", data_arrays))
    label_shapes = _device_provided(data_batch, "provide_label")
    label_arrays = _device_arrays(data_batch, "label")
    if label_shapes is None and label_arrays and all(label_arrays):
        label_shapes = _descs_like(module, "label", label_arrays)
    module.reshape(data_shapes, label_shapes)  # the module's own, as stock forward calls it


def _fits_merged(module, data_batch):
    """Whether a flat batch has exactly the devices' shapes concatenated on the batch axis."""
    group = module._exec_group
    for index, array in enumerate(data_batch.data):
        axis = group.data_layouts[index]
        per_device = [device[index].shape for device in module._data_shapes]
        if axis < 0:
            if any(tuple(array.shape) != tuple(s) for s in per_device):
                return False
            continue
        merged = list(per_device[0])
        merged[axis] = sum(s[axis] for s in per_device)
        if any(s[:axis] + s[axis + 1:] != per_device[0][:axis] + per_device[0][axis + 1:]
               for s in per_device) or tuple(array.shape) != tuple(merged):
            return False
    return True


def _flat_descs(module, data_batch):
    """Flat (stock) data and label descs for a flat batch, as stock forward derives them."""
    if getattr(data_batch, "provide_data", None):
        data = data_batch.provide_data
    else:
        data = _descs_like(module, "data", [data_batch.data])[0]
    if getattr(data_batch, "provide_label", None):
        label = data_batch.provide_label
    elif getattr(data_batch, "label", None) and _templates(module, "label"):
        label = _descs_like(module, "label", [data_batch.label])[0]
    else:
        label = None
    return data, label


# --------------------------------------------------------------------------- wrapt wrappers
def _split_call(instance, args):
    """wrapt passes ``instance=None`` when the method is called through the class."""
    if instance is None:
        return args[0], args[1:]
    return instance, args


def _shape_args(args, kwargs):
    data_shapes = args[0] if args else kwargs.get("data_shapes")
    label_shapes = args[1] if len(args) > 1 else kwargs.get("label_shapes")
    return data_shapes, label_shapes


def bind_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``Module.bind`` runs: stock specs go straight to the original."""
    module, method_args = _split_call(instance, args)
    if shapes.spec_form(*_shape_args(method_args, kwargs)) == shapes.STOCK:
        return wrapped(*args, **kwargs)
    return _bind_per_device(module, *method_args, **kwargs)


def reshape_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``Module.reshape`` runs: stock specs go straight to the original."""
    module, method_args = _split_call(instance, args)
    if shapes.spec_form(*_shape_args(method_args, kwargs)) == shapes.STOCK:
        return wrapped(*args, **kwargs)
    return _reshape_per_device(module, *method_args, **kwargs)


def bucketing_bind_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``BucketingModule.bind`` runs: stock bind, then keep per-device buckets
    binding per device after ``uninstall()``."""
    module, _ = _split_call(instance, args)
    result = wrapped(*args, **kwargs)
    if isinstance(getattr(module, "_curr_module", None), PerDeviceModule):
        adopt_module(module)
    return result
