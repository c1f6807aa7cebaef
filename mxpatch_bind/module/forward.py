"""What a per-device module's ``forward`` works out from a batch (private).

:func:`prepare` is the one call ``binding.PerDeviceModule.forward`` makes for a per-device
batch: its form, the inputs the module expects (:func:`_expected_inputs`, worked out once),
the checked batch (one question to ``batches``, which answers it whole) and the per-device
spec it needs (:func:`_spec_for_batch`, worked out here from the checked batch alone).
:func:`forward_flat` is the path of a flat batch. docs/design.rst draws the walk.
"""

from mxnet.io import DataDesc
from mxnet.module import Module

from ..errors import BatchError
from . import batches, shapes
from .executor_group import PerDeviceExecutorGroup, changed_parameter
from .shapes import DeviceShapes


def is_per_device(module):
    """Whether ``module`` is a ``Module`` currently bound with per-device shapes."""
    group = getattr(module, "_exec_group", None)
    return isinstance(group, PerDeviceExecutorGroup) and group.per_device


def _current_descs(module, field):
    """The module's descs for ``field`` ('data' or 'label') per device (one list when stock)."""
    descs = module._data_shapes if field == "data" else module._label_shapes
    if descs is None:
        return None
    return descs if is_per_device(module) else [descs]


def _expected_inputs(module, is_train):
    """What a batch must hold for ``module``: names in the executors' order and their ranks,
    whether it is bound with labels, and whether this forward trains (``is_train`` as the
    executor group resolves it)."""
    data = _current_descs(module, "data")[0]
    labels = _current_descs(module, "label")
    if labels is not None:
        label_names = [desc.name for desc in labels[0]]
        label_ranks = [len(desc.shape) for desc in labels[0]]
    else:
        # Bound without labels: a labelled batch may bring them (ranks unknown).
        label_names = list(module.label_names)
        label_ranks = [None] * len(label_names)
    training = bool(module.for_training if is_train is None else is_train)
    return batches.Expected(len(module._context), [desc.name for desc in data],
                            [len(desc.shape) for desc in data], label_names, label_ranks,
                            labels is not None, training)


def prepare(module, data_batch, is_train):
    """``None`` for a flat batch; else ``(checked, spec)``: the checked per-device batch and
    the spec the devices are reshaped to first (``None`` when they already have it).

    Raises
    ------
    BatchError
        The batch does not fit the module (a training batch without the labels the module is
        bound with included); nothing has changed.
    """
    form = shapes.batch_form(data_batch)
    if form == shapes.STOCK:
        return None
    expected = _expected_inputs(module, is_train)
    checked = batches.check_device_batch(data_batch, form, expected)
    return checked, _spec_for_batch(module, checked, expected)


def check_presliced(module, batch_list, is_train):
    """Check stock's pre-sliced list (one DataBatch per device, all of one shape) whole, as
    :func:`prepare` checks every per-device batch, before stock ``forward`` loads it.

    Raises
    ------
    BatchError
        The batch does not fit the module; nothing has changed.
    """
    batches.check_device_batch(batch_list, shapes.BATCH_LIST, _expected_inputs(module, is_train))


def _spec_for_batch(module, checked, expected):
    """The spec the devices need for a checked batch, or ``None`` when they already have it.

    Labels count too: a labelled batch on a module bound without labels, or with other label
    shapes, reshapes, so no device ever trains on labels left from an earlier batch.

    Upstream: mxnet.module.module.Module.forward
    """
    checked = _with_idle_devices(module, checked, expected)
    if is_per_device(module):
        group = module._exec_group
        current = (tuple(tuple(tuple(d.shape) for d in device) for device in group.data_shapes),
                   None if group.label_shapes is None else
                   tuple(tuple(tuple(d.shape) for d in device) for device in group.label_shapes))
        wanted_labels = checked.label_shapes if checked.label_shapes is not None else current[1]
        if (checked.data_shapes, wanted_labels) == current:
            return None
    data = _descs_for(module, expected, "data", checked.data_shapes, checked.provide_data)
    label = None
    if checked.label_shapes is not None:
        label = _descs_for(module, expected, "label", checked.label_shapes, checked.provide_label)
    spec = DeviceShapes(data, label)
    shapes.check_layouts_agree(spec)  # provide_data DataDescs may bring layouts and dtypes
    shapes.check_dtypes_agree(spec)
    if shapes.checks_samples_per_input(module):
        shapes.check_batch_sizes(spec, BatchError, "batch device")
    return spec


