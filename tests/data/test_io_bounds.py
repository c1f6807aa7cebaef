"""Declarations of PerDeviceIter that hold or are refused: each check's boundary on both sides,
and each kind of bad value (an axis more or fewer, negative, bool, NaN, huge)."""

import math
import types

import numpy as np
import pytest

from mxpatch_bind import DataSpecError, Input, PerDeviceIter

LIMIT = 2 ** 31 - 1  # elements in one NDArray of a pip-installed MXNet 1.x
IMAGE = Input("data", size_axes=(1, 2))


# --------------------------------------------------------------------------- pad_value
@pytest.mark.parametrize("dtype, value", [
    ("uint8", 0), ("uint8", 255), ("uint8", 255.0), ("uint8", np.int64(7)),
    ("int8", -128), ("int8", 127), ("int32", -2 ** 31), ("int32", 2 ** 31 - 1),
    ("int64", 2 ** 63 - 1), ("int64", -2 ** 63), ("bool", 0), ("bool", 1),
    ("float16", 65504), ("float16", -65504), ("float16", 2.0 ** -24), ("float16", 0.5),
    ("float32", 0.1), ("float32", float("nan")), ("float32", float("-inf")),
    ("float64", 1e308),
])
def test_a_pad_value_the_dtype_holds_is_accepted_and_pads_with_itself(dtype, value):
    one = Input("x", size_axes=(0,), pad_value=value, dtype=dtype)
    it = PerDeviceIter([(np.ones(1),), (np.ones(2),)], num_devices=1, batch_per_device=2,
                       inputs=[one])

    padding = it.next().data[0][0].asnumpy()[0, 1]

    expected = np.asarray(value, dtype=dtype)
    assert padding.dtype == np.dtype(dtype)
    assert padding == expected or (math.isnan(expected) and math.isnan(padding))


@pytest.mark.parametrize("dtype, value", [
    ("uint8", 256), ("uint8", -1), ("uint8", 0.5), ("uint8", 300), ("uint8", float("nan")),
    ("int8", 128), ("int8", -129), ("int32", 2 ** 31), ("int32", -2 ** 31 - 1),
    ("int32", float("inf")), ("int32", float("-inf")), ("int32", float("nan")),
    ("int32", 1e10), ("int32", 0.5), ("int64", 2 ** 63), ("int64", -2 ** 63 - 1),
    ("int64", 10 ** 400), ("bool", 2), ("bool", -1), ("bool", 0.5),
    ("float16", 65520), ("float16", 1e10), ("float16", 1e-10), ("float32", 1e39),
    ("float32", 1e-50), ("float64", 10 ** 400),
])
def test_a_pad_value_the_dtype_cannot_hold_is_refused_in_the_constructor(dtype, value):
    with pytest.raises(DataSpecError, match=r"input 'x': pad_value .* is not a value of dtype %s: "
                                            "expected" % dtype):
        Input("x", pad_value=value, dtype=dtype)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "0", None, [0], 1j])
def test_a_pad_value_that_is_no_number_is_refused(value):
    with pytest.raises(DataSpecError, match="pad_value must be a number"):
        Input("x", pad_value=value)


# --------------------------------------------------------------------------- axes
@pytest.mark.parametrize("axes", [(-1,), (True,), (0.0,), (1, 1), 1, None, "12", (np.nan,)])
@pytest.mark.parametrize("role", ["size_axes", "variable_axes"])
def test_axes_that_are_not_distinct_numbers_from_0_are_refused(role, axes):
    with pytest.raises(DataSpecError, match="%s must be a tuple of distinct axis numbers" % role):
        Input("x", **{role: axes})


@pytest.mark.parametrize("image, message", [
    (np.ones((1, 4)), r"too few axes for size_axes \(1, 2\)"),  # one axis fewer
    (np.ones((1, 4, 4, 2)), r"expected \(1, 4, 4\) on its fixed axes"),  # one axis more
])
def test_a_sample_with_an_axis_fewer_or_more_than_declared_is_refused(image, message):
    samples = [(np.ones((1, 4, 4)),), (image,)]
    with pytest.raises(DataSpecError, match="sample 1 input 'data' has shape .*" + message):
        PerDeviceIter(samples, num_devices=1, batch_per_device=1, inputs=[IMAGE])


# --------------------------------------------------------------------------- sizes
class Lazy:
    """Sample 0 is 1x2x3; the others are never read (only the sizes plan them)."""

    def __len__(self):
        return 3

    def __getitem__(self, index):
        return (np.ones((1, 2, 3), np.float32),)


def lazy(sizes, **kwargs):
    options = dict(num_devices=1, batch_per_device=1, inputs=[IMAGE], sizes=sizes)
    options.update(kwargs)
    return PerDeviceIter(Lazy(), **options)


def declared(row):
    return np.array([[2, 3], row, [2, 3]], dtype=np.int64)


@pytest.mark.parametrize("row", [[1, 1], [LIMIT, 1], [1, LIMIT], [2 ** 16, 2 ** 15 - 1]])
def test_sizes_up_to_what_one_mxnet_array_holds_are_planned(row):
    it = lazy(declared(row))
    assert [sizes for plan in it.batch_indices for sizes in plan] == [[0], [1], [2]]


