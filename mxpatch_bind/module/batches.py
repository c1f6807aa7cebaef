"""Check a forward batch against the module's inputs before anything is copied (private).

Every per-device forward asks :func:`check_device_batch` once and gets the whole answer: a
batch that does not fit (a device's inputs, its ``provide_*``, a training batch without the
labels the module is bound with, a short batch in training) raises
:class:`~mxpatch_bind.BatchError` naming the device, the input, what was given and what was
expected, while the module is still exactly as it was; a batch that fits comes back as one
:class:`Checked` whose fields need no second look. The checks read only Python attributes and
one ``shape`` per array, since they run on every batch.
"""

import numbers
from collections import namedtuple

import numpy as np
from mxnet.ndarray import NDArray

from ..errors import BatchError
from . import shapes

__all__ = ["Expected", "Checked", "check_device_batch", "check_flat_batch", "given"]

# numpy dtype kinds MXNet arrays can hold: bool, signed, unsigned, float (not complex,
# strings, objects, dates); NDArrays hold only those.
_ACCEPTED_KINDS = "biuf"

Expected = namedtuple("Expected", ["num_devices", "data_names", "data_ranks", "label_names",
                                   "label_ranks", "labels_bound", "training"],
                      defaults=(False, False))
Expected.__doc__ = ("What a batch must hold: device count, input names in the executors' order, "
                    "their ranks (``None`` where unknown); ``label_names`` empty: labels ignored; "
                    "``labels_bound``: the module is bound with labels, which a ``training`` "
                    "forward then needs.")

Checked = namedtuple("Checked", ["data", "label", "data_shapes", "label_shapes", "provide_data",
                                 "provide_label"])
Checked.__doc__ = ("A batch that passed: per-device lists of arrays, their shapes (tuples), and "
                   "each device's provide_data/provide_label entries (``None`` where a device "
                   "has none, the field ``None`` where no device has any); ``label`` and "
                   "``label_shapes`` are ``None`` without labels.")

# The batch forms, as the fix for a missing label names the field to fill.
_LABEL_FIX = {
    shapes.DEVICE_LISTS: "label=[[arrays of device 0], [arrays of device 1], ...], one list per "
                         "device as its data",
    shapes.BATCH_LIST: "label=[arrays] on every DataBatch of the list, as its data",
    shapes.STOCK: "label=[arrays], as its data",
}


def check_device_batch(data_batch, form, expected):
    """Validate a per-device batch (either form) whole and return its arrays and shapes.

    Parameters
    ----------
    data_batch : DataBatch or list of DataBatch
        A batch of form :data:`~mxpatch_bind.module.shapes.DEVICE_LISTS` or
        :data:`~mxpatch_bind.module.shapes.BATCH_LIST`.
    form : str
        What :func:`~mxpatch_bind.module.shapes.batch_form` said of it.
    expected : Expected
        The module's inputs, and whether this forward trains.

    Returns
    -------
    Checked

    Raises
    ------
    BatchError
        Naming the device index, the input, what was given and what was expected; also for a
        training batch without the labels the module is bound with (its devices would train
        on an earlier batch's labels), and for fewer device entries than contexts in training.

    Examples
    --------
    >>> import mxnet as mx
    >>> batch = mx.io.DataBatch(data=[[mx.nd.ones((2, 3))], [mx.nd.ones((1, 3))]])
    >>> expected = Expected(2, ['data'], [2], [], [])
    >>> check_device_batch(batch, shapes.DEVICE_LISTS, expected).data_shapes
    (((2, 3),), ((1, 3),))
    >>> trains = Expected(2, ['data'], [2], ['softmax_label'], [1], labels_bound=True,
    ...                   training=True)
    >>> try:
    ...     check_device_batch(batch, shapes.DEVICE_LISTS, trains)
    ... except BatchError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    the batch has no labels, but the module is bound with labels ['softmax_label'] and ...
    """
    data, label, provide_data, provide_label = _split(data_batch, form)
    _check_device_count(data, "data", expected.num_devices)
    num_given = len(data)
    provide_data = _per_device_provided(provide_data, "provide_data", num_given,
                                        expected.data_names)
    provide_label = _per_device_provided(provide_label, "provide_label", num_given,
                                         expected.label_names)
    data_shapes = _check_devices(data, "data", expected.data_names, expected.data_ranks)
    label_shapes = None
    if expected.label_names:
        label = _present_labels(label, num_given)
        if label is not None:
            label_shapes = _check_devices(label, "label", expected.label_names,
                                          expected.label_ranks)
    else:
        label = None  # a module without label inputs ignores labels, as stock does
    _check_short(num_given, expected)
    _check_labels_given(label, form, expected)
    _check_provided(provide_data, "data", expected.data_names, data_shapes)
    if label_shapes is not None:
        _check_provided(provide_label, "label", expected.label_names, label_shapes)
    return Checked(data, label, data_shapes, label_shapes, provide_data,
                   provide_label if label_shapes is not None else None)


