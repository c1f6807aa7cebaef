"""Private to ``migrate``: the family's Python 3 traps that 2to3 leaves, fixed in the text.

- ``yaml.load(f)``: PyYAML 6 requires a Loader; it gets ``Loader=yaml.SafeLoader`` (the
  family's configs are plain data; a Python tag now fails loudly instead of running code).
- ``cfg=pickle.dumps(cfg)`` handed to an op through ``mx.sym.Custom``'s keywords: on Python 3
  the bytes reach the op as the string ``"b'...'"`` (MXNet passes keywords as C strings, so
  the pickle's NUL bytes could not pass either). The symbol side becomes
  ``base64.b64encode(pickle.dumps(cfg)).decode('ascii')``, the op side (``pickle.loads`` of an
  argument of a ``CustomOpProp``'s ``__init__``) ``pickle.loads(base64.b64decode(cfg))``.
- ``np.linspace(a, b, np.round(...) + 1)``: NumPy 1.18 refuses a float ``num`` (pycocotools'
  ``cocoeval.py``); it is wrapped in ``int()``, which older NumPy applied itself.
- ``open(path, 'w')`` / ``'r'`` of a file ``pickle.dump`` / ``pickle.load`` is given in the same
  function gets ``'b'``: pickles are bytes on Python 3.
- ``pickle.load(f)`` gets ``encoding='latin1'``: a cache Python 2 wrote (``data/cache/*.pkl``)
  then loads as Python 2 read it; a pickle Python 3 wrote loads the same either way.
- ``/``: Python 2 divided integers to an integer. Where both operands are integers by their
  form (``len(...)``, ``int(...)``, ``x.shape[i]``, integer literals, and arithmetic of those)
  it becomes ``//``, which is what Python 2 computed; where an operand is a float by its form
  it stays. Every other ``a / b`` becomes ``old_div(a, b)`` and ``a /= b`` becomes
  ``a = old_idiv(a, b)`` (:mod:`mxpatch_bind.py2`: Python 2's rule, applied at run time), and
  every report lists each call until a person writes ``//`` or ``/``. A ``/=`` whose target
  reads a call (``f()[i] /= 2``: rewriting would call it twice) gets the marker
  :data:`MARKER` instead, listed the same way until a person deletes it.
"""

from __future__ import annotations

import ast
import io
import tokenize

MARKER = "# migrate: check '/'"
HELPERS_MODULE = "mxpatch_bind.py2"  # old_div and old_idiv: Python 2's '/' at run time
_INT_CALLS = {"len", "int"}
_DUMMY_REEXPORTS = {"cpu_count", "TimeoutError"}
_FLOAT_CALLS = {"float"}
# Calls that return a float on Python 2 (math.floor and math.ceil too, there).
_FLOAT_METHODS = {("time", "time"), ("time", "clock"), ("time", "perf_counter")} | {
    ("math", name) for name in ("sqrt", "exp", "log", "pow", "floor", "ceil", "sin", "cos")}


# ---------------------------------------------------------------------- reading
def marked_lines(text: str) -> list[int]:
    """The lines that carry :data:`MARKER` (comments only, not strings)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return sorted({t.start[0] for t in tokens
                   if t.type == tokenize.COMMENT and MARKER in t.string})


def helper_calls(tree: ast.Module) -> list[int]:
    """Lines of the calls of ``old_div`` / ``old_idiv`` imported from :data:`HELPERS_MODULE`
    (each a ``/`` a person has yet to decide)."""
    names = _names_from(tree, HELPERS_MODULE)
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and isinstance(n.func, ast.Name) and n.func.id in names})


def int_divisions(tree: ast.Module) -> list[int]:
    """Lines of the ``/`` whose operands are both integers by their form (``//`` for them)."""
    if has_future_division(tree):
        return []
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.BinOp)
                   and isinstance(n.op, ast.Div) and _is_int(n.left) and _is_int(n.right)})


def has_future_division(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "division" for a in n.names) for n in tree.body)


def divisions(tree: ast.Module) -> list[int]:
    """Lines of the ``/`` and ``/=`` whose Python 2 meaning depended on the operands (the
    ones :func:`fix` marks; it writes ``//`` where both are integers by their form)."""
    if has_future_division(tree):
        return []
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if not (_is_float(node.left) or _is_float(node.right)
                    or (_is_int(node.left) and _is_int(node.right))):
                lines.add(node.lineno)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
            if not _is_float(node.value):
                lines.add(node.lineno)
    return sorted(lines)


