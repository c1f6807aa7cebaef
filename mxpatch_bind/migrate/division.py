"""Private to ``migrate``: Python 2's ``/``, kept as Python 2 computed it.

Python 2 divided two integers to an integer. Where both operands are integers by their form
(``len(...)``, ``int(...)``, ``x.shape[i]``, integer literals, and arithmetic of those) a
``/`` becomes ``//``, which is what Python 2 computed; where an operand is a float by its form
(a float literal, ``float(...)``, ``time.time()``, ``math.sqrt(...)``; Python 2's ``round``,
``math.floor`` and ``math.ceil``, which returned floats) it stays. Every other ``a / b``
becomes ``old_div(a, b)`` and ``a /= b`` becomes ``a = old_idiv(a, b)``
(:mod:`mxpatch_bind.py2`: Python 2's rule, applied at run time), and every report lists each
call until a person writes ``//`` or ``/``. A ``/=`` whose target reads a call (``f()[i] /=
2``: rewriting would call it twice) gets the marker :data:`MARKER` instead, listed the same
way until a person deletes it.

None of this applies to a file that divided truly already: one that imports ``division``
from ``__future__`` (read from the file as it was, before the port drops that line), or one
that only Python 3 parses (:func:`python3_only`: it never ran on Python 2).
"""

from __future__ import annotations

import ast

from .names import BUILTINS, Names
from .textedit import Text, marked_lines

MARKER = "# migrate: check '/'"
HELPERS_MODULE = "mxpatch_bind.py2"  # old_div, old_idiv, old_round, ...: Python 2 at run time
_INT_CALLS = {f"{BUILTINS}.len", f"{BUILTINS}.int"}
# Calls that return a float (on Python 2: round, math.floor and math.ceil too).
_FLOAT_CALLS = {f"{BUILTINS}.float", f"{BUILTINS}.round", "time.time", "time.clock",
                "time.perf_counter", "time.process_time"} | {
    f"math.{name}" for name in ("sqrt", "exp", "log", "pow", "floor", "ceil", "sin", "cos")} | {
    f"{HELPERS_MODULE}.{name}" for name in ("old_round", "old_floor", "old_ceil")}


def has_future_division(tree: ast.Module) -> bool:
    """Whether the module imports ``division`` from ``__future__``."""
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "division" for a in n.names) for n in tree.body)


def python3_only(tree: ast.Module) -> tuple[int, str] | None:
    """``(line, what)`` of the first construct only Python 3 parses (an f-string, ``nonlocal``,
    a keyword-only or positional-only parameter, an annotation, ``raise ... from``,
    ``async``/``await``, ``yield from``, a starred assignment target, ``@``, ``:=``), or None.
    Such a file never ran on Python 2: its ``/`` divided truly."""
    found = []
    for node in ast.walk(tree):
        what = _python3_construct(node)
        if what:
            found.append((getattr(node, "lineno", 1), what))
    return min(found) if found else None


def _python3_construct(node):
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.Nonlocal):
        return "nonlocal"
    if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
        return "async"
    if isinstance(node, ast.YieldFrom):
        return "yield from"
    if isinstance(node, ast.NamedExpr):
        return "':='"
    if isinstance(node, (ast.AnnAssign,)) or (isinstance(node, ast.arg) and node.annotation):
        return "an annotation"
    if isinstance(node, (ast.FunctionDef,)) and (node.returns or node.args.kwonlyargs
                                                  or node.args.posonlyargs):
        return "a keyword-only parameter or annotation"
    if isinstance(node, ast.Raise) and node.cause is not None:
        return "raise ... from"
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
        return "'@'"
    if isinstance(node, (ast.Assign, ast.For)) and any(
            isinstance(n, ast.Starred) for t in _targets(node) for n in ast.walk(t)):
        return "a starred assignment target"
    return None


def _targets(node):
    return node.targets if isinstance(node, ast.Assign) else [node.target]


# ---------------------------------------------------------------------- reading
def helper_calls(names: Names) -> list[int]:
    """Lines of the calls of ``old_div`` / ``old_idiv`` imported from :data:`HELPERS_MODULE`
    (each a ``/`` a person has yet to decide)."""
    wanted = {f"{HELPERS_MODULE}.old_div", f"{HELPERS_MODULE}.old_idiv"}
    return sorted({n.lineno for n in names.calls if names.qualified(n.func) in wanted})


def marked(text: str) -> list[int]:
    """The lines that carry :data:`MARKER` (comments only, not strings)."""
    return marked_lines(text, MARKER)


