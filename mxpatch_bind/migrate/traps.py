"""Private to ``migrate``: the Python 3 traps 2to3 leaves, found by meaning and fixed in the
text (:func:`analyse` finds, :func:`fix` rewrites; the scan reports from the same finds).

Every fixer resolves what it rewrites through :mod:`names`: the module a call belongs to
through every import form, and the ``open(...)`` a file handle comes from by the statements
before its use. Where that cannot be proven, it is a ``[check]``, never a rewrite.

- ``yaml.load(f)`` / ``yaml.load_all(f)``: PyYAML 6 requires a Loader; it gets
  ``Loader=yaml.FullLoader``, what a call without one used from PyYAML 5.1 to 5.4: it reads
  the tuples SNIPER's configs tag ``!!python/tuple`` (SafeLoader refuses them), and no tag
  that runs code (``!!python/object/apply`` fails loudly).
- A file that ``pickle.load`` / ``pickle.dump`` is given, opened in text mode: pickles are
  bytes on Python 3; that ``open`` gets ``'b'`` (``'rb'`` where it gave no mode), when every
  use of its handle is pickle's. A mode ``'U'`` is dropped (Python 3.11 refuses it; universal
  newlines are the default).
- ``pickle.load(f)`` of a Python 2 file gets ``encoding='latin1'``: a cache Python 2 wrote
  (``data/cache/*.pkl``) loads as Python 2 read it; a pickle Python 3 wrote loads the same.
- ``cfg=pickle.dumps(cfg)`` handed to an op through ``mx.sym.Custom``'s keywords (directly or
  through a variable): on Python 3 the bytes reach the op as the string ``"b'...'"`` (MXNet
  passes keywords through ``str()``). The symbol side becomes
  ``base64.b64encode(pickle.dumps(cfg)).decode('ascii')``, the op side (``pickle.loads`` of an
  argument of a ``CustomOpProp``'s ``__init__``) ``pickle.loads(base64.b64decode(cfg))``.
- ``json.dump`` / ``json.dumps`` of a Python 2 file get ``default=json_bytes``: Python 2's json
  wrote bytes (its ``str``) as text, Python 3's refuses them.
- ``np.linspace(a, b, np.round(...) + 1)``: NumPy 1.18 refuses a float ``num`` (pycocotools'
  ``cocoeval.py``); it is wrapped in ``int()``, which older NumPy applied itself, unless it is
  an integer by its form (or a name that provably holds one).

With them, from their own modules: Python 2's ``/`` (:mod:`division`), Python 2's calls
(:mod:`py2calls`), a Python 2 file's binary files given to ``csv`` (:mod:`csv_files`), its
Numeric type names given as a dtype (:mod:`numeric_dtypes`) and what the installed
environment no longer has (:mod:`vanished`).
"""

from __future__ import annotations

import ast

from . import csv_files, numeric_dtypes, py2calls, vanished
from .division import HELPERS_MODULE, MARKER, Divisions, has_future_division
from .found import Found, Meaning, check
from .names import BUILTINS, Names
from .textedit import Text, add_import, mark, marked_lines, replace

__all__ = ["analyse", "fix", "Meaning", "MARKER", "HELPERS_MODULE"]

_PICKLES = ("pickle", "cPickle", "_pickle", "six.moves.cPickle")
# where the file is among a pickle call's arguments: (position, keyword)
_READS = {f"{m}.{f}": (0, "file") for m in _PICKLES for f in ("load", "Unpickler")}
_WRITES = {f"{m}.dump": (1, "file") for m in _PICKLES} | {
    f"{m}.Pickler": (0, "file") for m in _PICKLES}
_DUMPS = {f"{m}.dumps" for m in _PICKLES}
_LOADS = {f"{m}.loads" for m in _PICKLES}
_OPENS = {f"{BUILTINS}.open", "io.open"}
_NEUTRAL = {"close", "closed", "name", "flush", "seek", "tell", "fileno", "mode"}
_YAML_LOADS = {"yaml.load", "yaml.load_all"}
_JSON_DUMPS = {"json.dump", "json.dumps"}


def analyse(text: str, names: Names, meaning: Meaning) -> list[Found]:
    """Every trap of one file: what :func:`fix` rewrites, and the ``[check]`` s.

    ``text`` is what ``names.tree`` was parsed from (a Python 2 file's line-preserving view
    at scan time, the ported text at port time).
    """
    return _analyse(names, Text(text), meaning)