def yaml_loads(tree: ast.Module) -> list[int]:
    """Lines of ``yaml.load(...)`` calls without a Loader."""
    names = _module_names(tree, "yaml")
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and _is_attr_call(n, names, "load") and len(n.args) < 2
                  and not any(k.arg == "Loader" for k in n.keywords))


def pickled_op_arguments(tree: ast.Module) -> list[int]:
    """Lines of ``pickle.dumps(...)`` passed as an ``mx.sym.Custom`` keyword, and of
    ``pickle.loads(arg)`` of a ``CustomOpProp.__init__`` argument, not yet base64."""
    names = _module_names(tree, "pickle") | _module_names(tree, "cPickle")
    lines = [value.lineno for value in _custom_keyword_values(tree)
             if isinstance(value, ast.Call) and _is_attr_call(value, names, "dumps")]
    lines += [call.lineno for call in _op_loads(tree, names)
              if isinstance(call.args[0], ast.Name)]
    return sorted(lines)


def linspace_counts(tree: ast.Module) -> list[ast.expr]:
    """The ``num`` of each ``np.linspace`` call that is not an integer by its form (NumPy
    1.18 refuses a float there, ``np.round(...) + 1`` for one; older NumPy took its int())."""
    names = _module_names(tree, "numpy")
    found = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _is_attr_call(call, names, "linspace"):
            num = call.args[2] if len(call.args) > 2 else next(
                (k.value for k in call.keywords if k.arg == "num"), None)
            if num is not None and not _is_int(num) and not isinstance(num, ast.Name):
                found.append(num)
    return found


def pickle_files(tree: ast.Module) -> list[tuple[ast.Constant, str]]:
    """``(mode literal, new mode)`` for each ``open(path, 'w'/'r')`` whose file a
    ``pickle.dump`` / ``pickle.load`` in the same function (or module) is given: pickles are
    bytes on Python 3 (``write() argument must be str, not bytes``)."""
    names = _module_names(tree, "pickle") | _module_names(tree, "cPickle")
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef))]
    module_level = ast.Module(body=[n for n in tree.body if not isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))], type_ignores=[])
    for scope in [module_level, *functions]:
        pickled = {_pickled_file(call, names) for call in ast.walk(scope)} - {None}
        for name, opened in _opened_files(scope):
            mode = opened.args[1] if len(opened.args) > 1 else None
            if name in pickled and isinstance(mode, ast.Constant) \
                    and isinstance(mode.value, str) and "b" not in mode.value:
                found.append((mode, mode.value + "b"))
    unique = {id(mode): (mode, new) for mode, new in found}
    return list(unique.values())


def _pickled_file(node, names):
    """The name of the file a ``pickle.dump(obj, f)`` / ``pickle.load(f)`` is given."""
    if not isinstance(node, ast.Call):
        return None
    if _is_attr_call(node, names, "dump") and len(node.args) > 1:
        file = node.args[1]
    elif _is_attr_call(node, names, "load") and node.args:
        file = node.args[0]
    else:
        return None
    return file.id if isinstance(file, ast.Name) else None


def _opened_files(scope):
    """``(name, open call)`` for ``with open(...) as name`` and ``name = open(...)``."""
    for node in ast.walk(scope):
        items = []
        if isinstance(node, (ast.With, ast.AsyncWith)):
            items = [(item.optional_vars, item.context_expr) for item in node.items]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            items = [(node.targets[0], node.value)]
        for target, value in items:
            if isinstance(target, ast.Name) and isinstance(value, ast.Call) \
                    and isinstance(value.func, ast.Name) and value.func.id == "open":
                yield target.id, value


def dummy_reexports(tree: ast.Module) -> list[ast.Attribute]:
    """``mp.cpu_count`` / ``mp.TimeoutError`` where ``mp`` is ``multiprocessing.dummy``:
    Python 2's re-exported them from ``multiprocessing``, Python 3's does not (FCIS's
    ``coco.py``: ``mp.Pool(mp.cpu_count())``, AttributeError when the dataset loads)."""
    names = _module_names(tree, "multiprocessing.dummy") | {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
        and n.module == "multiprocessing" and not n.level for a in n.names if a.name == "dummy"}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and n.attr in _DUMMY_REEXPORTS and isinstance(n.value, ast.Name)
            and n.value.id in names]


