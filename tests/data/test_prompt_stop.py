"""Stopping an iterator whose workers are busy is prompt, however many batches are in flight.

``del``, the interpreter's exit and Ctrl-C end the workers within about one sample's read. The
dataset reads every sample past the first batch in ``SAMPLE_S`` seconds, in a worker; when the
iterator is stopped, its 2 workers are inside such reads with 4 batches of 4 samples sent to
them: finishing them would take 8 reads, ``8 * SAMPLE_S``. Each stop is measured against one
read, ``SAMPLE_S`` (it takes about a tenth of that here), never against a wall-clock constant:
the factor leaves a loaded machine room. Every wait is bounded.
"""

import _thread
import gc
import os
import signal
import subprocess
import sys
import threading
import time

import mxnet as mx
import numpy as np
import pytest

from mxpatch_bind import DataLoadError, Input, PerDeviceIter
from mxpatch_bind.data import _worker_reads

SAMPLE_S = 10.0  # one read of a sample past the first batch, in a worker
NUM_SAMPLES = 32  # 8 batches of 2 devices x 2
HANG_LIMIT_S = 120  # far above any of these stops: a limit on a hang, not a measurement
WORKERS_UNRELIABLE = mx.__version__.startswith("1.6.")  # as in test_io_faults.py


class SlowPastTheFirstBatch:
    """Samples 0 to 3 (the first batch) read at once; every other read in a worker takes
    ``SAMPLE_S``, but sample ``bad``'s, which raises at once."""

    def __init__(self, bad=None):
        self.bad, self.owner = bad, os.getpid()

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, index):
        if index == self.bad:
            raise OSError(5, "disk read failed")
        if index >= 4 and os.getpid() != self.owner:
            time.sleep(SAMPLE_S)
        return (np.full((1, 3, 4), index, np.float32),)


def slow_iter(bad=None):
    if WORKERS_UNRELIABLE:
        pytest.skip("MXNet 1.6's DataLoader pools can abort when remade in a long process")
    return PerDeviceIter(SlowPastTheFirstBatch(bad), num_devices=2, batch_per_device=2,
                         inputs=[Input("data", size_axes=(1, 2))],
                         sizes=np.full((NUM_SAMPLES, 2), (3, 4)), num_workers=2, grouping=False)


def workers_of(it):
    return it._batches._workers


def each_worker_reads(it):
    """Whether every worker is inside a read of a later batch, as its board row says."""
    board = it._batches._board
    doing = [board.doing(worker.pid) for worker in workers_of(it)]
    return all(row is not None and row[1] >= 1 and row[2] >= 0 for row in doing)


def wait_for(predicate, seconds=HANG_LIMIT_S):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "not within the hang limit"
        time.sleep(0.02)


def busy_iter():
    """An iterator past its first batch, both workers inside slow reads, 4 batches in flight."""
    it = slow_iter()
    it.next()
    wait_for(lambda: each_worker_reads(it))
    return it


# --------------------------------------------------------------------------- in this process
def test_del_stops_the_workers_mid_read_within_one_sample_s_read():
    it = busy_iter()
    workers = workers_of(it)

    start = time.monotonic()
    del it
    gc.collect()  # gluon's DataLoader and its iterator hold each other
    took = time.monotonic() - start

    assert took < SAMPLE_S
    # Told to stop, not killed: each dropped its read and its batches, and exited by itself.
    assert [worker.exitcode for worker in workers] == [0, 0]


def test_ctrl_c_while_waiting_for_a_batch_is_raised_within_one_sample_s_read():
    it = busy_iter()
    workers = workers_of(it)
    # Ctrl-C as the interpreter gets it, while next() waits for batch 1 (SAMPLE_S a read away).
    timer = threading.Timer(0.2, _thread.interrupt_main)
    # interrupt_main() does nothing where SIGINT arrived ignored (a run under `nohup ... &`).
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)

    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            it.next()
    finally:
        timer.cancel()  # never an interrupt past this test
        signal.signal(signal.SIGINT, inherited)
    took = time.monotonic() - start

    assert took < SAMPLE_S
    assert [worker.exitcode for worker in workers] == [0, 0]
    with pytest.raises(DataLoadError, match="interrupted by KeyboardInterrupt; call reset()"):
        it.next()


def test_a_failed_batch_ends_the_pool_without_finishing_the_batches_in_flight():
    it = slow_iter(bad=4)  # batch 1's first sample; batches 2 to 4 are on their way
    it.next()
    workers = workers_of(it)

    start = time.monotonic()
    with pytest.raises(DataLoadError, match=r"dataset\[4\] raised OSError"):
        it.next()
    took = time.monotonic() - start

    assert took < SAMPLE_S
    assert [worker.exitcode for worker in workers] == [0, 0]


# --------------------------------------------------------------------------- in a child
CHILD = """
import os, signal, sys, time
sys.path[:0] = {path!r}
import test_prompt_stop as t
it = t.busy_iter()
print(time.monotonic(), flush=True)
{stop}
"""

STOPS = {
    "exit": "sys.exit(0)",
    # Unhandled, while the script does something else than load (a training step).
    "ctrl-c": "os.kill(os.getpid(), signal.SIGINT); time.sleep(t.HANG_LIMIT_S)",
    # As a terminal sends it: to every process of the group, the workers too.
    "ctrl-c to the group": "os.killpg(0, signal.SIGINT); time.sleep(t.HANG_LIMIT_S)",
}


def run_child(stop):
    """Run the child that stops as ``stop`` says: its exit status, its stderr, and the seconds
    from the stop until it and its workers ended (they share its pipes)."""
    status, out, err = run_script(CHILD, stop=STOPS[stop])
    ended = time.monotonic()  # CLOCK_MONOTONIC: the child's clock too
    assert out.strip(), err
    return status, err, ended - float(out.split()[0])