def _analyse(names, source, meaning):
    found = _yaml(names, source) + _files(names, source) + _custom_ops(names, source) \
        + _linspace(names, source)
    if meaning.python2:
        found += _encodings(names, source) + _json(names, source) \
            + py2calls.found(names, source) + csv_files.found(names, source) \
            + numeric_dtypes.found(names, source)
    return found + vanished.found(names, source, meaning)


def fix(text: str, meaning: Meaning | bool = False) -> tuple[str, list[int]]:
    """``text`` (Python 3) with its traps fixed; returns it and its marked lines.

    ``meaning`` (:class:`Meaning`) says what the file meant when it ran; ``True`` / ``False``
    stand for a Python 2 file that divided classically / a Python 3 file.
    """
    if isinstance(meaning, bool):
        meaning = Meaning(python2=meaning)
    tree = ast.parse(text)
    names, source = Names(tree, meaning.star_bound), Text(text)
    edits: list = []
    helpers: set[str] = set()
    imports: list[str] = []
    marks: dict[int, str] = {}
    for found in _analyse(names, source, meaning):
        if found.check is None:
            edits += found.edits
            helpers |= found.helpers
            imports += [i for i in found.imports if i not in imports]
        elif found.marker:
            marks.setdefault(found.line, found.marker)
    if meaning.python2 and not meaning.true_division and not has_future_division(tree):
        division_edits, division_helpers, unproven = Divisions(names).edits(source)
        edits += division_edits
        helpers |= division_helpers
        marks.update({line: MARKER for line in unproven})
    new, _ = mark(replace(text, edits), marks)
    helpers -= _imported_helpers(names)
    if helpers:
        imports.append(f"from {HELPERS_MODULE} import {', '.join(sorted(helpers))}")
    for statement in reversed(imports):  # each goes above the first import: the first on top
        new = add_import(new, statement)
    return new, marked_lines(new) if marks else []


def _imported_helpers(names):
    return {alias.asname or alias.name for node in names.tree.body
            if isinstance(node, ast.ImportFrom) and node.module == HELPERS_MODULE
            for alias in node.names}


# ---------------------------------------------------------------------- yaml
def _yaml(names, source):
    out = []
    for call in _calls(names):
        meanings = names.meanings(call.func) & _YAML_LOADS
        if not meanings:
            continue
        if names.qualified(call.func) is None:
            out.append(check(call.lineno, "yaml.load", "may be yaml.load without a Loader (the "
                             "name may also be something else): pass Loader=yaml.FullLoader "
                             "where it is"))
        elif len(call.args) < 2 and not any(k.arg in ("Loader", None) for k in call.keywords):
            out.append(_loader(names, source, call))
    return out


def _loader(names, source, call):
    reference = names.module_reference("yaml")
    if reference is None:
        return check(call.lineno, "yaml.load", "yaml.load without a Loader, and the name 'yaml' "
                     "is taken here: pass Loader=<yaml>.FullLoader")
    return Found(call.lineno, "yaml.load without a Loader (PyYAML 6 requires one)",
                 edits=source.keyword(call, f"Loader={reference}.FullLoader"),
                 imports=_import_if_needed(names, reference, "yaml"))


def _import_if_needed(names, reference, module):
    return (f"import {module}",) if reference == module and not any(
        True for b in names.module.bindings.get(module.split(".")[0], [])) else ()


# ---------------------------------------------------------------------- files and pickles
def _files(names, source):
    """The mode of each ``open`` whose file pickle reads or writes, and ``'U'`` modes."""
    roles, out = {}, []  # id(open call) -> (open call, {'read', 'write'})
    for call in _calls(names):
        role = _pickle_role(names, call)
        handle = _pickle_file(call, role)
        if handle is None:
            continue
        opened = _opened(names, handle)
        if opened is not None:
            roles.setdefault(id(opened), (opened, set()))[1].add(role[0])
        elif isinstance(handle, ast.Name) and _binds_an_open(names, handle):
            out.append(check(call.lineno, "pickle file", f"pickle is given {handle.id!r}, which "
                             "may come from a text-mode open() here or from elsewhere: open it "
                             "with 'b' in its mode where it is a pickle (Python 3 pickles are "
                             "bytes)"))
    for opened, role_set in roles.values():
        out += _pickled_open(names, source, opened, role_set)
    done = set(roles)
    out += [f for call in _calls(names) if id(call) not in done
            for f in _universal_newlines(names, source, call)]
    return out


def _pickle_role(names, call):
    dotted = names.qualified(call.func)
    if dotted in _READS:
        return ("read",) + _READS[dotted]
    if dotted in _WRITES:
        return ("write",) + _WRITES[dotted]
    return None


