"""The per-device executor group: one executor per context, each with its own shapes (private).

A subclass of MXNet's ``DataParallelExecutorGroup``. Handed a
:class:`~mxpatch_bind.module.shapes.DeviceShapes` it binds executor i with device i's shapes; handed
a flat list (stock form) it behaves exactly as its base class, so a module can move between
the two forms by ``reshape``.

The group keeps ``slices`` as the rows each device holds in the concatenated batch, so the
stock code paths that slice a merged batch (``backward(out_grads)``, ``update_metric`` with
merged labels, loading a flat ``DataBatch``) keep working whenever the devices' non-batch axes
agree.
"""

from collections import OrderedDict

from mxnet.module.executor_group import DataParallelExecutorGroup, _merge_multi_context

from ..settings import current as current_settings
from . import batches, executors, shapes
from .parallel import call_all
from .shapes import DeviceShapes

__all__ = ["PerDeviceExecutorGroup"]

# Reshaped executors are kept per device, keyed by input shapes, up to the exec_cache_size
# setting (mxpatch_bind.configure): detection data repeats a few aspect-ratio buckets, and on
# MXNet 1.9.1 a reshape costs nearly a simple_bind. Each cached executor shares the base
# executor's memory, so the bound keeps memory bounded too.
# Shapes seen once, per device (keys only). An executor enters the cache on the second sight
# of its shape: one-off shapes then neither evict recurring ones nor cost the free of a
# long-unused executor (measured in docs/performance.md).
SEEN_SHAPES_SIZE = 256


