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
    caller's back. If calls raise, the first failing one in argument order is re-raised and
    every result is dropped, as the serial loop would.

    Examples
    --------
    >>> call_all(pow, [(2, 3), (3, 2)], threads=2)
    [8, 9]
    """
    arguments = list(arguments)
    if threads <= 1 or len(arguments) <= 1:
        return [function(*args) for args in arguments]
    pool = _shared_pool(threads)
    futures = [pool.submit(function, *args) for args in arguments]
    concurrent.futures.wait(futures)
    return [future.result() for future in futures]


def _shared_pool(threads):
    """The process's pool with ``threads`` threads, made anew after a fork or a size change.

    A pool's threads do not survive ``fork`` (gluon's DataLoader workers fork the trainer):
    a child that reused its parent's pool would queue work no thread ever runs.
    """
    global _pool, _pool_key
    key = (os.getpid(), threads)
    with _LOCK:
        if _pool_key != key:
            old, _pool = _pool, concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="mxpatch_bind-reshape")
            if old is not None and _pool_key[0] == key[0]:
                old.shutdown(wait=False)
            _pool_key = key
        return _pool
