"""PerDeviceIter under faults: a dataset that raises, workers that die or hang, sizes that lie.

Every epoch either yields exactly its planned batches or raises a typed error naming what
failed, again on every later call, and ``reset()`` then gives a full, correct epoch.
"""

import copy
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import types

import mxnet as mx
import numpy as np
import pytest

from mxpatch_bind import (
    DataLoadError,
    DataSpecError,
    Input,
    PerDeviceIter,
    WorkerExitedError,
)
from mxpatch_bind.data import _worker_reads, batch_loader, loading

IMAGE = Input("data", size_axes=(1, 2))
BOXES = Input("gt_boxes", variable_axes=(0,), pad_value=-1)
NUM_SAMPLES = 16  # four batches of two devices with two samples each
WAIT_S = 60  # a limit on a hang, never a measurement: the machine is loaded


def sample(index):
    """Sample ``index``: an image of its own size filled with index + 1, and index % 3 boxes."""
    h, w = 3 + index % 4, 4 + index % 3
    return (np.full((1, h, w), index + 1, np.float32),
            np.full((index % 3, 5), index + 1, np.float32))


SIZES = np.array([sample(i)[0].shape[1:] for i in range(NUM_SAMPLES)])


class Faulty:
    """A lazy dataset that fails at one sample: raising ``error``, or ending its process.

    ``times`` limits how often it fails (counted in this process only: a worker counts its
    own); ``exit_code`` ends the process with ``os._exit``, ``kill_signal`` with a signal,
    ``stall_s`` sleeps: those three only in another process than the one that made it (a
    worker), never in the test's own.
    """

    def __init__(self, bad=None, error=None, times=None, exit_code=None, kill_signal=None,
                 stall_s=None):
        self.bad, self.error, self.times = bad, error, times
        self.exit_code, self.kill_signal, self.stall_s = exit_code, kill_signal, stall_s
        self.failures = 0
        self.owner = os.getpid()

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, index):
        in_worker = os.getpid() != self.owner
        kills = (self.exit_code, self.kill_signal, self.stall_s) != (None, None, None)
        if (index == self.bad and (self.times is None or self.failures < self.times)
                and (in_worker or not kills)):
            self.failures += 1
            if self.exit_code is not None:
                os._exit(self.exit_code)
            if self.kill_signal is not None:
                os.kill(os.getpid(), self.kill_signal)
                time.sleep(WAIT_S)
            if self.stall_s is not None:
                time.sleep(self.stall_s)
            if self.error is not None:
                raise self.error
        return sample(index)


# MXNet 1.6.0: in a long test process, a DataLoader pool made after others were terminated
# aborted in its fork. Workers freezing what they inherit (_worker_fork) removed one cause
# ("Check failed: count >= 0"): the whole 1.6.0 suite then passed once, and aborted in the
# next CI run. Until the other cause is found, the worker paths are tested on 1.9.1 only.
WORKERS_UNRELIABLE = mx.__version__.startswith("1.6.")


def lazy_iter(dataset, num_workers=0, sizes=SIZES, **kwargs):
    if num_workers and WORKERS_UNRELIABLE:
        pytest.skip("MXNet 1.6's DataLoader pools can abort when remade in a long process")
    return PerDeviceIter(dataset, num_devices=2, batch_per_device=2, inputs=[IMAGE],
                         label_inputs=[BOXES], sizes=sizes, num_workers=num_workers, **kwargs)


def padded(arrays, pad_value):
    """``arrays`` stacked, each at the start of every axis of the largest, ``pad_value`` after."""
    shape = np.max([a.shape for a in arrays], axis=0)
    out = np.full((len(arrays),) + tuple(shape), pad_value, np.float32)
    for row, array in zip(out, arrays):
        row[tuple(slice(extent) for extent in array.shape)] = array
    return out