def _check_short(num_given, expected):
    """A batch with fewer device entries than contexts (a tester's last batch) runs for
    inference only; in training it is refused, since the idle devices would have no samples."""
    if expected.training and num_given < expected.num_devices:
        raise BatchError(
            f"the batch has {num_given} device entries but the module has "
            f"{expected.num_devices} contexts; a short batch runs for inference only (forward "
            "with is_train=False, or a module bound with for_training=False): training it "
            "would leave the other devices without samples. Drop the last batch, or give "
            "every device samples")


def _check_labels_given(label, form, expected):
    """A training forward of a module bound with labels needs the batch's labels: without
    them every device would train on the labels an earlier batch left in its executor."""
    if label is None and expected.training and expected.labels_bound:
        raise BatchError(
            f"the batch has no labels, but the module is bound with labels "
            f"{list(expected.label_names)!r} and this forward trains (is_train=True, or None "
            "on a module bound for training): its devices would train on the labels an "
            f"earlier batch left behind. Give the batch its labels ({_LABEL_FIX[form]}), or "
            "run forward(batch, is_train=False) for inference")


def check_flat_batch(data_batch, expected):
    """Validate a flat (stock) batch for a module bound per device: one device, named inputs.

    Returns
    -------
    Checked
        Of one device: the arrays' shapes, and its ``provide_*`` and labels where given.

    Examples
    --------
    >>> import mxnet as mx
    >>> check_flat_batch(mx.io.DataBatch(data=[mx.nd.ones((3, 4))]),
    ...                  Expected(2, ['data'], [2], [], [])).data_shapes
    ((3, 4),)
    """
    data = getattr(data_batch, "data", None)
    if not isinstance(data, (list, tuple)):
        raise BatchError(f"the batch's data is {data!r}; expected a list of arrays, one per input "
                         f"{list(expected.data_names)!r}")
    shapes_ = _check_device(None, data, "data", expected.data_names, expected.data_ranks)
    provided = getattr(data_batch, "provide_data", None)
    provide_data = provided if given(provided) else None
    if provide_data is not None:
        _check_device_provided(None, provide_data, "data", expected.data_names, shapes_)
    label = getattr(data_batch, "label", None)
    label_shapes = provide_label = None
    if given(label) and expected.label_names:
        label_shapes = _check_device(None, label, "label", expected.label_names,
                                     expected.label_ranks)
        provided = getattr(data_batch, "provide_label", None)
        provide_label = provided if given(provided) else None
        if provide_label is not None:
            _check_device_provided(None, provide_label, "label", expected.label_names,
                                   label_shapes)
    else:
        label = None
    _check_labels_given(label, shapes.STOCK, expected)
    return Checked(data, label, shapes_, label_shapes, provide_data, provide_label)


def given(value):
    """Whether a batch field is there: not None and not an empty list (as stock reads
    ``if data_batch.label``, without asking an array for its truth value).

    Examples
    --------
    >>> given(None), given([]), given([None])
    (False, False, True)
    """
    return value is not None and not (isinstance(value, (list, tuple)) and len(value) == 0)


# --------------------------------------------------------------------------- the batch's parts
def _split(data_batch, form):
    """Per-device data, labels, provide_data and provide_label (lists; None where absent)."""
    if form == shapes.BATCH_LIST:
        _check_batch_entries(data_batch)
        data = [getattr(batch, "data", None) for batch in data_batch]
        label = [getattr(batch, "label", None) for batch in data_batch]
        provide_data = [getattr(batch, "provide_data", None) for batch in data_batch]
        provide_label = [getattr(batch, "provide_label", None) for batch in data_batch]
        return data, label, provide_data, provide_label
    return (data_batch.data, getattr(data_batch, "label", None),
            getattr(data_batch, "provide_data", None), getattr(data_batch, "provide_label", None))


def _check_batch_entries(batch_list):
    """Each entry of a list of batches is a batch (has ``data``): else name the device."""
    for device, batch in enumerate(batch_list):
        if not hasattr(batch, "data"):
            raise BatchError(f"device {device}'s entry of the list of batches is "
                             f"{_short(batch)}; expected a DataBatch (data=[arrays]) for every "
                             "device")


def _per_device_provided(provided, what, num_given, names):
    """One provide_* entry per device given (``None`` where a device has none, as the
    family's ``TestLoader.provide_label`` gives), or ``None`` when absent on every device."""
    if not given(provided):
        return None
    if not isinstance(provided, (list, tuple)):
        raise BatchError(f"the batch's {what} is {_short(provided)}; expected one entry per "
                         "device, each a list of (name, shape) or None, e.g. "
                         f"{_provided_example(names)}")
    if all(entry is None for entry in provided):
        return None
    if shapes.spec_form([entry for entry in provided if entry is not None]) == shapes.STOCK:
        raise BatchError(f"the batch's {what} {_short(provided)} is flat but its arrays are per "
                         "device; expected one entry per device, each a list of (name, shape) or "
                         f"None, e.g. {_provided_example(names)}")
    if len(provided) != num_given:
        raise BatchError(f"the batch's {what} has {len(provided)} device entries but its arrays "
                         f"have {num_given}: {_short(provided)}; expected one entry per device")
    return [entry if given(entry) else None for entry in provided]