def json_dumps_without_default(tree: ast.Module) -> list[ast.Call]:
    """``json.dump`` / ``json.dumps`` calls with neither ``default`` nor ``cls``: Python 2's
    json wrote bytes (its ``str``) as text, Python 3's refuses them."""
    names = _module_names(tree, "json")
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (_is_attr_call(n, names, "dump") or _is_attr_call(n, names, "dumps"))
            and not any(k.arg in ("default", "cls", None) for k in n.keywords)]


def pickle_loads_without_encoding(tree: ast.Module) -> list[ast.Call]:
    """``pickle.load(f)`` of a file without ``encoding=``: a cache that Python 2 wrote
    (``data/cache/*.pkl``) holds NumPy arrays whose bytes Python 3 decodes as ASCII
    (UnicodeDecodeError); ``encoding='latin1'`` reads them as Python 2 did, and changes
    nothing for a pickle Python 3 wrote."""
    names = _module_names(tree, "pickle") | _module_names(tree, "cPickle")
    return [call for call in ast.walk(tree) if isinstance(call, ast.Call)
            and _is_attr_call(call, names, "load") and len(call.args) == 1
            and not any(k.arg == "encoding" for k in call.keywords)]


def _names_from(tree, module):
    """The names a file imports from ``module`` (``from mxpatch_bind.py2 import old_div``)."""
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and n.module == module and not n.level for a in n.names}


def _binds_multiprocessing(tree):
    """Whether the name ``multiprocessing`` is the module (``import multiprocessing`` or
    ``import multiprocessing.dummy``, without ``as``)."""
    return any(a.asname is None and a.name.split(".")[0] == "multiprocessing"
               for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names)


def _module_names(tree, module):
    """The names a file binds to ``module`` (``import yaml``, ``import pickle as cPickle``)."""
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
            for a in n.names if a.name == module}


def _is_attr_call(call, names, attr):
    return (isinstance(call.func, ast.Attribute) and call.func.attr == attr
            and isinstance(call.func.value, ast.Name) and call.func.value.id in names)


def _custom_keyword_values(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "Custom":
            yield from (k.value for k in node.keywords if k.arg is not None)


def _op_loads(tree, names):
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef) and any(_base_name(b).endswith("CustomOpProp")
                                                 for b in cls.bases):
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    params = {a.arg for a in fn.args.args}
                    yield from (n for n in ast.walk(fn) if isinstance(n, ast.Call)
                                and _is_attr_call(n, names, "loads") and len(n.args) == 1
                                and isinstance(n.args[0], ast.Name)
                                and n.args[0].id in params)


