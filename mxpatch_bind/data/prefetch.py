"""PerDevicePrefetchingIter: ``mx.io.PrefetchingIter``'s job for per-device iterators (private).

Stock ``PrefetchingIter`` cannot take an iterator whose ``provide_data`` holds one list per
device: its constructor reads ``provide_data[0][1][0]`` as the batch size (an ``IndexError``
for one input per device, a wrong value for two), it concatenates the iterators' flat
``provide_data`` lists, and it labels each batch with the iterator's shapes *at the moment
it is taken*, which for variable-shape iterators already describe a later batch. This one
wraps a single iterator, fetches its batches on one thread, and hands each batch over
unchanged, its own ``provide_data`` / ``provide_label`` included.
"""

import atexit
import queue
import threading
import weakref
from typing import Any, Literal, Optional

from .batch import CurrentBatchIter

__all__ = ["PerDevicePrefetchingIter"]

_BATCH, _END, _ERROR = "batch", "end", "error"
# How long close() waits for the thread to end. A thread still inside the wrapped iterator's
# next() is left to drop its late result and end there (it is a daemon thread).
CLOSE_WAIT_S = 1.0
# Fetchers whose thread may still run: told to stop at interpreter exit, so that none starts
# another fetch while the interpreter (and MXNet's engine) shuts down.
_LIVE: "weakref.WeakSet[_EpochFetcher]" = weakref.WeakSet()


