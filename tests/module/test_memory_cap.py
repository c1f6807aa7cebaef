"""The first per-device bind caps oneDNN's primitive cache unless the user decided otherwise."""

import os
import re
import subprocess
import sys

import mxnet as mx
import pytest
from nets import conv_net

import mxpatch_bind
from mxpatch_bind import SettingsError
from mxpatch_bind.module import memory


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


MALFORMED = {"word": "lots", "hexadecimal": "0x10", "exponent": "1e3", "decimal point": "5.0",
             "underscore": "1_000", "non-ASCII digit": "\uff12", "sign": "+5",
             "two numbers": "1 2", "over 32 bits": "2147483648", "zero": "0", "minus one": "-1"}


@pytest.mark.parametrize("value", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_policy_raises_naming_the_variable_value_and_accepted_values(environ,
                                                                                 value):
    environ[memory.POLICY_VARIABLE] = value
    with pytest.raises(SettingsError, match=re.escape("%s=%r" % (memory.POLICY_VARIABLE, value))
                       ) as raised:
        memory.cap_mkldnn_cache()
    assert "accepted: 'keep'" in str(raised.value) and "2147483647" in str(raised.value)
    assert memory.MXNET_VARIABLE not in environ


@pytest.mark.parametrize("value, expected", [("keep", None), (" KEEP\n", None), ("64", "64"),
                                             (" 64 ", "64"), ("0064", "64"),
                                             ("2147483647", "2147483647"),
                                             ("", str(memory.DEFAULT_CACHE_NUM)),
                                             ("  ", str(memory.DEFAULT_CACHE_NUM))])
def test_a_well_formed_policy_sets_its_cap_in_decimal(environ, value, expected):
    environ[memory.POLICY_VARIABLE] = value
    assert memory.cap_mkldnn_cache() == expected
    assert environ.get(memory.MXNET_VARIABLE) == expected


@pytest.mark.parametrize("value", ["-1", "0", " 16 ", "lots"])
def test_an_mxnet_setting_is_left_exactly_as_it_is_for_mxnet_to_read(environ, value):
    environ[memory.MXNET_VARIABLE] = value
    environ[memory.POLICY_VARIABLE] = "keep"
    assert memory.cap_mkldnn_cache() == value
    assert environ[memory.MXNET_VARIABLE] == value


def test_an_empty_mxnet_setting_counts_as_unset_as_in_mxnet(environ):
    environ[memory.MXNET_VARIABLE] = ""
    assert memory.cap_mkldnn_cache() == str(memory.DEFAULT_CACHE_NUM)


@pytest.mark.slow  # a child Python that imports MXNet
def test_the_cap_bounds_the_cache_mxnet_reads(environ):
    # The reference: MXNet itself, in a fresh process that ran oneDNN convolutions of two
    # shapes under the value cap_mkldnn_cache() set.
    memory.cap_mkldnn_cache()
    script = ("import mxnet as mx\n"
              "weight = mx.nd.ones((4, 3, 3, 3))\n"
              "for width in (8, 9):\n"
              "    mx.nd.Convolution(mx.nd.ones((1, 3, 8, width)), weight, kernel=(3, 3), "
              "num_filter=4, no_bias=True).wait_to_read()\n")
    run = subprocess.run([sys.executable, "-c", script], env=dict(environ), timeout=300,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def test_a_per_device_bind_with_a_malformed_policy_raises_before_binding(environ):
    environ[memory.POLICY_VARIABLE] = "1e3"
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(SettingsError, match=memory.POLICY_VARIABLE):
        mxpatch_bind.bind(mod, [[("data", (1, 3, 8, 8))], [("data", (2, 3, 8, 8))]],
                          [[("softmax_label", (1,))], [("softmax_label", (2,))]])
    assert not mod.binded
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