def _pickle_file(call, role):
    if role is None:
        return None
    _, position, keyword = role
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _opened(names, handle):
    """The ``open(...)`` call ``handle`` is, or provably holds; else None."""
    if isinstance(handle, ast.Name):
        handle = names.reaching(handle)
    if isinstance(handle, ast.Call) and names.qualified(handle.func) in _OPENS:
        return handle
    return None


def _binds_an_open(names, name):
    scope = names.resolve(name)
    return scope is not None and any(
        _opened(names, _bound_expression(names, b)) is not None
        for b in scope.bindings.get(name.id, []))


def _bound_expression(names, binding):
    owner = names.owner(binding)
    if owner and isinstance(owner[0], ast.Assign):
        return owner[0].value
    if owner and isinstance(owner[0], ast.withitem):
        return owner[0].context_expr
    return None


def _pickled_open(names, source, opened, role_set):
    """The edit of the mode of ``opened``, whose file pickle reads or writes."""
    uses = _uses(names, opened)
    if uses - {"read", "write", "neutral"}:
        return [check(opened.lineno, "pickle file", "this file is given to pickle and used "
                      "otherwise too (or its name may hold another file there): choose its "
                      "mode by hand ('b' for a pickle)")]
    mode = _mode(opened)
    if mode is None:
        if "write" in role_set or any(k.arg in ("mode", None) for k in opened.keywords):
            return [check(opened.lineno, "pickle file", "pickle.dump into a file opened "
                          "without a mode")]
        edit = source.after(opened.args[0], ", 'rb'") if opened.args \
            else source.keyword(opened, "mode='rb'")
        return [Found(opened.lineno, "pickle's file opened in text mode", edits=edit)]
    if not _is_text(mode):
        return [check(opened.lineno, "pickle file", "pickle's file has a mode that is not a "
                      "literal: make sure it holds 'b'")]
    if "b" in mode.value:
        return _universal_newlines(names, source, opened)
    new = mode.value.replace("U", "") + "b"
    return [Found(opened.lineno, "pickle's file opened in text mode",
                  edits=source.swap(mode, _literal(source, mode, new)))]


def _uses(names, opened):
    """How the handle ``opened`` returned is used: 'read' / 'write' (by pickle),
    'neutral' (closed, flushed), 'other', 'maybe' (a use its name may reach)."""
    owner, field_name = names.owner(opened)
    if isinstance(owner, ast.withitem) and field_name == "context_expr":
        target = owner.optional_vars
    elif isinstance(owner, ast.Assign) and len(owner.targets) == 1:
        target = owner.targets[0]
    else:
        return {"read"} if isinstance(owner, (ast.Call, ast.keyword)) else {"other"}
    if not isinstance(target, ast.Name):
        return {"other"}
    scope = names.resolve(target)
    kinds = set()
    for load in names.loads(target.id, scope):
        reached = names.reaching(load)
        if reached is opened:
            kinds.add(_use_kind(names, load))
        elif reached is None and load.lineno >= opened.lineno:
            kinds.add("maybe")
    return kinds


def _use_kind(names, load):
    owner, field_name = names.owner(load)
    if isinstance(owner, ast.Attribute):
        return "neutral" if owner.attr in _NEUTRAL else "other"
    call = names.owner(owner)[0] if isinstance(owner, ast.keyword) else owner
    if isinstance(call, ast.Call):
        role = _pickle_role(names, call)
        if role is not None and _pickle_file(call, role) is load:
            return role[0]
    return "other"


def _mode(opened):
    if len(opened.args) > 1:
        return opened.args[1]
    return next((k.value for k in opened.keywords if k.arg == "mode"), None)


