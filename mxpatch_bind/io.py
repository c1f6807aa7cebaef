"""Per-device batches of variable-size samples (private; use ``mxpatch_bind.PerDeviceIter``)."""

import numbers
from typing import NamedTuple, Tuple

import mxnet as mx
import numpy as np

__all__ = ["PerDeviceIter", "PaddingStats"]

# Channels-first layouts only: samples are padded at the end of every axis after C.
_LAYOUTS = ("NCW", "NCHW", "NCDHW")
# Batches grouped together by default when shuffling: random at the scale of 8 batches, and
# in `bench variable` 1.26x the steps/s of arrival order (window 1: within noise on 2 cores).
SHUFFLED_GROUP_WINDOW = 8


class PaddingStats(NamedTuple):
    """Pixel counts of one epoch's batches, as returned by :meth:`PerDeviceIter.padding_stats`.

    A pixel is one spatial position of one sample (channels are not
    counted: every sample has the same number of them).

    Attributes
    ----------
    real_pixels : int
        Pixels of the dataset's samples, each counted once.
    padding_pixels : int
        Zeros added so that every sample on a device fills that device's shape.
    filler_pixels : int
        Pixels of the filler samples that complete the last batch.
    device_pixels : tuple of int
        Per device, the pixels of all its padded arrays in the epoch: the work
        each device does.
    step_pixels : int
        Sum over batches of the busiest device's pixels: what synchronous
        steps wait for when the devices run in parallel.

    Examples
    --------
    >>> stats = PaddingStats(real_pixels=60, padding_pixels=20, filler_pixels=0,
    ...                      device_pixels=(40, 40), step_pixels=40)
    >>> stats.total_pixels, stats.padding_fraction
    (80, 0.25)
    """

    real_pixels: int
    padding_pixels: int
    filler_pixels: int
    device_pixels: Tuple[int, ...]
    step_pixels: int

    @property
    def total_pixels(self):
        """All pixels the devices process: real, padding and filler."""
        return sum(self.device_pixels)

    @property
    def padding_fraction(self):
        """Share of :attr:`total_pixels` that is padding."""
        return self.padding_pixels / self.total_pixels


class _BatchPlan(NamedTuple):
    """Which samples go to which device in one batch, decided at reset()."""

    device_indices: Tuple[np.ndarray, ...]
    device_spatial_shapes: Tuple[Tuple[int, ...], ...]
    pad: int


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


def _check_int(name, value, minimum=1):
    """Return ``value`` when it is an integer >= ``minimum``, else raise ValueError naming it."""
    # bool is an Integral, but True devices is a mistake, not a count.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError("{} must be an integer >= {}, got {!r}".format(name, minimum, value))
    return int(value)


def _check_samples(data, layout):
    """Return the samples as arrays and their spatial sizes, an (n, axes) int array."""
    samples = [np.asarray(sample) for sample in data]
    if not samples:
        raise ValueError("data is empty: expected at least one sample")
    rank = len(layout) - 1
    for i, sample in enumerate(samples):
        if sample.ndim != rank:
            raise ValueError("sample {} has shape {}, expected rank {} ({}) for layout {!r}"
                             .format(i, sample.shape, rank, ", ".join(layout[1:]), layout))
        if not (np.issubdtype(sample.dtype, np.number) or sample.dtype == np.bool_):
            raise ValueError("sample {} has dtype {}, expected numbers".format(i, sample.dtype))
        if sample.shape[0] != samples[0].shape[0]:
            raise ValueError("sample {} has {} channels, expected {} like sample 0".format(
                i, sample.shape[0], samples[0].shape[0]))
        if 0 in sample.shape:
            raise ValueError("sample {} has an empty axis: shape {}".format(i, sample.shape))
    return samples, np.array([sample.shape[1:] for sample in samples], dtype=np.int64)


