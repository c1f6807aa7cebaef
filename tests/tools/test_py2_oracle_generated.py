"""Generated Python 2 programs (Hypothesis) must print the same under Python 2.7 and, ported
by migrate, under Python 3 (tests/py2_oracle.py): arithmetic over ints, floats, bools and
NumPy scalars and arrays with ``/``, ``//``, ``%``, ``/=``, ``divmod``, ``abs``, ``int``,
``float``; ``round`` (one and two arguments, on halves), ``math.floor`` / ``ceil`` in three
import forms; and library calls. Each example is one program of many statements, each
printing its index, its value's type and ``repr``, so one run checks them all; a failure
names the statements whose lines differ. Divisors are nonzero by construction
(a nonzero leaf, or ``abs(x) + 1``).

Shrinking is off: each example already names the statements that differ, and shrinking a
program of 40 statements that runs two interpreters would take minutes.
"""

import tempfile
from pathlib import Path

import py2_oracle
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("fissix")
pytest.importorskip("libcst")

HEADER = """\
import math
import math as m
from math import ceil, floor
import numpy as np


def kind(value):
    if isinstance(value, (bool, np.bool_)):
        return 'bool'
    if isinstance(value, (int, long, np.integer)):
        return 'int'
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        return 'float%d' % (8 * value.dtype.itemsize)
    if isinstance(value, (float, np.floating)):
        return 'float'
    return type(value).__name__


def show(value):
    if isinstance(value, np.ndarray):
        return 'array %s %r' % (value.dtype.name, value.tolist())
    if isinstance(value, (tuple, list)):
        return '[%s]' % ', '.join([show(item) for item in value])
    return '%s %r' % (kind(value), value)

i, j, t = 7, -3, True
f, g = 2.5, -0.125
n, k = np.int64(-9), np.int32(4)
x, y = np.float64(6.5), np.float32(-1.5)
a = np.array([7, -8, 9])
b = np.array([2.5, -0.5, 4.0])
c = np.array([3, 1, 2], dtype=np.int32)
"""
SCALAR_NAMES = ["i", "j", "t", "f", "g", "n", "k", "x", "y"]  # all nonzero
INT_ARRAYS, FLOAT_ARRAYS = ["a", "c"], ["b"]  # no zero element
FUTURE = "from __future__ import division\n"

nonzero_ints = st.integers(-20, 20).filter(bool)
eighths = st.integers(-40, 40).filter(bool).map(lambda e: repr(e / 8.0))  # 2.5, 0.125, ...


def parenthesized(text):
    return f"({text})" if text.startswith("-") else text


int_literal = nonzero_ints.map(lambda v: parenthesized(str(v)))
float_literal = eighths.map(parenthesized)
numpy_scalar = st.builds(lambda kind, v: f"np.{kind}({v})",
                         st.sampled_from(["int64", "int32", "float64", "float32"]), nonzero_ints)
scalar_leaf = st.one_of(int_literal, float_literal, st.sampled_from(SCALAR_NAMES),
                        numpy_scalar, st.just("True"))


def binary(left, operators, right):
    return st.builds(lambda a, op, b: f"({a} {op} {b})", left, st.sampled_from(operators), right)


def call(name, inner):
    return inner.map(lambda e: f"{name}({e})")


def divisor(inner):
    """Nonzero whatever ``inner`` is: a nonzero leaf, or ``abs(inner) + 1``."""
    return st.one_of(scalar_leaf, inner.map(lambda e: f"(abs({e}) + 1)"))


def scalar_arithmetic(inner):
    return st.one_of(binary(inner, ["/", "//", "%"], divisor(inner)),
                     binary(inner, ["+", "-"], inner), binary(inner, ["*"], scalar_leaf),
                     st.builds(lambda e, d, part: f"divmod({e}, {d})[{part}]", inner,
                               divisor(inner), st.sampled_from("01")),
                     call("abs", inner), call("int", inner), call("float", inner),
                     inner.map(lambda e: f"(-{e})"))


scalars = st.recursive(scalar_leaf, scalar_arithmetic, max_leaves=6)
divisions = st.builds(lambda e, d: f"({e} / {d})", scalars, divisor(scalars))  # '/' on top


def rounding(inner):
    return st.one_of(call("round", inner), call("math.floor", inner), call("math.ceil", inner),
                     call("ceil", inner), call("floor", inner), call("m.floor", inner),
                     call("m.ceil", inner),
                     st.builds(lambda e, d: f"round({e}, {d})", inner, st.sampled_from(
                         ["0", "1", "2", "-1"])))


rounded = st.recursive(scalar_leaf, lambda inner: st.one_of(
    rounding(inner), binary(rounding(inner), ["/", "//", "%"], divisor(inner))), max_leaves=4)
halves = st.sampled_from(["2.5", "0.5", "-2.5", "1.5", "0.125", "0.375", "-0.125", "7.0",
                          "np.float64(2.5)", "np.float32(0.5)", "x", "y", "f", "g"])
rounded_halves = rounding(halves)

int_array_leaf = st.one_of(st.sampled_from(INT_ARRAYS), st.lists(
    nonzero_ints, min_size=3, max_size=3).map(lambda v: f"np.array({v})"))
float_array_leaf = st.one_of(st.sampled_from(FLOAT_ARRAYS), st.lists(
    eighths, min_size=3, max_size=3).map(lambda v: f"np.array([{', '.join(v)}])"))
arrays = st.recursive(st.one_of(int_array_leaf, float_array_leaf), lambda inner: st.one_of(
    binary(inner, ["/", "//", "%"], st.one_of(divisor(scalars), inner.map(
        lambda e: f"(abs({e}) + 1)"))),
    binary(inner, ["+", "-"], st.one_of(inner, scalar_leaf)),
    call("abs", inner), call("np.floor", inner), call("np.round", inner)), max_leaves=5)

