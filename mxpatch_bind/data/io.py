"""Per-device batches of variable-size samples (private; use ``mxpatch_bind.PerDeviceIter``)."""

import copy
from typing import Any, List, Optional, Sequence

import numpy as np

from ..errors import DataLoadError
from . import batch as _batch
from . import batch_loader as _batch_loader
from . import forms as _forms
from . import limits as _limits
from . import planning as _planning
from .inputs import DataSpecError, Input
from .planning import PaddingStats

__all__ = ["PerDeviceIter", "PaddingStats", "Input", "DataSpecError"]

# Batches grouped together by default when shuffling: random at the scale of 8 batches, and
# faster than arrival order (python -m benchmarks variable; docs/performance.md).
SHUFFLED_GROUP_WINDOW = 8


class PerDeviceIter(_batch.CurrentBatchIter):
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

    **How an epoch is planned** (``docs/data.rst``, "How an epoch is planned"):
    ``grouping=True`` puts samples of similar size on each device, looking
    ``group_window`` batches ahead; ``balanced=True`` lets devices take
    different counts so that the busiest pads least; ``pad_to_multiple``
    rounds the planned sizes so that shapes recur. ``Module.predict()``
    returns rows in the batches' flat order, which :attr:`sample_order` maps
    to dataset indices. A short last batch is completed with copies of its
    last sample, counted in ``batch.pad`` and dropped by ``predict()``.

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
    batch_size : int, optional
        Samples per batch over all devices, as MXNet's iterators take it (keyword
        only): instead of ``batch_per_device``, a multiple of ``num_devices``.
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
        wrong length or mixed shapes, ``num_devices``, ``batch_per_device``, ``batch_size``,
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
    >>> it = PerDeviceIter(images, label=[0, 1, 2, 3], num_devices=2, batch_size=4)
    >>> it, len(it)  # len(): batches per epoch
    (PerDeviceIter(4 samples, 1 batch of 2 devices x 2, data ['data'], label ['softmax_label']), 1)
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
                 batch_per_device: Optional[int] = None, batch_size: Optional[int] = None,
                 shuffle: bool = False, seed: int = 0,
                 grouping: bool = True, group_window: Optional[int] = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", layout: str = "NCHW",
                 inputs: Optional[Sequence[Input]] = None, label_inputs: Sequence[Input] = (),
                 sizes: Any = None, num_workers: int = 0, prefetch: Optional[int] = None,
                 balanced: bool = False, pad_to_multiple: int = 1, num_parts: int = 1,
                 part_index: int = 0) -> None:
        self._num_devices = _forms.check_int("num_devices", num_devices)
        self._batch_per_device = _forms.per_device_count(self._num_devices, batch_per_device,
                                                         batch_size)
        self._shuffle = _forms.check_flag("shuffle", shuffle)
        self._grouping = _forms.check_flag("grouping", grouping)
        self._balanced = _forms.check_flag("balanced", balanced)
        if group_window is None:
            group_window = SHUFFLED_GROUP_WINDOW if self._shuffle else 1
        self._group_window = _forms.check_int("group_window", group_window)
        self._seed = _forms.check_int("seed", seed, minimum=0)
        self._multiple = _forms.check_int("pad_to_multiple", pad_to_multiple,
                                    maximum=_limits.max_array_elements(),
                                    why=" (the most elements one MXNet array holds)")
        self._num_parts = _forms.check_int("num_parts", num_parts)
        self._part_index = _forms.check_int("part_index", part_index, minimum=0,
                                      maximum=self._num_parts - 1, why=" (num_parts - 1)")
        num_workers = _forms.check_int("num_workers", num_workers, minimum=0)
        if prefetch is not None:
            prefetch = _forms.check_int("prefetch", prefetch, minimum=0)
        source, self._declared, self._sizes, self._reference_shapes = _forms.read_form(
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
        (rounded down) when the epoch is shared; ``len(it)`` too."""
        return len(self._plan)

    def __len__(self) -> int:
        return len(self._plan)

    def __repr__(self) -> str:
        return _forms.describe(self, len(self._sizes), self._declared, self._num_data)

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
            raise DataSpecError(f"num_parts={self._num_parts} is more than the epoch's {len(plan)} "
                                "batches: some workers would have none")
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
            self._pending = _batch.build(self._plan[self._cursor], self._load(),
                                         self._declared, self._num_data)
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
                f"loading batch {self._cursor} was interrupted by {type(error).__name__}; call "
                "reset() to start a new epoch", batch=self._cursor)
            raise