def reference_epoch(it):
    """Per planned batch of ``it``: its flat indices, and per device the padded arrays built
    here from the samples (images padded with 0, boxes with -1)."""
    return [(sum(plan, []), [[padded([sample(i)[0] for i in device], 0),
                              padded([sample(i)[1] for i in device], -1)] for device in plan])
            for plan in it.batch_indices]


def assert_is_planned_batch(batch, planned):
    flat, devices = planned
    assert batch.index.tolist() == flat
    for data, label, (image, boxes) in zip(batch.data, batch.label, devices):
        np.testing.assert_array_equal(data[0].asnumpy(), image)
        np.testing.assert_array_equal(label[0].asnumpy(), boxes)


def assert_full_correct_epoch(it):
    planned = reference_epoch(it)
    got = list(it)
    assert len(got) == len(planned)
    for batch, expected in zip(got, planned):
        assert_is_planned_batch(batch, expected)


def failing_position(it, bad):
    return next(k for k, plan in enumerate(it.batch_indices) if bad in sum(plan, []))


# --------------------------------------------------------------------------- dataset errors
def test_without_workers_the_dataset_s_own_exception_is_the_cause_even_one_that_cannot_cross():
    # Nothing crosses a process: the exception is raised as the dataset raised it.
    error = NeedsTwoArguments("5.png", "truncated")
    it = lazy_iter(Faulty(bad=5, error=error), num_workers=0)

    with pytest.raises(DataLoadError, match=r"dataset\[5\] raised NeedsTwoArguments") as info:
        list(it)

    assert info.value.__cause__ is error


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_dataset_error_is_a_data_load_error_naming_the_sample_and_never_an_early_end(
        num_workers):
    it = lazy_iter(Faulty(bad=9, error=KeyError("no file for sample 9")), num_workers)
    position = failing_position(it, 9)
    planned = reference_epoch(it)

    for k in range(position):
        assert_is_planned_batch(it.next(), planned[k])
    with pytest.raises(DataLoadError, match=r"dataset\[9\] raised KeyError: 'no file for sample "
                                            r"9' \(dataset Faulty, batch %d" % position) as info:
        it.next()

    assert (info.value.sample, info.value.batch, info.value.dataset) == (9, position, "Faulty")
    assert isinstance(info.value.__cause__, KeyError)
    for _ in range(3):  # again, never StopIteration
        with pytest.raises(DataLoadError, match=r"dataset\[9\]"):
            it.next()
    with pytest.raises(DataLoadError, match=r"dataset\[9\]"):
        assert it.provide_data is None  # never reached: reading it raises


def test_a_worker_s_error_brings_the_dataset_s_exception_and_the_worker_s_traceback():
    it = lazy_iter(Faulty(bad=1, error=OSError(5, "disk read failed")), num_workers=2)

    with pytest.raises(DataLoadError) as info:
        list(it)

    cause = info.value.__cause__
    assert isinstance(cause, OSError) and cause.errno == 5
    assert "__getitem__" in str(cause.__cause__)  # the worker's traceback text


class NeedsTwoArguments(Exception):
    """Pickles, but cannot be rebuilt from its args: unpickling it would fail."""

    def __init__(self, path, reason):
        super().__init__("%s: %s" % (path, reason))


def test_an_exception_that_cannot_cross_from_a_worker_is_still_named():
    it = lazy_iter(Faulty(bad=5, error=NeedsTwoArguments("5.png", "truncated")), num_workers=2)

    with pytest.raises(DataLoadError, match=r"dataset\[5\] raised NeedsTwoArguments: 5.png: "
                                            "truncated") as info:
        list(it)

    assert "NeedsTwoArguments: 5.png: truncated" in str(info.value.__cause__)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_reset_after_a_dataset_error_gives_a_full_correct_epoch(num_workers):
    dataset = Faulty(bad=6, error=ValueError("corrupt"))
    it = lazy_iter(dataset, num_workers, shuffle=True, seed=4)
    with pytest.raises(DataLoadError):
        list(it)
    dataset.bad = None  # new workers fork from this process: they fail no more

    it.reset()

    assert_full_correct_epoch(it)
    it.reset()
    assert_full_correct_epoch(it)


