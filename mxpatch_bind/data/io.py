"""Per-device batches of variable-size samples (private; use ``mxpatch_bind.PerDeviceIter``)."""

import copy
import numbers
from typing import Any, List, Optional, Sequence

import mxnet as mx
import numpy as np

from ..errors import DataLoadError
from . import batch_loader as _batch_loader
from . import inputs as _inputs
from . import limits as _limits
from . import planning as _planning
from .inputs import DataSpecError, Input
from .planning import PaddingStats

__all__ = ["PerDeviceIter", "PaddingStats", "Input", "DataSpecError"]

# Channels-first layouts only: samples are padded at the end of every axis after C.
_LAYOUTS = ("NCW", "NCHW", "NCDHW")
# Batches grouped together by default when shuffling: random at the scale of 8 batches, and
# faster than arrival order (python -m benchmarks variable; docs/performance.md).
SHUFFLED_GROUP_WINDOW = 8


class CurrentBatchIter(mx.io.DataIter):
    """A ``DataIter`` whose ``next()`` keeps the batch it returns in ``_current``, which the
    stock accessors read (``PerDeviceIter``, ``PerDevicePrefetchingIter``)."""

    _current: mx.io.DataBatch

    def getdata(self):
        """The data arrays of the current batch (one list per device when per device)."""
        return self._current.data

    def getlabel(self):
        """The label arrays of the current batch (one list per device when per device)."""
        return self._current.label

    def getpad(self):
        """Number of filler samples at the end of the current batch."""
        return self._current.pad

    def getindex(self):
        """Dataset indices of the current batch in flat order, filler included."""
        return self._current.index


class _PerDeviceBatch(mx.io.DataBatch):
    """A DataBatch whose ``data`` and ``label`` are per-device lists."""

    def __str__(self):
        # DataBatch.__str__ reads ``d.shape`` of each entry and fails on per-device lists.
        def shapes(per_device):
            if per_device is None:
                return None
            return [[array.shape for array in arrays] for arrays in per_device]

        return "{}: data shapes: {} label shapes: {} pad: {}".format(
            type(self).__name__, shapes(self.data), shapes(self.label), self.pad)


def _check_int(name, value, minimum=1, maximum=None, why=""):
    """Return ``value`` when it is an integer in ``[minimum, maximum]``, else raise DataSpecError
    naming it."""
    # bool is an Integral, but True devices is a mistake, not a count.
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum
            or (maximum is not None and value > maximum)):
        bounds = ">= {}".format(minimum) if maximum is None else \
            ">= {} and <= {}{}".format(minimum, maximum, why)
        raise DataSpecError("{} must be an integer {}, got {!r}".format(name, bounds, value))
    return int(value)


def _check_flag(name, value):
    """Return ``value`` as a bool when it is True or False (numpy's too), else raise DataSpecError.

    ``bool()`` would take the string ``"False"`` as True and silently plan another epoch.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise DataSpecError("{} must be True or False, got {!r}".format(name, value))


def _check_samples(data, layout):
    """The single-input form's samples as arrays, checked against the layout."""
    samples = [_inputs.as_array(sample, "sample {}".format(i)) for i, sample in enumerate(data)]
    if not samples:
        raise DataSpecError("data is empty: expected at least one sample")
    rank = len(layout) - 1
    for i, sample in enumerate(samples):
        if sample.ndim != rank:
            raise DataSpecError("sample {} has shape {}, expected rank {} ({}) for layout {!r}"
                                .format(i, sample.shape, rank, ", ".join(layout[1:]), layout))
        if sample.shape[0] != samples[0].shape[0]:
            raise DataSpecError("sample {} has {} channels, expected {} like sample 0".format(
                i, sample.shape[0], samples[0].shape[0]))
        if 0 in sample.shape:
            raise DataSpecError("sample {} has an empty axis: shape {}".format(i, sample.shape))
    return samples


