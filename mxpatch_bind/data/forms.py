"""The forms ``PerDeviceIter`` takes its samples in, read and checked (private).

The single-input form (``data`` arrays, ``label``), the several-inputs form in memory
(``inputs=``) and the lazy form (``inputs=`` with ``sizes``) are told apart and read here,
once, in :func:`read_form`; so are the iterator's integer and flag options. Every refusal is
a :class:`~mxpatch_bind.DataSpecError` (a ``DataLoadError`` for a sample 0 that cannot be
read) naming the value and the form expected, raised before the iterator exists.
"""


import numpy as np

from .._values import is_flag, is_integer
from ..errors import DataLoadError
from . import inputs as _inputs
from . import limits as _limits
from .inputs import DataSpecError, Input

# Channels-first layouts only: samples are padded at the end of every axis after C.
_LAYOUTS = ("NCW", "NCHW", "NCDHW")


def check_int(name, value, minimum=1, maximum=None, why=""):
    """Return ``value`` when it is an integer in ``[minimum, maximum]``, else raise DataSpecError
    naming it."""
    if (not is_integer(value) or value < minimum
            or (maximum is not None and value > maximum)):
        bounds = f">= {minimum}" if maximum is None else \
            f">= {minimum} and <= {maximum}{why}"
        raise DataSpecError(f"{name} must be an integer {bounds}, got {value!r}")
    return int(value)


def per_device_count(num_devices, batch_per_device, batch_size):
    """Samples per device from ``batch_per_device`` or ``batch_size`` (all devices together),
    whichever is given; both must then agree. DataSpecError otherwise."""
    if batch_size is None:
        if batch_per_device is None:
            raise DataSpecError("give batch_per_device (samples per device) or batch_size "
                                "(samples per batch over all devices)")
        return check_int("batch_per_device", batch_per_device)
    batch_size = check_int("batch_size", batch_size)
    if batch_size % num_devices:
        raise DataSpecError(f"batch_size must be a multiple of num_devices={num_devices}, got "
                            f"{batch_size!r}; or give batch_per_device")
    if batch_per_device is not None and check_int("batch_per_device", batch_per_device) * \
            num_devices != batch_size:
        raise DataSpecError(f"batch_size={batch_size!r} and batch_per_device="
                            f"{batch_per_device!r} disagree: batch_size is batch_per_device "
                            f"times num_devices={num_devices}; give one of them")
    return batch_size // num_devices


def describe(it, num_samples, declared, num_data):
    """``PerDeviceIter``'s repr: what it holds and how it splits it."""
    batches = f"{it.num_batches} batch{'es' if it.num_batches != 1 else ''}"
    extra = ", balanced" if it._balanced else ""
    if it._num_parts > 1:
        extra += f", part {it._part_index} of {it._num_parts}"
    labels = [one.name for one in declared[num_data:]]
    return (f"PerDeviceIter({num_samples} sample{'s' if num_samples != 1 else ''}, {batches} of "
            f"{it.num_devices} device{'s' if it.num_devices != 1 else ''} x "
            f"{it.batch_per_device}{extra}, data "
            f"{[one.name for one in declared[:num_data]]!r}"
            + (f", label {labels!r})" if labels else ")"))


def check_flag(name, value):
    """``value`` as a bool when it is a flag (:func:`is_flag`), else :class:`DataSpecError`:
    ``bool()`` would take the string ``"False"`` as true and silently plan another epoch."""
    if is_flag(value):
        return bool(value)
    raise DataSpecError(f"{name} must be True or False, got {value!r}")


def _check_samples(data, layout):
    """The single-input form's samples as arrays, checked against the layout."""
    samples = [_inputs.as_array(sample, f"sample {i}") for i, sample in enumerate(data)]
    if not samples:
        raise DataSpecError("data is empty: expected at least one sample")
    rank = len(layout) - 1
    for i, sample in enumerate(samples):
        if sample.ndim != rank:
            raise DataSpecError(f'sample {i} has shape {sample.shape}, expected rank {rank} ('
                                f'{", ".join(layout[1:])}) for layout {layout!r}')
        if sample.shape[0] != samples[0].shape[0]:
            raise DataSpecError(f"sample {i} has {sample.shape[0]} channels, expected "
                                f"{samples[0].shape[0]} like sample 0")
        if 0 in sample.shape:
            raise DataSpecError(f"sample {i} has an empty axis: shape {sample.shape}")
    return samples


def _check_labels(label, num_samples):
    """The single-input form's labels as arrays of one common shape, or None."""
    if label is None:
        return None
    labels = [_inputs.as_array(one, f"label {i}") for i, one in enumerate(label)]
    if len(labels) != num_samples:
        raise DataSpecError(f"label has {len(labels)} entries, expected {num_samples} (one per "
                            "sample in data)")
    for i, one in enumerate(labels):
        if one.shape != labels[0].shape:
            raise DataSpecError(f"label {i} has shape {one.shape}, expected {labels[0].shape} like "
                                "label 0")
    return labels