def test_a_transform_error_is_named_like_a_dataset_error():
    class Samples(mx.gluon.data.Dataset):
        def __len__(self):
            return NUM_SAMPLES

        def __getitem__(self, index):
            return sample(index)

    def transform(image, boxes):
        if image[0, 0, 0] == 4:
            raise ZeroDivisionError("bad crop")
        return image, boxes

    it = lazy_iter(Samples().transform(transform))

    with pytest.raises(DataLoadError, match=r"dataset\[3\] raised ZeroDivisionError: bad crop"):
        list(it)


# --------------------------------------------------------------------------- workers
def check_a_dead_worker_is_named(how, expected, bad):
    """The epoch ends in a WorkerExitedError naming the worker's status and the sample and
    batch it was reading, after the planned batches before the failing one; the next call
    raises it again."""
    it = lazy_iter(Faulty(bad=bad, **how), num_workers=2)
    planned = reference_epoch(it)
    position = failing_position(it, bad)

    got = []
    with pytest.raises(WorkerExitedError, match=r"DataLoader worker \d+ %s while reading sample "
                                                r"%d of batch %d \(samples %s\)$"
                       % (expected, bad, position, re.escape(str(planned[position][0])))
                       ) as info:
        for batch in it:
            got.append(batch)

    # Not the batch timeout's DataLoadError: the death itself was noticed.
    assert info.value.exitcode == how.get("exit_code", -how.get("kill_signal", 0))
    assert (info.value.batch, info.value.sample) == (position, bad)
    for batch, expected_batch in zip(got, planned):  # what came before was right
        assert_is_planned_batch(batch, expected_batch)
    assert len(got) <= failing_position(it, bad)
    with pytest.raises(WorkerExitedError):
        it.next()


@pytest.mark.parametrize("how, expected", [
    (dict(exit_code=3), r"exited with code 3"),
    # A worker that ends with status 0 after sending a batch is found by the lost connection,
    # after gluon has terminated the pool (whose workers end with 0 or SIGTERM): the batch
    # names its sender, so the status named is the worker's own.
    (dict(exit_code=0), r"exited with code 0"),
    (dict(kill_signal=signal.SIGKILL), r"was killed by signal SIGKILL \(exit code -9\)"),
])
@pytest.mark.parametrize("bad", [0, 9])
def test_a_dead_worker_is_named_with_its_exit_status(how, expected, bad):
    check_a_dead_worker_is_named(how, expected, bad)


# The same check, run in a child of its own: a worker that dies of SIGSEGV leaves a crash
# report (faulthandler's "Fatal Python error: Segmentation fault" and every thread's stack),
# which in the test's own process would reach the terminal past pytest's capture (pytest's
# faulthandler writes to the terminal's own descriptor, and the forked worker inherits it).
SEGFAULT_CHILD = """
import signal, sys
sys.path[:0] = {path!r}
from test_io_faults import check_a_dead_worker_is_named
check_a_dead_worker_is_named(dict(kill_signal=signal.SIGSEGV),
                             r"was killed by signal SIGSEGV \\(exit code -11\\)", {bad})
print("checked")
"""


@pytest.mark.slow  # a child Python that imports MXNet
@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
@pytest.mark.parametrize("bad", [0, 9])
def test_a_worker_killed_by_sigsegv_is_named_and_its_crash_report_stays_in_a_child(bad):
    here = os.path.dirname(os.path.abspath(__file__))
    script = SEGFAULT_CHILD.format(path=[here, os.path.dirname(here)], bad=bad)

    # -X faulthandler: the worker reports its crash as it would under pytest.
    child = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script],
                           capture_output=True, text=True, timeout=2 * WAIT_S)

    assert (child.returncode, child.stdout.splitlines()[-1:]) == (0, ["checked"]), child.stderr
    assert "Fatal Python error: Segmentation fault" in child.stderr


