"""Planned batches loaded through MXNet's own ``gluon.data.DataLoader`` (private).

The planner decides every batch from sample sizes alone; this module has the DataLoader read,
decode and pack those batches, in worker processes when ``num_workers > 0``: a batch sampler
yields each batch as one item (its planned slots), a keyed dataset reads that item's samples,
and a batchify function packs them per device. The DataLoader returns batches in the
sampler's order, so workers change nothing but the speed.

In a worker, a batch that fails comes back as a :class:`WorkerFailure` value, not as an
exception: gluon terminates its pool on an exception from a worker, and ``Pool.terminate``
can hang (``_pool_shutdown``). One item per batch also stops a worker's reading at a batch's
first failing sample, as a loop over the samples would. A worker reads each sample through
``_worker_reads``: its board says which batch and sample it reads, and a worker told to stop
drops the read in progress and the rest of its batches.
"""

import multiprocessing.pool
import struct
import traceback
from typing import NamedTuple, Tuple

from ..errors import DataLoadError, _portable
from . import _pool_shutdown, _worker_fork, _worker_reads
from . import inputs as _inputs

__all__ = ["Slot", "PlannedSampler", "KeyedDataset", "PerDevicePacker", "WorkerFailure",
           "make_loader", "image_size"]


class Slot(NamedTuple):
    """One sample's place in a planned batch: device, dataset index, the device's size, the
    size the sample was declared to have, the batch's position in the epoch, and which of the
    sampler's plans it belongs to."""

    device: int
    sample: int
    size: Tuple[int, ...]
    declared_size: Tuple[int, ...]
    batch: int
    plan_id: int = 0


class PlannedSampler:
    """A gluon batch sampler over an epoch's plan from batch ``start``: per batch, one item,
    the tuple of its slots.

    ``sizes`` are the samples' declared sizes, which each slot carries so that the sample
    is checked against them where it is decoded. ``plan_id`` counts the plans given: a worker
    may still load a batch of an earlier one.
    """

    def __init__(self, sizes):
        self.sizes = sizes
        self.plans = []
        self.start = 0
        self.plan_id = 0

    def plan(self, plans, start):
        """Sample ``plans[start:]`` from now on."""
        self.plans, self.start = plans, start
        self.plan_id += 1

    def __iter__(self):
        for batch in range(self.start, len(self.plans)):
            plan = self.plans[batch]
            yield [tuple(Slot(device, int(index), tuple(size),
                              tuple(int(extent) for extent in self.sizes[index]), batch,
                              self.plan_id)
                         for device, (indices, size) in enumerate(zip(plan.device_indices,
                                                                      plan.device_sizes))
                         for index in indices)]

    def __len__(self):
        return len(self.plans) - self.start


class KeyedDataset:
    """The user's dataset read by batch: per slot, ``(slot, checked arrays of
    dataset[slot.sample])``.

    ``dataset[i]`` runs where the DataLoader calls it (a worker process when
    ``num_workers > 0``), so decoding and transforms run there too. What it raises comes
    back as a :class:`DataLoadError` naming the sample, the batch and the dataset; a sample
    whose size is not the one declared for it is a ``DataSpecError``, on every batch: a size
    that says more than the sample holds would otherwise pad it silently. In a worker
    (``in_worker``) the error is returned as a :class:`WorkerFailure`, and so is a batch whose
    worker was told to stop; each read is written on ``board``.
    """

    def __init__(self, dataset, declared, reference_shapes, in_worker=False, board=None):
        self._dataset = dataset
        self._declared = declared
        self._reference_shapes = reference_shapes
        self._in_worker = in_worker
        self._board = board

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, slots):
        try:
            return [self._keyed(slot) for slot in slots]
        except _worker_reads.Stopped:  # nobody takes this batch: the pool is being ended
            return WorkerFailure.of(DataLoadError(
                f"batch {slots[0].batch} was not loaded: its worker was told to stop",
                batch=slots[0].batch))
        except Exception as error:
            if not self._in_worker:
                raise
            return WorkerFailure.of(error)

    def _keyed(self, slot):
        sample = self._read(slot)
        fields = _inputs.as_fields(sample, self._declared, slot.sample)
        _inputs.check_fields(fields, self._declared, slot.sample, self._reference_shapes)
        size = _inputs.sample_size(fields, self._declared, slot.sample)
        if size != slot.declared_size:
            raise _inputs.DataSpecError(
                f"the sizes given say sample {slot.sample} is {slot.declared_size}, but it has "
                f"size {size} on its size axes (batch {slot.batch})")
        return slot, fields

    def _read(self, slot):
        try:
            return _worker_reads.read(self._dataset, slot.sample, self._board, slot.plan_id,
                                      slot.batch)
        except Exception as error:
            name = type(self._dataset).__name__
            raise DataLoadError(f"dataset[{slot.sample}] raised {type(error).__name__}: {error} "
                                f"(dataset {name}, batch {slot.batch} of the epoch)",
                                batch=slot.batch, sample=slot.sample, dataset=name) from error


