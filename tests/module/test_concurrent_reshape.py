"""The devices of one never-seen shape change reshape on threads, where that is safe.

The oracle is the same module reshaped one device after another (``reshape_threads=1``):
outputs and gradients must be bit-identical. Failures injected on a worker thread must
leave the module as it was, with no reshape still running when the error reaches the caller.
"""

import os
import subprocess
import sys
import textwrap
import threading
import types

import mxnet as mx
import numpy as np
import pytest
from nets import (
    assert_same_state,
    conv_net,
    device_batch,
    device_pairs,
    fixed_params,
    module_state,
    per_device_spec,
)

import mxpatch_bind
from mxpatch_bind.module import executors
from mxpatch_bind.settings import current
from paths import REPO

CONTEXTS = [mx.cpu(i) for i in range(4)]
LARGEST = (2, 3, 12, 12)
# Where threads were proven safe (MXNet 1.9); elsewhere (the nox run on 1.6.0) every
# expectation below is the serial one.
CONCURRENT = mx.__version__.startswith(executors.CONCURRENT_RESHAPE_VERSIONS)
REPO_ROOT = str(REPO)


pytestmark = pytest.mark.usefixtures("settings_restored")


def never_seen_shapes(rounds, seed=0):
    """``rounds`` lists of one shape per context, each shape new to every device."""
    rng = np.random.RandomState(seed)
    seen, changes = set(), []
    while len(changes) < rounds:
        shapes = []
        while len(shapes) < len(CONTEXTS):
            shape = (int(rng.randint(1, 3)), 3, int(rng.randint(4, 13)), int(rng.randint(4, 13)))
            if shape not in seen:
                seen.add(shape)
                shapes.append(shape)
        changes.append(shapes)
    return changes


def trained_module():
    symbol = conv_net()
    mod = mx.mod.Module(symbol, context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec([LARGEST] * len(CONTEXTS)), inputs_need_grad=True)
    mod.set_params(*fixed_params(symbol, LARGEST))
    return mod


def outputs_and_gradients(threads, changes):
    mxpatch_bind.configure(reshape_threads=threads)
    mod = trained_module()
    results = []
    for step, shapes in enumerate(changes):
        mxpatch_bind.reshape(mod, *per_device_spec(shapes))
        mod.forward_backward(device_batch(device_pairs(shapes, seed=step)))
        results.append(([o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]],
                        [g.asnumpy() for g in mod.get_input_grads(merge_multi_context=False)[0]],
                        [g.asnumpy() for e in mod._exec_group.execs for g in e.grad_arrays
                         if g is not None]))
    return results


def test_threaded_reshapes_give_the_outputs_and_gradients_of_serial_ones_bit_for_bit():
    changes = never_seen_shapes(12)
    serial, threaded = outputs_and_gradients(1, changes), outputs_and_gradients(4, changes)
    for (outputs, input_grads, grads), (t_outputs, t_input_grads, t_grads) in zip(serial,
                                                                                  threaded):
        assert all(np.array_equal(a, b) for a, b in zip(outputs, t_outputs))
        assert all(np.array_equal(a, b) for a, b in zip(input_grads, t_input_grads))
        assert len(grads) == len(t_grads)
        assert all(np.array_equal(a, b) for a, b in zip(grads, t_grads))


def record_reshape_threads(monkeypatch):
    """The thread of every lean reshape call, in a list."""
    threads, original = [], executors.reshape_executor

    def recorded(base, shapes):
        threads.append(threading.get_ident())
        return original(base, shapes)

    monkeypatch.setattr(executors, "reshape_executor", recorded)
    return threads


@pytest.mark.parametrize("threads, on_workers", [(4, True), (1, False)])
def test_the_setting_decides_whether_reshapes_leave_the_calling_thread(threads, on_workers,
                                                                        monkeypatch):
    mxpatch_bind.configure(reshape_threads=threads)
    mod = trained_module()
    seen = record_reshape_threads(monkeypatch)
    mxpatch_bind.reshape(mod, *per_device_spec(never_seen_shapes(1)[0]))
    assert len(seen) == len(CONTEXTS)
    assert (threading.get_ident() not in seen) == (on_workers and CONCURRENT)


