"""``configure()``: the executor cache's size and the reshape threads, checked and applied."""

import subprocess
import sys
from collections import Counter

import mxnet as mx
import numpy as np
import pytest
from nets import conv_net, per_device_spec

import mxpatch_bind
from mxpatch_bind import SettingsError
from mxpatch_bind.module import executors
from mxpatch_bind.settings import current


pytestmark = pytest.mark.usefixtures("settings_restored")


def test_configure_returns_the_previous_settings_and_applies_the_new_ones():
    before = current()
    previous = mxpatch_bind.configure(exec_cache_size=3, reshape_threads=1)
    assert previous == before
    assert current() == mxpatch_bind.Settings(exec_cache_size=3, reshape_threads=1)


def test_configure_with_no_arguments_changes_nothing():
    before = current()
    assert mxpatch_bind.configure() == before and current() == before


def test_a_numpy_integer_is_accepted_as_a_plain_int():
    mxpatch_bind.configure(exec_cache_size=np.int64(5))
    assert current().exec_cache_size == 5 and type(current().exec_cache_size) is int


@pytest.mark.parametrize("name, value", [
    ("exec_cache_size", -1), ("exec_cache_size", 1.5), ("exec_cache_size", "8"),
    ("exec_cache_size", True), ("reshape_threads", 0), ("reshape_threads", 2.0),
    ("reshape_threads", False)])
def test_a_bad_value_is_refused_with_its_range_and_changes_nothing(name, value):
    before = current()
    with pytest.raises(SettingsError, match="%s must be an integer >= [01], got %r of type"
                       % (name, value)):
        # With a valid other setting: a refused call changes neither.
        other = "reshape_threads" if name == "exec_cache_size" else "exec_cache_size"
        mxpatch_bind.configure(**{name: value, other: 1})
    assert current() == before


def _in_a_fresh_process(env_value, code):
    import os
    env = dict(os.environ, MXPATCH_BIND_EXEC_CACHE_SIZE=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_environment_variable_sets_the_default():
    done = _in_a_fresh_process(
        "3", "import mxpatch_bind.settings as s; print(s.current().exec_cache_size)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


@pytest.mark.slow  # a child Python that imports MXNet
def test_a_bad_environment_variable_fails_install_before_anything_is_patched():
    done = _in_a_fresh_process("eight", (
        "import mxnet, mxpatch_bind\n"
        "try:\n    mxpatch_bind.install()\n"
        "except mxpatch_bind.SettingsError as error:\n    print('refused:', error)\n"
        "print('installed:', mxpatch_bind.is_installed())\n"))
    assert done.returncode == 0, done.stderr
    assert ("refused: the environment variable MXPATCH_BIND_EXEC_CACHE_SIZE='eight' sets "
            "exec_cache_size; expected an integer >= 0") in done.stdout
    assert "installed: False" in done.stdout


def _recurring_module(shape_cycle, contexts):
    mod = mx.mod.Module(conv_net(), context=contexts)
    largest = max(shape_cycle, key=lambda shape: shape[2] * shape[3])
    mxpatch_bind.bind(mod, *per_device_spec([largest] * len(contexts)))
    mod.init_params()
    return mod


@pytest.mark.parametrize("size", [0, 2, 5])
def test_each_device_caches_exactly_exec_cache_size_recurring_shapes(size, monkeypatch):
    mxpatch_bind.configure(exec_cache_size=size)
    contexts = [mx.cpu(0), mx.cpu(1)]
    cycle = [(1, 3, 8, 8 - k) for k in range(1, 7)]  # six shapes, all within the base
    mod = _recurring_module([(1, 3, 8, 8)] + cycle, contexts)
    for _ in range(2):  # a shape enters the cache on its second sight
        for shape in cycle:
            mxpatch_bind.reshape(mod, *per_device_spec([shape, shape]))
    group = mod._exec_group
    assert [len(cache) for cache in group._exec_cache] == [size, size]
    cached = [dict(key)["data"] for key in group._exec_cache[0]]
    assert cached == cycle[len(cycle) - size:]  # the most recently used, in order
    calls = Counter()
    original = executors.reshape_executor

    def counted(base, shapes):
        calls[shapes["data"]] += 1
        return original(base, shapes)

    monkeypatch.setattr(executors, "reshape_executor", counted)
    for shape in cached:  # oldest first, so no hit evicts another cached shape
        mxpatch_bind.reshape(mod, *per_device_spec([shape, shape]))
    assert sum(calls.values()) == 0
    uncached = cycle[0]
    mxpatch_bind.reshape(mod, *per_device_spec([uncached, uncached]))
    assert calls == Counter({uncached: 2})  # one reshape per device


def test_a_smaller_cache_size_drops_the_oldest_entries_at_the_next_insertion():
    contexts = [mx.cpu(0), mx.cpu(1)]
    cycle = [(1, 3, 8, 8 - k) for k in range(1, 5)]
    mod = _recurring_module([(1, 3, 8, 8)] + cycle, contexts)
    for _ in range(2):
        for shape in cycle:
            mxpatch_bind.reshape(mod, *per_device_spec([shape, shape]))
    assert len(mod._exec_group._exec_cache[0]) == 4
    mxpatch_bind.configure(exec_cache_size=1)
    # A new shape seen twice, a cached one between (a hit inserts nothing): one insertion.
    for shape in [(1, 3, 7, 3), cycle[0], (1, 3, 7, 3)]:
        mxpatch_bind.reshape(mod, *per_device_spec([shape, shape]))
    assert [dict(key)["data"] for key in mod._exec_group._exec_cache[0]] == [(1, 3, 7, 3)]


@pytest.mark.parametrize("variable, text, accepted", [
    ("MXPATCH_BIND_RESHAPE_THREADS", "1", True), ("MXPATCH_BIND_RESHAPE_THREADS", "0", False),
    ("MXPATCH_BIND_EXEC_CACHE_SIZE", "0", True), ("MXPATCH_BIND_EXEC_CACHE_SIZE", "-1", False),
])
def test_each_environment_variable_takes_its_minimum_and_refuses_one_less(monkeypatch,
                                                                         variable, text,
                                                                         accepted):
    from mxpatch_bind import settings
    monkeypatch.setattr(settings, "_current", None)  # read the environment afresh
    monkeypatch.setenv(variable, text)
    if accepted:
        name = "reshape_threads" if "THREADS" in variable else "exec_cache_size"
        assert getattr(current(), name) == int(text)
    else:
        with pytest.raises(SettingsError, match="%s=%r" % (variable, text)):
            current()


@pytest.mark.parametrize("cpus, threads", [(1, 1), (6, 6), (8, 8), (16, 8)])
def test_the_default_reshape_threads_are_the_usable_cpus_up_to_8(monkeypatch, cpus, threads):
    from mxpatch_bind import settings
    monkeypatch.setattr(settings, "_current", None)
    monkeypatch.delenv("MXPATCH_BIND_RESHAPE_THREADS", raising=False)
    monkeypatch.setattr(settings.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert current().reshape_threads == threads