class PerDevicePacker:
    """The DataLoader's batchify function: one padded array per device and input.

    In worker processes (``in_shared_memory``) the arrays become NDArrays in shared
    CPU memory, as gluon's own multiprocess batchify makes them, so that they reach
    the main process as file descriptors instead of being pickled through a pipe. They
    are packed in the samples' own dtype where that is narrower and converts exactly
    (:func:`mxpatch_bind.data.inputs.transfer_dtype`): fresh shared memory costs per byte, and
    the receiver converts to the declared dtype in the copy it makes anyway.
    """

    def __init__(self, declared, num_devices, in_shared_memory=False):
        self._declared = declared
        self._num_devices = num_devices
        self._in_shared_memory = in_shared_memory

    def __call__(self, batches):
        (keyed_samples,) = batches  # the sampler's one item per batch
        if isinstance(keyed_samples, WorkerFailure):
            return keyed_samples
        try:
            return self._pack(keyed_samples)
        except Exception as error:
            if not self._in_shared_memory:
                raise
            return WorkerFailure.of(error)

    def _pack(self, keyed_samples):
        per_device = [[] for _ in range(self._num_devices)]
        for slot, fields in keyed_samples:
            per_device[slot.device].append((slot, fields))
        packed = []
        for samples in per_device:
            slots = [slot for slot, _ in samples]
            packed.append(_inputs.pack_device([fields for _, fields in samples], self._declared,
                                              slots[0].size, [slot.sample for slot in slots],
                                              narrow=self._in_shared_memory))
        if self._in_shared_memory:
            import mxnet as mx
            shared = mx.Context("cpu_shared", 0)
            # An empty array (a device whose images all have no boxes) stays numpy: MXNet
            # 1.9 segfaults sharing a zero-size NDArray, and it costs nothing to pickle.
            packed = [[mx.nd.array(array, ctx=shared, dtype=array.dtype) if array.size
                       else array for array in device] for device in packed]
        return packed


class WorkerFailure:
    """What a worker sends for a batch that failed: the exception it raised, which arrives
    with the worker's traceback as its ``__cause__``, as a pool brings a task's exception.

    The exception is sent as it pickles, or as a ``RuntimeError`` naming its type and message
    where it would not survive the crossing.
    """

    def __init__(self, error, traceback_text):
        self.error = error
        self.traceback_text = traceback_text

    @classmethod
    def of(cls, error):
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(_portable(error), text)

    def __reduce__(self):
        return (_rebuild_failure, (self.error, self.traceback_text))

    def __len__(self):
        # MXNet 1.6's worker iterator asks every batch's length, to unwrap a batch of one
        # (``batch[0] if len(batch) == 1``): a failure holds no batch, and stays as it is.
        return 0


