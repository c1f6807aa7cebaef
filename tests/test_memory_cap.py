"""The first per-device bind caps oneDNN's primitive cache unless the user decided otherwise."""

import os
import re
import subprocess
import sys

import mxnet as mx
import pytest
from nets import conv_net

import mxpatch_bind
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


# Each class of value MXNet's dmlc::GetEnv<int> refuses, and those it takes but we do not.
MALFORMED = {"word": "lots", "hexadecimal": "0x10", "exponent": "1e3", "decimal point": "5.0",
             "underscore": "1_000", "non-ASCII digit": "\uff12", "two signs": "+-5",
             "two numbers": "1 2", "over 32 bits": "2147483648",
             "far over 32 bits": "99999999999"}


@pytest.mark.parametrize("value", list(MALFORMED.values()) + ["0", "-1", "-3"],
                         ids=list(MALFORMED) + ["zero", "minus one", "negative"])
def test_a_malformed_policy_raises_naming_the_variable_value_and_accepted_values(environ,
                                                                                 value):
    environ[memory.POLICY_VARIABLE] = value
    with pytest.raises(ValueError, match=re.escape("%s=%r" % (memory.POLICY_VARIABLE, value))
                       ) as raised:
        memory.cap_mkldnn_cache()
    assert "accepted: 'keep'" in str(raised.value) and "2147483647" in str(raised.value)
    assert memory.MXNET_VARIABLE not in environ


@pytest.mark.parametrize("value, expected", [("keep", None), (" KEEP\n", None), ("64", "64"),
                                             (" 64 ", "64"), ("+64", "64"), ("0064", "64"),
                                             ("2147483647", "2147483647"),
                                             ("", str(memory.DEFAULT_CACHE_NUM)),
                                             ("  ", str(memory.DEFAULT_CACHE_NUM))])
def test_a_well_formed_policy_sets_its_cap_written_as_mxnet_reads_it(environ, value, expected):
    environ[memory.POLICY_VARIABLE] = value
    assert memory.cap_mkldnn_cache() == expected
    assert environ.get(memory.MXNET_VARIABLE) == expected


@pytest.mark.parametrize("value", list(MALFORMED.values()) + ["   ", "-2147483649"],
                         ids=list(MALFORMED) + ["only spaces", "under 32 bits"])
def test_an_mxnet_setting_mxnet_cannot_read_raises_naming_it(environ, value):
    environ[memory.MXNET_VARIABLE] = value
    with pytest.raises(ValueError, match=re.escape("%s=%r is not a number MXNet can read"
                                                   % (memory.MXNET_VARIABLE, value))):
        memory.cap_mkldnn_cache()
    assert environ[memory.MXNET_VARIABLE] == value


@pytest.mark.parametrize("value", ["-2", "-2147483648"])
def test_an_mxnet_setting_below_minus_one_raises_because_mxnet_would_crash(environ, value):
    environ[memory.MXNET_VARIABLE] = value
    with pytest.raises(ValueError, match="segmentation fault.*accepted: -1 \\(unbounded\\)"):
        memory.cap_mkldnn_cache()


@pytest.mark.parametrize("value", ["-1", "0", " 16 ", "+5", "0016", "2147483647"])
def test_an_mxnet_setting_mxnet_reads_is_left_exactly_as_it_is(environ, value):
    environ[memory.MXNET_VARIABLE] = value
    assert memory.cap_mkldnn_cache() == value
    assert environ[memory.MXNET_VARIABLE] == value


def test_an_empty_mxnet_setting_counts_as_unset_as_in_mxnet(environ):
    environ[memory.MXNET_VARIABLE] = ""
    assert memory.cap_mkldnn_cache() == str(memory.DEFAULT_CACHE_NUM)


_CONVOLVE_TWO_SHAPES = """
import mxnet as mx
weight = mx.nd.ones((4, 3, 3, 3))
for width in (8, 9):
    mx.nd.Convolution(mx.nd.ones((1, 3, 8, width)), weight, kernel=(3, 3), num_filter=4,
                      no_bias=True).wait_to_read()
"""


@pytest.mark.slow  # starts MXNet in a subprocess per setting
def test_the_check_of_the_mxnet_setting_agrees_with_mxnet_itself():
    # The reference: a fresh MXNet per value, running oneDNN convolutions under it.
    values = ["-1", "0", " 7 ", "+5", "0x10", "2147483648", "-2"]
    env = {name: value for name, value in os.environ.items() if name != memory.MXNET_VARIABLE}
    runs = [subprocess.Popen([sys.executable, "-c", _CONVOLVE_TWO_SHAPES],
                             env=dict(env, **{memory.MXNET_VARIABLE: value}),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for value in values]
    mxnet_ran = [run.wait(timeout=300) == 0 for run in runs]
    accepted = []
    for value in values:
        os.environ[memory.MXNET_VARIABLE] = value
        try:
            accepted.append(memory.cap_mkldnn_cache() == value)
        except ValueError:
            accepted.append(False)
        finally:
            del os.environ[memory.MXNET_VARIABLE]
    # Never accept a value MXNet fails on. The rules are MXNet 1.9.1's parser, so there they
    # agree exactly; an older MXNet (1.6.0 runs all of these) may take values they refuse.
    assert all(ran for ok, ran in zip(accepted, mxnet_ran) if ok), (values, accepted, mxnet_ran)
    if mx.__version__.startswith("1.9."):
        assert accepted == mxnet_ran
    assert True in accepted and False in accepted


def test_a_per_device_bind_with_a_malformed_policy_raises_before_binding(environ):
    environ[memory.POLICY_VARIABLE] = "1e3"
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(ValueError, match=memory.POLICY_VARIABLE):
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
