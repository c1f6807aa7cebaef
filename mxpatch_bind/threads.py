"""Stop a class's daemon threads before the interpreter exits (for code ``migrate`` ported).

The family's ``PrefetchingIter`` fetches in daemon threads that loop on a ``threading.Event``
and leave their loop when a flag says so (``self.started = False``). Its last ``reset()``
leaves a thread fetching the next epoch's first batch; when the script ends, CPython freezes
that thread wherever it is: inside a ``multiprocessing.Pool`` call (the Pool's exit finalizer
then waits on a worker forever) or holding h5py's lock (``hickle.load``), and the process
never exits. ``migrate --to-python3`` adds a :func:`stop_threads_at_exit` call after the
threads start: at exit, before daemon threads are frozen, the flag is set and the event set
again and again until every thread has left its loop (the thread clears the event after each
fetch, so one ``set()`` can be lost, as it is in the iterator's own ``__del__``).

Importing this module does not import MXNet.
"""

from __future__ import annotations

import atexit
import logging

# Imported for its side effect: multiprocessing registers its exit hook (which terminates
# the Pools a fetch may be waiting on) at import; atexit runs hooks last-registered-first, so
# ours, registered after it, runs before it.
import multiprocessing.util  # noqa: F401
import threading
import time
import weakref
from typing import Any

__all__ = ["stop_threads", "stop_threads_at_exit"]

DEFAULT_TIMEOUT = 60.0  # seconds a fetch in progress at exit may take to return
_POLL = 0.05  # seconds between two set() of the wake-up events
_log = logging.getLogger(__name__)
# Reentrant: a weak reference's callback (_forget) can run in a garbage collection that an
# allocation inside a locked block starts, in the same thread.
_lock = threading.RLock()
_owners: dict[int, tuple[Any, tuple]] = {}  # id of the weak reference -> (it, stop arguments)


def stop_threads(owner: Any, threads: str, flag: str, wake: str, stop_value: Any = False,
                 timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Ask ``owner``'s threads to leave their loop, and wait until they have.

    Sets ``owner.<flag>`` to ``stop_value``, then sets every event of ``owner.<wake>`` again
    and again until each thread of ``owner.<threads>`` has ended (a thread that clears the
    event after a fetch would otherwise miss a single ``set()``), for at most ``timeout``
    seconds in all.

    Parameters
    ----------
    owner : object
        The object whose threads these are (a prefetching iterator).
    threads : str
        The attribute holding the threads: a ``threading.Thread`` or a list of them.
    flag : str
        The attribute each thread reads to decide whether to go on (``'started'``).
    wake : str
        The attribute holding the ``threading.Event`` (or list of events) each thread waits on
        before it fetches (``'data_taken'``).
    stop_value : object, optional
        What ``flag`` is set to; default ``False`` (the loop runs while it is true).
    timeout : float, optional
        Seconds to wait for a fetch in progress to return; default 60.

    Returns
    -------
    bool
        True when every thread has ended; False after ``timeout`` (a warning names them: the
        fetch they are in never returned).

    Examples
    --------
    >>> import threading
    >>> from mxpatch_bind.threads import stop_threads
    >>> class Fetcher:
    ...     def __init__(self):
    ...         self.running, self.wanted = True, threading.Event()
    ...         self.threads = [threading.Thread(target=self.loop, daemon=True)]
    ...         self.threads[0].start()
    ...     def loop(self):
    ...         while True:
    ...             self.wanted.wait()
    ...             if not self.running:
    ...                 break
    ...             self.wanted.clear()
    >>> fetcher = Fetcher()
    >>> stop_threads(fetcher, 'threads', flag='running', wake='wanted')
    True
    >>> fetcher.threads[0].is_alive()
    False
    """
    running = _as_list(getattr(owner, threads, ()))
    events = _as_list(getattr(owner, wake, ()))
    setattr(owner, flag, stop_value)
    deadline = time.monotonic() + timeout
    while True:
        alive = [t for t in running if t.is_alive() and t is not threading.current_thread()]
        left = deadline - time.monotonic()
        if not alive or left <= 0:
            break
        for event in events:
            event.set()
        alive[0].join(min(_POLL, left))
    if alive:
        _log.warning("mxpatch_bind: %d thread(s) of %s (%s) still running %g s after "
                     "%s.%s = %r: the fetch they are in has not returned; the interpreter "
                     "goes on without them", len(alive), type(owner).__name__,
                     ", ".join(t.name for t in alive), timeout, type(owner).__name__, flag,
                     stop_value)
    return not alive


def stop_threads_at_exit(owner: Any, threads: str, flag: str, wake: str,
                         stop_value: Any = False, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Run :func:`stop_threads` on ``owner`` when the interpreter exits.

    The hook runs from :mod:`atexit`, before CPython freezes daemon threads, and before the
    exit hooks registered earlier (``multiprocessing``'s, which terminates Pools; h5py's;
    MXNet's engine shutdown): each call re-registers it last. ``owner`` is held by a weak
    reference, so this keeps nothing alive; an owner deleted before the exit is skipped.
    Calling it again for the same owner and ``threads`` replaces the earlier call.

    Parameters
    ----------
    owner, threads, flag, wake, stop_value, timeout
        As for :func:`stop_threads`.

    Returns
    -------
    None

    Examples
    --------
    What ``migrate --to-python3`` adds to the family's ``PrefetchingIter.__init__``, after
    the loop that starts its threads:

    >>> import threading
    >>> from mxpatch_bind.threads import stop_threads_at_exit
    >>> class Prefetcher:
    ...     def __init__(self):
    ...         self.started, self.data_taken = True, [threading.Event()]
    ...         self.prefetch_threads = [threading.Thread(target=self.fetch, daemon=True)]
    ...         for thread in self.prefetch_threads:
    ...             thread.start()
    ...         stop_threads_at_exit(self, 'prefetch_threads', flag='started',
    ...                              wake='data_taken')
    ...     def fetch(self):
    ...         while True:
    ...             self.data_taken[0].wait()
    ...             if not self.started:
    ...                 break
    ...             self.data_taken[0].clear()
    >>> prefetcher = Prefetcher()  # its thread is stopped when the interpreter exits
    """
    reference = _reference(owner)
    arguments = (threads, flag, wake, stop_value, timeout)
    with _lock:
        for key, (other, (other_threads, *_)) in _owners.copy().items():
            if other() is owner and other_threads == threads:
                del _owners[key]
        _owners[id(reference)] = (reference, arguments)
        # last registered, first run: before every hook registered since the previous call
        atexit.unregister(_stop_all)
        atexit.register(_stop_all)


def _reference(owner):
    """A weak reference that forgets ``owner``'s entry when it dies; a strong one (a
    function returning it) for the rare object that takes no weak reference."""
    try:
        return weakref.ref(owner, _forget)
    except TypeError:
        return lambda: owner


def _forget(reference):
    with _lock:
        _owners.pop(id(reference), None)


def _stop_all():
    """The exit hook: stop every registered owner still alive, newest first."""
    with _lock:
        registered = list(_owners.copy().values())
    for reference, arguments in reversed(registered):
        owner = reference()
        if owner is None:
            continue
        try:
            stop_threads(owner, *arguments)
        except Exception:  # one owner's failure must not leave the others running
            _log.exception("mxpatch_bind: stopping the threads of %s at exit failed",
                           type(owner).__name__)


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (threading.Thread, threading.Event)) or not hasattr(value, "__iter__"):
        return [value]
    return list(value)
