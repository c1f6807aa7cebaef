"""Ending DataLoader worker pools: nothing killed while it can finish, never a hang.

The reference for the hang is CPython's own ``Pool.terminate`` on a pool one of whose workers
holds the results queue's write lock: it never returns (shown in a child process). Every wait
here is a limit on a hang, never a measurement: the machine may be loaded.
"""

import gc
import logging
import multiprocessing
import multiprocessing.pool
import multiprocessing.util
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import mxnet as mx
import numpy as np
import pytest

from mxpatch_bind import DataLoadError, Input, PerDeviceIter
from mxpatch_bind.data import _pool_shutdown
from mxpatch_bind.data.loading import WorkerFailure

# As tests/data/test_io_faults.py: the worker paths of PerDeviceIter run on MXNet 1.9.1 only.
WORKERS_UNRELIABLE = mx.__version__.startswith("1.6.")
HANG_LIMIT_S = 120  # far above what any of these takes, far below a grace never given up


class LockHoldingPool(multiprocessing.pool.Pool):
    """A pool whose workers can reach its results queue: a task may take its write lock."""

    def _setup_queues(self):
        super()._setup_queues()
        global RESULTS_QUEUE  # inherited by the workers, which fork after this
        RESULTS_QUEUE = self._outqueue


RESULTS_QUEUE = None


def hold_the_write_lock_for_good(_):
    RESULTS_QUEUE._wlock.acquire()
    time.sleep(3600)


def pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


def exit_with(code):
    os._exit(code)


def wait_for(predicate, seconds=HANG_LIMIT_S):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "not within the hang limit"
        time.sleep(0.05)


def in_thread(function, *args):
    """Run ``function`` in a daemon thread; fail the test if it has not returned within the
    hang limit."""
    thread = threading.Thread(target=function, args=args, daemon=True)
    thread.start()
    thread.join(HANG_LIMIT_S)
    assert not thread.is_alive(), f"{function.__name__} hung"


@pytest.fixture
def fork_context():
    return multiprocessing.get_context("fork")


# --------------------------------------------------------------------------- the reference
CPYTHON_HANG = """
import sys, time
sys.path[:0] = {path!r}
import test_pool_shutdown as t
pool = t.LockHoldingPool(2, context=t.multiprocessing.get_context("fork"))
pool.map_async(t.hold_the_write_lock_for_good, [0])
time.sleep(1)  # a worker takes the lock
pool.terminate()
print("returned")
"""


@pytest.mark.slow
def test_cpython_s_terminate_never_returns_when_a_killed_worker_held_the_write_lock():
    # What the module is for: without it, this is gluon's DataLoader after a failed batch.
    here = os.path.dirname(os.path.abspath(__file__))
    script = CPYTHON_HANG.format(path=[here, os.path.dirname(here)])
    # A session of its own: its workers, which hold its pipes, end with it.
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = child.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, (out, err)  # still in terminate() at 10 s
    assert "returned" not in out


# --------------------------------------------------------------------------- shut_down
def test_a_pool_whose_workers_live_finishes_its_tasks_and_no_worker_is_killed(fork_context):
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    workers = list(pool._pool)
    results = [pool.apply_async(pid_after, (0.2,)) for _ in range(4)]  # in flight

    in_thread(_pool_shutdown.shut_down, pool, HANG_LIMIT_S)

    assert all(result.ready() and result.successful() for result in results)
    assert {result.get() for result in results} <= {worker.pid for worker in workers}
    assert [worker.exitcode for worker in workers] == [0, 0]  # exited of themselves

def finalize_slowly(path):
    """In a worker: work it does on its way out (a pool's worker runs multiprocessing's
    finalizers as it exits), which takes a second and then writes ``path``."""
    multiprocessing.util.Finalize(None, _write_after, args=(path, 1.0), exitpriority=10)
    return os.getpid()


def _write_after(path, seconds):
    time.sleep(seconds)
    with open(path, "w") as stream:
        stream.write("done")


