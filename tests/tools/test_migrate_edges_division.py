"""Edges of ``migrate.division`` (issue 36, item 10): which constructs make a file Python 3
only, which operand forms prove a ``/`` integral or float, and the exact text each kind of
``/`` and ``/=`` is ported to, so that a slip of one line changes a result compared whole."""

import ast

import pytest

from mxpatch_bind.migrate import division, textedit
from mxpatch_bind.migrate.names import Names


@pytest.mark.parametrize("source, first", [
    ("x = f'{a}'", (1, "an f-string")),
    ("def f():\n    nonlocal a", (2, "nonlocal")),
    ("async def f(): pass", (1, "async")),
    ("async def f():\n    await a", (1, "async")),
    ("def f():\n    yield from a", (2, "yield from")),
    ("(a := 1)", (1, "':='")),
    ("a: int = 1", (1, "an annotation")),
    ("def f(a: int): pass", (1, "an annotation")),
    ("def f() -> int: pass", (1, "a keyword-only parameter or annotation")),
    ("def f(*, a): pass", (1, "a keyword-only parameter or annotation")),
    ("def f(a, /): pass", (1, "a keyword-only parameter or annotation")),
    ("raise A from b", (1, "raise ... from")),
    ("a @ b", (1, "'@'")),
    ("a @= b", (1, "'@'")),
    ("a, *b = c", (1, "a starred assignment target")),
    ("for a, *b in c: pass", (1, "a starred assignment target")),
    ("x = 1\ny = f'{x}'\nz = 2", (2, "an f-string")),
    ("\n\n(a := 1)\nx = f'{a}'", (3, "':='")),
    # the first by line, not the first of a walk that reads the top level first
    ("def f():\n    x = f'{a}'\ny: int = 1", (2, "an f-string")),
])
def test_the_first_construct_only_python_3_parses_is_named_at_its_line(source, first):
    assert division.python3_only(ast.parse(source)) == first


@pytest.mark.parametrize("source", ["print(a)", "x = [a, b]", "f(*a)", "def f(a=1, *b, **c): pass",
                                    "raise A", "a * b"])
def test_a_file_python_2_also_parses_is_not_python_3_only(source):
    assert division.python3_only(ast.parse(source)) is None


@pytest.mark.parametrize("source, future", [
    ("from __future__ import print_function, division", True),
    ("from __future__ import print_function", False),
    ("def f():\n    from __future__ import division", False),
    ("from future import division", False),
])
def test_true_division_is_the_module_s_own_future_import_of_division(source, future):
    assert division.has_future_division(ast.parse(source)) is future


FORMS = {  # expression: what Python 2's '/' was, by the operands' form alone
    "a / b": "kept", "a / 2": "kept", "len(a) / b": "kept", "a / len(b)": "kept",
    "1 / 2": "int", "len(a) / 2": "int", "int(a) / len(b)": "int", "x.shape[0] / 2": "int",
    "x.shape[0:2] / 2": "kept", "x.size[0] / 2": "kept", "(1 + 2) / 3": "int",
    "(1 - 2) / 3": "int", "(2 * 3) / 4": "int", "(7 // 2) / 3": "int", "(7 % 2) / 3": "int",
    "(2 ** 3) / 4": "kept", "(1 + a) / 2": "kept", "-1 / 2": "int", "+1 / 2": "int",
    "~1 / 2": "kept", "True / 2": "kept",
    "1.0 / a": "float", "a / 2.0": "float", "float(a) / b": "float", "round(a) / b": "float",
    "time.time() / b": "float", "time.clock() / b": "float", "time.perf_counter() / b": "float",
    "time.process_time() / b": "float", "math.sqrt(a) / b": "float", "math.exp(a) / b": "float",
    "math.log(a) / b": "float", "math.pow(a, 2) / b": "float", "math.floor(a) / b": "float",
    "math.ceil(a) / b": "float", "math.sin(a) / b": "float", "math.cos(a) / b": "float",
    "(a + 1.0) / b": "float", "(1.0 - a) / b": "float", "(a * 1.0) / b": "float",
    "(a / 1.0) / b": "kept", "-1.0 / b": "float", "+1.0 / b": "float",
    "old_round(a) / b": "float", "old_floor(a) / b": "float", "old_ceil(a) / b": "float",
}


def test_each_operand_form_proves_a_division_integral_float_or_neither():
    source = ("import time, math\nfrom mxpatch_bind.py2 import old_round, old_floor, old_ceil\n"
              + "\n".join(FORMS) + "\n")
    divisions = division.Divisions(Names(ast.parse(source)))
    kept, integral = divisions.kept(), divisions.integral()
    found = {e: "kept" if line in kept else "int" if line in integral else "float"
             for line, e in enumerate(FORMS, start=3)}
    assert found == FORMS


