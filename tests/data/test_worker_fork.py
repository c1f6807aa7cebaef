"""Children forked for this package's DataLoader workers collect none of what they inherited.

MXNet keeps a shared-memory array's reference count in that memory: a worker whose garbage
collection frees an array inherited from its parent leaves the count one short, and the
parent's own free then aborts the process (MXNet 1.6.0 did, in this suite, before this). Every
other fork of the process is left alone.
"""

import gc
import multiprocessing
import os
import time

import numpy as np
import pytest

from mxpatch_bind import Input, PerDeviceIter
from mxpatch_bind.data import _worker_fork

WAIT_S = 60  # a limit on a hang, never a measurement


class FreezeCounts:
    """Each sample holds how many objects its worker's collections leave alone."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return (np.full((1, 2, 2), gc.get_freeze_count(), np.float32),)


def test_dataloader_workers_leave_every_inherited_object_to_the_parent():
    assert gc.get_freeze_count() == 0  # this process freezes nothing itself
    it = PerDeviceIter(FreezeCounts(), num_devices=2, batch_per_device=1,
                       inputs=[Input("data", size_axes=(1, 2))], sizes=[(2, 2)] * 4,
                       num_workers=2)

    counts = [data[0].asnumpy().min() for batch in it for data in batch.data]

    assert len(counts) == 4 and min(counts) > 1000  # the interpreter's own objects at least
    assert gc.get_freeze_count() == 0  # and the parent's collections are unchanged


class FakeLoader:
    def __init__(self, pool):
        self._worker_pool = pool


def replace_worker(pool):
    """End the pool's worker inside a task (an idle one, killed, would take the task queue's
    lock with it) and wait for the one its maintenance thread starts instead."""
    (old,) = pool._pool
    pool.apply_async(os._exit, (0,))
    deadline = time.monotonic() + WAIT_S
    while pool._pool == [old] or not pool._pool:
        assert time.monotonic() < deadline, "no replacement worker"
        time.sleep(0.05)


@pytest.mark.parametrize("watched", [True, False])
def test_a_replacement_worker_is_frozen_only_for_a_watched_pool(watched):
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        assert pool.apply(gc.get_freeze_count) == 0  # a pool of the user's own: unchanged
        if watched:
            _worker_fork.watch(FakeLoader(pool))
        replace_worker(pool)

        frozen = pool.apply_async(gc.get_freeze_count).get(WAIT_S)

        assert (frozen > 1000) if watched else (frozen == 0)
    finally:
        pool.terminate()


def test_forking_freezes_only_children_forked_from_its_own_thread_inside_the_block():
    with _worker_fork.forking():
        inside = multiprocessing.get_context("fork").Pool(1)
    outside = multiprocessing.get_context("fork").Pool(1)
    try:
        assert inside.apply(gc.get_freeze_count) > 1000
        assert outside.apply(gc.get_freeze_count) == 0
    finally:
        inside.terminate()
        outside.terminate()
