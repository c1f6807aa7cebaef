"""DataLoader workers that never free their parent's shared-memory arrays, and can be stopped
(private).

A forked worker inherits every object of its parent, garbage not yet collected included. Where
the worker's own garbage collection frees such an inherited NDArray in shared memory, MXNet
decrements the reference count kept *in* that shared memory: the count is then one short, and
the parent's own free later fails MXNet's check ``count >= 0`` in
``cpu_shared_storage_manager.h`` and aborts the process (``terminate called after throwing
an instance of 'dmlc::Error'``). MXNet 1.6.0 did so here, at the next fork, in a long test
process whose batches from earlier workers were still garbage.

So the child of a fork made for one of this package's DataLoaders (its construction, or the
pool's maintenance thread starting a worker in place of a dead one) moves what it inherited to
the permanent generation (``gc.freeze()``): its collections then see only its own objects.
The same child listens for the signal that stops its reads (``_worker_reads``). Every other
fork of the process is left as it is.
"""

import contextlib
import gc
import os
import threading
import weakref

from . import _worker_reads

__all__ = ["forking", "watch"]

# Threads inside a DataLoader's construction here (it forks the first workers).
_opening: "set[int]" = set()
# The maintenance threads of this package's DataLoader pools (they fork replacements).
_maintainers: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()


@contextlib.contextmanager
def forking():
    """Within the block, a fork from this thread makes a child that collects none of what it
    inherited."""
    ident = threading.get_ident()
    _opening.add(ident)
    try:
        yield
    finally:
        _opening.discard(ident)


def watch(loader):
    """Forks by ``loader``'s worker pool from now on make children like :func:`forking`."""
    pool = getattr(loader, "_worker_pool", None)
    maintainer = getattr(pool, "_worker_handler", None)
    if maintainer is not None:
        _maintainers.add(maintainer)


def _set_up_worker():
    if threading.get_ident() in _opening or threading.current_thread() in _maintainers:
        gc.freeze()
        _worker_reads.listen()


os.register_at_fork(after_in_child=_set_up_worker)