library_calls = st.one_of(
    st.builds(lambda p, q: f"max({p}, {q})", scalars, scalars),
    st.builds(lambda p, q: f"min({p}, {q})", scalars, scalars),
    st.builds(lambda p, q: f"sum([{p}, {q}])", scalars, scalars),
    st.builds(lambda p, q, r: f"sorted([{p}, {q}, {r}])", scalars, scalars, scalars),
    st.builds(lambda p, q: f"map(abs, [{p}, {q}])", scalars, scalars),
    st.builds(lambda p, q: f"zip([{p}], [{q}])", scalars, scalars),
    st.builds(lambda p, q: f"filter(None, [{p}, {q}])", scalars, scalars),
    call("math.sqrt", scalars.map(lambda e: f"abs({e})")),
    st.builds(lambda p, q: f"math.hypot({p}, {q})", scalars, scalars),
    call("np.mean", arrays), call("np.sum", arrays), call("len", arrays),
    st.builds(lambda p, q: f"np.maximum({p}, {q})", arrays, scalars),
    st.builds(lambda p: f"float(sum({p}.tolist())) / len({p})", arrays),
    st.builds(lambda p: f"sum({p}.tolist()) / len({p})", arrays))


def in_place(target, value):
    """``target /= value`` on a fresh copy, then the value shown."""
    return f"v = {target}\nv /= {value}\nprint {{index}}, show(v)"


def in_place_divisions(true_division):
    """``/=`` of scalars and arrays; an integer array only by integers, and not under true
    division (NumPy refuses to divide an integer array truly in place)."""
    integers = st.one_of(int_literal, st.sampled_from(["i", "j", "t", "n", "k"]),
                         scalars.map(lambda e: f"(abs(int({e})) + 1)"))
    targets = scalars if true_division else st.one_of(
        scalars, int_array_leaf.map(lambda e: f"{e}.copy()"))
    return st.one_of(
        st.builds(in_place, targets, integers),
        st.builds(in_place, st.one_of(scalars, float_array_leaf.map(lambda e: f"{e}.copy()")),
                  divisor(scalars)))


def statements(expressions, count):
    """``count`` statements: each prints one expression (or runs one ``/=``), numbered."""
    printed = expressions.map(lambda e: f"print {{index}}, show({e})")
    return st.lists(printed, min_size=count, max_size=count)


def program(lines, header=""):
    numbered = [line.replace("{index}", str(index)) for index, line in enumerate(lines)]
    return header + HEADER + "\n".join(numbered) + "\n"


def assert_program_prints_the_same(source):
    with tempfile.TemporaryDirectory() as tmp:
        outputs = py2_oracle.compare(Path(tmp), {"main.py": source}, modules=("numpy",))
    assert outputs.python2.returncode == 0, (
        f"the generated Python 2 program failed under Python 2:\n{outputs.python2.stderr}"
        f"\n{source}")
    problem = py2_oracle.mismatch(outputs)
    assert not problem, differing_statements(source, outputs) + "\n" + problem


def differing_statements(source, outputs):
    """The statements whose printed line differs, each with both lines and its port."""
    two = dict(_by_index(outputs.python2.stdout))
    three = dict(_by_index(outputs.python3.stdout))
    ported = outputs.ported["main.py"].splitlines()
    lines = ["statements that print differently (Python 2 | port):"]
    for index, line in two.items():
        if three.get(index) != line:
            lines.append(f"  {line}  |  {three.get(index, '(not reached)')}\n"
                         f"    ported: {' / '.join(_ported_statement(ported, index))}")
    return "\n".join(lines)


def _ported_statement(ported, index):
    """The ported lines of statement ``index``: its print, and the ``v`` lines of an
    in-place division before it."""
    at = next((n for n, s in enumerate(ported) if s.startswith(f"print({index}, ")), None)
    if at is None:
        return ["?"]
    start = at
    while start > 0 and ported[start - 1].startswith("v "):
        start -= 1
    return ported[start:at + 1]


def _by_index(stdout):
    for line in stdout.splitlines():
        index, _, rest = line.partition(" ")
        yield index, rest


# Each example is a batch of some 40 statements run by two interpreters (about 0.5 s): a
# quarter of the profile's examples, at least 20, checks as many statements as a plain
# property test of the profile checks values, in a fraction of the time (CI: 25 programs).
NO_SHRINK = settings(phases=[Phase.explicit, Phase.generate],
                     max_examples=max(20, settings.default.max_examples // 4))


@pytest.mark.parametrize("header", ["", FUTURE], ids=["python 2 division", "future division"])
@NO_SHRINK
@given(st.data())
def test_generated_arithmetic_prints_the_same(header, data):
    py2_oracle.python2("numpy")
    lines = data.draw(statements(scalars, 16)) + data.draw(statements(divisions, 12)) \
        + data.draw(statements(arrays, 8)) \
        + data.draw(st.lists(in_place_divisions(header == FUTURE), min_size=6, max_size=6))
    assert_program_prints_the_same(program(lines, header))


@NO_SHRINK
@given(st.data())
def test_generated_rounding_prints_the_same(data):
    py2_oracle.python2("numpy")
    lines = data.draw(statements(rounded, 16)) + data.draw(statements(rounded_halves, 8))
    assert_program_prints_the_same(program(lines))


@NO_SHRINK
@given(st.data())
def test_generated_library_calls_print_the_same(data):
    py2_oracle.python2("numpy")
    assert_program_prints_the_same(program(data.draw(statements(library_calls, 24))))
