"""Parse and validate stock and per-device shape specs (private; touches no MXNet state).

A *stock* spec is MXNet's flat list of ``(name, shape)`` pairs or ``DataDesc``;
a *per-device* spec has one such list per context. :func:`spec_form` tells the
two apart cheaply, so the stock path costs almost nothing; :func:`parse_device_shapes`
turns a per-device spec into one normalised :class:`DeviceShapes` or raises
:class:`~mxpatch_bind.ShapeSpecError` naming the device, the entry and the expected form.
:func:`batch_form` tells the three forms of a forward batch apart, as cheaply.
"""

import functools
import math
from collections import namedtuple

from .._mxnet_env import max_array_elements
from .._values import is_integer
from ..errors import ShapeSpecError

__all__ = ["STOCK", "PER_DEVICE", "DEVICE_LISTS", "BATCH_LIST", "MAX_DIM", "spec_form",
           "batch_form", "parse_device_shapes", "check_layouts_agree", "check_dtypes_agree",
           "check_batch_sizes", "is_device_entry", "num_elements",
           "DeviceShapes"]

STOCK = "stock"
PER_DEVICE = "per-device"
# The two per-device forms of a forward batch (a flat DataBatch is STOCK).
DEVICE_LISTS = "device-lists"  # one DataBatch whose data/label hold one list per device
BATCH_LIST = "batch-list"      # a list of DataBatch, one per device

# MXNet passes dims to its C API as mx_int (int32), and without its INT64_TENSOR_SIZE build
# flag indexes tensors with int32 too: a bigger dim wraps around (simple_bind fails with
# "shape dim size must be >= -1"), a bigger tensor is allocated wrong (a crash later).
MAX_DIM = 2 ** 31 - 1

_ENTRY_FORM = "a list of (name, shape) pairs or DataDesc, e.g. [('data', (2, 3, 32, 48))]"
_SPEC_FORM = ("one entry per context, each a list of (name, shape) pairs or DataDesc, e.g. "
              "[[('data', (2, 3, 32, 48))], [('data', (3, 3, 40, 24))]]")
# The same forms for labels: an example that fits what is refused.
_LABEL_ENTRY_FORM = ("a list of (name, shape) pairs or DataDesc, e.g. "
                     "[('softmax_label', (2,))]")
_LABEL_SPEC_FORM = ("one entry per context, each a list of (name, shape) pairs or DataDesc, "
                    "e.g. [[('softmax_label', (2,))], [('softmax_label', (3,))]], or one None "
                    "per context for no labels")


def _spec_form_of(what):
    return _LABEL_SPEC_FORM if what.startswith("label") else _SPEC_FORM


def _entry_form_of(what):
    return _LABEL_ENTRY_FORM if what.startswith("label") else _ENTRY_FORM


class DeviceShapes(namedtuple("DeviceShapes", ["data", "label"])):
    """The normalised per-device spec: ``data[i]`` / ``label[i]`` list device i's DataDesc.

    ``label`` is ``None`` when there are no labels. Batch sizes, slices and the batch
    axis of every input are derived here once, so the executor group and the module
    read the same numbers.
    """

    __slots__ = ()

    @property
    def num_devices(self):
        """Number of devices described."""
        return len(self.data)

    @property
    def device_batch_sizes(self):
        """Samples on each device (1 where no input has a batch axis, as stock slices it)."""
        return [_device_batch_size(descs) for descs in self.data]

    @property
    def total_batch_size(self):
        """Samples on all devices together: the ``batch_size`` ``rescale_grad`` divides by."""
        return sum(self.device_batch_sizes)

    @property
    def slices(self):
        """Each device's rows of the concatenated (merged) batch."""
        slices, start = [], 0
        for size in self.device_batch_sizes:
            slices.append(slice(start, start + size))
            start += size
        return slices

    @property
    def data_axes(self):
        """Batch axis of each data input (from its layout), as stock ``data_layouts``."""
        return [_batch_axis(desc) for desc in self.data[0]]

    @property
    def label_axes(self):
        """Batch axis of each label input, or ``None`` without labels."""
        if self.label is None:
            return None
        return [_batch_axis(desc) for desc in self.label[0]]

    def input_batch_sizes(self, device):
        """``{name: samples}`` of every input of one device that has a batch axis."""
        descs = list(self.data[device]) + list(self.label[device] if self.label else [])
        return {desc.name: desc.shape[_batch_axis(desc)] for desc in descs
                if _batch_axis(desc) >= 0}

    def shapes_of(self, device):
        """``{name: shape}`` of every input of one device, for ``Executor.reshape``."""
        descs = list(self.data[device]) + list(self.label[device] if self.label else [])
        return {desc.name: tuple(desc.shape) for desc in descs}


