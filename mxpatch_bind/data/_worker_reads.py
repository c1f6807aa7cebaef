"""What each DataLoader worker is reading, and stopping it mid-read (private).

Two things a worker pool does not tell its parent:

* **Which batch a dead worker was loading.** ``multiprocessing.Pool`` does not say which worker
  took which task: the batch the iterator waits for is often not the one whose worker died. A
  :class:`Board` is a table in memory shared with the workers (an anonymous shared mapping, made
  before the pool forks them): per worker, its process id and the batch and sample it reads.
  Each worker writes its own row as it reads; the parent reads a dead worker's row.
* **How to stop now.** A closed pool finishes the batches already sent to it (``prefetch`` of
  them): with a slow dataset, seconds at ``del``, at the interpreter's exit, after Ctrl-C. A
  worker cannot be killed instead: one killed while it sends a batch or waits for a task takes a
  lock of the pool along, and ``Pool.terminate`` then waits for good (``_pool_shutdown``). So it
  is *told* to stop, by :data:`STOP_SIGNAL`: in the children of this package's forks
  (``_worker_fork`` calls :func:`listen`), the handler raises :class:`Stopped` in the read in
  progress, if any, and every later read raises it at once. Each batch then comes back as a
  failure that nobody takes, and the pool, every worker alive, ends as a closed pool ends. The
  handler raises only inside a read (the dataset's code, where the worker holds none of the
  pool's locks), and only once; a read busy in C code notices it when that code returns.
"""

import mmap
import os
import signal

import numpy as np

__all__ = ["Board", "Stopped", "STOP_SIGNAL", "listen", "read", "stop"]

# Ignored by default: a process without the handler (no fork of ours) is left as it is, where a
# signal that terminates would kill it wherever it is. Nothing else sends it (Go's runtime
# preempts its threads with it for the same reasons).
STOP_SIGNAL = signal.SIGURG
# The columns of a Board's rows; -1 where nothing is known.
_PID, _PLAN, _BATCH, _SAMPLE = range(4)
_UNKNOWN = -1

# In a worker: inside a read (where the handler raises), and told to stop.
_reading = False
_stopped = False


class Stopped(BaseException):
    """Raised in a worker's read when the worker is told to stop.

    A ``BaseException``, as ``KeyboardInterrupt`` is: a dataset's ``except Exception`` around
    its decoding lets it through.
    """


class Board:
    """Per worker of one pool: its process id, and the plan, batch and sample it reads.

    Made before the pool forks its workers, which share its memory; :meth:`enlist` gives the
    first workers their rows before any task is sent. A worker started later in place of a dead
    one has no row: it writes nothing, and nothing is known of it.
    """

    def __init__(self, num_workers):
        # mmap(-1, ...) is an anonymous MAP_SHARED mapping: forked children write into it.
        self._memory = mmap.mmap(-1, num_workers * 4 * 8)
        self._rows = np.frombuffer(self._memory, np.int64).reshape(num_workers, 4)
        self._rows[:] = _UNKNOWN
        self._own = (None, None)  # in a worker: (its process id, its row)

    def enlist(self, workers):
        """Give each of ``workers`` (the pool's first) a row."""
        self._rows[:len(workers), _PID] = [worker.pid for worker in workers]

    def record(self, plan, batch, sample):
        """In a worker: it now reads ``sample`` (-1: none) of ``batch`` of ``plan``."""
        row = self._own_row()
        if row is not None:
            self._rows[row, _PLAN:] = (plan, batch, sample)

    def doing(self, pid):
        """``(plan, batch, sample)`` that worker ``pid`` wrote last (``sample`` -1 between its
        reads); None where it wrote nothing."""
        rows = np.flatnonzero(self._rows[:, _PID] == pid)
        if not len(rows) or self._rows[rows[0], _BATCH] == _UNKNOWN:
            return None
        return tuple(int(value) for value in self._rows[rows[0], _PLAN:])

    def _own_row(self):
        pid = os.getpid()
        if self._own[0] != pid:
            rows = np.flatnonzero(self._rows[:, _PID] == pid)
            self._own = (pid, int(rows[0]) if len(rows) else None)
        return self._own[1]


def read(dataset, sample, board=None, plan=_UNKNOWN, batch=_UNKNOWN):
    """``dataset[sample]``, written on ``board`` while it runs; in a worker told to stop, or told
    during the read, :class:`Stopped` instead."""
    global _reading
    try:
        _reading = True  # inside the try: a Stopped raised from here on leaves through it
        if _stopped:
            raise Stopped
        if board is not None:
            board.record(plan, batch, sample)
        return dataset[sample]
    finally:
        _reading = False
        if board is not None:
            board.record(plan, batch, _UNKNOWN)


def listen():
    """In a worker just forked: :data:`STOP_SIGNAL` stops its reads."""
    global _reading, _stopped
    _reading = _stopped = False
    signal.signal(STOP_SIGNAL, _on_stop)


def stop(workers):
    """Tell each of ``workers`` still running to stop its reads (:data:`STOP_SIGNAL`)."""
    for worker in workers:
        # As Process.terminate does: a worker not yet reaped keeps its process id.
        if worker.exitcode is None:
            try:
                os.kill(worker.pid, STOP_SIGNAL)
            except ProcessLookupError:  # it ended since
                pass


def _on_stop(signum, frame):
    # Runs in the worker's main thread, between two bytecodes of whatever it runs: it raises
    # only inside a read, and only the first time (a second raise could land in the `finally`
    # of the first, or in the pool's code after it).
    global _stopped
    if not _stopped:
        _stopped = True
        if _reading:
            raise Stopped
