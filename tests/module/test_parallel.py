"""``parallel.call_all`` keeps its promise: nothing it started runs on after it returns or
raises (Ctrl-C included), and a change of ``reshape_threads`` never stops a pool another
thread is using. Several threads training while another reconfigures see no error."""

import contextlib
import signal
import threading
import time

import mxnet as mx
import numpy as np
import pytest
from nets import conv_net, per_device_spec

import mxpatch_bind
from mxpatch_bind.module import parallel


class Recorder:
    """Calls that sleep a while and say when they start and end."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started, self.ended = [], []

    def call(self, index, seconds):
        with self.lock:
            self.started.append(index)
        time.sleep(seconds)
        with self.lock:
            self.ended.append(index)
        return index


def raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def alarm(seconds, handler=raise_interrupt):
    """Run ``handler`` in the main thread after ``seconds`` (an interrupt, as Ctrl-C sends),
    and put the previous SIGALRM handler back after the block."""
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def calls_so_far(recorder):
    with recorder.lock:
        return list(recorder.started), list(recorder.ended)


@pytest.mark.parametrize("interrupt_at", [0.05, 0.3])
def test_an_interrupt_reaches_the_caller_only_after_every_started_call_ended(interrupt_at):
    recorder = Recorder()
    with alarm(interrupt_at), pytest.raises(KeyboardInterrupt):
        # 6 calls of 0.2 s on 2 threads: an interrupt comes while some run, some wait.
        parallel.call_all(recorder.call, [(i, 0.2) for i in range(6)], threads=2)
    started, ended = calls_so_far(recorder)
    assert started and sorted(started) == sorted(ended)
    assert len(started) < 6  # the calls that had not started were cancelled
    time.sleep(0.3)
    assert sorted(recorder.started) == sorted(started)  # and none started afterwards


def test_a_second_interrupt_while_waiting_still_waits_for_the_running_calls():
    recorder = Recorder()
    count = []

    def handler(signum, frame):
        count.append(1)
        if len(count) == 1:
            signal.setitimer(signal.ITIMER_REAL, 0.05)  # and once more while we wait
        raise KeyboardInterrupt

    with alarm(0.05, handler), pytest.raises(KeyboardInterrupt):
        parallel.call_all(recorder.call, [(i, 0.3) for i in range(2)], threads=2)
    started, ended = calls_so_far(recorder)
    assert len(count) == 2
    assert sorted(started) == sorted(ended) == [0, 1]


def test_a_failing_call_is_raised_after_every_call_ended():
    recorder = Recorder()

    def call(index):
        if index == 1:
            raise ValueError("device 1 failed")
        return recorder.call(index, 0.1)

    with pytest.raises(ValueError, match="device 1 failed"):
        parallel.call_all(call, [(i,) for i in range(4)], threads=2)
    assert sorted(recorder.started) == sorted(recorder.ended) == [0, 2, 3]


def test_a_pool_taken_before_the_size_changed_still_runs_its_calls(settings_restored):
    pool = parallel._shared_pool(2)
    parallel._shared_pool(3)  # another thread changed reshape_threads meanwhile
    assert pool.submit(pow, 2, 5).result(timeout=60) == 32
    assert parallel.call_all(pow, [(2, 3), (3, 2)], threads=2) == [8, 9]


def test_threads_training_while_another_changes_the_settings_see_no_error(settings_restored):
    # 4 CPU contexts: reshapes of never-seen shapes run on the pool (MXNet 1.9).
    errors, stop = [], threading.Event()

    def train(seed):
        rng = np.random.RandomState(seed)
        mod = mx.mod.Module(conv_net(), context=[mx.cpu(i) for i in range(4)])
        mxpatch_bind.bind(mod, *per_device_spec([(1, 3, 8, 8)] * 4))
        mod.init_params()
        try:
            for _ in range(12):
                shapes = [(1, 3, int(rng.randint(5, 12)), int(rng.randint(5, 12)))
                          for _ in range(4)]
                mxpatch_bind.reshape(mod, *per_device_spec(shapes))
        except Exception as error:  # noqa: BLE001 (collected and asserted below)
            errors.append(error)

    def reconfigure():
        threads = 2
        while not stop.is_set():
            threads = 5 - threads  # 2, 3, 2, ...
            mxpatch_bind.configure(reshape_threads=threads)
            time.sleep(0.002)

    trainers = [threading.Thread(target=train, args=(seed,)) for seed in range(3)]
    changer = threading.Thread(target=reconfigure)
    changer.start()
    for thread in trainers:
        thread.start()
    for thread in trainers:
        thread.join(timeout=600)  # a limit on a hang, not a benchmark
    stop.set()
    changer.join(timeout=60)
    assert not any(thread.is_alive() for thread in trainers + [changer])
    assert errors == []
