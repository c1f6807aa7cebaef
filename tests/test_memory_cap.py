"""The first per-device bind caps oneDNN's primitive cache unless the user decided otherwise."""

import os

import mxnet as mx
import pytest

import mxpatch_bind
from mxpatch_bind import memory
from nets import conv_net


@pytest.fixture
def environ(monkeypatch):
    """os.environ without either variable; restored afterwards, whatever the test set."""
    for name in (memory.MXNET_VARIABLE, memory.POLICY_VARIABLE):
        monkeypatch.setenv(name, "placeholder")  # recorded, so teardown restores the original
        monkeypatch.delenv(name)
    return os.environ


def test_an_unset_cache_size_is_capped_at_the_default(environ):
    assert memory.cap_mkldnn_cache() == str(memory.DEFAULT_CACHE_NUM)
    assert environ[memory.MXNET_VARIABLE] == str(memory.DEFAULT_CACHE_NUM)


def test_the_users_own_mxnet_setting_wins(environ):
    environ[memory.MXNET_VARIABLE] = "-1"
    assert memory.cap_mkldnn_cache() == "-1"
    assert environ[memory.MXNET_VARIABLE] == "-1"


def test_keep_leaves_the_cache_unbounded(environ):
    environ[memory.POLICY_VARIABLE] = "keep"
    assert memory.cap_mkldnn_cache() is None
    assert memory.MXNET_VARIABLE not in environ


def test_a_number_sets_that_cap(environ):
    environ[memory.POLICY_VARIABLE] = "64"
    assert memory.cap_mkldnn_cache() == "64"
    assert environ[memory.MXNET_VARIABLE] == "64"


@pytest.mark.parametrize("value", ["0", "-3", "lots"])
def test_a_malformed_policy_raises_naming_the_variable_and_value(environ, value):
    environ[memory.POLICY_VARIABLE] = value
    with pytest.raises(ValueError, match="%s=%r" % (memory.POLICY_VARIABLE, value)):
        memory.cap_mkldnn_cache()
    assert memory.MXNET_VARIABLE not in environ


def test_a_per_device_bind_applies_the_cap(environ):
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, [[("data", (1, 3, 8, 8))], [("data", (2, 3, 8, 8))]],
                      [[("softmax_label", (1,))], [("softmax_label", (2,))]])
    assert environ[memory.MXNET_VARIABLE] == str(memory.DEFAULT_CACHE_NUM)


def test_a_stock_bind_leaves_the_cache_alone(environ):
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    with mxpatch_bind.patched():
        mod.bind([("data", (2, 3, 8, 8))], [("softmax_label", (2,))])
    assert memory.MXNET_VARIABLE not in environ