@pytest.mark.parametrize("sizes", [
    declared([0, 3]), declared([-1, 3]), declared([LIMIT + 1, 1]),
    np.array([[2, 3, 1]] * 3),  # one axis more
    np.array([[2]] * 3),  # one axis fewer
    np.array([[2, 3]] * 4),  # one row more
    np.array([[2, 3]] * 2),  # one row fewer
    np.array([[2.0, 3.0]] * 3), np.array([[2, 3], [np.nan, 3], [2, 3]]),
    np.array([[True, True]] * 3), np.array([[2, 3], [2 ** 63, 3], [2, 3]], dtype=np.uint64),
    np.array([[2, 3], [10 ** 30, 3], [2, 3]], dtype=object),
])
def test_sizes_out_of_bounds_or_of_another_shape_or_kind_are_refused_by_name(sizes):
    with pytest.raises(DataSpecError, match=r"sizes must be integers >= 1 and <= 2147483647 of "
                                            r"shape \(3, 2\)"):
        lazy(sizes)


@pytest.mark.parametrize("size", [(2, 3, 1), (2,), (0, 3), (-1, 3), (True, 3), (2.0, 3),
                                  (float("nan"), 3), (LIMIT + 1, 3), (10 ** 30, 3), "23", None])
def test_a_size_of_out_of_bounds_or_of_another_form_is_refused_by_name(size):
    with pytest.raises(DataSpecError, match=r"size_of\(1\) returned .*, expected a tuple of 2 "
                                            r"integers >= 1 and <= 2147483647"):
        lazy(lambda i: (2, 3) if i != 1 else size)


def test_a_planned_array_larger_than_mxnet_holds_is_refused_naming_batch_device_and_input():
    with pytest.raises(DataSpecError, match=r"batch 1 device 0: input 'data' would be an array of "
                                            r"shape \(1, 1, 65536, 32768\) \(2147483648 "
                                            "elements\\), more than the 2147483647"):
        lazy(declared([2 ** 16, 2 ** 15]), grouping=False)


# --------------------------------------------------------------------------- pad_to_multiple
@pytest.mark.parametrize("multiple", [1, 2, LIMIT])
def test_pad_to_multiple_up_to_what_one_mxnet_array_holds_is_accepted(multiple):
    it = PerDeviceIter([np.ones((1, 3))], num_devices=1, batch_per_device=1, layout="NCW",
                       pad_to_multiple=multiple)
    assert it.padding_stats().real_pixels == 3


@pytest.mark.parametrize("multiple", [0, -1, LIMIT + 1, 2 ** 40, True, 2.0, float("nan"), "4",
                                      None])
def test_pad_to_multiple_out_of_bounds_or_not_an_integer_is_refused_by_name(multiple):
    with pytest.raises(DataSpecError, match=r"pad_to_multiple must be an integer >= 1 and <= "
                                            r"2147483647 \(the most elements one MXNet array "
                                            r"holds\), got"):
        PerDeviceIter([np.ones((1, 3))], num_devices=1, batch_per_device=1, layout="NCW",
                      pad_to_multiple=multiple)


def test_a_multiple_that_makes_a_planned_array_too_large_is_refused_naming_it():
    with pytest.raises(DataSpecError, match=r"batch 0 device 0: input 'data' would be an array of "
                                            r"shape \(1, 1, 65536, 65536\) .* "
                                            "pad_to_multiple=65536 are too large"):
        PerDeviceIter([np.ones((1, 2, 3))], num_devices=1, batch_per_device=1,
                      pad_to_multiple=2 ** 16)


# --------------------------------------------------------------------------- large tensors
class Int64Features:
    """mx.runtime.Features of an MXNet built with large tensor support."""

    def is_enabled(self, name):
        return name == "INT64_TENSOR_SIZE"


@pytest.fixture
def large_tensor_build(monkeypatch):
    import mxnet as mx

    from mxpatch_bind.data import limits
    monkeypatch.setattr(mx.runtime, "Features", Int64Features)
    limits.max_array_elements.cache_clear()
    yield limits
    limits.max_array_elements.cache_clear()


@pytest.mark.parametrize("size, fits", [
    ((2 ** 30 - 1, 2 ** 30 + 1), True),  # 2**60 - 1 elements: float64 bytes fit in an int64
    ((2 ** 30, 2 ** 30), False),         # 2**60 elements: they do not
])
def test_with_large_tensor_support_numpy_s_int64_bytes_are_the_bound(large_tensor_build, size,
                                                                      fits):
    limits = large_tensor_build
    assert limits.max_array_elements() == 1152921504606846975  # (2**63 - 1) // 8
    plan = types.SimpleNamespace(device_indices=[[0]], device_sizes=[size])

    if fits:
        limits.check_plan([plan], [IMAGE], [(1, 2, 3)], 1)
    else:
        with pytest.raises(DataSpecError, match=r"\(1152921504606846976 elements\), more than "
                                                r"the 1152921504606846975"):
            limits.check_plan([plan], [IMAGE], [(1, 2, 3)], 1)