def _check_labels(label, num_samples):
    """The single-input form's labels as arrays of one common shape, or None."""
    if label is None:
        return None
    labels = [_inputs.as_array(one, "label {}".format(i)) for i, one in enumerate(label)]
    if len(labels) != num_samples:
        raise DataSpecError("label has {} entries, expected {} (one per sample in data)".format(
            len(labels), num_samples))
    for i, one in enumerate(labels):
        if one.shape != labels[0].shape:
            raise DataSpecError("label {} has shape {}, expected {} like label 0".format(
                i, one.shape, labels[0].shape))
    return labels


def _single_input_form(data, label, data_name, label_name, dtype, layout):
    """Declarations and samples of the single-input form: one image input, one fixed label."""
    if layout not in _LAYOUTS:
        raise DataSpecError("layout must be one of {}, got {!r}".format(_LAYOUTS, layout))
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
                    or not all(isinstance(e, numbers.Integral) and not isinstance(e, bool)
                               and 1 <= e <= limit for e in size)):
                raise DataSpecError("size_of({}) returned {!r}, expected a tuple of {} integers "
                                    ">= 1 and <= {} (the sample's extents on its size axes)"
                                    .format(index, size, num_axes, limit))
            rows.append(tuple(int(e) for e in size))
        return np.array(rows, dtype=np.int64).reshape(num_samples, num_axes)
    array = np.asarray(sizes)
    if (array.shape != (num_samples, num_axes) or array.dtype.kind not in "iu"
            or (array.size and (array.min() < 1 or array.max() > limit))):
        raise DataSpecError("sizes must be integers >= 1 and <= {} of shape {} (one row of "
                            "size-axis extents per sample), got {} of dtype {} and shape {}{}"
                            .format(limit, (num_samples, num_axes), type(sizes).__name__,
                                    array.dtype, array.shape, _extremes(array)))
    return array.astype(np.int64)


def _extremes(array):
    """``", from MIN to MAX"`` for a non-empty numeric array, else nothing."""
    if not array.size or array.dtype.kind not in "iufb":
        return ""
    return ", from {} to {}".format(array.min(), array.max())


def _first_sample(dataset, declared, sizes):
    """Sample 0 of a lazy dataset, read once so that bad declarations fail in the constructor."""
    try:
        first = dataset[0]
    except Exception as error:
        name = type(dataset).__name__
        raise DataLoadError("dataset[0] raised {}: {} (dataset {}, read in the constructor to "
                            "check the declarations)".format(type(error).__name__, error, name),
                            sample=0, dataset=name) from error
    fields = _inputs.as_fields(first, declared, 0)
    _inputs.check_fields(fields, declared, 0)
    size = _inputs.sample_size(fields, declared, 0)
    if size != tuple(sizes[0]):
        raise DataSpecError("the sizes given say sample 0 is {}, but it has size {} on its size "
                            "axes".format(tuple(int(e) for e in sizes[0]), size))
    return fields



def _read_form(data, label, inputs, label_inputs, sizes, data_name, label_name, dtype, layout):
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
        raise DataSpecError("label is for the single-input form; with inputs=, samples "
                            "carry their labels: declare label_inputs, got label={!r}"
                            .format(type(label).__name__))
    declared = _inputs.check_inputs(inputs, label_inputs)
    if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
        raise DataSpecError("data must be a sequence or dataset (__len__, __getitem__), "
                            "got {!r}".format(type(data).__name__))
    if len(data) == 0:
        raise DataSpecError("data is empty: expected at least one sample")
    if sizes is None:
        samples, planned = _checked_samples(data, declared)
        return samples, declared, planned, [a.shape for a in samples[0]]
    num_axes = len(next(one for one in declared if one.size_axes).size_axes)
    planned = _checked_sizes(sizes, len(data), num_axes)
    return data, declared, planned, [a.shape for a in _first_sample(data, declared, planned)]


