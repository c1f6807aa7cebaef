"""Named inputs of a sample, their checks, and packing one device's samples (private).

A sample is a tuple (in declaration order) or a dict (by name) of arrays, one per declared
:class:`Input`. This module turns samples into checked numpy arrays and packs the samples of
one device into one padded array per input. It imports numpy only: it runs in the
DataLoader's worker processes as well as in the main one.
"""

import math
import numbers
from typing import Optional, Sequence, Tuple

import numpy as np

from ..errors import DataSpecError

__all__ = ["Input", "DataSpecError", "check_dtype", "check_inputs", "as_array", "as_fields",
           "check_fields", "sample_size", "pack_device", "MXNET_DTYPES"]

# The dtypes an MXNet 1.x NDArray holds (mx.nd.array raises KeyError on any other:
# complex, strings, bytes, objects).
MXNET_DTYPES = tuple(np.dtype(name) for name in (
    "float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"))
# Sample dtypes that convert to any of them without losing meaning: booleans, integers, floats.
_CONVERTIBLE_KINDS = "biuf"


def _check_axes(name, role, axes):
    if (not isinstance(axes, (tuple, list))
            or not all(isinstance(axis, numbers.Integral) and not isinstance(axis, bool)
                       and axis >= 0 for axis in axes)
            or len(set(axes)) != len(axes)):
        raise DataSpecError(f"input {name!r}: {role} must be a tuple of distinct axis numbers >= 0 "
                            f"(0 is the sample's first axis), got {axes!r}")
    return tuple(int(axis) for axis in axes)


class Input:
    """Declares one named input of a sample: which axes vary and what pads them.

    Every device's array of this input has shape ``(count,) + extents``: a
    sample's *size axes* are padded to the device's planned size (the extents
    the planner groups and balances by, rounded up with ``pad_to_multiple``),
    its *variable axes* to the largest extent among that device's samples, and
    its other axes must be equal in every sample (fixed-shape inputs such as
    ``im_info`` have neither and pass through).

    Parameters
    ----------
    name : str
        The input's name: the module's data or label name.
    size_axes : tuple of int, optional
        Sample axes that hold the sample's size, e.g. ``(1, 2)`` for an image
        ``(C, H, W)`` and ``(0, 1)`` for its label map ``(H, W)``. Every input
        that has them must agree on them within a sample.
    variable_axes : tuple of int, optional
        Other axes that vary, e.g. ``(0,)`` for a box list ``(K, 5)``; they may
        be 0 (an image without boxes).
    pad_value : float, optional
        What fills the padding: 0 for images (default), an ignore label such
        as 255 for segmentation maps, -1 for box rows. It must be a value of
        ``dtype``: for integer dtypes a whole number in the dtype's range (no
        NaN or infinity); for float dtypes a number that neither overflows to
        infinity nor vanishes to zero (it is rounded as data is).
    dtype : str, optional
        Type of the batch arrays (default ``'float32'``); one MXNet holds.
    layout : str, optional
        Layout of the batch arrays for their ``DataDesc`` (e.g. ``'NCHW'``);
        default MXNet's (batch axis 0).

    Raises
    ------
    DataSpecError
        If the name is empty, the axes are not distinct numbers >= 0 or
        overlap, the pad value is not a number or not a value of ``dtype``
        (300, -1 or 0.5 in uint8), or MXNet cannot hold ``dtype``.

    Examples
    --------
    >>> from mxpatch_bind import Input
    >>> Input("gt_boxes", variable_axes=(0,), pad_value=-1)
    Input('gt_boxes', size_axes=(), variable_axes=(0,), pad_value=-1, dtype='float32')
    """

    def __init__(self, name: str, size_axes: Sequence[int] = (),
                 variable_axes: Sequence[int] = (), pad_value: float = 0,
                 dtype: str = "float32", layout: Optional[str] = None) -> None:
        if not isinstance(name, str) or not name:
            raise DataSpecError(f"an input's name must be a non-empty str, got {name!r}")
        size_axes = _check_axes(name, "size_axes", size_axes)
        variable_axes = _check_axes(name, "variable_axes", variable_axes)
        if set(size_axes) & set(variable_axes):
            raise DataSpecError(f"input {name!r}: size_axes {size_axes!r} and variable_axes "
                                f"{variable_axes!r} overlap")
        if isinstance(pad_value, bool) or not isinstance(pad_value, numbers.Real):
            raise DataSpecError(f"input {name!r}: pad_value must be a number, got {pad_value!r}")
        np_dtype = check_dtype(dtype, f"input {name!r}: ")
        if not _is_value_of(np_dtype, pad_value):
            # np.full would silently wrap 300 to 44, -1 to 255, NaN to -2**31 and 0.5 to 0.
            raise DataSpecError(f"input {name!r}: pad_value {pad_value!r} is not a value of dtype "
                                f"{np_dtype}: expected {_values_of(np_dtype)}")
        self.name = name
        self.size_axes: Tuple[int, ...] = size_axes
        self.variable_axes: Tuple[int, ...] = variable_axes
        self.pad_value = pad_value
        self.dtype = np_dtype
        self.layout = layout

    def __repr__(self):
        return (f"Input({self.name!r}, size_axes={self.size_axes!r}, variable_axes="
               f"{self.variable_axes!r}, pad_value={self.pad_value!r}, dtype={str(self.dtype)!r})")

    def min_rank(self) -> int:
        """The least sample rank the declared axes fit in."""
        return max(self.size_axes + self.variable_axes, default=-1) + 1