def _loader_that_lost_a_worker(workers, board=None, sampler=None):
    """A BatchLoader's state after a batch's shared memory could not be fetched: ``workers``
    (as the pool left them), no sender known from the batch, waiting for batch 4."""
    loader = types.SimpleNamespace(_pending=None, _workers=workers, _position=4, _sampler=sampler,
                                   _board=board)
    for name in ("_worker_error", "_what_it_loaded", "_samples"):
        setattr(loader, name, getattr(batch_loader.BatchLoader, name).__get__(loader))
    return loader


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 0, 2)])
def test_the_worker_that_died_of_itself_is_blamed_not_those_the_pool_terminated(order):
    terminated = [types.SimpleNamespace(pid=101, exitcode=-signal.SIGTERM),
                  types.SimpleNamespace(pid=102, exitcode=3),
                  types.SimpleNamespace(pid=103, exitcode=0)]
    loader = _loader_that_lost_a_worker([terminated[i] for i in order])
    error = batch_loader.BatchLoader._lost_worker(loader, ConnectionResetError("reset"))
    assert isinstance(error, WorkerExitedError)
    assert (error.pid, error.exitcode) == (102, 3)
    assert str(error) == ("DataLoader worker 102 exited with code 3 while the iterator waited "
                          "for batch 4 (samples [])")


@pytest.mark.parametrize("lost", [EOFError(), ConnectionRefusedError(111, "refused")])
def test_a_batch_whose_memory_cannot_be_fetched_names_the_worker_that_died(lost):
    # Fetching a batch's shared memory from a worker that ended: multiprocessing's recv_handle
    # raises EOFError when it ends mid-transfer, the connection is refused once it is gone.
    workers = [types.SimpleNamespace(pid=101, exitcode=None),
               types.SimpleNamespace(pid=102, exitcode=-signal.SIGKILL)]
    loader = _loader_that_lost_a_worker(workers)
    loader._lost_worker = batch_loader.BatchLoader._lost_worker.__get__(loader)

    error = batch_loader.BatchLoader._named(loader, lost)

    assert isinstance(error, WorkerExitedError)
    assert (error.pid, error.exitcode, error.batch) == (102, -signal.SIGKILL, 4)


def test_a_lost_connection_with_no_worker_gone_is_a_data_load_error_of_its_batch(monkeypatch):
    # No worker has ended (yet) when the wait for an exit status runs out.
    monkeypatch.setattr(batch_loader, "EXIT_STATUS_WAIT_S", 0.0)
    loader = _loader_that_lost_a_worker([types.SimpleNamespace(pid=101, exitcode=None)])

    error = batch_loader.BatchLoader._lost_worker(loader, ConnectionResetError("reset"))

    assert type(error) is DataLoadError and error.batch == 4
    assert str(error) == ("lost the connection to a DataLoader worker while loading batch 4 "
                          "(samples []): ConnectionResetError: reset")


def planned_sampler(batches, plan_id):
    """A sampler whose plan has ``batches`` (per batch, per device, the samples)."""
    sampler = loading.PlannedSampler(sizes=None)
    for _ in range(plan_id):
        sampler.plan([types.SimpleNamespace(device_indices=[np.array(device) for device in batch])
                      for batch in batches], 0)
    return sampler


BATCHES = [[[2 * b, 2 * b + 1], [2 * b + 8, 2 * b + 9]] for b in range(4)]