def _batch_axis(desc):
    return _layout_batch_axis(desc.layout)


@functools.lru_cache(maxsize=None)
def _layout_batch_axis(layout):
    # Parsing and reshaping ask this a few dozen times per call; layouts are few.
    from mxnet.io import DataDesc
    return DataDesc.get_batch_axis(layout)


def _device_batch_size(descs):
    for desc in descs:
        axis = _batch_axis(desc)
        if axis >= 0:
            return desc.shape[axis]
    return 1


def _is_stock_entry(entry):
    """A ``(name, shape, ...)`` tuple/list or a DataDesc (itself a namedtuple)."""
    return isinstance(entry, (tuple, list)) and len(entry) > 0 and isinstance(entry[0], str)


def is_device_entry(entry):
    """A list/tuple that is not itself a ``(name, shape)`` pair or a DataDesc: one device's
    entries (the one test of "is this per device?" for an entry, ``compat``'s too)."""
    return isinstance(entry, (tuple, list)) and not _is_stock_entry(entry)


def spec_form(data_shapes, label_shapes=None):
    """Tell a stock spec from a per-device one without validating either.

    Parameters
    ----------
    data_shapes : list
        What the caller passed as ``data_shapes``.
    label_shapes : list or None
        What the caller passed as ``label_shapes``.

    Returns
    -------
    str
        :data:`PER_DEVICE` when any data entry is a list of entries,
        else :data:`STOCK` (handed to MXNet untouched, errors included).

    Raises
    ------
    ShapeSpecError
        When data is stock but the labels are per-device, or when a flat list names an input
        more than once (a per-device spec written flat: MXNet would say only that the names
        do not match).

    Examples
    --------
    >>> spec_form([('data', (4, 3))])
    'stock'
    >>> spec_form([[('data', (1, 3))], [('data', (3, 3))]])
    'per-device'
    >>> try:
    ...     spec_form([('data', (1, 3)), ('data', (3, 3))])
    ... except ShapeSpecError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    data_shapes [('data', (1, 3)), ('data', (3, 3))] names 'data' 2 times: ...
    """
    if isinstance(data_shapes, DeviceShapes):
        return PER_DEVICE
    if isinstance(data_shapes, (list, tuple)) and any(is_device_entry(e) for e in data_shapes):
        return PER_DEVICE
    if isinstance(label_shapes, (list, tuple)) and any(is_device_entry(e) for e in label_shapes):
        raise ShapeSpecError(
            f"label_shapes {label_shapes!r} is per-device but data_shapes {data_shapes!r} is flat; "
            f"pass both in the same form: {_SPEC_FORM}")
    _check_not_flattened(data_shapes, "data_shapes")
    _check_not_flattened(label_shapes, "label_shapes")
    return STOCK


def _check_not_flattened(entries, what):
    """A flat list that names an input twice is a per-device spec written without its inner
    lists (``[('data', s0), ('data', s1)]``): say so, with the nested form of those entries."""
    if not isinstance(entries, (list, tuple)):
        return  # not a spec at all: MXNet's own error names it
    names = [entry[0] for entry in entries if _is_stock_entry(entry)]
    if len(set(names)) == len(names):
        return
    repeated = next(name for name in names if names.count(name) > 1)
    raise ShapeSpecError(
        f"{what} {list(entries)!r} names {repeated!r} {names.count(repeated)} times: a flat "
        "list describes one batch that MXNet splits across the devices, and names each input "
        "once. For a shape per device, give one list per device: "
        f"{_nested(entries)!r}")


def _nested(entries):
    """A flat list's entries as one list per device: device i takes the i-th entry of each
    name, written as ``(name, shape)``."""
    devices, seen = [], {}
    for entry in filter(_is_stock_entry, entries):
        index = seen.get(entry[0], 0)
        seen[entry[0]] = index + 1
        if index == len(devices):
            devices.append([])
        devices[index].append((entry[0], entry[1] if len(entry) > 1 else None))
    return devices