def _is_text(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _literal(source, node, new):
    old = source.source(node)
    quote = old[-1] if old[-1:] in ("'", '"') and old[:1] in ("'", '"') else "'"
    return f"{quote}{new}{quote}"


def _universal_newlines(names, source, call):
    if names.qualified(call.func) not in _OPENS:
        return []
    mode = _mode(call)
    if not _is_text(mode) or "U" not in mode.value:
        return []
    new = mode.value.replace("U", "") or "r"
    return [Found(call.lineno, "open mode 'U' (Python 3.11 refuses it)",
                  edits=source.swap(mode, _literal(source, mode, new)))]


def _encodings(names, source):
    """``pickle.load(f)`` of a Python 2 file: ``encoding='latin1'``."""
    return [Found(call.lineno, "pickle.load of Python 2's pickles",
                  edits=source.keyword(call, "encoding='latin1'"))
            for call in _calls(names) if (names.qualified(call.func) or "").endswith(".load")
            and names.qualified(call.func) in _READS and len(call.args) == 1
            and not any(k.arg in ("encoding", None) for k in call.keywords)]


# ---------------------------------------------------------------------- custom operators
def _custom_ops(names, source):
    out = []
    reference = names.module_reference("base64")
    imports = _import_if_needed(names, reference or "", "base64")
    for call in _calls(names):
        dotted = names.qualified(call.func) or ""
        if dotted.startswith("mxnet.") and dotted.endswith(".Custom"):
            for keyword in call.keywords:
                out += _pickled_keyword(names, source, keyword, reference, imports)
    for call in _op_loads(names):
        out.append(Found(call.lineno, "pickle through mx.sym.Custom's keywords (the op side)",
                         edits=source.wrap(call.args[0], f"{reference}.b64decode(", ")"),
                         imports=imports) if reference else _base64_taken(call))
    return out


def _pickled_keyword(names, source, keyword, reference, imports):
    value = keyword.value
    if keyword.arg is None or not (_is_dumps(names, value) or isinstance(value, ast.Name)):
        return []
    if isinstance(value, ast.Name) and not _is_dumps(names, names.reaching(value)):
        if _binds_dumps(names, value):
            return [check(value.lineno, "pickle through mx.sym.Custom", f"{value.id!r} may hold "
                          "pickle.dumps(...) here: the op receives it as the string \"b'...'\" "
                          "on Python 3; pass base64.b64encode(...).decode('ascii') and decode "
                          "it in the op")]
        return []
    if reference is None:
        return [_base64_taken(value)]
    return [Found(value.lineno, "pickle through mx.sym.Custom's keywords",
                  edits=source.wrap(value, f"{reference}.b64encode(", ").decode('ascii')"),
                  imports=imports)]


def _base64_taken(node):
    return check(node.lineno, "pickle through mx.sym.Custom", "the name 'base64' is taken here: "
                 "pass the pickle base64-encoded by hand")


def _is_dumps(names, node):
    return isinstance(node, ast.Call) and names.qualified(node.func) in _DUMPS


def _binds_dumps(names, name):
    scope = names.resolve(name)
    return scope is not None and any(_is_dumps(names, _bound_expression(names, b))
                                     for b in scope.bindings.get(name.id, []))


def _op_loads(names):
    """``pickle.loads(arg)`` of an argument of a ``CustomOpProp``'s ``__init__``."""
    for cls in names.nodes:
        if isinstance(cls, ast.ClassDef) and any(
                names.qualified(b) == "mxnet.operator.CustomOpProp" for b in cls.bases):
            for init in cls.body:
                if isinstance(init, ast.FunctionDef) and init.name == "__init__":
                    yield from (call for call in ast.walk(init) if isinstance(call, ast.Call)
                                and names.qualified(call.func) in _LOADS
                                and len(call.args) == 1 and _is_argument(names, call.args[0]))


def _is_argument(names, node, depth=0):
    """Whether ``node`` is a parameter of its function, or a name that provably holds one."""
    if not isinstance(node, ast.Name) or depth > 20:
        return False
    scope = names.resolve(node)
    if scope is None:
        return False
    if all(isinstance(b, ast.arg) for b in scope.bindings.get(node.id, [])):
        return True
    return _is_argument(names, names.reaching(node), depth + 1)


# ---------------------------------------------------------------------- json, linspace
def _json(names, source):
    out = []
    for call in _calls(names):
        if not names.meanings(call.func) & _JSON_DUMPS:
            continue
        if any(k.arg in ("default", "cls", None) for k in call.keywords):
            continue
        if names.qualified(call.func) is None:
            out.append(check(call.lineno, "json", "may be json.dump(s) of Python 2's str "
                             "(bytes on Python 3): pass default=mxpatch_bind.py2.json_bytes "
                             "where it is", python2_only=True))
        else:
            out.append(Found(call.lineno, "bytes in json", helpers=frozenset({"json_bytes"}),
                             edits=source.keyword(call, "default=json_bytes")))
    return out


def _linspace(names, source):
    divisions, out = Divisions(names), []
    for call in _calls(names):
        if names.qualified(call.func) != "numpy.linspace":
            continue
        num = call.args[2] if len(call.args) > 2 else next(
            (k.value for k in call.keywords if k.arg == "num"), None)
        value = names.reaching(num) if isinstance(num, ast.Name) else num
        if num is not None and not divisions.is_int(value):
            out.append(Found(num.lineno, "np.linspace's float num",
                             edits=source.wrap(num, "int(", ")")))
    return out


def _calls(names):
    return names.calls