def test_a_worker_still_on_its_way_out_is_not_killed_when_another_has_ended(fork_context,
                                                                          tmp_path):
    # Both end with 0 once the tasks are done, one of them a second later: the first to end
    # is no lost worker, and the other's exit is not cut short by a terminate.
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    _pool_shutdown.guard(pool, grace_s=HANG_LIMIT_S)
    workers = list(pool._pool)
    marker = tmp_path / "finalized"
    pool.apply_async(finalize_slowly, (str(marker),)).get(HANG_LIMIT_S)

    in_thread(_pool_shutdown.shut_down, pool, HANG_LIMIT_S)

    assert [worker.exitcode for worker in workers] == [0, 0]
    assert marker.read_text() == "done"


def test_a_pool_that_lost_a_worker_is_terminated_without_waiting_out_its_grace(fork_context):
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    _pool_shutdown.guard(pool, grace_s=3600)
    workers = list(pool._pool)
    lost = pool.apply_async(exit_with, (3,))  # its worker dies: this task is never done
    wait_for(lambda: any(worker.exitcode == 3 for worker in workers))

    in_thread(pool.terminate)  # gluon's call: guarded; a grace of an hour is not waited out

    assert not lost.ready()
    assert all(worker.exitcode is not None for worker in workers)
    assert pool._state == multiprocessing.pool.TERMINATE


def test_a_worker_that_dies_while_the_pool_closes_ends_the_wait(fork_context):
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    _pool_shutdown.guard(pool, grace_s=3600)
    slow_death = pool.apply_async(_exit_after, (0.5, 0))  # status 0, yet its task is undone
    in_thread(pool.terminate)
    assert not slow_death.ready()
    assert pool._state == multiprocessing.pool.TERMINATE


def _exit_after(seconds, code):
    time.sleep(seconds)
    os._exit(code)


def test_a_terminate_that_hangs_is_left_behind_after_its_limit(fork_context, monkeypatch,
                                                              caplog):
    monkeypatch.setattr(_pool_shutdown, "TERMINATE_WAIT_S", 1.0)
    pool = LockHoldingPool(2, context=fork_context)
    workers = list(pool._pool)
    pool.map_async(hold_the_write_lock_for_good, [0])
    wait_for(lambda: RESULTS_QUEUE._wlock._semlock._get_value() == 0)  # a worker took it

    with caplog.at_level(logging.WARNING, logger=_pool_shutdown.__name__):
        in_thread(_pool_shutdown.shut_down, pool, 0.5)

    assert "did not end within 1 s" in caplog.text
    wait_for(lambda: all(worker.exitcode is not None for worker in workers))  # no process left


class Stops:
    """A guard's ``stop``: records the process ids of the workers it was given."""

    def __init__(self):
        self.told = []

    def __call__(self, workers):
        self.told.append(sorted(worker.pid for worker in workers))


def test_a_live_pool_guarded_with_a_stop_has_its_workers_told_once_before_the_wait(
        fork_context):
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    stops = Stops()
    _pool_shutdown.guard(pool, grace_s=HANG_LIMIT_S, stop=stops)
    workers = sorted(worker.pid for worker in pool._pool)

    in_thread(pool.terminate)  # gluon's call: guarded

    assert stops.told == [workers]
    assert pool._state == multiprocessing.pool.TERMINATE


def test_a_pool_that_lost_a_worker_is_terminated_without_telling_its_workers(fork_context):
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    stops = Stops()
    _pool_shutdown.guard(pool, grace_s=HANG_LIMIT_S, stop=stops)
    pool.apply_async(exit_with, (3,))
    wait_for(lambda: _pool_shutdown._lost_one(pool))

    in_thread(_pool_shutdown.shut_down, pool, HANG_LIMIT_S)

    assert stops.told == []
    assert pool._state == multiprocessing.pool.TERMINATE


def test_what_the_shutdown_raises_reaches_its_caller():
    def fails():
        raise ValueError("in the helper thread")

    with pytest.raises(ValueError, match="in the helper thread"):
        _pool_shutdown._within(fails, HANG_LIMIT_S)


# --------------------------------------------------------------------------- PerDeviceIter
class Samples:
    """16 images of varying sizes; sample ``bad`` raises an OSError; each read in a worker
    takes ``delay_s``."""

    def __init__(self, bad=None, delay_s=0.0):
        self.bad, self.delay_s = bad, delay_s
        self.owner = os.getpid()

    def __len__(self):
        return 16

    def __getitem__(self, index):
        if os.getpid() != self.owner:
            time.sleep(self.delay_s)
        if index == self.bad:
            raise OSError(5, "disk read failed")
        return (np.full((1, 3 + index % 4, 4 + index % 3), index + 1, np.float32),)


