"""Ending a DataLoader's worker pool without ``Pool.terminate``'s hang (private).

CPython's ``Pool.terminate()`` kills the workers (SIGTERM) while its task handler may still
have to write the end-of-results sentinel to the results queue. A worker killed while it held
that queue's write lock (it was sending a batch) leaves the lock taken for good; the task
handler waits on it, and ``terminate`` waits on the task handler, for good. gluon's DataLoader
calls ``terminate`` when a batch fails and when it is collected, and the interpreter's exit
does through the pool's finalizer: a failed epoch, an iterator dropped mid-epoch or a script's
exit could each hang (how often: ``docs/data.rst``, "When loading fails").

So a pool whose workers all live is *closed*: they finish the batches already sent to them
(at most ``prefetch``), exit of themselves, and nothing is killed mid-write; only then is it
terminated, which ends nothing that still runs. A pool guarded with a ``stop`` (every
``PerDeviceIter``'s: ``_worker_reads``) first has its workers told to stop, so that they drop
the read in progress and skip the rest: it ends within about one sample's read, not after
``prefetch`` batches. A pool with a dead or stuck worker cannot finish its tasks and is
terminated at once, in a helper thread waited for at most :data:`TERMINATE_WAIT_S`. Past that
(a worker died holding one of the pool's locks: killed mid-write, or killed from outside while
it waited for a task), its workers are killed, its threads are left behind (daemon threads, a
warning logged) and the caller goes on. Every pool made for a ``PerDeviceIter`` is
:func:`guard`-ed, so gluon's own ``terminate`` calls and the interpreter's exit take this way
too.

It reads what multiprocessing keeps private, here only: ``Pool._pool`` (the worker processes)
and ``Pool._state``.
"""

import atexit
import logging
import multiprocessing.pool
import sys
import threading
import time
import weakref

__all__ = ["guard", "shut_down", "STOP_WAIT_S", "TERMINATE_WAIT_S"]

# How long a terminate may take before its pool is left behind (it takes milliseconds).
TERMINATE_WAIT_S = 10.0
# How long workers told to stop may take to end (a read busy in C code hears it only when that
# code returns); past it, the pool is terminated, which ends a worker so busy at once.
STOP_WAIT_S = 10.0
# How often a wait for a closing pool looks at its workers.
POLL_S = 0.05

_log = logging.getLogger(__name__)
# Guarded pools not shut down yet, with their grace: the interpreter's exit closes them before
# multiprocessing's own exit handler would terminate them.
_live: "weakref.WeakKeyDictionary[multiprocessing.pool.Pool, float]" = (
    weakref.WeakKeyDictionary())
# The workers each guarded pool started with: the pool replaces a dead one and forgets it,
# and the task the dead one held is never done.
_started: "weakref.WeakKeyDictionary[multiprocessing.pool.Pool, tuple]" = (
    weakref.WeakKeyDictionary())
# How each guarded pool's workers are told to stop, where they can be.
_stops: "weakref.WeakKeyDictionary[multiprocessing.pool.Pool, object]" = (
    weakref.WeakKeyDictionary())


def guard(pool, grace_s, stop=None):
    """Make ``pool.terminate()`` (gluon's calls) and the interpreter's exit :func:`shut_down`
    ``pool`` with ``grace_s`` for its workers to finish their tasks; ``stop(workers)``, where
    given, tells them to drop those tasks first."""
    pool_ref = weakref.ref(pool)

    def terminate():
        live_pool = pool_ref()
        if live_pool is not None and _state(live_pool) != multiprocessing.pool.TERMINATE:
            shut_down(live_pool, grace_s)

    pool.terminate = terminate  # this pool's own: gluon calls it, the class is left as it is
    _live[pool] = grace_s
    _started[pool] = tuple(pool._pool)
    if stop is not None:
        _stops[pool] = stop


def shut_down(pool, grace_s):
    """End ``pool``: closed (its workers told to stop where it was guarded with a ``stop``) and
    joined within ``grace_s`` where every worker lives, else (or after) terminated within
    :data:`TERMINATE_WAIT_S`; never waits longer than the two."""
    _live.pop(pool, None)
    if grace_s > 0 and _state(pool) != multiprocessing.pool.TERMINATE and not _lost_one(pool):
        pool.close()
        stop = _stops.get(pool)
        if stop is not None:
            stop(list(pool._pool))
        # Every task done, every worker exited of itself; unless one dies meanwhile (one may
        # be dying already), which leaves its task undone for good.
        if _within(pool.join, grace_s, give_up=lambda: _lost_one(pool)):
            multiprocessing.pool.Pool.terminate(pool)  # ends nothing: marks it terminated
            return
    if not _within(lambda: multiprocessing.pool.Pool.terminate(pool), TERMINATE_WAIT_S):
        # Its workers are killed here, so that no process outlives it; its threads wait on a
        # lock that a dead worker held, and stay behind.
        for worker in list(pool._pool):
            worker.kill()
        _log.warning("a DataLoader worker pool did not end within %g s of its terminate() "
                     "(CPython's Pool.terminate waits on a lock that a dead worker held): its "
                     "workers were killed, its threads are left behind", TERMINATE_WAIT_S)


def _lost_one(pool):
    """Whether a worker of ``pool`` died: one it started ended with a status other than 0, or
    one was started in place of another. (Before a pool's last task is done, none of its
    workers ends; after, each ends with 0 and none is replaced.)"""
    started = _started.get(pool) or tuple(pool._pool)
    return (any(worker.exitcode not in (None, 0) for worker in started)
            or any(worker not in started for worker in list(pool._pool)))


def _state(pool):
    return getattr(pool, "_state", None)


def _within(function, seconds, give_up=lambda: False):
    """Run ``function`` in a daemon thread; True if it returned within ``seconds`` (and before
    ``give_up()``, asked every :data:`POLL_S`, was true). What it raises is raised here."""
    done = threading.Event()
    raised = []

    def run():
        try:
            function()
        except BaseException as error:  # brought to the caller's thread below
            raised.append(error)
        finally:
            done.set()

    if sys.is_finalizing():  # a new thread would never run (3.11) or not start (3.12)
        run()
    else:
        threading.Thread(target=run, name="mxpatch_bind pool shutdown", daemon=True).start()
    deadline = time.monotonic() + seconds
    finished = done.wait(min(seconds, POLL_S))
    while not finished and time.monotonic() < deadline and not give_up():
        finished = done.wait(min(POLL_S, max(0.0, deadline - time.monotonic())))
    if raised:
        raise raised[0]
    return finished


@atexit.register
def _shut_down_live_pools():
    # Registered after multiprocessing's own exit handler, so run before it: the pools are
    # ended here, and its handler finds them terminated.
    for pool, grace_s in list(_live.items()):
        shut_down(pool, grace_s)
