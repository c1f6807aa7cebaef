"""An epoch's planned batches from gluon's DataLoader: failures named, workers watched (private).

gluon's DataLoader ends an epoch's iterator at its first error (the iterator is a generator,
so the next call is a ``StopIteration``), terminates its worker pool when a batch fails (the
loader is useless after that), waits up to two minutes for a batch whose worker died, and
reports a worker that died after sending a batch as the socket error of fetching that batch's
shared memory. :class:`BatchLoader` waits for each batch itself, watching the worker
processes, names what went wrong (a dead worker with the batch and sample it was reading, from
its board: ``_worker_reads``), ends the pool (``_pool_shutdown``: its workers told to stop and
the pool closed where they all live, terminated where one died) and builds a new DataLoader for
the next epoch.

It reads names gluon and multiprocessing keep private, here only: ``DataLoader._prefetch_iter``
(the epoch's iterator without the generator around it; MXNet 1.6 to 1.8 have none and return that
iterator from ``__iter__``), ``_MultiWorkerIter._data_buffer`` and
``_rcvd_idx`` (the pending result of the next batch), ``DataLoader._worker_pool`` and
``Pool._pool`` (the worker processes: their exit codes, and terminating them).
"""

import io
import pickle
import signal
import time

import numpy as np

from ..errors import DataLoadError, DataSpecError, WorkerExitedError
from . import _pool_shutdown
from . import loading as _loading

__all__ = ["BatchLoader"]

# How often a wait for a batch looks at the workers: a dead one is named this fast.
POLL_S = 0.05
# The longest wait for one batch from live workers: gluon's own default timeout.
BATCH_TIMEOUT_S = 120.0
# After a lost connection, how long the dead worker's exit status may take to show.
EXIT_STATUS_WAIT_S = 10.0