def batch_form(data_batch):
    """Tell the three forms of a forward batch apart without validating any.

    Parameters
    ----------
    data_batch : DataBatch or list of DataBatch
        What the caller passed to ``forward``.

    Returns
    -------
    str
        :data:`BATCH_LIST` for a list any of whose entries has ``data`` (one batch
        per device); :data:`DEVICE_LISTS` for a batch whose first ``data`` entry is itself
        a list (one list of arrays per device); else :data:`STOCK` (handed to MXNet).

    Examples
    --------
    >>> from collections import namedtuple
    >>> Batch = namedtuple('Batch', 'data label')
    >>> batch_form(Batch(['x'], None)), batch_form(Batch([['x0'], ['x1']], None))
    ('stock', 'device-lists')
    >>> batch_form([Batch(['x0'], None), Batch(['x1'], None)])
    'batch-list'
    """
    if isinstance(data_batch, list):
        # Any entry with ``data``: a list of batches, one of which may be wrong (named then).
        return BATCH_LIST if any(hasattr(entry, "data") for entry in data_batch) else STOCK
    data = getattr(data_batch, "data", None)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], (list, tuple)):
        return DEVICE_LISTS
    return STOCK


def parse_device_shapes(data_shapes, label_shapes, data_names, label_names, num_devices,
                        samples_per_input=True):
    """Validate a per-device spec and normalise it to :class:`DeviceShapes`.

    Parameters
    ----------
    data_shapes : list of list of (str, tuple) or DataDesc
        One entry per device.
    label_shapes : list of list of (str, tuple) or DataDesc, or None
        The same form; ``None``, or a list of all ``None``, means no labels.
    data_names, label_names : list of str
        The module's input names; every device must name exactly these.
    num_devices : int
        Number of contexts the module runs on.
    samples_per_input : bool
        Default ``True``: each device's inputs must hold the same number of samples
        (:func:`check_batch_sizes`). ``False`` for a module that takes the fork's inputs
        (:func:`checks_samples_per_input`).

    Returns
    -------
    DeviceShapes

    Raises
    ------
    ShapeSpecError
        Naming the device index, the offending entry and the expected form.

    Examples
    --------
    >>> spec = parse_device_shapes([[('data', (2, 3, 8, 8))], [('data', (3, 3, 4, 6))]],
    ...                            None, ['data'], [], 2)
    >>> spec.device_batch_sizes, spec.total_batch_size
    ([2, 3], 5)
    """
    if isinstance(data_shapes, DeviceShapes):
        return _check_parsed(data_shapes, label_shapes, data_names, label_names, num_devices)
    data = _parse_devices(data_shapes, "data_shapes", data_names, num_devices)
    label = _parse_labels(label_shapes, label_names, num_devices)
    spec = DeviceShapes(data, label)
    check_layouts_agree(spec)
    check_dtypes_agree(spec)
    if samples_per_input:
        check_batch_sizes(spec, ShapeSpecError, "data_shapes device")
    return spec


def _check_parsed(spec, label_shapes, data_names, label_names, num_devices):
    """An already parsed spec: not parsed again, only checked to fit the module it is handed
    to (one parsed for another module would otherwise bind the wrong devices silently)."""
    if label_shapes is not None:
        raise ShapeSpecError("label_shapes must be None when data_shapes is a parsed DeviceShapes "
                             f"(it holds the labels); got {label_shapes!r}")
    if spec.num_devices != num_devices:
        raise ShapeSpecError(f"the spec describes {spec.num_devices} devices but the module has "
                             f"{num_devices} contexts: {spec!r}")
    _check_names(spec.data, "data_shapes", data_names)
    if spec.label is not None:
        _check_names(spec.label, "label_shapes", label_names)
    return spec


def _parse_labels(label_shapes, label_names, num_devices):
    if label_shapes is None:
        return None
    if not isinstance(label_shapes, (list, tuple)):
        raise ShapeSpecError(f"label_shapes must be None or {_LABEL_SPEC_FORM}; got "
                             f"{label_shapes!r}")
    present = [entry is not None for entry in label_shapes]
    if not any(present):
        return None
    if not all(present):
        missing = present.index(False)
        raise ShapeSpecError(
            f"label_shapes gives labels for some devices but None for device {missing}: "
            f"{label_shapes!r}; give every device its labels or pass None for all")
    return _parse_devices(label_shapes, "label_shapes", label_names, num_devices)


