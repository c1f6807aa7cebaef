"""PerDevicePrefetchingIter: ``mx.io.PrefetchingIter``'s job for per-device iterators (private).

Stock ``PrefetchingIter`` cannot take an iterator whose ``provide_data`` holds one list per
device: its constructor reads ``provide_data[0][1][0]`` as the batch size (an ``IndexError``
for one input per device, a wrong value for two), it concatenates the iterators' flat
``provide_data`` lists, and it labels each batch with the iterator's shapes *at the moment
it is taken*, which for variable-shape iterators already describe a later batch. This one
wraps a single iterator, fetches its batches on one thread, and hands each batch over
unchanged, its own ``provide_data`` / ``provide_label`` included.
"""

import queue
import threading
from typing import Any, Literal, Optional

from .io import CurrentBatchIter

__all__ = ["PerDevicePrefetchingIter"]

_BATCH, _END, _ERROR = "batch", "end", "error"


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
            self._items.put(item)
            if item[0] != _BATCH:
                return

    def take(self):
        """The next ``(kind, value)``, waiting for the thread if it is not there yet."""
        item = self._items.get()
        self._slots.release()
        return item

    def stop(self):
        """End the thread (after the fetch in progress, if any) and wait for it."""
        self._stopping.set()
        self._slots.release()  # wake a thread waiting for a slot
        self._thread.join()


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
    :meth:`reset` (before the new epoch's thread starts), and when the iterator is
    garbage-collected; it is a daemon thread, so it never holds up the interpreter's exit.
    Only the thread ever calls the wrapped iterator's ``next()``; its ``reset()`` and
    properties are used only while no thread runs.

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
    """

    def __init__(self, data_iter: Any, depth: int = 1) -> None:
        if isinstance(data_iter, (list, tuple)):
            raise TypeError("PerDevicePrefetchingIter takes one iterator, got a %s of %d: %r; "
                            "combine them into one iterator first"
                            % (type(data_iter).__name__, len(data_iter), data_iter))
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError("depth must be an integer >= 1, got %r" % (depth,))
        super().__init__(getattr(data_iter, "batch_size", 0))
        self._data_iter = data_iter
        self._depth = depth
        self._fetcher: Optional[_EpochFetcher] = None
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
        """Stop fetching, reset the wrapped iterator, and start fetching the next epoch."""
        self._stop_fetcher()
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

    # ----------------------------------------------------------------- life cycle
    def close(self) -> None:
        """End the prefetch thread; later calls to :meth:`next` raise ``RuntimeError``."""
        self._stop_fetcher()
        self._lookahead = (_ERROR, RuntimeError("PerDevicePrefetchingIter is closed"))

    def __enter__(self) -> "PerDevicePrefetchingIter":
        return self

    def __exit__(self, *exc_info: Any) -> Literal[False]:
        self.close()
        return False

    def __del__(self):
        self._stop_fetcher()

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