def _check_labels(label, num_samples, dtype):
    """Return the labels stacked into one (n, ...) array, or None."""
    if label is None:
        return None
    labels = [np.asarray(one) for one in label]
    if len(labels) != num_samples:
        raise ValueError("label has {} entries, expected {} (one per sample in data)".format(
            len(labels), num_samples))
    for i, one in enumerate(labels):
        if one.shape != labels[0].shape:
            raise ValueError("label {} has shape {}, expected {} like label 0".format(
                i, one.shape, labels[0].shape))
        if not (np.issubdtype(one.dtype, np.number) or one.dtype == np.bool_):
            raise ValueError("label {} has dtype {}, expected numbers".format(i, one.dtype))
    return np.stack(labels).astype(dtype, copy=False)


def _chunks(items, size):
    """Consecutive runs of ``size`` items; the last may be shorter."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def _padded_pixels(groups, sizes):
    """Pixels of the groups once each is padded to its own largest extent."""
    return sum(len(group) * int(np.prod(sizes[group].max(axis=0))) for group in groups)


def _sorted_groups(indices, sizes, primary_axis, group_size):
    """Sort by one spatial axis (ties by the others) and cut into runs of ``group_size``."""
    others = [sizes[indices, axis] for axis in range(sizes.shape[1]) if axis != primary_axis]
    # np.lexsort sorts by its last key first; it is stable, so ties keep arrival order.
    order = indices[np.lexsort(others[::-1] + [sizes[indices, primary_axis]])]
    return _chunks(order, group_size)


def _best_fit_groups(indices, sizes, group_size):
    """Seed each group with the largest sample left, then add those that grow its box least."""
    remaining = np.asarray(indices)
    groups = []
    while len(remaining):
        areas = sizes[remaining].prod(axis=1)
        seed = int(np.argmax(areas))
        box = sizes[remaining[seed]]
        group = [remaining[seed]]
        remaining = np.delete(remaining, seed)
        while len(group) < group_size and len(remaining):
            candidates = sizes[remaining]
            grown = np.maximum(box, candidates).prod(axis=1)
            # Among equally cheap samples take the largest: the small ones still fit later groups.
            pick = int(np.lexsort((-candidates.prod(axis=1), grown))[0])
            box = np.maximum(box, candidates[pick])
            group.append(remaining[pick])
            remaining = np.delete(remaining, pick)
        groups.append(np.array(group))
    return groups


def _group_by_size(indices, sizes, group_size):
    """Split ``indices`` into device groups, keeping whichever candidate split pads least.

    Sorting along one axis is best for small windows, best-fit for large
    ones (measured on random sizes); trying both costs little.
    """
    candidates = [_sorted_groups(indices, sizes, axis, group_size)
                  for axis in range(sizes.shape[1])]
    candidates.append(_best_fit_groups(indices, sizes, group_size))
    return min(candidates, key=lambda groups: _padded_pixels(groups, sizes))


class PerDeviceIter(mx.io.DataIter):
    """Iterate over variable-size samples, each device padded only to its own largest sample.

    Every batch gives each of ``num_devices`` devices ``batch_per_device``
    samples. A device's samples are zero-padded at the end of each spatial
    axis (bottom and right for images) to the largest extent among *that
    device's* samples, so devices get different shapes. ``data``, ``label``,
    ``provide_data`` and ``provide_label`` are per-device lists, the form the
    Deformable-ConvNets loaders use and a per-device ``Module.bind`` takes::

        provide_data = [[DataDesc('data', (b, C, H0, W0))], [DataDesc('data', (b, C, H1, W1))]]
        batch.data   = [[NDArray of device 0], [NDArray of device 1]]

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
    window keeps epochs random at the scale of the window and made training
    steps 1.26x faster than arrival order in ``python -m benchmarks
    variable`` (docs/performance.md). Every device
    gets the same number of samples. A synchronous step waits for its slowest
    device, and a device holding a large sample is slow whatever it shares
    it with, so large samples go together rather than being paired with small
    ones: pairing would pad more without shortening the step
    (``padding_stats().step_pixels`` measures the step).

    ``grouping=False`` keeps arrival order: samples are dealt to devices in
    the epoch's sample order, ``batch_per_device`` at a time.

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
    data : sequence of numpy.ndarray
        The samples, channels first: ``(C, H, W)`` for layout ``'NCHW'``.
        Spatial sizes may differ; rank and channel count may not.
    label : sequence, optional
        One label per sample: a number, or arrays of one common shape.
        ``None`` (default) gives batches without labels.
    num_devices : int
        Number of devices each batch is split across (keyword only).
    batch_per_device : int
        Samples each device gets in every batch (keyword only).
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
    data_name : str, optional
        Name of the data input (default ``'data'``).
    label_name : str, optional
        Name of the label input (default ``'softmax_label'``).
    dtype : str or numpy.dtype, optional
        Type of the data and label arrays (default ``'float32'``).
    layout : {'NCHW', 'NCW', 'NCDHW'}, optional
        Layout of the batch arrays; samples have the layout without ``N``.

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
    ValueError
        If ``data`` is empty, samples differ in rank or channel count or have
        an empty axis, ``label`` has the wrong length or mixed shapes,
        ``num_devices``, ``batch_per_device`` or ``group_window`` is not an
        integer >= 1, ``seed`` is not an integer >= 0, or ``layout`` is not
        supported.

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
    """

    def __init__(self, data, label=None, *, num_devices, batch_per_device, shuffle=False,
                 seed=0, grouping=True, group_window=None, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NCHW"):
        self._num_devices = _check_int("num_devices", num_devices)
        self._batch_per_device = _check_int("batch_per_device", batch_per_device)
        super().__init__(batch_size=self._num_devices * self._batch_per_device)
        if group_window is None:
            group_window = SHUFFLED_GROUP_WINDOW if shuffle else 1
        self._group_window = _check_int("group_window", group_window)
        if layout not in _LAYOUTS:
            raise ValueError("layout must be one of {}, got {!r}".format(_LAYOUTS, layout))
        self._layout = layout
        self._dtype = np.dtype(dtype)
        self._samples, self._sizes = _check_samples(data, layout)
        self._labels = _check_labels(label, len(self._samples), self._dtype)
        self._shuffle = bool(shuffle)
        self._seed = _check_int("seed", seed, minimum=0)
        self._grouping = bool(grouping)
        self.data_name = data_name
        self.label_name = label_name
        self._start_epoch(0)

    @property
    def num_devices(self):
        """Number of devices each batch is split across."""
        return self._num_devices

    @property
    def batch_per_device(self):
        """Samples each device gets in every batch."""
        return self._batch_per_device

    @property
    def num_batches(self):
        """Batches per epoch: ``ceil(len(data) / batch_size)``."""
        return len(self._plan)

    @property
    def epoch(self):
        """Number of :meth:`reset` calls so far; the constructor starts epoch 0."""
        return self._epoch

    @property
    def batch_indices(self):
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
    def sample_order(self):
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
        return flat[:len(self._samples)]

    @property
    def provide_data(self):
        """Per device, the data shapes of the next batch (of the last once exhausted)."""
        return self._data_descs(self._plan[min(self._cursor, len(self._plan) - 1)])

    @property
    def provide_label(self):
        """Per device, the label shapes; None without labels."""
        if self._labels is None:
            return None
        shape = (self._batch_per_device,) + self._labels.shape[1:]
        return [[mx.io.DataDesc(self.label_name, shape, dtype=self._dtype)]
                for _ in range(self._num_devices)]

    def reset(self):
        """Start the next epoch: reshuffle when ``shuffle``, then regroup.

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

    def iter_next(self):
        """Move to the next batch; return False at the end of the epoch."""
        if self._cursor >= len(self._plan):
            return False
        self._current = self._build_batch(self._plan[self._cursor])
        self._cursor += 1
        return True

    def next(self):
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
            At the end of the epoch; call :meth:`reset` to start another.

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

    def getdata(self):
        """Per device, the data arrays of the current batch."""
        return self._current.data

    def getlabel(self):
        """Per device, the label arrays of the current batch, or None."""
        return self._current.label

    def getpad(self):
        """Number of filler samples at the end of the current batch."""
        return self._current.pad

    def getindex(self):
        """Dataset indices of the current batch in flat order, filler included."""
        return self._current.index

    def padding_stats(self):
        """Count real, padding and filler pixels of the current epoch's batches.

        Computed from the grouping alone, without building any batch, so
        settings can be compared cheaply.

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
        """
        areas = self._sizes.prod(axis=1)
        device_pixels = np.zeros(self._num_devices, dtype=np.int64)
        filler_pixels = step_pixels = 0
        for plan in self._plan:
            batch_pixels = [self._batch_per_device * int(np.prod(shape))
                            for shape in plan.device_spatial_shapes]
            device_pixels += batch_pixels
            step_pixels += max(batch_pixels)
            filler = np.concatenate(plan.device_indices)[self.batch_size - plan.pad:]
            filler_pixels += int(areas[filler].sum())
        real_pixels = int(areas.sum())
        return PaddingStats(real_pixels=real_pixels,
                            padding_pixels=int(device_pixels.sum()) - real_pixels - filler_pixels,
                            filler_pixels=filler_pixels,
                            device_pixels=tuple(int(pixels) for pixels in device_pixels),
                            step_pixels=step_pixels)

    def _start_epoch(self, epoch):
        """Decide every batch of ``epoch`` and rewind to its first batch."""
        self._plan = self._plan_epoch(epoch)
        self._epoch = epoch
        self._cursor = 0
        self._current = None

    def _plan_epoch(self, epoch):
        """Group the epoch's samples into batches; see the class docstring for the policy."""
        num_samples = len(self._samples)
        rng = np.random.default_rng([self._seed, epoch]) if self._shuffle else None
        order = rng.permutation(num_samples) if rng is not None else np.arange(num_samples)
        if self._grouping:
            window = self._group_window * self.batch_size
            groups = [group for start in range(0, num_samples, window)
                      for group in _group_by_size(order[start:start + window], self._sizes,
                                                  self._batch_per_device)]
        else:
            groups = _chunks(order, self._batch_per_device)
        batches = _chunks(groups, self._num_devices)
        if rng is not None:
            # Grouped windows come out sorted by size; shuffle the batches so that
            # training does not see sizes in order. A short last batch stays last.
            num_full = num_samples // self.batch_size
            batches[:num_full] = [batches[i] for i in rng.permutation(num_full)]
        return [self._complete(batch) for batch in batches]

    def _complete(self, groups):
        """Fill a batch up to ``num_devices`` full groups and note each device's shape."""
        last = groups[-1][-1]
        # Copies of the last real sample pad nothing: on its own device it is
        # already there, elsewhere every sample is the same copy.
        groups = list(groups) + [[]] * (self._num_devices - len(groups))
        device_indices = tuple(
            np.concatenate([group, np.full(self._batch_per_device - len(group), last)])
            .astype(np.int64)
            for group in groups)
        return _BatchPlan(
            device_indices=device_indices,
            device_spatial_shapes=tuple(tuple(self._sizes[indices].max(axis=0).tolist())
                                        for indices in device_indices),
            pad=self.batch_size - sum(len(group) for group in groups))

    def _data_descs(self, plan):
        channels = self._samples[0].shape[0]
        return [[mx.io.DataDesc(self.data_name, (self._batch_per_device, channels) + shape,
                                dtype=self._dtype, layout=self._layout)]
                for shape in plan.device_spatial_shapes]

    def _build_batch(self, plan):
        """Pad each device's samples with numpy, then copy them once into NDArrays."""
        data = [[mx.nd.array(self._stack(indices, shape), ctx=mx.cpu(), dtype=self._dtype)]
                for indices, shape in zip(plan.device_indices, plan.device_spatial_shapes)]
        label = None
        if self._labels is not None:
            label = [[mx.nd.array(self._labels[indices], ctx=mx.cpu(), dtype=self._dtype)]
                     for indices in plan.device_indices]
        return _PerDeviceBatch(data=data, label=label, pad=plan.pad,
                               index=np.concatenate(plan.device_indices),
                               provide_data=self._data_descs(plan),
                               provide_label=self.provide_label)

    def _stack(self, indices, spatial_shape):
        """Stack samples into one zero-filled array, each at the start of every axis."""
        channels = self._samples[0].shape[0]
        out = np.zeros((len(indices), channels) + spatial_shape, dtype=self._dtype)
        for row, index in enumerate(indices):
            sample = self._samples[index]
            out[(row, slice(None)) + tuple(slice(extent) for extent in sample.shape[1:])] = sample
        return out