class Divisions:
    """The ``/`` and ``/=`` of one file whose Python 2 meaning depended on the operands."""

    def __init__(self, names: Names):
        self.names = names

    def kept(self) -> list[int]:
        """Lines of the ``/`` and ``/=`` that no form proves (``old_div`` / ``old_idiv``)."""
        lines = set()
        for node in self.names.nodes:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                if not (self.is_float(node.left) or self.is_float(node.right)
                        or (self.is_int(node.left) and self.is_int(node.right))):
                    lines.add(node.lineno)
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
                if not self.is_float(node.value):
                    lines.add(node.lineno)
        return sorted(lines)

    def integral(self) -> list[int]:
        """Lines of the ``/`` whose operands are both integers by their form (``//``)."""
        return sorted({n.lineno for n in self.names.nodes if isinstance(n, ast.BinOp)
                       and isinstance(n.op, ast.Div) and self.is_int(n.left)
                       and self.is_int(n.right)})

    def is_int(self, node) -> bool:
        """Whether ``node`` is an integer by its form alone."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.Call):
            return self.names.qualified(node.func) in _INT_CALLS
        if isinstance(node, ast.Subscript):  # x.shape[i]
            return isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                and not isinstance(node.slice, ast.Slice)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                                ast.FloorDiv, ast.Mod)):
            return self.is_int(node.left) and self.is_int(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.is_int(node.operand)
        return False

    def is_float(self, node) -> bool:
        """Whether ``node`` is a float by its form alone (then ``/`` divided truly)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, float)
        if isinstance(node, ast.Call):
            return self.names.qualified(node.func) in _FLOAT_CALLS
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            return self.is_float(node.left) or self.is_float(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.is_float(node.operand)
        return False

    # ------------------------------------------------------------------ writing
    def edits(self, text: Text) -> tuple[list, set, set]:
        """The edits of every ``/`` and ``/=`` whose Python 2 meaning depended on the
        operands, the helpers they call, and the lines left for :data:`MARKER`."""
        edits, helpers, unproven = [], set(), set()
        already = set(marked(text.text))  # left for the person the marker asks
        for node in self.names.nodes:
            if not isinstance(getattr(node, "op", None), ast.Div) or _lines(node) & already:
                continue
            if isinstance(node, ast.BinOp) and not (self.is_float(node.left)
                                                    or self.is_float(node.right)):
                position = _operator(text, node.left, node.right)
                if position is None:
                    unproven.add(node.lineno)
                elif self.is_int(node.left) and self.is_int(node.right):
                    edits.append((position, "/", "//"))
                else:
                    edits += _call_edits(text, node, position[1], "/", ",", "old_div(")
                    helpers.add("old_div")
            elif isinstance(node, ast.AugAssign) and not self.is_float(node.value):
                position = _operator(text, node.target, node.value)
                if position is None or not reads_twice_safely(node.target):
                    unproven.add(node.lineno)
                    continue
                target = text.source(node.target)
                edits += _call_edits(text, node, position[1], "/=",
                                     f" = old_idiv({target},", "")
                helpers.add("old_idiv")
        return edits, helpers, unproven


def _lines(node) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def _call_edits(text, node, at, operator, replacement, opening):
    """Point edits: ``opening`` at the start of ``node`` (none for ``/=``), ``replacement`` in
    place of the ``operator`` at text offset ``at`` with the blanks around it, ``)`` at the
    end. Point edits compose with those of a division nested inside (equal insertions at one
    offset commute; an enclosing ``int(`` of another fixer comes later in the list, so it
    lands outside)."""
    source = text.text
    before = len(source[:at]) - len(source[:at].rstrip(" \t"))
    rest = source[at + len(operator):at + len(operator) + 200]
    after = len(rest) - len(rest.lstrip(" \t"))
    line_goes_on = rest[after:after + 1] not in ("\n", "\r", "\\", "")
    old = source[at - before:at + len(operator) + after]
    line = source.count("\n", 0, at) + 1
    edits = [((line, at - before), old, replacement + (" " if line_goes_on else "")),
             ((node.end_lineno, text.end(node)), "", ")")]
    if opening:
        edits.append(((node.lineno, text.start(node)), "", opening))
    return edits


def reads_twice_safely(target) -> bool:
    """Whether ``target`` can be read and then assigned without running anything twice that
    matters (names, attributes, subscripts and slices of those and of constants; no ``/``,
    which the copy of the target would keep unported)."""
    plain = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Slice, ast.Tuple,
             ast.UnaryOp, ast.BinOp, ast.expr_context, ast.operator, ast.unaryop)
    return all(isinstance(n, plain) and not isinstance(n, ast.Div) for n in ast.walk(target))


def _operator(text, left, right):
    """``((line, column), offset)`` of the ``/`` between two operands, found by reading the
    text between them (brackets, blanks and comments only)."""
    begin, end = text.end(left), text.start(right)
    index, in_comment = None, False
    for i, char in enumerate(text.text[begin:end]):
        if char == "#":
            in_comment = True
        elif char == "\n":
            in_comment = False
        elif char == "/" and not in_comment:
            index = i
            break
    if index is None:
        return None
    offset = begin + index
    return (text.text.count("\n", 0, offset) + 1, offset)