def _is_value_of(dtype, value):
    """Whether padding with ``value`` in ``dtype`` gives ``value`` (floats: to their rounding)."""
    if dtype.kind in "biu":
        low, high = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if isinstance(value, numbers.Integral):  # exact, however large: no float() rounding
            return low <= int(value) <= high
        return math.isfinite(value) and float(value).is_integer() and low <= value <= high
    try:
        value = float(value)
    except OverflowError:  # an int past any float
        return False
    with np.errstate(over="ignore", under="ignore"):
        converted = float(np.asarray(value, dtype=dtype))
    if math.isfinite(value) and not math.isfinite(converted):
        return False
    return not (value != 0 and converted == 0)


def _values_of(dtype):
    if dtype.kind == "b":
        return "0 or 1"
    if dtype.kind in "iu":
        return f"a whole number from {np.iinfo(dtype).min} to {np.iinfo(dtype).max}"
    info = np.finfo(dtype)
    return (f"a number that stays finite and nonzero in {dtype} (magnitude up to about "
           f"{float(info.max):g}, nonzero from {float(info.smallest_subnormal):g}), or NaN, or "
           "infinite")


def check_dtype(dtype, where=""):
    """``dtype`` as a numpy dtype when MXNet holds it, else a DataSpecError."""
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype not in MXNET_DTYPES:
        raise DataSpecError(f'{where}dtype must be one MXNet holds ('
                            f'{", ".join(str(d) for d in MXNET_DTYPES)}), got {dtype!r}')
    return np_dtype


def check_inputs(data_inputs, label_inputs):
    """Return the declarations as one tuple (data first) after checking them together."""
    for role, inputs in (("inputs", data_inputs), ("label_inputs", label_inputs)):
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(i, Input) for i in inputs):
            raise DataSpecError(f"{role} must be a list of mxpatch_bind.Input, got {inputs!r}")
    if not data_inputs:
        raise DataSpecError("inputs is empty: declare at least one data Input")
    declared = tuple(data_inputs) + tuple(label_inputs)
    names = [one.name for one in declared]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise DataSpecError(f"input names must be unique, got {repeated!r} more than once")
    sized = [one for one in declared if one.size_axes]
    if not sized:
        raise DataSpecError("no input declares size_axes: the planner needs a size per sample, "
                            "e.g. Input('data', size_axes=(1, 2)) for (C, H, W) images")
    counts = {len(one.size_axes) for one in sized}
    if len(counts) > 1:
        listed = ", ".join(f"{one.name!r} {one.size_axes!r}" for one in sized)
        raise DataSpecError(f"inputs declare different numbers of size axes: {listed}")
    return declared


def as_array(value, where):
    """One input of one sample as a numpy array of a dtype MXNet can take."""
    if hasattr(value, "stype") and hasattr(value, "asnumpy"):
        # An MXNet NDArray (what mx.image.imdecode returns): dense ones are copied out,
        # sparse ones refused, since every input is padded into a dense array.
        if value.stype != "default":
            raise DataSpecError(f"{where} is a {value.stype} NDArray, expected a dense array")
        value = value.asnumpy()
    array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if array.dtype.kind not in _CONVERTIBLE_KINDS:
        raise DataSpecError(f"{where} has dtype {array.dtype}, expected numbers (booleans, "
                            "integers or floats: MXNet holds no complex, string or object arrays)")
    return array


def as_fields(sample, declared, index):
    """The sample's arrays in declaration order, from a tuple/list or a dict of them."""
    names = [one.name for one in declared]
    if isinstance(sample, dict):
        if set(sample) != set(names):
            raise DataSpecError(f"sample {index} has keys {sorted(sample)!r}, expected the "
                                f"declared inputs {names!r}")
        values = [sample[name] for name in names]
    elif isinstance(sample, (tuple, list)):
        if len(sample) != len(names):
            raise DataSpecError(f"sample {index} has {len(sample)} entries, expected {len(names)} "
                                f"(one per input {names!r})")
        values = list(sample)
    else:
        raise DataSpecError(f"sample {index} is a {type(sample).__name__}, expected a tuple or "
                            f"dict of arrays for the inputs {names!r}")
    return tuple(as_array(value, f"sample {index} input {one.name!r}")
                 for value, one in zip(values, declared))