def _rebuild_failure(error, traceback_text):
    # multiprocessing's own form of a worker's traceback (what Pool gives a task's exception).
    error.__cause__ = multiprocessing.pool.RemoteTraceback(f'\n"""\n{traceback_text}"""')
    return WorkerFailure(error, traceback_text)


def make_loader(dataset, declared, reference_shapes, sizes, num_devices, num_workers, prefetch,
                grace_s):
    """A DataLoader yielding, per planned batch, per device, the packed arrays; its sampler; the
    board of its workers (None without workers).

    Its worker pool, if any, ends as ``_pool_shutdown`` ends one: its workers told to stop,
    then ``grace_s`` for them to end."""
    import mxnet as mx

    sampler = PlannedSampler(sizes)
    in_worker = num_workers > 0
    board = _worker_reads.Board(num_workers) if in_worker else None
    with _worker_fork.forking():  # the workers must not free this process's arrays
        loader = mx.gluon.data.DataLoader(
            KeyedDataset(dataset, declared, reference_shapes, in_worker=in_worker, board=board),
            batch_sampler=sampler,
            batchify_fn=PerDevicePacker(declared, num_devices, in_shared_memory=in_worker),
            num_workers=num_workers,
            prefetch=prefetch)
    _worker_fork.watch(loader)
    pool = getattr(loader, "_worker_pool", None)
    if pool is not None:
        board.enlist(pool._pool)  # before any task: gluon sends the first at the first load
        _pool_shutdown.guard(pool, grace_s, stop=_worker_reads.stop)
    return loader, sampler, board


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (baseline, progressive, ...) carry the image size;
# 0xC4 (DHT), 0xC8 (JPG) and 0xCC (DAC) share the range but are not frames.
_JPEG_FRAMES = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_size(path: str) -> Tuple[int, int]:
    """``(height, width)`` of a PNG or JPEG file, read from its header without decoding.

    A cheap ``size_of`` for :class:`PerDeviceIter` over image files.

    Parameters
    ----------
    path : str
        A PNG or JPEG file.

    Returns
    -------
    tuple of int
        ``(height, width)``.

    Raises
    ------
    DataSpecError
        If the file is neither a PNG nor a JPEG with a frame header.

    Examples
    --------
    >>> import os, struct, tempfile, zlib
    >>> from mxpatch_bind.data.loading import image_size
    >>> def chunk(tag, body):
    ...     return (struct.pack(">I", len(body)) + tag + body
    ...             + struct.pack(">I", zlib.crc32(tag + body)))
    >>> header = chunk(b"IHDR", struct.pack(">IIBBBBB", 7, 3, 8, 0, 0, 0, 0))
    >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
    >>> with open(path, "wb") as stream:
    ...     _ = stream.write(b"\\x89PNG\\r\\n\\x1a\\n" + header)
    >>> image_size(path)
    (3, 7)
    """
    with open(path, "rb") as stream:
        head = stream.read(24)
        if head[:8] == _PNG_SIGNATURE and head[12:16] == b"IHDR":
            width, height = struct.unpack(">II", head[16:24])
            return int(height), int(width)
        if head[:2] == b"\xff\xd8":
            stream.seek(2)
            return _jpeg_frame_size(stream, path)
    raise _inputs.DataSpecError(f"{path!r} is neither a PNG nor a JPEG file")


def _jpeg_frame_size(stream, path):
    """Walk the JPEG markers up to the first start-of-frame; its header holds the size."""
    while True:
        marker = stream.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            raise _inputs.DataSpecError(f"{path!r}: no JPEG frame header found")
        length_bytes = stream.read(2)
        if len(length_bytes) < 2:
            raise _inputs.DataSpecError(f"{path!r}: no JPEG frame header found")
        if marker[1] in _JPEG_FRAMES:
            _precision, height, width = struct.unpack(">BHH", stream.read(5))
            return int(height), int(width)
        stream.seek(struct.unpack(">H", length_bytes)[0] - 2, 1)