@pytest.mark.parametrize("written, expected", [
    ((2, 3, 14), "while reading sample 14 of batch 3 (samples [6, 7, 14, 15])"),
    ((2, 3, -1), "while loading batch 3 (samples [6, 7, 14, 15])"),
    ((1, 3, 14), "while reading sample 14 of batch 3 of an earlier epoch"),
    ((1, 3, -1), "while loading batch 3 of an earlier epoch"),
])
def test_a_dead_worker_is_named_with_what_its_board_row_says_it_was_reading(written, expected):
    board = _worker_reads.Board(2)
    # This process plays the worker that writes its row, as a worker writes its own.
    board.enlist([types.SimpleNamespace(pid=1), types.SimpleNamespace(pid=os.getpid())])
    board.record(*written)
    dead = types.SimpleNamespace(pid=os.getpid(), exitcode=-signal.SIGKILL)
    loader = _loader_that_lost_a_worker([dead], board, planned_sampler(BATCHES, plan_id=2))

    error = loader._worker_error(dead)

    assert str(error) == (f"DataLoader worker {os.getpid()} was killed by signal SIGKILL (exit "
                          f"code -9) {expected}")
    plan_id, batch, sample = written
    assert (error.batch, error.sample) == (3, sample if sample >= 0 else None)


def test_a_worker_without_a_row_is_named_with_the_batch_the_iterator_waited_for():
    board = _worker_reads.Board(2)
    board.enlist([types.SimpleNamespace(pid=1), types.SimpleNamespace(pid=2)])
    board.record(2, 3, 14)  # not enlisted (a worker started in place of a dead one): no row
    stranger = types.SimpleNamespace(pid=os.getpid(), exitcode=3)
    loader = _loader_that_lost_a_worker([stranger], board, planned_sampler(BATCHES, plan_id=2))
    loader._position = 2

    error = loader._worker_error(stranger)

    assert str(error).endswith("while the iterator waited for batch 2 (samples [4, 5, 12, 13])")
    assert (error.batch, error.sample) == (2, None)


class DiesAheadOfTheIterator:
    """In a worker: sample 8 (batch 2) stalls, sample 13 (batch 3) exits with code 3 once
    ``go`` exists (the iterator has taken batches 0 and 1, and waits for batch 2)."""

    def __init__(self, go):
        self.go, self.owner = go, os.getpid()

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, index):
        if os.getpid() != self.owner and index == 8:
            time.sleep(WAIT_S)
        if os.getpid() != self.owner and index == 13:
            deadline = time.monotonic() + WAIT_S
            while not os.path.exists(self.go) and time.monotonic() < deadline:
                time.sleep(0.01)
            os._exit(3)
        return sample(index)


def test_a_worker_that_dies_ahead_of_the_iterator_is_named_with_its_own_batch(tmp_path):
    # The case: the iterator waits for batch 2 while the worker on batch 3 dies.
    go = tmp_path / "go"
    it = lazy_iter(DiesAheadOfTheIterator(str(go)), num_workers=2, grouping=False)
    assert it.batch_indices[2:] == [[[8, 9], [10, 11]], [[12, 13], [14, 15]]]
    it.next(), it.next()
    go.touch()

    with pytest.raises(WorkerExitedError, match=r"exited with code 3 while reading sample 13 of "
                                                r"batch 3 \(samples \[12, 13, 14, 15\]\)$") as info:
        it.next()

    assert (info.value.batch, info.value.sample, info.value.exitcode) == (3, 13, 3)


def test_reset_after_a_dead_worker_loads_a_full_epoch_on_new_workers():
    dataset = Faulty(bad=9, exit_code=3)
    it = lazy_iter(dataset, num_workers=2)
    with pytest.raises(WorkerExitedError):
        list(it)
    dataset.bad = None  # the new workers fork from this process: they fail no more

    it.reset()

    assert_full_correct_epoch(it)


def test_a_stuck_worker_is_a_data_load_error_after_the_batch_timeout(monkeypatch):
    monkeypatch.setattr(batch_loader, "BATCH_TIMEOUT_S", 1.0)
    dataset = Faulty(bad=2, stall_s=WAIT_S)
    it = lazy_iter(dataset, num_workers=2)

    # The worker stalls for WAIT_S: only the 1 s timeout can end the epoch with this error.
    with pytest.raises(DataLoadError, match=r"no batch from the DataLoader workers in 1 s while "
                                            r"loading batch 0 .*: a worker is stuck"):
        list(it)

    dataset.bad = None
    it.reset()
    assert_full_correct_epoch(it)