SIZES = np.array([[3 + i % 4, 4 + i % 3] for i in range(16)])
IMAGE = Input("data", size_axes=(1, 2))


def lazy_iter(dataset):
    if WORKERS_UNRELIABLE:
        pytest.skip("MXNet 1.6's DataLoader pools can abort when remade in a long process")
    return PerDeviceIter(dataset, num_devices=2, batch_per_device=2, inputs=[IMAGE],
                         sizes=SIZES, num_workers=2)


def test_mxnet_1_6_s_unwrapping_of_a_batch_of_one_leaves_a_failure_as_it_is():
    failure = WorkerFailure.of(OSError(5, "disk read failed"))
    batch = pickle.loads(pickle.dumps(failure))
    unwrapped = batch[0] if len(batch) == 1 else batch  # dataloader.py, MXNet 1.6.0
    assert unwrapped is batch
    assert isinstance(batch.error, OSError) and "OSError" in str(batch.error.__cause__)


def started_workers(it):
    return it._batches._workers


def test_a_dataset_error_in_a_worker_ends_the_pool_with_no_worker_killed():
    it = lazy_iter(Samples(bad=9, delay_s=0.1))  # the other batches are still being read
    it.next()
    workers = started_workers(it)

    with pytest.raises(DataLoadError, match=r"dataset\[9\]"):
        list(it)

    # The failure came back as a value: the pool was closed, each worker ended by itself.
    assert [worker.exitcode for worker in workers] == [0, 0]


def test_an_iterator_dropped_mid_epoch_has_its_workers_stop_and_end_by_themselves():
    # How fast: tests/data/test_prompt_stop.py.
    it = lazy_iter(Samples(delay_s=0.2))
    it.next()  # the next batches are on their way, being read
    workers = started_workers(it)

    del it
    gc.collect()  # gluon's DataLoader.__del__ calls its pool's terminate(): guarded

    wait_for(lambda: all(worker.exitcode is not None for worker in workers))
    assert [worker.exitcode for worker in workers] == [0, 0]


EXIT_MID_EPOCH = """
import sys
sys.path[:0] = {path!r}
import test_pool_shutdown as t
it = t.lazy_iter(t.Samples())
it.next()
print("exiting", flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
def test_a_script_that_exits_mid_epoch_exits():
    here = os.path.dirname(os.path.abspath(__file__))
    script = EXIT_MID_EPOCH.format(path=[here, os.path.dirname(here)])
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=HANG_LIMIT_S)
    assert (child.returncode, child.stdout) == (0, "exiting\n"), child.stderr
    assert child.stderr == ""


def test_a_pool_whose_idle_worker_was_killed_from_outside_is_still_ended(fork_context,
                                                                         monkeypatch):
    # An idle worker holds the task queue's read lock while it waits: killed (the kernel's
    # out-of-memory killer, a user's kill), it takes the lock along, and CPython's terminate
    # waits for it. The pool is ended anyway, within the limit.
    monkeypatch.setattr(_pool_shutdown, "TERMINATE_WAIT_S", 1.0)
    pool = multiprocessing.pool.Pool(2, context=fork_context)
    _pool_shutdown.guard(pool, grace_s=3600)
    workers = list(pool._pool)
    os.kill(workers[0].pid, signal.SIGKILL)
    wait_for(lambda: workers[0].exitcode == -signal.SIGKILL)

    in_thread(pool.terminate)

    wait_for(lambda: all(worker.exitcode is not None for worker in pool._pool))


@pytest.mark.slow
@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
def test_the_soak_benchmark_runs_each_kind_and_reports_no_hang():
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "benchmarks", "pool_soak.py")
    child = subprocess.run([sys.executable, script, "--epochs", "2"], capture_output=True,
                           text=True, timeout=4 * HANG_LIMIT_S)
    assert child.returncode == 0, child.stderr
    kinds = [line.split()[0] for line in child.stdout.splitlines()]
    assert kinds == ["error", "exit", "kill", "drop"]
    assert all(" 0 hung," in line for line in child.stdout.splitlines())