def explain_refused_reshape(module, spec, error):
    """After MXNet refused to reshape ``module`` to a batch's ``spec`` (the module is as it
    was: every transition is all or nothing, and nothing has been copied yet), raise the
    BatchError that names the device and the parameter when the batch's shapes would resize a
    parameter (a wrong channel count on one device: MXNet's "Shape of unspecifie arg ...
    changed"); return otherwise, for the caller to raise MXNet's own error.

    Asked only once MXNet has refused, so that a reshape that succeeds costs no shape
    inference here.
    """
    group = module._exec_group
    for device in range(len(spec.data)):
        inputs = spec.shapes_of(device)
        changed = changed_parameter(group, inputs)
        if changed is not None:
            name, held, new = changed
            bound = {desc.name: tuple(desc.shape) for desc in _current_descs(module, "data")[0]}
            raise BatchError(
                f"batch device {device} gives inputs {inputs!r}, which would change parameter "
                f"{name!r} from shape {held!r} to {new!r}; expected inputs the bound parameters "
                f"fit (device 0 is bound with {bound!r}): check the axes a parameter depends on, "
                "such as the channels") from error


def _with_idle_devices(module, checked, expected):
    """A short batch's shapes completed with the idle devices' current ones: a tester's last
    batch leaves the devices it has no images for as they are (they run nothing)."""
    execs = module._exec_group.execs
    idle = execs[len(checked.data_shapes):]
    if not idle:
        return checked

    def completed(given, names):
        return tuple(given) + tuple(tuple(tuple(e.arg_dict[name].shape) for name in names)
                                    for e in idle)

    def padded(provided):
        return None if provided is None else list(provided) + [None] * len(idle)

    label_shapes = checked.label_shapes
    if label_shapes is not None:
        label_shapes = completed(label_shapes, expected.label_names)
    return checked._replace(data_shapes=completed(checked.data_shapes, expected.data_names),
                            label_shapes=label_shapes,
                            provide_data=padded(checked.provide_data),
                            provide_label=padded(checked.provide_label))


def _descs_for(module, expected, field, device_shapes, provided):
    """One list of DataDesc per device for ``field`` ('data' or 'label'): the arrays' shapes,
    and the dtype and layout of the batch's provide_* DataDesc where given, else of the
    module's current inputs."""
    names = expected.data_names if field == "data" else expected.label_names
    templates = {}
    current = _current_descs(module, field)
    if current:
        templates = {desc.name: desc for desc in current[0]}
    descs = []
    for device, shapes_ in enumerate(device_shapes):
        entries = provided[device] if provided else None  # checked: None where not given
        device_descs = []
        for position, (name, shape) in enumerate(zip(names, shapes_)):
            source = entries[position] if entries else templates.get(name)
            if isinstance(source, DataDesc):
                device_descs.append(DataDesc(name, shape, source.dtype, source.layout))
            else:
                template = templates.get(name)
                device_descs.append(DataDesc(name, shape, template.dtype, template.layout)
                                    if template is not None else DataDesc(name, shape))
        descs.append(device_descs)
    return descs


def forward_flat(module, data_batch, is_train):
    """A flat DataBatch: stock forward, or on a per-device module split by ``slices`` when it
    is exactly the devices' shapes concatenated, else after a reshape back to stock form."""
    if not is_per_device(module):
        return Module.forward(module, data_batch, is_train)
    expected = _expected_inputs(module, is_train)
    checked = batches.check_flat_batch(data_batch, expected)
    if not _fits_merged(module, checked.data_shapes):
        module.reshape(*_flat_descs(module, checked, expected))
    if is_per_device(module):
        return module._exec_group.forward(data_batch, is_train)
    return Module.forward(module, data_batch, is_train)


def _fits_merged(module, batch_shapes):
    """Whether a flat batch has exactly the devices' shapes concatenated on the batch axis."""
    group = module._exec_group
    for index, shape in enumerate(batch_shapes):
        axis = group.data_layouts[index]
        per_device = [tuple(device[index].shape) for device in module._data_shapes]
        if axis < 0:
            if any(shape != s for s in per_device):
                return False
            continue
        merged = list(per_device[0])
        merged[axis] = sum(s[axis] for s in per_device)
        if any(s[:axis] + s[axis + 1:] != per_device[0][:axis] + per_device[0][axis + 1:]
               for s in per_device) or shape != tuple(merged):
            return False
    return True


def _flat_descs(module, checked, expected):
    """Flat (stock) data and label descs for a checked flat batch, as stock forward derives
    them (labels the module ignores are left out, as stock leaves them).

    Upstream: mxnet.module.module.Module.forward
    """
    data = checked.provide_data
    if data is None:
        data = _descs_for(module, expected, "data", [checked.data_shapes], None)[0]
    if checked.label_shapes is None:
        return data, None
    label = checked.provide_label
    if label is None:
        label = _descs_for(module, expected, "label", [checked.label_shapes], None)[0]
    return data, label