def _base_name(node):
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _is_int(node) -> bool:
    """Whether ``node`` is an integer by its form alone."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in _INT_CALLS
    if isinstance(node, ast.Subscript):  # x.shape[i]
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and not isinstance(node.slice, ast.Slice)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                            ast.FloorDiv, ast.Mod)):
        return _is_int(node.left) and _is_int(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_int(node.operand)
    return False


def _is_float(node) -> bool:
    """Whether ``node`` is a float by its form alone (then ``/`` divided truly on Python 2)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in _FLOAT_CALLS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name):
        return (node.func.value.id, node.func.attr) in _FLOAT_METHODS
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        return _is_float(node.left) or _is_float(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_float(node.operand)
    return False


# ---------------------------------------------------------------------- fixing
def fix(text: str, python2: bool) -> tuple[str, list[int]]:
    """``text`` (Python 3) with its traps fixed; returns it and the lines marked for ``/``.

    ``python2``: whether the file comes from a Python 2 code base: its ``/`` had Python 2's
    meaning (unless it imports ``division`` from ``__future__``) and its ``str`` was bytes.
    """
    tree = ast.parse(text)
    lines = text.splitlines(True)
    offsets = _offsets(lines)
    edits, helpers, unproven = [], set(), set()  # edits: ((line, offset), old, new)
    if python2 and not has_future_division(tree):
        edits, helpers, unproven = _division_edits(tree, text, offsets)
    if python2:
        for call in json_dumps_without_default(tree):
            edits.append(_keyword_edit(call, text, offsets, "default=json_bytes"))
            helpers.add("json_bytes")
    edits += _yaml_edits(tree, text, offsets)
    edits += _more_edits(tree, text, offsets)
    imports = []
    for call in _pickle_calls(tree):
        edits += _wrap(call, text, offsets)
        if "base64" not in _module_names(tree, "base64"):
            imports = ["import base64"]
    reexports = dummy_reexports(tree)
    for attribute in reexports:  # mp.cpu_count -> multiprocessing.cpu_count
        start = _absolute(offsets, attribute.lineno, attribute.col_offset, text)
        edits.append(((attribute.lineno, start), _base_name(attribute.value), "multiprocessing"))
    new = _replace(text, offsets, edits)
    if reexports and not _binds_multiprocessing(tree):
        imports.append("import multiprocessing")
    helpers -= _names_from(tree, HELPERS_MODULE)
    if helpers:
        imports.append(f"from {HELPERS_MODULE} import {', '.join(sorted(helpers))}")
    for statement in reversed(imports):  # each goes above the first import: base64 on top
        new = _add_import(new, statement)
    if unproven:
        return _mark(new, {line + len(imports) for line in unproven})
    return new, []


def _division_edits(tree, text, offsets):
    """The edits of every ``/`` and ``/=`` whose Python 2 meaning depended on the operands,
    the helpers they call, and the lines left for :data:`MARKER`."""
    edits, helpers, unproven = [], set(), set()
    marked = set(marked_lines(text))  # left for the person the marker asks
    for node in ast.walk(tree):
        if not isinstance(getattr(node, "op", None), ast.Div) or _node_lines(node) & marked:
            continue
        if isinstance(node, ast.BinOp) and not (_is_float(node.left) or _is_float(node.right)):
            position = _operator(text, offsets, node.left, node.right)
            if position is None:
                unproven.add(node.lineno)
            elif _is_int(node.left) and _is_int(node.right):
                edits.append((position, "/", "//"))
            else:
                edits += _call_edits(text, offsets, node, position[1], "/", ",", "old_div(")
                helpers.add("old_div")
        elif isinstance(node, ast.AugAssign) and not _is_float(node.value):
            position = _operator(text, offsets, node.target, node.value)
            if position is None or not _reads_twice_safely(node.target):
                unproven.add(node.lineno)
                continue
            target = ast.get_source_segment(text, node.target)
            edits += _call_edits(text, offsets, node, position[1], "/=",
                                 f" = old_idiv({target},", "")
            helpers.add("old_idiv")
    return edits, helpers, unproven


def _node_lines(node) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def _call_edits(text, offsets, node, at, operator, replacement, opening):
    """Point edits: ``opening`` at the start of ``node`` (none for ``/=``), ``replacement`` in
    place of the ``operator`` at text offset ``at`` with the blanks around it, ``)`` at the
    end. Point edits compose with those of a division nested inside (equal insertions at one
    offset commute; an enclosing ``int(`` from _more_edits comes later in the list, so it
    lands outside)."""
    before = len(text[:at]) - len(text[:at].rstrip(" \t"))
    rest = text[at + len(operator):]
    after = len(rest) - len(rest.lstrip(" \t"))
    line_goes_on = rest[after:after + 1] not in ("\n", "\r", "\\", "")
    old = text[at - before:at + len(operator) + after]
    line = text.count("\n", 0, at) + 1
    end = _absolute(offsets, node.end_lineno, node.end_col_offset, text)
    edits = [((line, at - before), old, replacement + (" " if line_goes_on else "")),
             ((node.end_lineno, end), "", ")")]
    if opening:
        start = _absolute(offsets, node.lineno, node.col_offset, text)
        edits.append(((node.lineno, start), "", opening))
    return edits


def _reads_twice_safely(target) -> bool:
    """Whether ``target`` can be read and then assigned without running anything twice that
    matters (names, attributes, subscripts and slices of those and of constants; no ``/``,
    which the copy of the target would keep unported)."""
    plain = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Slice, ast.Tuple,
             ast.UnaryOp, ast.BinOp, ast.expr_context, ast.operator, ast.unaryop)
    nodes = list(ast.walk(target))
    return all(isinstance(n, plain) and not isinstance(n, ast.Div) for n in nodes)


def _offsets(lines):
    starts, total = [], 0
    for line in lines:
        starts.append(total)
        total += len(line)
    return starts


def _absolute(offsets, line, column_bytes, text):
    """The text offset of an ast position (its column counts UTF-8 bytes)."""
    start = offsets[line - 1]
    line_text = text[start:].split("\n", 1)[0]
    return start + len(line_text.encode("utf-8")[:column_bytes].decode("utf-8", "replace"))


def _operator(text, offsets, left, right):
    """``((line, column), offset)`` of the ``/`` between two operands, found by tokens."""
    begin = _absolute(offsets, left.end_lineno, left.end_col_offset, text)
    end = _absolute(offsets, right.lineno, right.col_offset, text)
    between = text[begin:end]  # closing and opening brackets, blanks, comments, the '/'
    index, in_comment = None, False
    for i, char in enumerate(between):
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
    line = text.count("\n", 0, offset) + 1
    return (line, offset)