def _provided_example(names):
    """An example of a per-device provide_* for these input names (two devices)."""
    if not names:
        return "[None, None]"
    name = names[0]
    return f"[[({name!r}, (2, ...))], [({name!r}, (1, ...))]], or None for a device without them"


def _check_device_count(devices, field, num_devices):
    if not devices or len(devices) > num_devices:
        raise BatchError(f"the batch's {field} has {len(devices)} device entries but the module "
                         f"has {num_devices} contexts; expected one list of arrays per device "
                         "(fewer only for inference)")


def _present_labels(label, num_given):
    """The per-device labels, or None when absent on every device (``None``, ``[]`` or one
    ``None`` per device); a mix is an error."""
    if not given(label):
        return None
    if not isinstance(label, (list, tuple)):
        raise BatchError(f"the batch's label is {label!r}; expected None or one list of arrays per "
                         "device")
    present = [given(device) for device in label]
    if not any(present):
        return None
    if len(label) != num_given:
        raise BatchError(f"the batch's label has {len(label)} device entries but its data has "
                         f"{num_given}; expected one list of arrays per device")
    if not all(present):
        missing = present.index(False)
        raise BatchError(f"batch device {missing} has no labels but device {present.index(True)} "
                         f"has: given {label[missing]!r}; expected labels on every device or on "
                         "none")
    return list(label)


# --------------------------------------------------------------------------- arrays
def _check_devices(devices, field, names, ranks):
    return tuple(_check_device(index, arrays, field, names, ranks)
                 for index, arrays in enumerate(devices))


def _where(device, field, name):
    device_part = "the batch" if device is None else f"batch device {device}"
    return f"{device_part}, {field} input {name!r}"


def _check_device(device, arrays, field, names, ranks):
    if not isinstance(arrays, (list, tuple)) or len(arrays) != len(names):
        where = "the batch" if device is None else f"batch device {device}"
        raise BatchError(f"{where} gives {field} {_short(arrays)}; expected a list of {len(names)} "
                         f"arrays, one per input {list(names)!r}")
    return tuple(_check_array(device, field, name, array, rank)
                 for name, array, rank in zip(names, arrays, ranks))


def _check_array(device, field, name, array, rank):
    if isinstance(array, NDArray):
        shape = array.shape
    elif isinstance(array, np.ndarray):
        if array.dtype.kind not in _ACCEPTED_KINDS:
            raise BatchError(f"{_where(device, field, name)}: given an array of dtype "
                             f"{str(array.dtype)!r}; expected a numeric dtype MXNet holds (bool, "
                             "int, uint, float)")
        shape = array.shape
    else:
        raise BatchError(f"{_where(device, field, name)}: given {_short(array)}; expected an "
                         "NDArray or a numpy array")
    if rank is not None and len(shape) != rank:
        raise BatchError(f"{_where(device, field, name)}: given shape {shape!r} ({len(shape)} "
                         f"axes); expected {rank} axes, as the module is bound")
    if 0 in shape or not shape:
        raise BatchError(f"{_where(device, field, name)}: given shape {shape!r}; expected at least "
                         "one element on every axis")
    return shape


def _same_shape(provided, shape):
    return (isinstance(provided, (list, tuple)) and len(provided) == len(shape)
            and all(isinstance(dim, numbers.Integral) and dim == size
                    for dim, size in zip(provided, shape)))


def _short(value):
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


# --------------------------------------------------------------------------- provide_*
def _check_provided(provided, field, names, device_shapes):
    if provided is None:
        return
    for device, (entries, shapes_) in enumerate(zip(provided, device_shapes)):
        if entries is not None:
            _check_device_provided(device, entries, field, names, shapes_)


def _check_device_provided(device, entries, field, names, array_shapes):
    """provide_data / provide_label of one device name the inputs and match the arrays."""
    what = "provide_" + field
    where = "the batch" if device is None else f"batch device {device}"
    if not isinstance(entries, (list, tuple)) or len(entries) != len(names):
        raise BatchError(f"{where} gives {what} {_short(entries)}; expected {len(names)} (name, "
                         f"shape) entries for {list(names)!r}")
    for entry, name, shape in zip(entries, names, array_shapes):
        if not (isinstance(entry, (list, tuple)) and len(entry) >= 2):
            raise BatchError(f"{where} gives {what} entry {_short(entry)}; expected (name, shape) "
                             "or DataDesc")
        if not isinstance(entry[0], str) or entry[0] != name:
            raise BatchError(f"{where} gives {what} {entry[0]!r} for input {name!r}; expected the "
                             f"inputs in the module's order {list(names)!r}")
        if not _same_shape(entry[1], shape):
            raise BatchError(f"{_where(device, field, name)}: {what} says shape {entry[1]!r} but "
                             f"the array has shape {shape!r}; expected the array's own shape "
                             f"(make {what} from the arrays, or leave it out)")
