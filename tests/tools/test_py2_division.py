"""``mxpatch_bind.py2``: Python 2's ``/`` at run time, for the divisions ``migrate
--to-python3`` cannot prove. The reference is Python 2's rule written independently:
two integers divide to the floor of their exact quotient (``fractions.Fraction``), anything
else divides truly.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mxpatch_bind.py2 import old_div, old_idiv

nonzero = st.integers(-10**6, 10**6).filter(bool)


@given(st.integers(-10**12, 10**12), nonzero)
def test_two_integers_divide_to_the_floor_of_their_quotient(a, b):
    got = old_div(a, b)
    assert type(got) is int and got == math.floor(Fraction(a, b))


@given(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6).filter(bool))
def test_a_float_operand_divides_truly(a, b):
    assert old_div(a, b) == a / b and old_div(b, a or 1) == b / (a or 1)


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=8), nonzero,
       st.sampled_from(["int8", "int32", "int64", "uint8"]))
def test_an_integer_array_divides_to_the_floor_elementwise(values, divisor, dtype):
    if dtype == "uint8":
        values, divisor = [abs(v) % 256 for v in values], abs(divisor) % 255 + 1
    elif dtype == "int8":
        values, divisor = [v % 128 for v in values], divisor % 127 + 1
    array = np.array(values, dtype)
    got = old_div(array, divisor)
    assert got.dtype.kind in "iu"
    assert got.tolist() == [math.floor(Fraction(int(v), divisor)) for v in array]


def test_a_bool_array_counts_as_integers_as_numpy_did_on_python_2():
    got = old_div(np.array([True, False]), 2)
    assert got.dtype.kind in "iu" and got.tolist() == [0, 0]


def test_a_float_array_or_scalar_divides_truly():
    assert old_div(np.array([7, -7]), 2.0).tolist() == [3.5, -3.5]
    assert old_div(np.float32(7), 2) == np.float32(3.5)
    assert old_div(np.int64(7), np.int32(2)) == 3


def test_an_mxnet_array_divides_as_before():
    mx = pytest.importorskip("mxnet")
    got = old_div(mx.nd.array([7, 9]), 2)
    assert got.asnumpy().tolist() == [3.5, 4.5]


def test_in_place_division_keeps_the_array_and_its_other_names():
    boxes = np.array([[9, 12], [5, 7]])
    row = boxes[1]
    row = old_idiv(row, 2)
    assert boxes.tolist() == [[9, 12], [2, 3]] and row.base is boxes
    scales = np.array([3.0, 5.0])
    alias = scales
    scales = old_idiv(scales, 2)
    assert alias is scales and alias.tolist() == [1.5, 2.5]
    assert old_idiv(7, 2) == 3 and old_idiv(7.0, 2) == 3.5


def test_integer_division_by_zero_raises_as_in_python_2():
    with pytest.raises(ZeroDivisionError):
        old_div(1, 0)


def test_json_bytes_writes_bytes_as_text_and_refuses_the_rest_as_json_did():
    import json

    from mxpatch_bind.py2 import json_bytes
    assert json.dumps([b"Ue02", bytearray(b"ab")], default=json_bytes) == '["Ue02", "ab"]'
    with pytest.raises(UnicodeDecodeError):  # Python 2's json refused it too
        json.dumps(b"\xff", default=json_bytes)
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        json.dumps({1}, default=json_bytes)
