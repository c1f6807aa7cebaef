"""Run a few calls at once on a shared thread pool, all or nothing (private module)."""

import concurrent.futures
import os
import threading

__all__ = ["call_all"]

_LOCK = threading.Lock()
_pool = None
_pool_key = None  # (process id, threads): a forked child, or a new size, gets a new pool


def call_all(function, arguments, threads):
    """``[function(*args) for args in arguments]``, on up to ``threads`` threads at once.

    Every call has ended when this returns or raises, so nothing still runs behind the
    caller's back: an exception in the caller's thread while it waits (a ``KeyboardInterrupt``
    from Ctrl-C) cancels the calls that have not started and waits for the running ones
    before it propagates. If calls raise, the first failing one in argument order is
    re-raised and every result is dropped, as the serial loop would.

    Examples
    --------
    >>> call_all(pow, [(2, 3), (3, 2)], threads=2)
    [8, 9]
    """
    arguments = list(arguments)
    if threads <= 1 or len(arguments) <= 1:
        return [function(*args) for args in arguments]
    pool = _shared_pool(threads)
    futures = []
    try:
        for args in arguments:
            futures.append(pool.submit(function, *args))
        concurrent.futures.wait(futures)
    except BaseException:
        for future in futures:
            future.cancel()
        _wait_through_interrupts(futures)
        raise
    return [future.result() for future in futures]


def _wait_through_interrupts(futures):
    """Wait for every running call, even through further interrupts (the first one is
    already on its way to the caller)."""
    while True:
        try:
            concurrent.futures.wait(futures)
            return
        except KeyboardInterrupt:
            continue


def _shared_pool(threads):
    """The process's pool with ``threads`` threads, made anew after a fork or a size change.

    A pool's threads do not survive ``fork`` (gluon's DataLoader workers fork the trainer):
    a child that reused its parent's pool would queue work no thread ever runs. A pool
    replaced after a size change is not shut down: another thread may be submitting to it
    at this moment; its idle threads end once the last caller drops it.
    """
    global _pool, _pool_key
    key = (os.getpid(), threads)
    with _LOCK:
        if _pool_key != key:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="mxpatch_bind-reshape")
            _pool_key = key
        return _pool


def _after_fork_in_child():
    # The lock may have been held by a parent thread that does not exist in the child.
    global _LOCK, _pool, _pool_key
    _LOCK = threading.Lock()
    _pool = _pool_key = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