def test_six_never_seen_reshapes_run_on_the_pool_too(monkeypatch):
    mxpatch_bind.configure(reshape_threads=2)
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(i) for i in range(6)])
    mxpatch_bind.bind(mod, *per_device_spec([LARGEST] * 6))
    seen = record_reshape_threads(monkeypatch)
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 11, 11 - i) for i in range(6)]))
    assert len(seen) == 6 and (threading.get_ident() not in seen) == CONCURRENT


def test_fewer_than_four_never_seen_reshapes_stay_on_the_calling_thread(monkeypatch):
    # Measured: the hand-offs cost what overlapping 2 or 3 reshapes saves on 2 cores.
    mxpatch_bind.configure(reshape_threads=4)
    mod = trained_module()
    seen = record_reshape_threads(monkeypatch)
    shapes = never_seen_shapes(1)[0]
    mxpatch_bind.reshape(mod, *per_device_spec(shapes[:3] + [LARGEST]))  # 3 of 4 change
    assert seen == [threading.get_ident()] * 3


@pytest.mark.parametrize("version", ["1.8.0", "1.6.0"])
def test_versions_not_proven_safe_reshape_one_device_after_another(version, monkeypatch):
    mxpatch_bind.configure(reshape_threads=4)
    mod = trained_module()
    seen = []
    monkeypatch.setattr(mx, "__version__", version)
    real = mx.executor.Executor.reshape if version < "1.8" else executors.reshape_executor
    if version < "1.8":  # the lean reshape is off there: MXNet's own reshape runs
        def recorded_method(self, *args, **kwargs):
            seen.append(threading.get_ident())
            return real(self, *args, **kwargs)
        monkeypatch.setattr(mx.executor.Executor, "reshape", recorded_method)
    else:
        def recorded(base, shapes):
            seen.append(threading.get_ident())
            return real(base, shapes)
        monkeypatch.setattr(executors, "reshape_executor", recorded)
    mxpatch_bind.reshape(mod, *per_device_spec(never_seen_shapes(1)[0]))
    assert seen == [threading.get_ident()] * len(CONTEXTS)


@pytest.mark.parametrize("gpu_devices", [1, 4])
def test_gpu_executors_reshape_one_device_after_another(gpu_devices, monkeypatch):
    # A GPU reshape runs on the device its thread selected, which nothing here can check:
    # with any GPU executor among them, the reshapes stay serial. (No GPU here: the
    # executors' contexts are made to read as GPUs; nothing runs on them.)
    mxpatch_bind.configure(reshape_threads=4)
    monkeypatch.setattr(mx, "__version__", "1.9.1")
    bases = [types.SimpleNamespace(_ctx=mx.gpu(i) if i < gpu_devices else mx.cpu(i),
                                   _monitor_callback=None, _group2ctx=None)
             for i in range(4)]
    assert not executors.can_reshape_concurrently(bases)
    for base in bases:
        base._ctx = mx.cpu(0)
    assert executors.can_reshape_concurrently(bases)  # the same bases, on CPUs
    assert not executors.can_reshape_concurrently(bases[:3])  # too few to pay


def test_a_monitored_executor_reshapes_one_device_after_another(monkeypatch):
    mxpatch_bind.configure(reshape_threads=4)
    mod = trained_module()
    mod.install_monitor(mx.monitor.Monitor(1))
    seen = []
    real = mx.executor.Executor.reshape

    def recorded_method(self, *args, **kwargs):
        seen.append(threading.get_ident())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(mx.executor.Executor, "reshape", recorded_method)
    mxpatch_bind.reshape(mod, *per_device_spec(never_seen_shapes(1)[0]))
    assert seen == [threading.get_ident()] * len(CONTEXTS)


class InjectedFailure(mx.base.MXNetError):
    """What the injected failure raises (an MXNetError, as out of memory would be)."""


