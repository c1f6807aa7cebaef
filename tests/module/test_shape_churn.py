"""Long runs of changing per-device shapes reshape in place: no rebinding, bounded memory.

The Deformable-ConvNets ``MutableModule`` binds a new ``Module`` whenever a shape changes;
here a shape change is an executor reshape from the first-bound executors.
"""

import functools
import os
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy as np
import pytest
from mxnet.module.executor_group import DataParallelExecutorGroup
from nets import device_batch, device_pairs, per_device_spec
from synthetic import bar_net, data_pointer

import mxpatch_bind
from mxpatch_bind.module import binding
from mxpatch_bind.module.executor_group import PerDeviceExecutorGroup
from paths import TESTS

# A dozen (batch, height, width) sizes, as an aspect-ratio-grouped detection loader yields.
SIZES = [(1, 16, 16), (2, 16, 24), (1, 24, 32), (2, 32, 16), (3, 20, 20), (1, 40, 24),
         (2, 28, 28), (1, 12, 36), (3, 16, 32), (2, 36, 20), (1, 32, 40), (2, 24, 24)]
STEPS = 200
TESTS = str(TESTS)


def shapes_of(sizes):
    return [(batch, 1, height, width) for batch, height, width in sizes]


def random_shapes(rng, count):
    return [shapes_of([SIZES[i] for i in rng.randint(len(SIZES), size=2)]) for _ in range(count)]


SPIED = ((mx.mod.Module, "bind"), (binding, "_bind_per_device"),
         (PerDeviceExecutorGroup, "__init__"), (DataParallelExecutorGroup, "__init__"),
         (mx.sym.Symbol, "simple_bind"), (mx.sym.Symbol, "bind"),
         (PerDeviceExecutorGroup, "reshape"))


@pytest.fixture
def calls(monkeypatch):
    """Count the calls of every way a module or an executor could be bound anew."""
    counts = {}

    def spy(function, key):
        @functools.wraps(function)  # keeps the signature that install() checks
        def counted(*args, **kwargs):
            counts[key] += 1
            return function(*args, **kwargs)
        return counted

    for owner, name in SPIED:
        key = "%s.%s" % (owner.__name__.rpartition(".")[2], name)
        counts[key] = 0
        monkeypatch.setattr(owner, name, spy(getattr(owner, name), key))
    return counts


def test_two_hundred_steps_of_changing_shapes_reshape_without_rebinding(contexts, calls):
    rng = np.random.RandomState(0)
    mod = mx.mod.Module(bar_net(), context=contexts)
    with mxpatch_bind.patched():
        mod.bind(*per_device_spec(shapes_of(SIZES[:2])))
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    group = mod._exec_group
    assert calls["binding._bind_per_device"] == calls["PerDeviceExecutorGroup.__init__"] == 1
    assert calls["Symbol.simple_bind"] == len(contexts)  # the spies see binding
    calls.update(dict.fromkeys(calls, 0))
    largest = [int(np.prod(shape)) for shape in shapes_of(SIZES[:2])]
    base_sizes = [set(), set()]
    seen = set()
    steps = random_shapes(rng, STEPS)
    changes = sum(a != b for a, b in zip([shapes_of(SIZES[:2])] + steps, steps))

    for shapes in steps:
        mod.forward_backward(device_batch(device_pairs(shapes, seed=int(rng.randint(1 << 30)))))
        mod.update()
        seen.add(tuple(shapes))
        assert mod._exec_group is group
        for device, (exec_, base, shape) in enumerate(zip(group.execs, group._default_execs,
                                                          shapes)):
            data = exec_.arg_dict["data"]
            assert data.shape == shape
            # Every executor's input is a view of its device's base executor's storage, and
            # the base is never larger than the largest input this device has seen.
            assert data_pointer(data) == data_pointer(base.arg_dict["data"])
            largest[device] = max(largest[device], int(np.prod(shape)))
            assert base.arg_dict["data"].size <= largest[device]
            base_sizes[device].add(base.arg_dict["data"].size)

    assert len(seen) > 50
    reshapes = calls.pop("PerDeviceExecutorGroup.reshape")
    assert set(calls.values()) == {0}  # nothing bound again, in 200 steps of changing shapes
    assert reshapes == changes  # every change of shapes went through a reshape
    # Data storage comes in a few sizes, never one per step.
    assert all(len(sizes) <= len(SIZES) for sizes in base_sizes)


MEMORY_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [{tests!r}, os.path.join({tests!r}, "module")]  # helpers, and this file
    import mxnet as mx, numpy as np
    import mxpatch_bind
    import test_shape_churn as churn
    from synthetic import bar_net

    def resident_bytes():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    rng = np.random.RandomState(1)
    mod = mx.mod.Module(bar_net(), context=[mx.cpu(0), mx.cpu(1)])
    with mxpatch_bind.patched():
        mod.bind(*churn.per_device_spec(churn.shapes_of(churn.SIZES[:2])))
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={{"learning_rate": 0.01, "momentum": 0.9}})

    def train(steps):
        for shapes in steps:
            mod.forward_backward(churn.device_batch(
                churn.device_pairs(shapes, seed=int(rng.randint(1 << 30)))))
            mod.update()
        mx.nd.waitall()

    # Warm up: the largest size on both devices first, then every size on each device.
    largest = max(churn.SIZES, key=lambda size: size[0] * size[1] * size[2])
    sizes = churn.SIZES
    train([churn.shapes_of([largest, largest])]
          + [churn.shapes_of([a, b]) for a, b in zip(sizes, sizes[::-1])]
          + [churn.shapes_of([a, a]) for a in sizes])
    before = resident_bytes()
    train(churn.random_shapes(rng, churn.STEPS))
    after = resident_bytes()
    print("resident MB before %.1f after %.1f" % (before / 1e6, after / 1e6))
    sys.exit(0 if after < 1.2 * before else 1)
""")


@pytest.mark.slow  # a child Python that imports MXNet
def test_resident_memory_stays_flat_over_two_hundred_steps_of_changing_shapes():
    # oneDNN caches primitives per input shape without bound by default; cap it to see our
    # own memory only.
    env = dict(os.environ, MXNET_MKLDNN_CACHE_NUM="16")
    result = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT.format(tests=TESTS)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