def test_an_in_place_division_is_kept_unless_its_value_is_a_float():
    source = "x /= 2\ny /= 2.0\nz /= float(n)\nw /= len(n)\n"
    assert division.Divisions(Names(ast.parse(source))).kept() == [1, 4]


def _port(source):
    text = textedit.Text(source)
    edits, helpers, unproven = division.Divisions(Names(ast.parse(source))).edits(text)
    return textedit.replace(source, edits), sorted(helpers), sorted(unproven)


@pytest.mark.parametrize("source, ported", [
    ("x = a / b\n", ("x = old_div(a, b)\n", ["old_div"], [])),
    ("x = a/b\n", ("x = old_div(a, b)\n", ["old_div"], [])),
    ("x = a  /  b\n", ("x = old_div(a, b)\n", ["old_div"], [])),
    ("x = a\t/\tb\n", ("x = old_div(a, b)\n", ["old_div"], [])),
    ("x = len(a) / 2\n", ("x = len(a) // 2\n", [], [])),
    ("x = a / 2.0\n", ("x = a / 2.0\n", [], [])),
    ("x = (a / b) / c\n", ("x = old_div((old_div(a, b)), c)\n", ["old_div"], [])),
    ("x = (a /  # per / item\n     b)\n", ("x = (old_div(a, # per / item\n     b))\n",
                                           ["old_div"], [])),
    ("x = (a  # a/b\n     / b)\n", ("x = (old_div(a  # a/b\n, b))\n", ["old_div"], [])),
    ("x = a / \\\n    b\n", ("x = old_div(a,\\\n    b)\n", ["old_div"], [])),
    ("x = (a /\r\n     b)\r\n", ("x = (old_div(a,\r\n     b))\r\n", ["old_div"], [])),
    ("x = a/(b)\n", ("x = old_div(a, (b))\n", ["old_div"], [])),
    ("x, y = a / b, c\n", ("x, y = old_div(a, b), c\n", ["old_div"], [])),
    ("x /= 2\n", ("x = old_idiv(x, 2)\n", ["old_idiv"], [])),
    ("x.y[i] /= n\n", ("x.y[i] = old_idiv(x.y[i], n)\n", ["old_idiv"], [])),
    ("x[1:2] /= n\n", ("x[1:2] = old_idiv(x[1:2], n)\n", ["old_idiv"], [])),
    ("x[-i] /= n\n", ("x[-i] = old_idiv(x[-i], n)\n", ["old_idiv"], [])),
    ("x[i, j + 1] /= n\n", ("x[i, j + 1] = old_idiv(x[i, j + 1], n)\n", ["old_idiv"], [])),
    ("x /= a / b\n", ("x = old_idiv(x, old_div(a, b))\n", ["old_div", "old_idiv"], [])),
    ("x /= 2.0\n", ("x /= 2.0\n", [], [])),
    # a target that reads a call, or a '/' its copy would keep: left for the marker
    ("f()[i] /= 2\n", ("f()[i] /= 2\n", [], [1])),
    ("x[a / b] /= 2\n", ("x[old_div(a, b)] /= 2\n", ["old_div"], [1])),
    # a line a person was asked to decide is left to them
    ("x = a / b  # migrate: check '/'\n", ("x = a / b  # migrate: check '/'\n", [], [])),
    ("x = (a /\n     b)  # migrate: check '/'\ny = a / b\n",
     ("x = (a /\n     b)  # migrate: check '/'\ny = old_div(a, b)\n", ["old_div"], [])),
])
def test_each_division_is_ported_to_its_exact_text(source, ported):
    assert _port(source) == ported


def test_the_helpers_calls_are_found_through_each_import_form_and_only_those():
    source = ("from mxpatch_bind.py2 import old_div, old_idiv as oi\n"
              "import mxpatch_bind.py2 as p\nx = old_div(a, b)\n\ny = oi(a, b)\n"
              "z = p.old_div(a, b)\nv = p.old_round(a)\nw = old_div\nu = oi(old_div(a, b), c)\n")
    assert division.helper_calls(Names(ast.parse(source))) == [3, 5, 6, 9]
    assert division.helper_calls(Names(ast.parse("def old_div(a, b):\n    pass\n"
                                                 "old_div(1, 2)\n"))) == []


def test_the_division_marker_counts_in_a_comment_only():
    text = ("x = a  # migrate: check '/'\ns = \"# migrate: check '/'\"\n"
            "y = 1  # migrate: check other\n")
    assert division.marked(text) == [1]
