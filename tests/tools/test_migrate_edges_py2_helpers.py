"""Edges of ``mxpatch_bind.py2`` (issue 36, item 10), Python 2 as the oracle: one Python 2.7
program computes each builtin the helpers stand for on the edges of its rule (negative
operands, halves, infinities and NaN, integers too long for a machine word, NumPy integer
and float arrays and scalars, booleans, sequences of unequal length, each kind of sequence
``filter`` keeps), and the helpers must give the same, value and type, as JSON shows them."""

import json
import math
import subprocess

import numpy as np
from py2_oracle import python2, python2_environment

from mxpatch_bind import py2

PROGRAM = r'''
import json, math, inspect
import numpy as np


def shown(value):
    if isinstance(value, np.ndarray):
        return ["array", str(value.dtype), value.tolist()]
    if isinstance(value, np.generic):
        return ["scalar", str(value.dtype), value.item()]
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return ["float", repr(value)]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, (int, long)):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, tuple):
        return ["tuple", [shown(v) for v in value]]
    if isinstance(value, list):
        return ["list", [shown(v) for v in value]]
    if value is None:
        return ["none"]
    return ["other", repr(value)]


def inplace(target, divisor):
    target /= divisor
    return target


def f(a, b=1, *c, **d):
    pass


def g():
    pass


results = [
    7 / 2, -7 / 2, 7.0 / 2, 7 / 2.0, True / 2, 2 ** 70 / 3, -(2 ** 70) / 3,
    np.int64(7) / 2, np.array([7, -7]) / 2, np.array([7, -7]) / 2.0, np.array([7.0]) / 2,
    np.array([True, False]) / 1, np.uint8(9) / np.int32(2), 7 / np.int16(-2),
    inplace(7, 2), inplace(-7, 2), inplace(7.0, 2), inplace(np.array([7, -7]), 2),
    inplace(np.array([7.0, -7.0]), 2), inplace(7, 2.5),
    round(2.5), round(-2.5), round(0.5), round(1.5), round(0.125, 2), round(1234.5, -1),
    round(-0.4), round(7), round(2.675, 2), round(float('inf')), round(float('-inf')),
    round(1e300, 2), round(-1234.5678, -2), round(0.0), round(-0.0), round(float('nan')),
    math.floor(-0.5), math.floor(2), math.floor(-0.0), math.floor(float('inf')),
    math.ceil(-0.5), math.ceil(2.1), math.ceil(-0.0), math.ceil(float('-inf')),
    map(None, [1, 2], [3]), map(None, [1, 2]), map(lambda a, b: (a, b), [1], [2, 3]),
    map(lambda a: a * 2, (1, 2)), map(None, (1, 2), [3, 4], 'ab'),
    filter(str.isalpha, 'a1b'), filter(None, (0, 1, 2)), filter(None, [0, 1, '', 'x']),
    filter(lambda c: c != 'a', 'abca'), filter(None, 'a'), filter(None, ()),
    filter(lambda x: x > 1, set([1, 2, 3])),
    cmp(1, 2), cmp('b', 'a'), cmp(2, 2), cmp([1, 2], [1, 3]),
    tuple(inspect.getargspec(f)), tuple(inspect.getargspec(g)),
    json.dumps({'k': 'v', 'n': [1, 'w']}, sort_keys=True),
]
print(json.dumps([shown(value) for value in results]))
'''


def shown(value):
    """What the Python 2 program prints of a value, for the helpers' results."""
    if isinstance(value, np.ndarray):
        return ["array", str(value.dtype), value.tolist()]
    if isinstance(value, np.generic):
        return ["scalar", str(value.dtype), value.item()]
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return ["float", repr(value)]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, (str, bytes)):
        return ["str", value if isinstance(value, str) else value.decode("latin-1")]
    if isinstance(value, tuple):
        return ["tuple", [shown(v) for v in value]]
    if isinstance(value, list):
        return ["list", [shown(v) for v in value]]
    if value is None:
        return ["none"]
    return ["other", repr(value)]


def f(a, b=1, *c, **d):
    pass


def g():
    pass


def test_each_helper_computes_what_python_2_computed_on_the_edges_of_its_rule():
    executable = python2("numpy")
    ran = subprocess.run([executable, "-c", PROGRAM], capture_output=True, text=True,
                         timeout=120, env=python2_environment())
    assert ran.returncode == 0, ran.stderr
    old_div, old_idiv, old_round = py2.old_div, py2.old_idiv, py2.old_round
    results = [
        old_div(7, 2), old_div(-7, 2), old_div(7.0, 2), old_div(7, 2.0), old_div(True, 2),
        old_div(2 ** 70, 3), old_div(-(2 ** 70), 3),
        old_div(np.int64(7), 2), old_div(np.array([7, -7]), 2), old_div(np.array([7, -7]), 2.0),
        old_div(np.array([7.0]), 2), old_div(np.array([True, False]), 1),
        old_div(np.uint8(9), np.int32(2)), old_div(7, np.int16(-2)),
        old_idiv(7, 2), old_idiv(-7, 2), old_idiv(7.0, 2), old_idiv(np.array([7, -7]), 2),
        old_idiv(np.array([7.0, -7.0]), 2), old_idiv(7, 2.5),
        old_round(2.5), old_round(-2.5), old_round(0.5), old_round(1.5), old_round(0.125, 2),
        old_round(1234.5, -1), old_round(-0.4), old_round(7), old_round(2.675, 2),
        old_round(float("inf")), old_round(float("-inf")), old_round(1e300, 2),
        old_round(-1234.5678, -2), old_round(0.0), old_round(-0.0), old_round(float("nan")),
        py2.old_floor(-0.5), py2.old_floor(2), py2.old_floor(-0.0), py2.old_floor(float("inf")),
        py2.old_ceil(-0.5), py2.old_ceil(2.1), py2.old_ceil(-0.0), py2.old_ceil(float("-inf")),
        py2.old_map(None, [1, 2], [3]), py2.old_map(None, [1, 2]),
        py2.old_map(lambda a, b: (a, b), [1], [2, 3]), py2.old_map(lambda a: a * 2, (1, 2)),
        py2.old_map(None, (1, 2), [3, 4], "ab"),
        py2.old_filter(str.isalpha, "a1b"), py2.old_filter(None, (0, 1, 2)),
        py2.old_filter(None, [0, 1, "", "x"]), py2.old_filter(lambda c: c != b"a", b"abca"),
        py2.old_filter(None, "a"), py2.old_filter(None, ()),
        py2.old_filter(lambda x: x > 1, {1, 2, 3}),
        py2.old_cmp(1, 2), py2.old_cmp("b", "a"), py2.old_cmp(2, 2), py2.old_cmp([1, 2], [1, 3]),
        tuple(py2.getargspec(f)), tuple(py2.getargspec(g)),
        json.dumps({"k": b"v", "n": [1, b"w"]}, sort_keys=True, default=py2.json_bytes),
    ]
    assert [shown(value) for value in results] == json.loads(ran.stdout)


def test_getargspec_refuses_what_python_2_could_not_define_as_inspect_did():
    def keyword_only(a, *, b):
        pass

    def annotated(a: int):
        pass

    for function in (keyword_only, annotated):
        try:
            py2.getargspec(function)
        except ValueError as error:
            assert str(error).startswith("Function has keyword-only parameters or annotations")
        else:
            raise AssertionError(f"getargspec({function.__name__}) did not refuse it")