class PerDeviceExecutorGroup(DataParallelExecutorGroup):
    """A ``DataParallelExecutorGroup`` whose devices may each run their own input shapes.

    Parameters
    ----------
    symbol, contexts, workload, param_names, for_training, inputs_need_grad, shared_group,
    logger, fixed_param_names, grad_req, state_names, group2ctxs
        As for ``mxnet.module.executor_group.DataParallelExecutorGroup``.
    device_shapes : DeviceShapes
        The per-device data and label shapes (from
        :func:`mxpatch_bind.module.shapes.parse_device_shapes`).

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.module.shapes import parse_device_shapes
    >>> sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> spec = parse_device_shapes([[('data', (1, 4))], [('data', (3, 4))]], None,
    ...                            ['data'], [], 2)
    >>> group = PerDeviceExecutorGroup(sym, [mx.cpu(0), mx.cpu(1)], [1, 1], spec,
    ...                                ['fc_weight', 'fc_bias'], False, False)
    >>> [e.arg_dict['data'].shape for e in group.execs], group.batch_size
    ([(1, 4), (3, 4)], 4)
    """

    def __init__(self, symbol, contexts, workload, device_shapes, param_names, for_training,
                 inputs_need_grad, shared_group=None, logger=None, fixed_param_names=None,
                 grad_req='write', state_names=None, group2ctxs=None):
        self._adopt()
        # The base __init__ reads flat shapes for the input names and ends by calling
        # bind_exec; hand it device 0's list and keep the full spec for our bind_exec.
        self._pending_device_shapes = device_shapes
        label0 = device_shapes.label[0] if device_shapes.label else None
        extra = {} if logger is None else {"logger": logger}
        super().__init__(symbol, contexts, workload, device_shapes.data[0], label0, param_names,
                         for_training, inputs_need_grad, shared_group,
                         fixed_param_names=fixed_param_names, grad_req=grad_req,
                         state_names=state_names, group2ctxs=group2ctxs, **extra)

    @classmethod
    def adopt(cls, group):
        """Turn a stock group into a per-device-capable one in place, keeping its executors."""
        if not isinstance(group, cls):
            group.__class__ = cls
            group._adopt()
        return group

    def _adopt(self):
        self.per_device = False
        # Devices the last forward ran on: fewer than the contexts after a short batch.
        self.num_active = None
        self._pending_device_shapes = None
        self._exec_cache = self._seen_shapes = None

    # ----------------------------------------------------------------- binding and reshape
    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or reshape) executors: per device for a pending per-device spec, else stock."""
        device_shapes, self._pending_device_shapes = self._pending_device_shapes, None
        if device_shapes is None:
            super().bind_exec(data_shapes, label_shapes, shared_group, reshape)
            self.per_device = False
            return
        execs = [self._bind_ith_exec(i, device_shapes.data[i],
                                     device_shapes.label[i] if device_shapes.label else [],
                                     shared_group)
                 for i in range(len(self.contexts))]
        self.execs = execs
        self._new_cache()
        self._commit(device_shapes)

    def reshape(self, data_shapes, label_shapes=None):
        """Reshape executors to a :class:`DeviceShapes` (per device) or to flat stock shapes.

        Per device, only the devices whose shapes changed are reshaped, from the first-bound
        (base) executors as stock does. A shape with more elements than the base executor's
        becomes the new base, so memory stays bounded by the largest shape seen; shapes seen
        twice or more come from a small per-device cache (``exec_cache_size``) and cost no
        reshape at all. The devices that do need a reshape run it at once on
        ``reshape_threads`` threads where that is safe (:func:`mxpatch_bind.configure`).
        """
        if not isinstance(data_shapes, DeviceShapes):
            if self._exec_cache is not None:
                self._drop_cache()
            return super().reshape(data_shapes, label_shapes)
        if self.per_device and data_shapes == DeviceShapes(self.data_shapes, self.label_shapes):
            return None
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        if self._exec_cache is None:
            self._new_cache()
        settings = current_settings()
        wanted = [self._with_inferred_inputs(data_shapes.shapes_of(i))
                  for i in range(len(self.execs))]
        # Build every new executor before changing anything: a failed reshape leaves
        # the group on its previous shapes.
        new_execs = [self._ready_exec(i, shapes) for i, shapes in enumerate(wanted)]
        missing = [i for i, executor in enumerate(new_execs) if executor is None]
        bases = [self._default_execs[i] for i in missing]
        threads = settings.reshape_threads if executors.can_reshape_concurrently(bases) else 1
        reshaped = call_all(executors.reshape_executor, [(base, wanted[i]) for base, i in
                                                zip(bases, missing)], threads)
        for i, executor in zip(missing, reshaped):
            self._keep(i, wanted[i], executor, settings.exec_cache_size)
            new_execs[i] = executor
        self.execs = new_execs
        self._commit(data_shapes)
        return None

    def _with_inferred_inputs(self, wanted):
        """``wanted`` and the shapes of the inputs it leaves out (labels of a batch without
        labels: the family's testers bind a labelled test symbol with no label shapes), as
        bind inferred them: ``Executor.reshape`` refuses an unnamed input whose shape changes."""
        params = set(self.param_names)
        unnamed = [name for name in self.arg_names if name not in wanted and name not in params]
        if not unnamed:
            return wanted
        arg_shapes, _, _ = self.symbol.infer_shape_partial(**wanted)
        inferred = dict(zip(self.arg_names, arg_shapes or ()))
        known = {name: tuple(inferred[name]) for name in unnamed
                 if inferred.get(name) and all(inferred[name])}
        return dict(wanted, **known)

    def _ready_exec(self, device, wanted):
        """The executor ``device`` already has for ``wanted`` (current, base, cached), or None."""
        current = self.execs[device]
        if executors.input_shapes(current, wanted) == wanted:
            return current
        base = self._default_execs[device]
        if executors.input_shapes(base, wanted) == wanted:
            return base
        cache = self._exec_cache[device]
        key = executors.cache_key(wanted)
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        return None

    def _keep(self, device, wanted, reshaped, cache_size):
        """Remember a freshly reshaped executor: as the new base, in the cache, or as seen."""
        key = executors.cache_key(wanted)
        if executors.grows(self._default_execs[device], wanted):
            # New base: later shapes up to this size are views into its memory, so memory
            # stays bounded by the largest shape seen.
            self._default_execs[device] = reshaped
            self._exec_cache[device].clear()
        elif key in self._seen_shapes[device]:
            executors.put_bounded(self._exec_cache[device], key, reshaped, cache_size)
        else:
            executors.put_bounded(self._seen_shapes[device], key, None, SEEN_SHAPES_SIZE)

    def _new_cache(self):
        self._exec_cache = [OrderedDict() for _ in self.execs]
        self._seen_shapes = [OrderedDict() for _ in self.execs]

    def _drop_cache(self):
        self._exec_cache = self._seen_shapes = None

    def _commit(self, device_shapes):
        self.per_device = True
        self.num_active = None
        self.batch_size = device_shapes.total_batch_size
        self.slices = device_shapes.slices
        self.data_layouts = device_shapes.data_axes
        self.label_layouts = device_shapes.label_axes
        self.data_shapes = device_shapes.data
        self.label_shapes = device_shapes.label
        self.data_names = [desc.name for desc in device_shapes.data[0]]
        if device_shapes.label is not None:
            self.label_names = [desc.name for desc in device_shapes.label[0]]
        self._collect_arrays()

    def _collect_arrays(self):
        """Stock's arrays, with each device's rows of the merged batch as its slice.

        Upstream: mxnet.module.executor_group.DataParallelExecutorGroup._collect_arrays
        """
        if not self.per_device:
            return super()._collect_arrays()
        # Same arrays as stock, with each device's rows of the merged batch as its slice.
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in self.execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [[(self.slices[i], e.arg_dict[name])
                                  for i, e in enumerate(self.execs)]
                                 for name in self.label_names]
        else:
            self.label_arrays = None
        param_index = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in self.execs] for i in param_index]
        self.grad_arrays = ([[e.grad_arrays[i] for e in self.execs] for i in param_index]
                            if self.for_training else None)
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)]
                                       for e in self.execs]
                                      for name in self.data_names if name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in self.execs]
                           for i in range(len(self.aux_names))]
        return None

    # ----------------------------------------------------------------- computation
    def forward(self, data_batch, is_train=None):
        """Load a batch in any of the three forms and run every executor forward.

        Forms: one ``DataBatch`` whose ``data``/``label`` are per-device lists (the
        Deformable-ConvNets form); a list of ``DataBatch``, one per device (stock's
        pre-sliced form); a flat ``DataBatch`` whose rows are split by ``slices``.
        """
        if not self.per_device or shapes.batch_form(data_batch) != shapes.DEVICE_LISTS:
            self.num_active = None
            return super().forward(data_batch, is_train)
        # Modules hand forward_devices a batch they checked; called on the group itself, the
        # batch is checked here the same way, against the group's own inputs.
        checked = batches.check_device_batch(data_batch, shapes.DEVICE_LISTS,
                                             self._expected(is_train))
        return self.forward_devices(checked.data, checked.label, is_train)

    def _expected(self, is_train):
        labels = self.label_shapes[0] if self.label_shapes else []
        training = bool(self.for_training if is_train is None else is_train)
        return batches.Expected(len(self.execs), list(self.data_names),
                                [len(desc.shape) for desc in self.data_shapes[0]],
                                [desc.name for desc in labels],
                                [len(desc.shape) for desc in labels],
                                bool(self.label_shapes), training)

    def forward_devices(self, data, labels, is_train=None):
        """Copy one list of arrays per device into its executor and run every one forward.

        ``labels`` is ``None`` to keep the label arrays as they are (stock does the same for
        a batch without labels). The module checked the arrays (``batches.py``): the copies
        cannot fail half-way on a malformed batch. Fewer lists than devices (a short batch,
        inference only) run the first devices only; outputs, input gradients and metrics
        then come from those devices alone.
        """
        active = self.execs[:len(data)]
        for exec_, device_arrays in zip(active, data):
            executors.copy_inputs(device_arrays, exec_, self.data_names)
        if self.label_arrays is not None and labels is not None:
            for exec_, device_arrays in zip(active, labels):
                executors.copy_inputs(device_arrays, exec_, self.label_names)
        if is_train is None:
            is_train = self.for_training
        self.num_active = None  # a failed forward leaves no short state behind
        for exec_ in active:
            exec_.forward(is_train=is_train)
        self.num_active = len(active) if len(active) < len(self.execs) else None
        return None

    def _active_execs(self):
        return self.execs if self.num_active is None else self.execs[:self.num_active]

    def backward(self, out_grads=None):
        """Backward on every device; ``out_grads`` is merged (stock) or one list per device."""
        per_device = [isinstance(grads, (list, tuple)) for grads in out_grads or []]
        if self.num_active is not None:
            raise RuntimeError(f"backward after a short batch ({self.num_active} of "
                               f"{len(self.execs)} devices ran forward, for inference): give every "
                               "device samples to train")
        if not self.per_device or not any(per_device):
            return super().backward(out_grads)
        if not self.for_training:
            raise RuntimeError("re-bind with for_training=True to run backward")
        if not all(per_device):
            # An array where a device's list belongs would be iterated row by row.
            entry = per_device.index(False)
            raise ValueError(f"out_grads mixes per-device lists and arrays: entry {entry} is a "
                             f"{type(out_grads[entry]).__name__}; give one list of arrays per "
                             "device, or merged arrays only")
        if len(out_grads) != len(self.execs):
            raise ValueError(f"out_grads has {len(out_grads)} per-device entries but the module "
                             f"has {len(self.execs)} devices")
        for exec_, context, grads in zip(self.execs, self.contexts, out_grads):
            exec_.backward(out_grads=[grad.as_in_context(context) for grad in grads])
        return None

    def get_output_shapes(self):
        """``[(name, shape), ...]`` per device (a flat list in stock form)."""
        if not self.per_device:
            return super().get_output_shapes()
        names = self.symbol.list_outputs()
        return [list(zip(names, (out.shape for out in exec_.outputs))) for exec_ in self.execs]

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs of the last forward, of the devices it ran on; merging needs the devices'
        non-batch axes to agree."""
        if not self.per_device:
            return super().get_outputs(merge_multi_context, begin, end)
        end = self.num_outputs if end is None else end
        outputs = [[exec_.outputs[i] for exec_ in self._active_execs()]
                   for i in range(begin, end)]
        if not merge_multi_context:
            return outputs
        return _merge_checked(outputs, self.output_layouts[begin:end],
                              self.output_names[begin:end], "output")

    def get_input_grads(self, merge_multi_context=True):
        """Input gradients; merging needs the devices' non-batch axes to agree."""
        if not self.per_device or not merge_multi_context:
            return super().get_input_grads(merge_multi_context)
        grads = super().get_input_grads(False)
        return _merge_checked(grads, self.data_layouts, self.data_names, "input gradient")

    def update_metric(self, eval_metric, labels, pre_sliced):
        """Update a metric; per-device labels (lists per device) count as pre-sliced."""
        if self.per_device and labels and isinstance(labels[0], (list, tuple)):
            pre_sliced = True
        if self.num_active is not None:
            return self._update_metric_short(eval_metric, labels, pre_sliced)
        return super().update_metric(eval_metric, labels, pre_sliced)

    def _update_metric_short(self, eval_metric, labels, pre_sliced):
        """A short batch's metric: the devices that ran, with their own labels.

        Upstream: mxnet.module.executor_group.DataParallelExecutorGroup.update_metric
        """
        if not pre_sliced:
            raise ValueError("a short batch's metric needs one list of labels per device that ran "
                             f"({self.num_active}), not merged labels")
        if len(labels) != self.num_active:
            raise ValueError(f"update_metric got labels for {len(labels)} devices but the last "
                             f"batch ran on {self.num_active}")
        for exec_, device_labels in zip(self._active_execs(), labels):
            eval_metric.update_dict(OrderedDict(zip(self.label_names, device_labels)),
                                    OrderedDict(zip(self.output_names, exec_.outputs)))


def _merge_checked(per_name, axes, names, what):
    for name, tensors, axis in zip(names, per_name, axes):
        shapes = [tuple(t.shape) for t in tensors]
        if axis >= 0 and len({s[:axis] + s[axis + 1:] for s in shapes}) > 1:
            raise ValueError(
                f"cannot merge {what} {name!r} across devices: per-device shapes {shapes!r} differ "
                f"outside the batch axis {axis}; pass merge_multi_context=False to get one array "
                "per device")
    return _merge_multi_context(per_name, axes)


def changed_parameter(group, wanted):
    """The first parameter or auxiliary state of ``group`` (stock or per device) that the
    input shapes ``wanted`` (``{name: shape}`` for one device) would resize, as ``(name,
    bound shape, new shape)``, or None when every one keeps its shape. A wrong channel count
    resizes a convolution's weight, which ``Executor.reshape`` would refuse."""
    arg_shapes, _, aux_shapes = group.symbol.infer_shape_partial(**wanted)
    bound = group.execs[0]
    params = set(group.param_names)
    inferred = [(name, shape, bound.arg_dict) for name, shape in
                zip(group.arg_names, arg_shapes or ()) if name in params]
    inferred += [(name, shape, bound.aux_dict) for name, shape in
                 zip(group.aux_names, aux_shapes or ())]
    for name, shape, held in inferred:
        # An axis left unknown (0) is no resize: MXNet's reshape decides those.
        if name in held and shape and all(shape) and tuple(shape) != held[name].shape:
            return name, held[name].shape, tuple(shape)
    return None