class _EpochFetcher:
    """One epoch of ``data_iter.next()`` on a thread, at most ``depth`` batches ahead."""

    def __init__(self, data_iter, depth):
        self._items = queue.Queue()
        # A slot per batch that may wait untaken: the thread takes one before each fetch,
        # the consumer gives it back when it takes the batch.
        self._slots = threading.Semaphore(depth)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(data_iter,), daemon=True,
                                        name="PerDevicePrefetchingIter")
        self._thread.start()
        _LIVE.add(self)

    def _run(self, data_iter):
        while True:
            self._slots.acquire()
            if self._stopping.is_set():
                return
            try:
                item = (_BATCH, data_iter.next())
            except StopIteration:
                item = (_END, None)
            except BaseException as error:  # handed to the consumer, who re-raises it
                item = (_ERROR, error)
            if self._stopping.is_set():  # stopped during the fetch: nobody takes it any more
                return
            self._items.put(item)
            if item[0] != _BATCH:
                return

    def take(self):
        """The next ``(kind, value)``, waiting for the thread if it is not there yet."""
        item = self._items.get()
        self._slots.release()
        return item

    def signal_stop(self):
        """Tell the thread to end (after the fetch in progress, if any); do not wait."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._slots.release()  # wake a thread waiting for a slot
            # Wake a consumer waiting in take() on another thread.
            self._items.put((_ERROR, RuntimeError("PerDevicePrefetchingIter is closed")))

    def stop(self, timeout=None):
        """End the thread and wait for it, at most ``timeout`` seconds; whether it ended."""
        self.signal_stop()
        self._thread.join(timeout)
        return not self._thread.is_alive()


class PerDevicePrefetchingIter(CurrentBatchIter):
    """Fetch a per-device iterator's batches on a background thread.

    The contract of ``mx.io.PrefetchingIter`` for an iterator whose ``provide_data`` and
    ``provide_label`` hold one list per device (such as
    :class:`~mxpatch_bind.PerDeviceIter` or a Deformable-ConvNets loader), which stock
    ``PrefetchingIter`` refuses with an ``IndexError`` in its constructor. It yields the
    wrapped iterator's batches themselves, in the same order; ``reset()`` resets the
    wrapped iterator and starts again; an exception raised by the wrapped iterator's
    ``next()`` is raised by this one's ``next()`` at the same position (and again on every
    later call until ``reset()``). Flat (stock) iterators work too.

    Parameters
    ----------
    data_iter : mx.io.DataIter
        The iterator to prefetch. Its batches must not share memory with the batches
        that follow (``PerDeviceIter``'s and ``NDArrayIter``'s do not).
    depth : int, optional
        Batches fetched ahead of the consumer, at most (default 1, as stock).

    Attributes
    ----------
    provide_data, provide_label : list of list of DataDesc, or None
        Per device, the shapes of the batch the next call to :meth:`next` returns (of
        the last batch once the epoch is exhausted), taken from that batch itself; they
        wait for the batch to be fetched. When a batch carries none, the wrapped
        iterator's shapes from the start of the epoch.

    Raises
    ------
    TypeError
        ``data_iter`` is a list (stock's form for several iterators, not supported here).
    ValueError
        ``depth`` is not an integer >= 1.

    Notes
    -----
    The thread is ended by :meth:`close` (or leaving a ``with`` block), by
    :meth:`reset` (before the new epoch's thread starts), when the iterator is
    garbage-collected, and at interpreter exit; it is a daemon thread, so it never holds
    up the interpreter's exit. :meth:`close` waits for it at most ``CLOSE_WAIT_S`` (1 s)
    and garbage collection not at all: a thread still inside a stalled wrapped ``next()``
    ends when that call returns, and drops its late batch. Only the thread ever calls the
    wrapped iterator's ``next()``; its ``reset()`` and properties are used only while no
    thread runs, so :meth:`reset` waits for a stalled ``next()`` to return.

    Examples
    --------
    >>> import numpy as np
    >>> from mxpatch_bind import PerDeviceIter, PerDevicePrefetchingIter
    >>> images = [np.ones((1, h, w)) for h, w in [(4, 6), (8, 2), (4, 5), (8, 3)]]
    >>> loader = PerDeviceIter(images, label=[0, 1, 2, 3], num_devices=2, batch_per_device=1)
    >>> with PerDevicePrefetchingIter(loader) as prefetched:
    ...     shapes = [[d.shape for d, in batch.provide_data] for batch in prefetched]
    >>> shapes
    [[(1, 1, 4, 6), (1, 1, 8, 2)], [(1, 1, 4, 5), (1, 1, 8, 3)]]

    ``len()`` is the wrapped iterator's; the repr shows what it wraps:

    >>> prefetched = PerDevicePrefetchingIter(PerDeviceIter(images, num_devices=2,
    ...                                                     batch_per_device=1), depth=2)
    >>> len(prefetched)
    2
    >>> prefetched  # doctest: +ELLIPSIS
    PerDevicePrefetchingIter(PerDeviceIter(4 samples, 2 batches of 2 devices x 1, ...), depth=2)
    >>> prefetched.close()
    >>> prefetched  # doctest: +ELLIPSIS
    PerDevicePrefetchingIter(PerDeviceIter(...), depth=2, closed)
    """

    def __init__(self, data_iter: Any, depth: int = 1) -> None:
        if isinstance(data_iter, (list, tuple)):
            raise TypeError("PerDevicePrefetchingIter takes one iterator, got a "
                            f"{type(data_iter).__name__} of {len(data_iter)}: {data_iter!r}; "
                            "combine them into one iterator first")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        super().__init__(getattr(data_iter, "batch_size", 0))
        self._data_iter = data_iter
        self._depth = depth
        self._fetcher: Optional[_EpochFetcher] = None
        self._closed_fetchers: list = []
        self._start_epoch()

    # ----------------------------------------------------------------- the DataIter contract
    @property
    def provide_data(self) -> Any:
        """Per device, the data shapes of the next batch (of the last once exhausted)."""
        return self._shapes("provide_data", 0)

    @property
    def provide_label(self) -> Any:
        """Per device, the label shapes of the next batch (of the last once exhausted)."""
        return self._shapes("provide_label", 1)

    def reset(self) -> None:
        """Stop fetching, reset the wrapped iterator, and start fetching the next epoch.

        It waits for the wrapped iterator's ``next()`` in progress, if any, to return: the
        wrapped iterator is reset only while no thread uses it.
        """
        self._stop_fetcher()
        for fetcher in self._closed_fetchers:
            fetcher.stop()
        self._closed_fetchers = []
        self._data_iter.reset()
        self._start_epoch()

    def next(self):
        """The wrapped iterator's next batch.

        Raises
        ------
        StopIteration
            At the end of the epoch; call :meth:`reset` to start another.
        RuntimeError
            After :meth:`close`.
        Exception
            Whatever the wrapped iterator's ``next()`` raised, at the same position.
        """
        kind, value = self._peek()
        if kind == _BATCH:
            self._lookahead = None
            self._current = value
            return value
        if kind == _END:
            raise StopIteration
        raise value

    def iter_next(self) -> bool:
        """Move to the next batch; return False at the end of the epoch."""
        try:
            self.next()
        except StopIteration:
            return False
        return True

    def __len__(self) -> int:
        """Batches per epoch: the wrapped iterator's ``len()``.

        Raises
        ------
        TypeError
            The wrapped iterator has no ``len()`` (MXNet's own iterators have none).
        """
        if not hasattr(type(self._data_iter), "__len__"):
            raise TypeError(f"len() of a PerDevicePrefetchingIter is the len() of the iterator it "
                            f"wraps, and {type(self._data_iter).__name__} has none")
        return len(self._data_iter)

    def __bool__(self) -> bool:
        # Always true, as any iterator: with __len__ defined, truth would otherwise ask the
        # wrapped iterator's len(), which may not exist (MXNet's fit tests `if eval_data:`).
        return True

    def __repr__(self) -> str:
        closed = ", closed" if self._fetcher is None else ""
        return f"PerDevicePrefetchingIter({self._data_iter!r}, depth={self._depth}{closed})"

    # ----------------------------------------------------------------- life cycle
    def close(self) -> None:
        """End the prefetch thread; later calls to :meth:`next` raise ``RuntimeError``.

        Returns within ``CLOSE_WAIT_S`` (1 s), even when the wrapped iterator's ``next()``
        is stalled; that thread then ends when the call returns, and drops its batch.
        """
        fetcher, self._fetcher = self._fetcher, None
        if fetcher is not None and not fetcher.stop(CLOSE_WAIT_S):
            self._closed_fetchers.append(fetcher)  # reset() waits for it
        self._lookahead = (_ERROR, RuntimeError("PerDevicePrefetchingIter is closed"))

    def __reduce_ex__(self, protocol):
        raise TypeError("PerDevicePrefetchingIter cannot be pickled or copied: it owns a thread; "
                        "copy the iterator it wraps and wrap the copy in a new one")

    def __enter__(self) -> "PerDevicePrefetchingIter":
        return self

    def __exit__(self, *exc_info: Any) -> Literal[False]:
        self.close()
        return False

    def __del__(self):
        # Never wait here: the collector may run in any thread, at any moment.
        fetcher = getattr(self, "_fetcher", None)
        if fetcher is not None:
            fetcher.signal_stop()

    # ----------------------------------------------------------------- implementation
    def _start_epoch(self):
        # Read while no thread runs: the wrapped iterator's shapes are the fallback for
        # batches that carry none.
        self._epoch_shapes = (self._data_iter.provide_data, self._data_iter.provide_label)
        self._current = None
        self._lookahead = None
        self._fetcher = _EpochFetcher(self._data_iter, self._depth)

    def _stop_fetcher(self):
        fetcher, self._fetcher = getattr(self, "_fetcher", None), None
        if fetcher is not None:
            fetcher.stop()

    def _peek(self):
        """The next item, fetched once and kept until a batch is taken; an end or an error
        stays until ``reset()``."""
        if self._lookahead is None:
            self._lookahead = self._fetcher.take()
        return self._lookahead

    def _shapes(self, field, fallback_index):
        kind, value = self._peek()
        for batch in ((value if kind == _BATCH else None), self._current):
            shapes = getattr(batch, field, None)
            if shapes is not None:
                return shapes
        return self._epoch_shapes[fallback_index]


@atexit.register
def _stop_all_at_exit():
    fetchers = list(_LIVE)
    for fetcher in fetchers:
        fetcher.signal_stop()
    for fetcher in fetchers:
        fetcher.stop(CLOSE_WAIT_S / max(1, len(fetchers)))