def _yaml_edits(tree, text, offsets):
    names = _module_names(tree, "yaml")
    return [_keyword_edit(call, text, offsets, f"Loader={call.func.value.id}.SafeLoader")
            for call in ast.walk(tree) if isinstance(call, ast.Call)
            and _is_attr_call(call, names, "load") and len(call.args) == 1
            and not any(k.arg == "Loader" for k in call.keywords)]


def _keyword_edit(call, text, offsets, keyword):
    """The edit that passes ``keyword`` last to ``call`` (before its closing parenthesis)."""
    end = _absolute(offsets, call.end_lineno, call.end_col_offset, text) - 1  # ')'
    inside = text[:end].rstrip()
    comma = "" if inside.endswith(("(", ",")) else ","
    return ((call.end_lineno, len(inside)), "", f"{comma} {keyword}")


def _more_edits(tree, text, offsets):
    """np.linspace's num in int(); 'b' in the mode of a file pickled to or from;
    encoding='latin1' for pickle.load."""
    edits = []
    for num in linspace_counts(tree):
        start = _absolute(offsets, num.lineno, num.col_offset, text)
        end = _absolute(offsets, num.end_lineno, num.end_col_offset, text)
        edits += [((num.lineno, start), "", "int("), ((num.end_lineno, end), "", ")")]
    for mode, new in pickle_files(tree):
        start = _absolute(offsets, mode.lineno, mode.col_offset, text)
        end = _absolute(offsets, mode.end_lineno, mode.end_col_offset, text)
        quote = text[start]
        edits.append(((mode.lineno, start), text[start:end], f"{quote}{new}{quote}"))
    for call in pickle_loads_without_encoding(tree):
        edits.append(_keyword_edit(call, text, offsets, "encoding='latin1'"))
    return edits


def _pickle_calls(tree):
    names = _module_names(tree, "pickle") | _module_names(tree, "cPickle")
    calls = [("dumps", v) for v in _custom_keyword_values(tree) if isinstance(v, ast.Call)
             and _is_attr_call(v, names, "dumps")]
    calls += [("loads", c) for c in _op_loads(tree, names)]
    return calls


def _wrap(kind_call, text, offsets):
    kind, call = kind_call
    if kind == "dumps":  # base64.b64encode(<call>).decode('ascii')
        start = _absolute(offsets, call.lineno, call.col_offset, text)
        end = _absolute(offsets, call.end_lineno, call.end_col_offset, text)
        return [((call.lineno, start), "", "base64.b64encode("),
                ((call.end_lineno, end), "", ").decode('ascii')")]
    argument = call.args[0]  # pickle.loads(base64.b64decode(<arg>))
    start = _absolute(offsets, argument.lineno, argument.col_offset, text)
    end = _absolute(offsets, argument.end_lineno, argument.end_col_offset, text)
    return [((argument.lineno, start), "", "base64.b64decode("), ((argument.lineno, end), "", ")")]


def _replace(text, offsets, edits):
    """Apply ``((line, offset), old, new)`` edits from the last offset back."""
    for (_line, offset), old, new in sorted(edits, key=lambda e: e[0][1], reverse=True):
        if old and text[offset:offset + len(old)] != old:
            continue  # not where it was read: leave it (the report still lists it)
        text = text[:offset] + new + text[offset + len(old):]
    return text


def _add_import(text, statement):
    """``statement`` just above the module's first import (below a licence header of
    comments, the docstring and the ``__future__`` imports)."""
    tree = ast.parse(text)
    at = 0
    for node in tree.body:
        if _is_plain_import(node):
            at = node.lineno - 1
            break
        if not isinstance(node, (ast.Expr, ast.ImportFrom)):  # code before any import
            break
        at = node.end_lineno
    lines = text.splitlines(True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    lines.insert(at, statement + newline)
    return "".join(lines)


def _is_plain_import(node):
    return isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom)
                                            and node.module != "__future__")


def _mark(text, lines_to_mark):
    """Add :data:`MARKER` at the end of each line, where the line ends outside a string."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    ends = {t.start[0]: t for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL)}
    lines = text.splitlines(True)
    marked = []
    for number in sorted(lines_to_mark):
        token = ends.get(number)
        if token is None or number > len(lines) or MARKER in lines[number - 1]:
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        lines[number - 1] = f"{body}  {MARKER}{line[len(body):]}"
        marked.append(number)
    return "".join(lines), marked