class PerDeviceIter(CurrentBatchIter):
    """Iterate over variable-size samples, each device padded only to its own largest sample.

    Every batch gives each of ``num_devices`` devices ``batch_per_device``
    samples. A device's samples are zero-padded at the end of each spatial
    axis (bottom and right for images) to the largest extent among *that
    device's* samples, so devices get different shapes. ``data``, ``label``,
    ``provide_data`` and ``provide_label`` are per-device lists, the form the
    Deformable-ConvNets loaders use and a per-device ``Module.bind`` takes::

        provide_data = [[DataDesc('data', (b, C, H0, W0))], [DataDesc('data', (b, C, H1, W1))]]
        batch.data   = [[NDArray of device 0], [NDArray of device 1]]

    **Several named inputs** (``inputs=``, ``label_inputs=``): a sample is
    then a tuple (data inputs, then label inputs, in declaration order) or a
    dict by name of arrays, and each :class:`Input` says which of its axes
    hold the sample's size (padded to the device's planned size), which other
    axes vary (padded to the device's largest) and its pad value: images 0,
    segmentation maps an ignore label, box lists rows of -1. Inputs with
    neither (``im_info``) pass through. Every input appears in every device's
    ``provide_data`` / ``provide_label``. See ``docs/data.rst``.

    **Lazy loading** (a dataset plus ``sizes``): ``data`` may be any object
    with ``__len__`` and ``__getitem__`` (an ``mx.gluon.data.Dataset``
    included) and ``sizes`` the samples' sizes (an ``(n, axes)`` array, or a
    cheap ``size_of(i)`` such as :func:`mxpatch_bind.image_size` on the
    file's header), so that an epoch is planned without decoding anything.
    Samples are then read, decoded, transformed and packed per device by
    MXNet's own ``gluon.data.DataLoader``, in ``num_workers`` worker
    processes, ``prefetch`` batches ahead; batches come out in exactly the
    planned order, equal to those of the same samples held in memory.

    **Grouping policy** (``grouping=True``): the epoch's sample order (the
    dataset order, or a seeded permutation when ``shuffle``) is cut into
    windows of ``group_window`` batches. Each window's samples are split into
    groups of ``batch_per_device`` similar sizes: the split that pads least
    among "sort by one spatial axis, ties by the others, cut into runs" (one
    per axis) and "best fit" (seed a group with the largest sample left, add
    the samples that enlarge its bounding box least). Consecutive groups go to
    consecutive devices, ``num_devices`` groups per batch, so a batch holds
    similar sizes and its devices get similar shapes. With ``group_window=1``
    (the default without ``shuffle``) a batch holds the same samples as in
    arrival order, only arranged across devices; larger windows also choose
    which samples share a batch and pad less (see :meth:`padding_stats`).
    With ``shuffle`` the default window is 8 batches: sorting within a
    window keeps epochs random at the scale of the window and trains faster
    than arrival order (``python -m benchmarks variable``, figures in
    docs/performance.md). Every device
    gets the same number of samples. A synchronous step waits for its slowest
    device, and a device holding a large sample is slow whatever it shares
    it with, so large samples go together rather than being paired with small
    ones: pairing would pad more without shortening the step
    (``padding_stats().step_pixels`` measures the step).

    ``grouping=False`` keeps arrival order: samples are dealt to devices in
    the epoch's sample order, ``batch_per_device`` at a time.

    **Work-balanced devices** (``balanced=True``): batches hold the samples
    the grouping above puts together, ``batch_size`` of them, but devices may
    get different counts (each at least one): the batch is re-split so that
    its busiest device pads to the fewest pixels, choosing among the equal
    split and the best cut (by dynamic programming) of the batch ordered
    largest first, by pixels and by each size axis. A few large images on one
    device then take about as long as many small ones on another, and a
    balanced batch never waits for more pixels than the equal split.
    ``Module.init_optimizer``'s ``rescale_grad = 1/batch_size`` already counts
    all the batch's samples. A short last batch is split the same way,
    without filler (unless it has fewer samples than devices).

    **Shape rounding** (``pad_to_multiple=m``): every device's planned size is
    rounded up to a multiple of ``m``, so shapes recur and hit the executor
    cache; :meth:`padding_stats` counts the pixels it adds
    (``rounding_pixels``) and the distinct shapes left (``distinct_shapes``).

    **Order of predictions**: ``Module.predict()`` returns rows in the flat
    order of the batches (device 0's samples, then device 1's, batch after
    batch). :attr:`sample_order` gives the dataset index of each such row and
    :attr:`batch_indices` the per-device indices of each batch. Both describe
    the current epoch: ``predict()`` and ``score()`` call :meth:`reset` first,
    so read them afterwards.

    **Last batch**: when the number of samples is not a multiple of
    ``batch_size``, the last batch is completed with copies of its last real
    sample (copies add no padding), placed at the end of the flat order, and
    ``batch.pad`` counts them, so that ``predict()`` and ``iter_predict()``,
    which drop the last ``pad`` rows of each batch, drop exactly the filler.
    ``score()`` counts the filler in its metric, as it does with
    ``NDArrayIter(last_batch_handle='pad')``.

    Parameters
    ----------
    data : sequence of numpy.ndarray, or a dataset
        The single-input form: the samples, channels first (``(C, H, W)`` for
        layout ``'NCHW'``); spatial sizes may differ, rank and channel count
        may not. With ``inputs``: a sequence or dataset of samples, each a
        tuple or dict of arrays (numpy, anything ``numpy.asarray`` takes, or
        dense MXNet NDArrays, which are copied out).
    label : sequence, optional
        The single-input form: one label per sample, a number or arrays of
        one common shape. ``None`` (default) gives batches without labels.
    num_devices : int
        Number of devices each batch is split across (keyword only).
    batch_per_device : int
        Samples each device gets in every batch (keyword only); with
        ``balanced``, the batch holds ``num_devices * batch_per_device``.
    shuffle : bool, optional
        Permute the samples every epoch (default False).
    seed : int, optional
        Seed of the shuffle: epoch ``e`` is permuted by
        ``numpy.random.default_rng([seed, e])``, so equal seeds give equal
        orders, epoch after epoch. Default 0.
    grouping : bool, optional
        Group samples of similar size on each device (default True) or keep
        arrival order (False).
    group_window : int, optional
        Number of batches whose samples are grouped together. Default: 8 with
        ``shuffle``, else 1. Ignored when ``grouping`` is False.
    data_name, label_name : str, optional
        The single-input form's input names (default ``'data'``,
        ``'softmax_label'``).
    dtype : str or numpy.dtype, optional
        The single-input form's array type (default ``'float32'``).
    layout : {'NCHW', 'NCW', 'NCDHW'}, optional
        The single-input form's layout; samples have the layout without ``N``.
    inputs : list of Input, optional
        The data inputs of each sample (keyword only); selects the
        several-inputs form, where ``label``, ``data_name``, ``label_name``,
        ``dtype`` and ``layout`` are not used.
    label_inputs : list of Input, optional
        The label inputs of each sample, after the data inputs (default none).
    sizes : array or callable, optional
        With ``inputs``: each sample's extents on its size axes, an
        ``(n, axes)`` integer array or ``size_of(i) -> tuple``. Given, samples
        are loaded lazily (sample 0 is read once to check the declarations);
        omitted, every sample is read and checked in the constructor.
    num_workers : int, optional
        Worker processes of the DataLoader that reads and packs batches
        (default 0: the calling thread). With workers, the batch arrays are
        in shared CPU memory (``Context('cpu_shared', 0)``), as gluon
        DataLoader's are; without, on ``mx.cpu()``.
    prefetch : int, optional
        Batches the workers prepare ahead (default ``2 * num_workers``; with
        workers at least 1, so that the batch waited for is on its way while the
        iterator watches the workers).
    balanced : bool, optional
        Per-device counts that even out padded work (default False).
    pad_to_multiple : int, optional
        Round every device's planned size up to a multiple (default 1: none).
    num_parts, part_index : int, optional
        Read only part ``part_index`` of ``num_parts`` of every epoch (default 1 and 0: all
        of it), as MXNet's iterators name it: in a distributed job, ``kv.num_workers`` and
        ``kv.rank``. Every worker plans the whole epoch alike (same data, ``seed`` and
        options) and takes every ``num_parts``-th batch from ``part_index``, as many as every
        other part; the last ``num_batches % num_parts`` batches of the whole epoch are left
        out.

    Attributes
    ----------
    batch_size : int
        Samples per batch over all devices: ``num_devices * batch_per_device``.
    provide_data : list of list of DataDesc
        Per device, the data shapes of the batch the next call to
        :meth:`next` returns (of the last batch once the epoch is exhausted),
        so that ``Module.bind(data_shapes=it.provide_data)`` fits the first
        batch.
    provide_label : list of list of DataDesc or None
        Per device, the label shapes; None without labels.

    Raises
    ------
    DataSpecError
        A ``ValueError``: if ``data`` is empty, samples differ in rank or
        channel count or have an empty axis, hold dtypes MXNet cannot (complex,
        strings, bytes, objects) or are sparse NDArrays, ``label`` has the
        wrong length or mixed shapes, ``num_devices``, ``batch_per_device``,
        ``group_window``, ``pad_to_multiple`` or ``num_parts`` is not an integer
        >= 1, ``seed`` or ``num_workers`` is not an integer >= 0, ``part_index``
        is not one from 0 to ``num_parts - 1``, ``num_parts`` exceeds the
        epoch's batches, ``shuffle``,
        ``grouping`` or ``balanced`` is not True or False, ``layout`` or
        ``dtype`` is not supported; with ``inputs``: if the declarations
        clash, a sample is not a tuple or dict of the declared inputs, its
        fixed axes differ from sample 0's or its inputs disagree on its size,
        or ``sizes`` does not give one row of integers >= 1 per sample; if
        ``sizes`` or ``pad_to_multiple`` exceed ``2**31 - 1`` or a planned
        device array would hold more elements than one MXNet array can.
    DataLoadError
        If sample 0, read in the constructor, raises (it names the sample and
        the dataset). Batches that fail later: see :meth:`next`.

    Examples
    --------
    >>> import numpy as np
    >>> from mxpatch_bind import PerDeviceIter
    >>> images = [np.ones((3, h, w)) for h, w in [(4, 6), (8, 2), (4, 5), (8, 3)]]
    >>> it = PerDeviceIter(images, label=[0, 1, 2, 3], num_devices=2,
    ...                    batch_per_device=2)
    >>> [[desc.shape for desc in device] for device in it.provide_data]
    [[(2, 3, 4, 6)], [(2, 3, 8, 3)]]
    >>> batch = it.next()
    >>> [device[0].asnumpy().tolist() for device in batch.label]
    [[2.0, 0.0], [1.0, 3.0]]
    >>> it.batch_indices
    [[[2, 0], [1, 3]]]

    Arrival order pads both devices to 8 rows:

    >>> it = PerDeviceIter(images, label=[0, 1, 2, 3], num_devices=2,
    ...                    batch_per_device=2, grouping=False)
    >>> [[desc.shape for desc in device] for device in it.provide_data]
    [[(2, 3, 8, 6)], [(2, 3, 8, 5)]]

    Detection samples: an image, its ``im_info`` and its boxes, padded with
    rows of -1 to each device's largest count:

    >>> from mxpatch_bind import Input
    >>> samples = [(np.ones((3, 4, 6)), np.array([4, 6, 1.0]), np.ones((2, 5))),
    ...            (np.ones((3, 8, 2)), np.array([8, 2, 1.0]), np.ones((1, 5)))]
    >>> it = PerDeviceIter(samples, num_devices=2, batch_per_device=1,
    ...                    inputs=[Input("data", size_axes=(1, 2)), Input("im_info")],
    ...                    label_inputs=[Input("gt_boxes", variable_axes=(0,), pad_value=-1)])
    >>> [[desc.shape for desc in device] for device in it.provide_label]
    [[(1, 2, 5)], [(1, 1, 5)]]
    """

    def __init__(self, data: Any, label: Any = None, *, num_devices: int,
                 batch_per_device: int, shuffle: bool = False, seed: int = 0,
                 grouping: bool = True, group_window: Optional[int] = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", layout: str = "NCHW",
                 inputs: Optional[Sequence[Input]] = None, label_inputs: Sequence[Input] = (),
                 sizes: Any = None, num_workers: int = 0, prefetch: Optional[int] = None,
                 balanced: bool = False, pad_to_multiple: int = 1, num_parts: int = 1,
                 part_index: int = 0) -> None:
        self._num_devices = _check_int("num_devices", num_devices)
        self._batch_per_device = _check_int("batch_per_device", batch_per_device)
        self._shuffle = _check_flag("shuffle", shuffle)
        self._grouping = _check_flag("grouping", grouping)
        self._balanced = _check_flag("balanced", balanced)
        if group_window is None:
            group_window = SHUFFLED_GROUP_WINDOW if self._shuffle else 1
        self._group_window = _check_int("group_window", group_window)
        self._seed = _check_int("seed", seed, minimum=0)
        self._multiple = _check_int("pad_to_multiple", pad_to_multiple,
                                    maximum=_limits.max_array_elements(),
                                    why=" (the most elements one MXNet array holds)")
        self._num_parts = _check_int("num_parts", num_parts)
        self._part_index = _check_int("part_index", part_index, minimum=0,
                                      maximum=self._num_parts - 1, why=" (num_parts - 1)")
        num_workers = _check_int("num_workers", num_workers, minimum=0)
        if prefetch is not None:
            prefetch = _check_int("prefetch", prefetch, minimum=0)
        source, self._declared, self._sizes, self._reference_shapes = _read_form(
            data, label, inputs, label_inputs, sizes, data_name, label_name, dtype, layout)
        self._num_data = len(inputs) if inputs is not None else 1
        self.data_name = data_name
        self.label_name = label_name
        self._batches = _batch_loader.BatchLoader(
            source, self._declared, self._reference_shapes, self._sizes, self._num_devices,
            num_workers, prefetch)
        super().__init__(batch_size=self._num_devices * self._batch_per_device)
        self._start_epoch(0)

    @property
    def num_devices(self) -> int:
        """Number of devices each batch is split across."""
        return self._num_devices

    @property
    def batch_per_device(self) -> int:
        """Samples each device gets in every batch (on average, with ``balanced``)."""
        return self._batch_per_device

    @property
    def num_batches(self) -> int:
        """Batches per epoch: ``ceil(len(data) / batch_size)``, divided by ``num_parts``
        (rounded down) when the epoch is shared."""
        return len(self._plan)

    @property
    def epoch(self) -> int:
        """Number of :meth:`reset` calls so far; the constructor starts epoch 0."""
        return self._epoch

    @property
    def batch_indices(self) -> List[List[List[int]]]:
        """Per batch, per device, the dataset indices of the samples, filler included.

        Describes the current epoch. The filler of the last batch repeats its
        last real sample's index.

        Examples
        --------
        >>> import numpy as np
        >>> images = [np.ones((1, 2, 2))] * 5
        >>> it = PerDeviceIter(images, num_devices=2, batch_per_device=2)
        >>> it.batch_indices
        [[[0, 1], [2, 3]], [[4, 4], [4, 4]]]
        """
        return [[indices.tolist() for indices in plan.device_indices] for plan in self._plan]

    @property
    def sample_order(self) -> np.ndarray:
        """Dataset index of each row ``Module.predict()`` returns for the current epoch.

        That is the flat order of the batches with the filler dropped: a
        permutation of ``range(len(data))``. ``outputs[np.argsort(it.sample_order)]``
        puts predictions back in dataset order.

        Examples
        --------
        >>> import numpy as np
        >>> images = [np.ones((1, 2, w)) for w in (5, 1, 4, 2)]
        >>> it = PerDeviceIter(images, num_devices=2, batch_per_device=1)
        >>> it.sample_order.tolist()
        [1, 0, 3, 2]
        """
        flat = np.concatenate([indices for plan in self._plan for indices in plan.device_indices])
        # Filler exists only at the very end of the epoch's flat order.
        return flat[:len(self._sizes)]

    @property
    def provide_data(self) -> Any:
        """Per device, the data shapes of the next batch (of the last once exhausted)."""
        return self._upcoming().provide_data

    @property
    def provide_label(self) -> Any:
        """Per device, the label shapes; None without labels."""
        return self._upcoming().provide_label

    def reset(self) -> None:
        """Start the next epoch: reshuffle when ``shuffle``, then regroup.

        After a failed batch (:class:`~mxpatch_bind.DataLoadError`, ``DataSpecError``), the
        next epoch is a full one; with workers, on a new DataLoader when the failure ended
        the old one's workers.

        Examples
        --------
        >>> import numpy as np
        >>> images = [np.ones((1, 1, 1))] * 4
        >>> it = PerDeviceIter(images, num_devices=1, batch_per_device=2,
        ...                    shuffle=True, seed=7)
        >>> it.reset()
        >>> it.epoch, sorted(it.sample_order.tolist())
        (1, [0, 1, 2, 3])
        """
        self._start_epoch(self._epoch + 1)

    def iter_next(self) -> bool:
        """Move to the next batch; return False at the end of the epoch.

        Raises the failure of a batch that could not be loaded, as :meth:`next` does.
        """
        if self._failure is None and self._cursor >= len(self._plan):
            return False
        self._current = self._upcoming()
        self._pending = None
        self._cursor += 1
        return True

    def next(self) -> Any:
        """Return the next batch, with per-device ``data``, ``label`` and shapes.

        Returns
        -------
        DataBatch
            ``data`` and ``label`` hold one list of NDArrays (on the CPU) per
            device, ``provide_data`` and ``provide_label`` their shapes,
            ``pad`` the number of filler samples at the end and ``index`` the
            dataset indices in flat order, filler included.

        Raises
        ------
        StopIteration
            At the end of the epoch, and only there; call :meth:`reset` to start another.
        DataLoadError
            The batch could not be loaded: ``dataset[i]`` or a transform raised (the error
            names the sample, the batch and the dataset, and is chained to the dataset's
            exception), or a worker process died or got stuck
            (:class:`~mxpatch_bind.WorkerExitedError` names its exit code).
        DataSpecError
            A lazily loaded sample does not fit its declarations or its declared size.

        Notes
        -----
        After a failed batch, every later call (and ``provide_data`` /
        ``provide_label``) raises the same error again, until :meth:`reset`: the epoch
        never ends early, nor goes on without the batch.

        Examples
        --------
        >>> import numpy as np
        >>> images = [np.ones((1, 2, 2)), np.ones((1, 3, 1)), np.ones((1, 1, 1))]
        >>> it = PerDeviceIter(images, num_devices=2, batch_per_device=1)
        >>> batch = it.next()
        >>> [[a.shape for a in device] for device in batch.data], batch.pad
        ([[(1, 1, 2, 2)], [(1, 1, 3, 1)]], 0)
        >>> batch = it.next()
        >>> batch.pad, batch.index.tolist()
        (1, [2, 2])
        """
        if not self.iter_next():
            raise StopIteration
        return self._current

    def padding_stats(self) -> PaddingStats:
        """Count real, padding, filler and rounding pixels of the current epoch's batches.

        Computed from the plan alone, without building any batch, so settings
        can be compared cheaply. Pixels are positions of the size axes.

        Returns
        -------
        PaddingStats

        Examples
        --------
        >>> import numpy as np
        >>> images = [np.ones((3, h, w)) for h, w in [(4, 6), (8, 2), (4, 5), (8, 3)]]
        >>> stats = PerDeviceIter(images, num_devices=2, batch_per_device=2).padding_stats()
        >>> stats.real_pixels, stats.padding_pixels, stats.device_pixels, stats.step_pixels
        (84, 12, (48, 48), 48)
        >>> PerDeviceIter(images, num_devices=2, batch_per_device=2,
        ...               grouping=False).padding_stats().padding_pixels
        92
        >>> rounded = PerDeviceIter(images, num_devices=2, batch_per_device=2,
        ...                         pad_to_multiple=4).padding_stats()
        >>> rounded.rounding_pixels, rounded.distinct_shapes
        (32, 2)
        """
        return _planning.padding_stats(self._plan, self._sizes, self._num_devices,
                                       self._multiple)

    def __getstate__(self):
        # The DataLoader (its worker pool) stays behind: the copy opens its own, and loads
        # from the batch this iterator would load next.
        state = self.__dict__.copy()
        state["_pending"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        # copy.copy() hands over the original's own loader: the copy needs one of its own.
        self._batches = copy.copy(self._batches)
        self._batches.start(self._plan, self._cursor)

    def _start_epoch(self, epoch):
        """Plan every batch of ``epoch``, point the loader at the plan, rewind."""
        num_samples = len(self._sizes)
        rng = np.random.default_rng([self._seed, epoch]) if self._shuffle else None
        order = rng.permutation(num_samples) if rng is not None else np.arange(num_samples)
        plan = _planning.plan_epoch(
            order, self._sizes, num_devices=self._num_devices,
            batch_per_device=self._batch_per_device, grouping=self._grouping,
            group_window=self._group_window, balanced=self._balanced,
            multiple=self._multiple, rng=rng)
        if len(plan) < self._num_parts:
            raise DataSpecError("num_parts={} is more than the epoch's {} batches: some workers "
                                "would have none".format(self._num_parts, len(plan)))
        plan = _planning.part_of(plan, self._num_parts, self._part_index)
        _limits.check_plan(plan, self._declared, self._reference_shapes, self._multiple)
        self._batches.start(plan)
        self._plan = plan
        self._epoch = epoch
        self._cursor = 0
        self._current = self._pending = self._failure = None

    def _upcoming(self):
        """The batch :meth:`next` returns next (the last one once the epoch is exhausted)."""
        if self._failure is not None:
            raise self._failure
        if self._cursor >= len(self._plan):
            return self._current
        if self._pending is None:
            self._pending = self._build_batch(self._plan[self._cursor], self._load())
        return self._pending

    def _load(self):
        """The loader's next batch; a failure is kept, to be raised until :meth:`reset`."""
        try:
            return self._batches.load()
        except (DataLoadError, DataSpecError) as error:
            self._failure = error
            raise
        except BaseException as error:  # an interrupt: the batch is lost with the loader
            self._failure = DataLoadError(
                "loading batch {} was interrupted by {}; call reset() to start a new epoch"
                .format(self._cursor, type(error).__name__), batch=self._cursor)
            raise

    def _build_batch(self, plan, packed):
        """The loader's per-device arrays as NDArrays of the declared dtypes, with descs."""
        arrays = [[_as_declared(array, one.dtype) for one, array in zip(self._declared, device)]
                  for device in packed]
        descs = [[mx.io.DataDesc(one.name, array.shape, dtype=one.dtype,
                                 layout=one.layout or "NCHW")
                  for one, array in zip(self._declared, device)] for device in packed]
        split = self._num_data
        has_label = len(self._declared) > split
        return _PerDeviceBatch(
            data=[device[:split] for device in arrays],
            label=[device[split:] for device in arrays] if has_label else None,
            pad=plan.pad, index=np.concatenate(plan.device_indices),
            provide_data=[device[:split] for device in descs],
            provide_label=[device[split:] for device in descs] if has_label else None)


def _as_declared(array, dtype):
    """``array`` as an NDArray of ``dtype``: numpy ones copied once, narrower ones converted.

    Workers send inputs in their samples' narrower dtype where it converts exactly
    (``inputs.transfer_dtype``); the copy out of shared memory converts them here.
    """
    if not isinstance(array, mx.nd.NDArray):
        return mx.nd.array(array, ctx=mx.cpu(), dtype=dtype)
    if array.dtype == dtype:
        return array
    converted = mx.nd.empty(array.shape, ctx=mx.cpu(), dtype=dtype)
    array.copyto(converted)  # MXNet converts between dtypes as it copies
    return converted