def _parse_devices(spec, what, names, num_devices):
    if not isinstance(spec, (list, tuple)):
        raise ShapeSpecError(f"{what} must be {_spec_form_of(what)}; got {spec!r}")
    if len(spec) != num_devices:
        raise ShapeSpecError(
            f"{what} has {len(spec)} entries but the module has {num_devices} contexts; expected "
            f"{_spec_form_of(what)}; got {spec!r}")
    devices = [_parse_device(i, entry, what) for i, entry in enumerate(spec)]
    _check_names(devices, what, names)
    return devices


def _parse_device(index, entry, what):
    if not is_device_entry(entry):
        kind = (f"a flat (name, shape) entry {entry!r}" if _is_stock_entry(entry)
                else f"{entry!r}")
        raise ShapeSpecError(
            f"{what}[{index}] is {kind}, mixed into a per-device spec; expected "
            f"{_entry_form_of(what)}")
    return [_parse_desc(index, item, what) for item in entry]


def _parse_desc(index, item, what):
    from mxnet.io import DataDesc
    if isinstance(item, DataDesc):
        name, shape = item.name, item.shape
    elif _is_stock_entry(item) and 2 <= len(item) <= 4:
        name, shape = item[0], item[1]
    else:
        raise ShapeSpecError(f"{what}[{index}] has entry {item!r}; expected (name, shape) or "
                             f"DataDesc, as in {_entry_form_of(what)}")
    dims = _check_shape(index, name, shape, what)
    desc = (DataDesc(name, dims, item.dtype, item.layout) if isinstance(item, DataDesc)
            else DataDesc(name, dims, *item[2:]))
    _check_dtype_and_layout(index, desc, what)
    return desc


def _check_dtype_and_layout(index, desc, what):
    import numpy as np
    try:
        kind = np.dtype(desc.dtype).kind
    except TypeError:
        kind = None
    if kind not in ("b", "i", "u", "f"):
        raise ShapeSpecError(f"{what}[{index}] gives {desc.name!r} the dtype {desc.dtype!r}; "
                             "expected a numeric numpy dtype, e.g. 'float32'")
    if desc.layout is not None and not isinstance(desc.layout, str):
        raise ShapeSpecError(f"{what}[{index}] gives {desc.name!r} the layout {desc.layout!r}; "
                             "expected None or a string such as 'NCHW'")


def _check_shape(index, name, shape, what):
    if not isinstance(shape, (tuple, list)) or len(shape) == 0:
        raise ShapeSpecError(f"{what}[{index}] gives {name!r} the shape {shape!r}; expected a "
                             "non-empty tuple of positive ints")
    for dim in shape:
        if not is_integer(dim) or dim <= 0:
            raise ShapeSpecError(f"{what}[{index}] gives {name!r} the shape {shape!r} with "
                                 f"dimension {dim!r}; expected positive ints")
        if dim > MAX_DIM:
            raise ShapeSpecError(f"{what}[{index}] gives {name!r} the shape {shape!r} with "
                                 f"dimension {dim!r}; MXNet holds dimensions up to {MAX_DIM} "
                                 "(int32)")
    dims = tuple(int(dim) for dim in shape)
    elements = num_elements(dims)
    limit = max_array_elements()
    if elements > limit:
        raise ShapeSpecError(f"{what}[{index}] gives {name!r} the shape {shape!r} of {elements} "
                             f"elements; this MXNet holds arrays of up to {limit} elements")
    return dims


def num_elements(shape):
    """The number of elements of an array of ``shape``, on Python ints (never wrapping)."""
    return math.prod(int(dim) for dim in shape)


def _check_names(devices, what, names):
    first = [desc.name for desc in devices[0]]
    for index, descs in enumerate(devices):
        device_names = [desc.name for desc in descs]
        if len(set(device_names)) != len(device_names):
            raise ShapeSpecError(f"{what}[{index}] names an input twice: {device_names!r}")
        if device_names != first:
            raise ShapeSpecError(f"{what}[{index}] names {device_names!r} but device 0 names "
                                 f"{first!r}; every device must name the same inputs in the same "
                                 "order")
    if sorted(first) != sorted(names):
        raise ShapeSpecError(f"{what} names {first!r} but the module expects {list(names)!r}")