class BatchLoader:
    """The packed arrays of an epoch's planned batches, in order, from MXNet's DataLoader.

    :meth:`load` raises :class:`~mxpatch_bind.DataLoadError` (a sample, a transform, a stuck
    or dead worker) or ``DataSpecError`` (a sample that does not fit its declarations);
    after that, :meth:`start` opens a new DataLoader where the failure took the old one's
    workers. Pickling keeps the dataset and the options, not the DataLoader.
    """

    def __init__(self, dataset, declared, reference_shapes, sizes, num_devices, num_workers,
                 prefetch):
        self._options = (dataset, declared, reference_shapes, sizes, num_devices, num_workers)
        # gluon sends a batch only inside next() when nothing is prefetched: at least one must
        # be on its way to be waited for with the workers watched.
        self._prefetch = None if prefetch is None or not num_workers else max(1, prefetch)
        self._loader = self._sampler = self._batches = self._board = None
        self._workers = ()
        self._pending = None  # the result waited for last: its pickle names its sender
        self._rewrap = False
        self._position = 0

    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_loader=None, _sampler=None, _batches=None, _board=None, _workers=(),
                     _rewrap=False, _pending=None)
        return state

    def start(self, plans, first=0):
        """Load ``plans[first:]`` next, the batches of an epoch from position ``first``."""
        if self._loader is None:
            self._open(len(plans))
        self._sampler.plan(plans, first)
        self._batches = None  # gluon's iterator is made at the first load: it sends batches
        self._position = first

    def load(self):
        """The next planned batch: per device, per declared input, an array."""
        try:
            packed = self._next_packed()
            if isinstance(packed, _loading.WorkerFailure):
                raise packed.error
        except BaseException as error:  # KeyboardInterrupt too: the workers are stopped now
            self._abandon()
            named = self._named(error)
            if named is error:
                raise
            raise named from error
        self._position += 1
        return packed

    def _next_packed(self):
        if self._batches is None:
            self._batches = _epoch_iterator(self._loader)
        if self._workers:
            self._wait_for_next()
        packed = next(self._batches)
        if self._rewrap and not isinstance(packed, _loading.WorkerFailure):
            packed = [packed]
        return packed

    def _named(self, error):
        """What ``load`` raises for ``error`` (``error`` itself, or a DataLoadError raised from
        it), after the DataLoader is dropped."""
        if isinstance(error, WorkerExitedError) or not isinstance(error, Exception):
            return error  # named already; or KeyboardInterrupt and the like, as they are
        if isinstance(error, DataLoadError):
            return _rechained(error)
        if isinstance(error, DataSpecError):
            return error
        if isinstance(error, (OSError, EOFError)):
            return self._lost_worker(error)
        if isinstance(error, StopIteration):
            return DataLoadError(f"the DataLoader ended the epoch before batch {self._position} "
                                 f"of {len(self._sampler.plans)}", batch=self._position)
        return DataLoadError(f"loading batch {self._position} (samples {self._samples()}) failed: "
                             f"{type(error).__name__}: {error}", batch=self._position)

    def _open(self, num_batches):
        dataset, declared, reference_shapes, sizes, num_devices, num_workers = self._options
        # gluon sends `prefetch` batches in a loop: more than an epoch holds is no use.
        prefetch = None if self._prefetch is None else min(self._prefetch, max(1, num_batches))
        self._loader, self._sampler, self._board = _loading.make_loader(
            dataset, declared, reference_shapes, sizes, num_devices, num_workers, prefetch,
            grace_s=_pool_shutdown.STOP_WAIT_S)
        pool = getattr(self._loader, "_worker_pool", None)
        # The processes the pool started with: it replaces a dead one, and forgets it.
        self._workers = tuple(pool._pool) if pool is not None else ()
        # MXNet 1.6's worker iterator hands back batch[0] for a batch of one element: one
        # device's arrays instead of the list of one device (1.7 and later do not).
        import mxnet
        self._rewrap = (bool(self._workers) and num_devices == 1
                        and mxnet.__version__.startswith("1.6."))

    def _abandon(self):
        """Drop the DataLoader after a failure, its pool ended (gluon may have already): its
        workers told to stop, the batches already sent dropped."""
        pool = getattr(self._loader, "_worker_pool", None)
        if pool is not None:
            _pool_shutdown.shut_down(pool, _pool_shutdown.STOP_WAIT_S)
            self._loader = None
        self._batches = None

    def _wait_for_next(self):
        """Wait for the next batch's result while every worker lives, at most BATCH_TIMEOUT_S."""
        pending = self._pending = self._batches._data_buffer.get(self._batches._rcvd_idx)
        if pending is None:  # nothing sent yet: next() sends it (prefetch is at least 1)
            return
        deadline = time.monotonic() + BATCH_TIMEOUT_S
        while not pending.ready():
            exited = [worker for worker in self._workers if worker.exitcode is not None]
            if exited:
                raise self._worker_error(exited[0])
            if time.monotonic() > deadline:
                raise DataLoadError(f"no batch from the DataLoader workers in {BATCH_TIMEOUT_S:g} "
                                    f"s while loading batch {self._position} (samples "
                                    f"{self._samples()}): a worker is stuck",
                                    batch=self._position)
            pending.wait(POLL_S)

    def _lost_worker(self, error):
        """The error for a batch whose shared memory could not be fetched from its worker."""
        # A worker serves its batch's shared memory until it ends: the batch's pickle names the
        # one that sent it, gone since. Without that name, terminating the pool (gluon does when
        # a batch fails) ends every worker with status 0 or SIGTERM: one that ended of itself
        # with another status is the one.
        senders = _sender_pids(self._pending)
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while True:
            exited = [worker for worker in self._workers if worker.exitcode is not None]
            own = ([worker for worker in exited if worker.pid in senders]
                   or [worker for worker in exited
                       if worker.exitcode not in (0, -signal.SIGTERM)])
            if own:
                return self._worker_error(own[0])
            if time.monotonic() > deadline:
                return DataLoadError("lost the connection to a DataLoader worker while loading "
                                     f"batch {self._position} (samples {self._samples()}): "
                                     f"{type(error).__name__}: {error}", batch=self._position)
            time.sleep(POLL_S)

    def _worker_error(self, worker):
        code = worker.exitcode
        how = (f"was killed by signal {signal.Signals(-code).name} (exit code {code})"
               if code < 0 and -code in signal.valid_signals() else
               f"exited with code {code}")
        batch, sample, doing = self._what_it_loaded(worker)
        error = WorkerExitedError(f"DataLoader worker {worker.pid} {how} {doing}", batch=batch,
                                  exitcode=code, pid=worker.pid)
        error.sample = sample
        return error

    def _what_it_loaded(self, worker):
        """``(batch, sample, words)``: what ``worker`` was loading when it ended, as its board
        says; where the board does not say, the batch the iterator waited for."""
        doing = self._board.doing(worker.pid) if self._board is not None else None
        if doing is None:
            return (self._position, None, f"while the iterator waited for batch {self._position} "
                                          f"(samples {self._samples()})")
        plan_id, batch, sample = doing
        sample = sample if sample >= 0 else None
        if plan_id != self._sampler.plan_id:  # a batch sent before the last start()
            what = f"batch {batch} of an earlier epoch"
        else:
            what = f"batch {batch} (samples {self._samples(batch)})"
        if sample is None:
            return batch, None, f"while loading {what}"
        return batch, sample, f"while reading sample {sample} of {what}"

    def _samples(self, batch=None):
        """The samples of ``batch`` (the one waited for by default), filler included."""
        batch = self._position if batch is None else batch
        plans = self._sampler.plans if self._sampler is not None else ()
        if batch >= len(plans):
            return []
        return np.concatenate(plans[batch].device_indices).tolist()


def _epoch_iterator(loader):
    """The epoch's iterator without the generator gluon wraps around it in MXNet 1.9
    (``DataLoader._prefetch_iter``); MXNet 1.6 to 1.8 return it from ``__iter__`` as it is."""
    prefetch_iter = getattr(loader, "_prefetch_iter", None)
    return prefetch_iter() if prefetch_iter is not None else iter(loader)


class _SenderReader(pickle.Unpickler):
    """Reads a worker's pickled batch for the process ids its NDArrays' shared memory names,
    without fetching that memory (gluon's ``rebuild_ndarray(pid, fd, shape, dtype)``)."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data))
        self.pids = set()

    def find_class(self, module, name):
        if module.startswith("mxnet.") and name.startswith("rebuild_"):
            return self._record
        return super().find_class(module, name)

    def _record(self, pid, *_):
        self.pids.add(pid)


def _sender_pids(pending):
    """The process ids that sent the pickled batch of the pool result ``pending``; none where
    it is not known (no result waited for, or one that is not gluon's pickle)."""
    if pending is None or not pending.ready():
        return set()
    try:
        reader = _SenderReader(pending.get(0))
        reader.load()
    except Exception:  # not a batch gluon pickled: the exit statuses alone must tell
        return set()
    return reader.pids


def _rechained(error):
    """A worker's DataLoadError chained to the dataset's exception (which gets the worker's
    traceback as its own cause), as it is when loading in the calling thread."""
    original = getattr(error, "original", None)
    if original is not None:
        if original.__cause__ is None and original is not error.__cause__:
            original.__cause__ = error.__cause__
        error.__cause__ = original
    return error