def check_fields(fields, declared, index, reference=None):
    """Check one sample's arrays against the declarations (and sample 0's fixed axes)."""
    for position, (array, one) in enumerate(zip(fields, declared)):
        where = f"sample {index} input {one.name!r}"
        if array.ndim < one.min_rank():
            raise DataSpecError(f"{where} has shape {array.shape}, too few axes for size_axes "
                                f"{one.size_axes!r} and variable_axes {one.variable_axes!r}")
        if any(array.shape[axis] == 0 for axis in one.size_axes):
            raise DataSpecError(f"{where} has an empty size axis: shape {array.shape}")
        if reference is not None:
            expected = reference[position]
            if array.ndim != len(expected) or any(
                    array.shape[axis] != expected[axis] for axis in range(array.ndim)
                    if axis not in one.size_axes + one.variable_axes):
                raise DataSpecError(f"{where} has shape {array.shape}, expected {expected} on its "
                                    "fixed axes like sample 0 (axes other than "
                                    f"{one.size_axes + one.variable_axes!r})")
    sample_size(fields, declared, index)


def sample_size(fields, declared, index):
    """The sample's size: the extents of its size axes, equal in every input that has them."""
    sizes = [(one.name, tuple(array.shape[axis] for axis in one.size_axes))
             for array, one in zip(fields, declared) if one.size_axes]
    for name, size in sizes[1:]:
        if size != sizes[0][1]:
            raise DataSpecError(f"sample {index}: input {name!r} has size {size} on its size axes, "
                                f"input {sizes[0][0]!r} has {sizes[0][1]}")
    return sizes[0][1]


def pack_device(samples, declared, size, indices=None, narrow=False):
    """Pad one device's samples into one array per input, each sample at the start of every axis.

    ``samples`` are tuples of arrays (from :func:`as_fields`); ``size`` is the
    device's planned size, which every sample's size must fit in. With ``narrow``, an
    input is packed in its samples' own dtype where that converts to the declared one
    exactly (:func:`transfer_dtype`), for the receiver to convert.
    """
    indices = range(len(samples)) if indices is None else indices
    packed = []
    for position, one in enumerate(declared):
        arrays = [fields[position] for fields in samples]
        dtype = transfer_dtype(one, arrays) if narrow else one.dtype
        shape = list(arrays[0].shape)
        for axis in one.variable_axes:
            shape[axis] = max(array.shape[axis] for array in arrays)
        for axis, extent in zip(one.size_axes, size):
            shape[axis] = extent
        # np.zeros gets pages the kernel has zeroed already: cheaper than filling.
        out = (np.zeros([len(arrays)] + shape, dtype=dtype) if one.pad_value == 0
               else np.full([len(arrays)] + shape, one.pad_value, dtype=dtype))
        for row, (array, index) in enumerate(zip(arrays, indices)):
            if any(array.shape[axis] > extent for axis, extent in zip(one.size_axes, size)):
                raise DataSpecError(f"sample {index} input {one.name!r} has shape {array.shape}, "
                                    f"larger than its planned size {tuple(size)}: the sizes given "
                                    "disagree with the dataset")
            out[(row,) + tuple(slice(extent) for extent in array.shape)] = array
        packed.append(out)
    return packed


def transfer_dtype(one, arrays):
    """The narrowest dtype that carries ``arrays`` padded with ``one.pad_value`` exactly.

    The samples' own dtype (say uint8 images for float32 inputs: a quarter of the bytes) when
    they share one that MXNet holds, that is narrower than the declared dtype, that converts
    to it exactly (a safe cast) and that holds the pad value (-1 is no uint8); otherwise the
    declared dtype. Worker processes send batches through fresh shared memory, whose cost
    grows with the bytes (docs/performance.md, section 7).
    """
    dtypes = {array.dtype for array in arrays}
    if len(dtypes) != 1:
        return one.dtype
    dtype = dtypes.pop()
    fits = (dtype in MXNET_DTYPES and dtype.itemsize < one.dtype.itemsize
            and np.can_cast(dtype, one.dtype, casting="safe")
            and _holds(dtype, one.pad_value))
    return dtype if fits else one.dtype


def _holds(dtype, value):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return float(value).is_integer() and info.min <= value <= info.max
    return bool(np.asarray(value, dtype=dtype) == value)