def check_layouts_agree(spec):
    """Every device gives each input the same number of axes and puts its batch axis at
    the same place, inside its shape.

    A batch is checked against one rank per input, and a merged output against one batch
    axis: a device whose input had another rank could be bound but never fed.

    Examples
    --------
    >>> from mxnet.io import DataDesc
    >>> spec = DeviceShapes([[DataDesc('data', (2, 3), layout='NC')],
    ...                      [DataDesc('data', (3, 2), layout='CN')]], None)
    >>> try:
    ...     check_layouts_agree(spec)
    ... except ShapeSpecError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    data_shapes[1] gives 'data' the layout 'CN' but device 0 gives 'NC'; ...
    """
    for what, index, desc, first in _beside_device_0(spec):
        if len(desc.shape) != len(first.shape):
            raise ShapeSpecError(
                f"{what}[{index}] gives {desc.name!r} the shape {desc.shape!r}, of rank "
                f"{len(desc.shape)}, but device 0 gives {first.shape!r}, of rank {len(first.shape)}"
                "; every device must give an input the same number of axes")
        axis = _batch_axis(desc)
        if axis != _batch_axis(first):
            raise ShapeSpecError(
                f"{what}[{index}] gives {desc.name!r} the layout {desc.layout!r} but device 0 "
                f"gives {first.layout!r}; the batch axis must be the same on every device")
        if axis >= len(desc.shape):
            raise ShapeSpecError(
                f"{what}[{index}] gives {desc.name!r} the layout {desc.layout!r}, whose batch axis "
                f"{axis} is outside the shape {desc.shape!r}")


def check_dtypes_agree(spec):
    """Every device holds each input in the same dtype, as one flat stock spec does.

    The devices share parameters, and their gradients are summed: a device computing in
    another precision than the others would train silently differently.

    Examples
    --------
    >>> from mxnet.io import DataDesc
    >>> spec = DeviceShapes([[DataDesc('data', (2, 3))], [DataDesc('data', (3, 3), 'float16')]],
    ...                     None)
    >>> try:
    ...     check_dtypes_agree(spec)
    ... except ShapeSpecError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    data_shapes[1] gives 'data' the dtype float16 but device 0 gives float32; ...
    """
    import numpy as np
    for what, index, desc, first in _beside_device_0(spec):
        if np.dtype(desc.dtype) != np.dtype(first.dtype):
            raise ShapeSpecError(
                f"{what}[{index}] gives {desc.name!r} the dtype {np.dtype(desc.dtype)} but device "
                f"0 gives {np.dtype(first.dtype)}; every device must hold an input in the same "
                "dtype")


def _beside_device_0(spec):
    """``(field, device, desc, device 0's desc of that input)`` for every input of a spec."""
    for what, devices in (("data_shapes", spec.data), ("label_shapes", spec.label or [])):
        for index, descs in enumerate(devices):
            for desc, first in zip(descs, devices[0]):
                yield what, index, desc, first


# Set on a module by mxpatch_bind.compat: it takes inputs as the fork did, whose executor group
# never sliced an input, so an input's first axis need not count samples (FCIS's gt_masks:
# (objects, height, width) beside data (1, 3, height, width)).
FORK_INPUTS = "_mxpatch_bind_fork_inputs"


def checks_samples_per_input(module):
    """Whether ``module``'s per-device shapes and batches go through :func:`check_batch_sizes`
    (every module but those :mod:`mxpatch_bind.compat` makes)."""
    return not getattr(module, FORK_INPUTS, False)


def check_batch_sizes(spec, error, where):
    """Each device's inputs hold the same number of samples (read from their layouts): the
    one check of a spec parsed here and of a batch's (``error`` and ``where`` name which).

    Examples
    --------
    >>> import mxnet as mx
    >>> spec = DeviceShapes([[mx.io.DataDesc('data', (2, 3))]], [[mx.io.DataDesc('label', (3,))]])
    >>> try:
    ...     check_batch_sizes(spec, ValueError, "batch device")
    ... except ValueError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    batch device 0 holds different numbers of samples per input: {'data': 2, 'label': 3}; ...
    """
    for device in range(spec.num_devices):
        sizes = spec.input_batch_sizes(device)
        if len(set(sizes.values())) > 1:
            raise error(f"{where} {device} holds different numbers of samples per input: "
                        f"{sizes!r}; expected the same on every input of a device")