def sigint_as_default():
    """In the child: SIGINT at its default, so that Python raises KeyboardInterrupt on it
    whatever the test run inherited (a run under ``nohup ... &`` gets it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_script(template, **fields):
    """Run ``template`` (with this folder and the checkout first on its path) in a child until
    it and its workers ended (they share its pipes): its exit status, stdout and stderr."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = template.format(path=[here, os.path.dirname(here)], **fields)
    # A session of its own: its process group is itself and its workers.
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=sigint_as_default)
    try:
        out, err = child.communicate(timeout=HANG_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"the child did not end within {HANG_LIMIT_S} s: {err}")
    return child.returncode, out, err


@pytest.mark.slow  # a child Python that imports MXNet
@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
def test_the_interpreter_s_exit_ends_the_busy_workers_within_one_sample_s_read():
    status, err, took = run_child("exit")

    assert status == 0, err
    assert "Traceback" not in err
    assert took < SAMPLE_S


@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
@pytest.mark.parametrize("stop", ["ctrl-c", pytest.param("ctrl-c to the group",
                                                         marks=pytest.mark.slow)])
def test_an_unhandled_ctrl_c_ends_the_busy_workers_within_one_sample_s_read(stop):
    status, err, took = run_child(stop)

    assert status == -signal.SIGINT, err  # Python's exit on an unhandled KeyboardInterrupt
    assert err.count("Traceback") == 1 and err.rstrip().endswith("KeyboardInterrupt"), err
    assert took < SAMPLE_S


WATCHED_EXIT = """
import atexit, multiprocessing.util, sys
sys.path[:0] = {path!r}
workers = []
# Registered after multiprocessing's exit hook and before the package's: run after the
# package's and before multiprocessing's (which would terminate what is left), it sees the
# workers as the package's hook left them.
atexit.register(lambda: print(*[worker.exitcode for worker in workers], flush=True))
import test_prompt_stop as t
it = t.busy_iter()
workers.extend(t.workers_of(it))
sys.exit(0)
"""


@pytest.mark.slow  # a child Python that imports MXNet
@pytest.mark.skipif(WORKERS_UNRELIABLE, reason="MXNet 1.6's DataLoader pools can abort when "
                                               "remade in a long process")
def test_at_the_interpreter_s_exit_the_busy_workers_end_by_themselves_not_terminated():
    # Prompt either way: multiprocessing's own exit hook would terminate them (SIGTERM), which
    # can hang for good on a worker killed while it sends a batch (test_pool_shutdown.py).
    status, out, err = run_script(WATCHED_EXIT)

    assert (status, out) == (0, "0 0\n"), err


# --------------------------------------------------------------------------- the protocol
@pytest.fixture
def listening():
    """This process as a worker that listens for the stop signal; restored afterwards."""
    previous = signal.getsignal(_worker_reads.STOP_SIGNAL)
    _worker_reads.listen()
    yield
    signal.signal(_worker_reads.STOP_SIGNAL, previous)
    _worker_reads._stopped = _worker_reads._reading = False


class Reads:
    """A dataset that records what it read; ``stop_at`` sends the stop signal inside its read
    and then goes on reading for ``SAMPLE_S``."""

    def __init__(self, stop_at=None):
        self.stop_at, self.read, self.finished = stop_at, [], []

    def __getitem__(self, index):
        self.read.append(index)
        if index == self.stop_at:
            os.kill(os.getpid(), _worker_reads.STOP_SIGNAL)
            time.sleep(SAMPLE_S)
        self.finished.append(index)
        return index


def test_the_stop_signal_inside_a_read_ends_the_read_with_stopped(listening):
    dataset = Reads(stop_at=1)
    assert _worker_reads.read(dataset, 0) == 0

    start = time.monotonic()
    with pytest.raises(_worker_reads.Stopped):
        _worker_reads.read(dataset, 1)

    assert time.monotonic() - start < SAMPLE_S
    assert (dataset.read, dataset.finished) == ([0, 1], [0])


def test_the_stop_signal_outside_a_read_raises_nothing_and_every_later_read_is_stopped(
        listening):
    dataset = Reads()
    os.kill(os.getpid(), _worker_reads.STOP_SIGNAL)
    time.sleep(0)  # a bytecode boundary: the handler has run

    for index in range(3):
        with pytest.raises(_worker_reads.Stopped):
            _worker_reads.read(dataset, index)

    assert dataset.read == []


def test_a_process_that_does_not_listen_ignores_the_stop_signal():
    # Its default action: a process forked by someone else than this package is left alone.
    assert signal.getsignal(_worker_reads.STOP_SIGNAL) == signal.SIG_DFL
    os.kill(os.getpid(), _worker_reads.STOP_SIGNAL)
    assert _worker_reads.read(Reads(), 4) == 4


def test_the_board_says_what_each_enlisted_worker_reads_and_nothing_of_others():
    board = _worker_reads.Board(3)
    dataset = Reads()
    me = type("Worker", (), {"pid": os.getpid()})
    board.enlist([type("Worker", (), {"pid": 1}), me])
    assert board.doing(os.getpid()) is None  # nothing read yet

    class Looks:
        def __getitem__(self, index):
            return board.doing(os.getpid())

    assert _worker_reads.read(Looks(), 13, board, plan=2, batch=3) == (2, 3, 13)
    assert board.doing(os.getpid()) == (2, 3, -1)  # between reads: the batch stays
    assert _worker_reads.read(dataset, 5, board, plan=2, batch=1) == 5
    assert board.doing(1) is None and board.doing(2) is None