def _single_input_form(data, label, data_name, label_name, dtype, layout):
    """Declarations and samples of the single-input form: one image input, one fixed label."""
    if layout not in _LAYOUTS:
        raise DataSpecError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
    dtype = _inputs.check_dtype(dtype)
    samples = _check_samples(data, layout)
    labels = _check_labels(label, len(samples))
    declared = (Input(data_name, size_axes=tuple(range(1, len(layout) - 1)), dtype=dtype,
                      layout=layout),)
    if labels is None:
        return declared, [(sample,) for sample in samples]
    return declared + (Input(label_name, dtype=dtype),), list(zip(samples, labels))


def _checked_samples(data, declared):
    """Every sample of an in-memory sequence, converted and checked: ``(fields, sizes)``."""
    samples = []
    for index in range(len(data)):
        fields = _inputs.as_fields(data[index], declared, index)
        _inputs.check_fields(fields, declared, index,
                             [a.shape for a in samples[0]] if samples else None)
        samples.append(fields)
    sizes = [_inputs.sample_size(fields, declared, index) for index, fields in enumerate(samples)]
    return samples, np.array(sizes, dtype=np.int64)


def _checked_sizes(sizes, num_samples, num_axes):
    """Planned sizes from an ``(n, axes)`` array or a ``size_of(i)`` callable, checked."""
    # An extent beyond what one MXNet array holds could never be loaded.
    limit = _limits.max_array_elements()
    if callable(sizes):
        size_of = sizes
        rows = []
        for index in range(num_samples):
            size = size_of(index)
            if (not isinstance(size, (tuple, list, np.ndarray)) or len(size) != num_axes
                    or not all(is_integer(e) and 1 <= e <= limit for e in size)):
                raise DataSpecError(f"size_of({index}) returned {size!r}, expected a tuple of "
                                    f"{num_axes} integers >= 1 and <= {limit} (the sample's "
                                    "extents on its size axes)")
            rows.append(tuple(int(e) for e in size))
        return np.array(rows, dtype=np.int64).reshape(num_samples, num_axes)
    array = np.asarray(sizes)
    if (array.shape != (num_samples, num_axes) or array.dtype.kind not in "iu"
            or (array.size and (array.min() < 1 or array.max() > limit))):
        raise DataSpecError(f"sizes must be integers >= 1 and <= {limit} of shape "
                            f"{(num_samples, num_axes)} (one row of size-axis extents per sample), "
                            f"got {type(sizes).__name__} of dtype {array.dtype} and shape "
                            f"{array.shape}{_extremes(array)}")
    return array.astype(np.int64)


def _extremes(array):
    """``", from MIN to MAX"`` for a non-empty numeric array, else nothing."""
    if not array.size or array.dtype.kind not in "iufb":
        return ""
    return f", from {array.min()} to {array.max()}"


def _first_sample(dataset, declared, sizes):
    """Sample 0 of a lazy dataset, read once so that bad declarations fail in the constructor."""
    try:
        first = dataset[0]
    except Exception as error:
        name = type(dataset).__name__
        raise DataLoadError(f"dataset[0] raised {type(error).__name__}: {error} (dataset {name}, "
                            "read in the constructor to check the declarations)",
                            sample=0, dataset=name) from error
    fields = _inputs.as_fields(first, declared, 0)
    _inputs.check_fields(fields, declared, 0)
    size = _inputs.sample_size(fields, declared, 0)
    if size != tuple(sizes[0]):
        raise DataSpecError(f"the sizes given say sample 0 is {tuple(int(e) for e in sizes[0])}, "
                            f"but it has size {size} on its size axes")
    return fields



def read_form(data, label, inputs, label_inputs, sizes, data_name, label_name, dtype, layout):
    """The samples' source, the declarations, the planned sizes and sample 0's shapes."""
    if inputs is None:
        if sizes is not None or label_inputs:
            raise DataSpecError("sizes and label_inputs go with inputs=: declare the "
                                "sample's inputs, got inputs=None")
        declared, samples = _single_input_form(data, label, data_name, label_name, dtype,
                                               layout)
        planned = np.array([sample[0].shape[1:] for sample in samples], dtype=np.int64)
        return samples, declared, planned, [a.shape for a in samples[0]]
    if label is not None:
        raise DataSpecError("label is for the single-input form; with inputs=, samples carry "
                            "their labels: declare label_inputs, got label="
                            f"{type(label).__name__!r}")
    declared = _inputs.check_inputs(inputs, label_inputs)
    if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
        raise DataSpecError("data must be a sequence or dataset (__len__, __getitem__), got "
                            f"{type(data).__name__!r}")
    if len(data) == 0:
        raise DataSpecError("data is empty: expected at least one sample")
    if sizes is None:
        samples, planned = _checked_samples(data, declared)
        return samples, declared, planned, [a.shape for a in samples[0]]
    num_axes = len(next(one for one in declared if one.size_axes).size_axes)
    planned = _checked_sizes(sizes, len(data), num_axes)
    return data, declared, planned, [a.shape for a in _first_sample(data, declared, planned)]