def test_an_interrupt_while_loading_leaves_an_iterator_that_says_so_and_resets():
    it = lazy_iter(Faulty(bad=1, error=KeyboardInterrupt(), times=1))

    with pytest.raises(KeyboardInterrupt):
        it.next()
    with pytest.raises(DataLoadError, match="loading batch 0 was interrupted by "
                                            "KeyboardInterrupt; call reset()"):
        it.next()
    it.reset()
    assert_full_correct_epoch(it)


# --------------------------------------------------------------------------- sizes that lie
@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("lie", [(+1, 0), (0, +1), (+37, +46), (-1, 0), (0, -1)])
def test_a_sample_whose_size_is_not_the_declared_one_is_refused_on_its_batch(num_workers, lie):
    liar = 13
    sizes = SIZES.copy()
    sizes[liar] += lie
    it = lazy_iter(Faulty(), num_workers, sizes=sizes)
    position = failing_position(it, liar)

    batches = []
    with pytest.raises(DataSpecError, match=r"the sizes given say sample 13 is \(%d, %d\), but it "
                                            r"has size \(%d, %d\) on its size axes \(batch %d\)"
                       % (tuple(sizes[liar]) + tuple(SIZES[liar]) + (position,))):
        for batch in it:
            batches.append(batch)

    assert len(batches) == position
    with pytest.raises(DataSpecError):
        it.next()


def test_sizes_that_tell_the_truth_load_every_batch_with_and_without_workers():
    for num_workers in (0, 2):
        assert_full_correct_epoch(lazy_iter(Faulty(), num_workers))


# --------------------------------------------------------------------------- copies
@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("duplicate", [copy.deepcopy, copy.copy,
                                       lambda it: pickle.loads(pickle.dumps(it))])
def test_a_copy_loads_the_batches_the_original_would_from_where_it_was(num_workers, duplicate):
    it = lazy_iter(Faulty(), num_workers, shuffle=True, seed=2)
    first = it.next()
    assert it.provide_data  # the next batch is loaded and kept: the copy must load it again

    twin = duplicate(it)

    assert twin.batch_indices == it.batch_indices
    np.testing.assert_array_equal(twin.getdata()[0][0].asnumpy(), first.data[0][0].asnumpy())
    rest, twin_rest = list(it), list(twin)
    assert [b.index.tolist() for b in twin_rest] == [b.index.tolist() for b in rest]
    assert len(rest) == it.num_batches - 1
    for a, b in zip(rest, twin_rest):
        np.testing.assert_array_equal(a.data[1][0].asnumpy(), b.data[1][0].asnumpy())
    twin.reset()
    it.reset()
    assert [b.index.tolist() for b in twin] == [b.index.tolist() for b in it]


def test_sample_0_s_error_in_the_constructor_is_a_data_load_error_too():
    with pytest.raises(DataLoadError, match=r"dataset\[0\] raised KeyError: 'gone' \(dataset "
                                            "Faulty, read in the constructor") as info:
        lazy_iter(Faulty(bad=0, error=KeyError("gone")))
    assert isinstance(info.value.__cause__, KeyError) and info.value.sample == 0


def test_a_copy_of_a_failed_iterator_raises_the_failure_too():
    it = lazy_iter(Faulty(bad=1, error=KeyError("gone")))
    with pytest.raises(DataLoadError):
        it.next()

    twin = pickle.loads(pickle.dumps(it))

    with pytest.raises(DataLoadError, match=r"dataset\[1\] raised KeyError"):
        twin.next()
    twin._batches._options[0].bad = None
    twin.reset()
    assert_full_correct_epoch(twin)