@pytest.mark.parametrize("failing_device", [0, 2, 3])
def test_a_failure_on_a_worker_thread_leaves_the_module_as_it_was(failing_device, monkeypatch):
    mxpatch_bind.configure(reshape_threads=4)
    mod = trained_module()
    old_shapes = never_seen_shapes(1, seed=1)[0]
    mxpatch_bind.reshape(mod, *per_device_spec(old_shapes))
    probe = device_batch(device_pairs(old_shapes, seed=7))
    mod.forward(probe, is_train=False)
    before_outputs = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    before = module_state(mod)
    original = executors.reshape_executor
    failing_base = mod._exec_group._default_execs[failing_device]
    running, finished = [0], []
    lock = threading.Lock()

    def fails_on_one_device(base, shapes):
        with lock:
            running[0] += 1
        try:
            if base is failing_base:
                raise InjectedFailure("injected failure on device %d" % failing_device)
            return original(base, shapes)
        finally:
            with lock:
                running[0] -= 1
                finished.append(base)

    monkeypatch.setattr(executors, "reshape_executor", fails_on_one_device)
    with pytest.raises(InjectedFailure, match="device %d" % failing_device):
        mxpatch_bind.reshape(mod, *per_device_spec(never_seen_shapes(1, seed=2)[0]))
    # Every call had ended; on threads all of them ran, one after another they stop there.
    assert running[0] == 0
    assert len(finished) == (len(CONTEXTS) if CONCURRENT else failing_device + 1)
    monkeypatch.setattr(executors, "reshape_executor", original)
    assert_same_state(before, module_state(mod))
    mod.forward(probe, is_train=False)
    after = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    assert all(np.array_equal(a, b) for a, b in zip(before_outputs, after))


@pytest.mark.slow  # a child Python that imports MXNet
def test_a_forked_child_reshapes_on_threads_of_its_own():
    """The parent's pool threads do not exist in a forked child: it must not wait on them."""
    script = textwrap.dedent("""
        import os, sys, time
        import mxnet as mx
        import mxpatch_bind
        from mxpatch_bind.module import executors, parallel
        sys.path.insert(0, 'tests')
        concurrent = mx.__version__.startswith(executors.CONCURRENT_RESHAPE_VERSIONS)
        from nets import conv_net, per_device_spec
        mxpatch_bind.configure(reshape_threads=2)
        mod = mx.mod.Module(conv_net(), context=[mx.cpu(i) for i in range(4)])
        mxpatch_bind.bind(mod, *per_device_spec([(1, 3, 9, 9)] * 4))
        mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 8, 9 - i) for i in range(4)]))
        parent_pool = parallel._pool
        assert (parent_pool is not None) == concurrent
        pid = os.fork()
        if pid == 0:
            wanted = [(1, 3, 7, 8 - i) for i in range(4)]
            mxpatch_bind.reshape(mod, *per_device_spec(wanted))
            shapes = [e.arg_dict['data'].shape for e in mod._exec_group.execs]
            ok = shapes == wanted and (not concurrent
                                       or parallel._pool not in (None, parent_pool))
            os._exit(0 if ok else 1)
        deadline = time.monotonic() + 120  # a limit on a hang, not a benchmark
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print('child exit', os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print('child hung')
    """)
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", script],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "child exit 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("threads", [1, 4])
def test_a_failed_reshape_leaves_the_seen_shapes_and_the_cache_untouched(threads, monkeypatch):
    # The transaction does not copy the seen-shape tables (too long to copy per reshape):
    # they must change only after every device's reshape has succeeded.
    mxpatch_bind.configure(reshape_threads=threads)
    mod = trained_module()
    for shapes in never_seen_shapes(3, seed=5) * 2:  # seen twice: cached
        mxpatch_bind.reshape(mod, *per_device_spec(shapes))
    group = mod._exec_group
    before = ([list(seen.items()) for seen in group._seen_shapes],
              [list(cache.items()) for cache in group._exec_cache])
    original, calls = executors.reshape_executor, []

    def fails_on_the_last_call(base, shapes):
        calls.append(base)
        if len(calls) == len(CONTEXTS):
            raise InjectedFailure("injected failure")
        return original(base, shapes)

    monkeypatch.setattr(executors, "reshape_executor", fails_on_the_last_call)
    with pytest.raises(InjectedFailure):
        mxpatch_bind.reshape(mod, *per_device_spec(never_seen_shapes(1, seed=6)[0]))
    assert ([list(seen.items()) for seen in group._seen_shapes],
            [list(cache.items()) for cache in group._exec_cache]) == before
