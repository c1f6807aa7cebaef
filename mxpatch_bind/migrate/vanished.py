"""Private to ``migrate``: what the code calls that the installed environment no longer has.

Every ``module.attr`` a file refers to (through any import form), every ``from module import
name`` and every dotted ``import`` is resolved against the installed Python and packages
(:mod:`environment` asks a child process, once per scan), as the import check resolves
modules. What is gone is fixed where an exact replacement exists (:data:`REPLACEMENTS`, each
with what makes it exact) and a ``[check]`` otherwise, in every report run. The same for
methods whose receiver is provably of the class that lost them (``threading.Thread(...)``'s
``isAlive``), for MXNet's own change since the family's MXNet (an in-place operator on a
``Symbol``: ``a += b`` raises in 1.9.1, ``a = a + b`` is what older MXNet ran), and for the
removed builtins 2to3 leaves. MXNet's operators are :mod:`operators`' to report.
"""

from __future__ import annotations

import ast

from .division import reads_twice_safely
from .found import Found, Meaning, check
from .names import BUILTINS, Names
from .textedit import Text

_ABCS = ("Mapping", "MutableMapping", "Sequence", "MutableSequence", "Set", "MutableSet",
         "Iterable", "Iterator", "Callable", "Hashable", "Sized", "Container", "Generator",
         "KeysView", "ItemsView", "ValuesView", "MappingView", "ByteString", "Awaitable",
         "Coroutine", "AsyncIterable", "AsyncIterator", "Reversible", "AsyncGenerator",
         "Collection")
# A gone dotted name -> (its exact replacement, why it is exact).
REPLACEMENTS = {
    "time.clock": ("time.process_time", "time.clock (removed in Python 3.8) was the "
                   "process's CPU time on Linux (C's clock()), which time.process_time is"),
    "base64.encodestring": ("base64.encodebytes", "the same function, renamed in 3.1"),
    "base64.decodestring": ("base64.decodebytes", "the same function, renamed in 3.1"),
    "inspect.getargspec": ("mxpatch_bind.py2.getargspec", "Python 2's ArgSpec, from "
                           "getfullargspec"),
    "multiprocessing.dummy.cpu_count": ("multiprocessing.cpu_count", "Python 2's "
                                        "multiprocessing.dummy re-exported it"),
    "multiprocessing.dummy.TimeoutError": ("multiprocessing.TimeoutError", "Python 2's "
                                           "multiprocessing.dummy re-exported it"),
    "os.errno": ("errno", "os re-exported errno until Python 3.7"),
    "xml.etree.cElementTree": ("xml.etree.ElementTree", "ElementTree is the C "
                               "accelerator itself since Python 3.3"),
    "PIL.Image.ANTIALIAS": ("PIL.Image.LANCZOS", "the same filter (Pillow 10 removed the "
                            "alias)"),
    "PIL.Image.LINEAR": ("PIL.Image.BILINEAR", "the same filter (Pillow 10 removed the alias)"),
    "PIL.Image.CUBIC": ("PIL.Image.BICUBIC", "the same filter (Pillow 10 removed the alias)"),
    **{f"collections.{name}": (f"collections.abc.{name}", "the same class (the alias in "
                               "collections went in Python 3.10)") for name in _ABCS},
    **{f"numpy.{alias}": (f"{BUILTINS}.{builtin}", f"np.{alias} was the builtin {builtin} "
                          "(NumPy 1.24 removed the alias)")
       for alias, builtin in (("float", "float"), ("int", "int"), ("bool", "bool"),
                              ("object", "object"), ("str", "str"), ("long", "int"),
                              ("unicode", "str"), ("complex", "complex"))},
}
ADVICE = {
    "platform.linux_distribution": "the 'distro' package has what it returned",
    "platform.dist": "the 'distro' package has what it returned",
    "fractions.gcd": "math.gcd is not the same for negative numbers and non-integers",
    "cgi.escape": "html.escape(s, quote=False) is what cgi.escape(s) did; with quote=True "
                  "html.escape also escapes \"'\"",
    "scipy.misc.imread": "imageio.imread or PIL.Image.open (the values may differ)",
    "scipy.misc.imresize": "PIL.Image.resize (its rounding differs)",
    "scipy.misc.imsave": "imageio.imwrite",
    "string.letters": "string.ascii_letters (equal in the C locale)",
    "string.lowercase": "string.ascii_lowercase (equal in the C locale)",
    "string.uppercase": "string.ascii_uppercase (equal in the C locale)",
    "string.maketrans": "str.maketrans / bytes.maketrans",
}
# (class, method) -> new method, for receivers provably of the class (exact: the same method).
METHODS = {("threading.Thread", "isAlive"): "is_alive", ("array.array", "tostring"): "tobytes",
           ("array.array", "fromstring"): "frombytes"}
_UNKNOWN_RECEIVER = {"isAlive": "is_alive() (threading.Thread's isAlive went in 3.9)",
                     "getchildren": "list(x) (ElementTree's getchildren went in 3.9)",
                     "getiterator": "iter() (ElementTree's getiterator went in 3.9)"}
_SYMBOL_MODULES = ("mxnet.symbol.", "mxnet.sym.", "mxnet.contrib.symbol.", "mxnet.contrib.sym.")
_SYMBOL_INPLACE = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.FloorDiv: 2, ast.Mod: 2,
               ast.MatMult: 2, ast.Pow: 3}
_ATOMS = (ast.Name, ast.Call, ast.Subscript, ast.Attribute, ast.Constant, ast.UnaryOp, ast.List,
          ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_ABSENCE_ERRORS = {"AttributeError", "ImportError", "ModuleNotFoundError", "NameError",
                   "Exception", "BaseException"}
_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))
# 2to3 renames these in a Python 2 file: the port, not this, handles them there.
PORT_HANDLES = ("os.getcwdu", "sys.maxint", "itertools.i", "types.", "operator.is",
                "operator.sequenceIncludes", "operator.repeat", "sys.exc_", "urllib.",
                "string.join", "string.split")


def references(names: Names) -> list[tuple[ast.AST, str]]:
    """``(node, dotted name)`` for every reference to a name outside the module: maximal
    attribute chains (``np.random.rand``), the names of ``from m import n`` and the modules
    of ``import a.b``."""
    found: list[tuple[ast.AST, str]] = []
    for node in names.nodes:
        if isinstance(node, ast.Attribute) and not _inside_chain(names, node):
            dotted = names.qualified(node)
            if dotted and not dotted.startswith((".", f"{BUILTINS}.")):
                found.append((node, dotted))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found += [(alias, f"{node.module}.{alias.name}") for alias in node.names
                      if alias.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(alias, alias.name) for alias in node.names if "." in alias.name]
    return found


def _inside_chain(names, node):
    owner = names.owner(node)
    return owner is not None and isinstance(owner[0], ast.Attribute) and owner[1] == "value"


def found(names: Names, text: Text, meaning: Meaning) -> list[Found]:
    """The fixes and checks of one file (``meaning.missing``: what the scan found gone).

    A reference inside a ``try`` that catches its absence (``AttributeError``,
    ``ImportError`` or broader) is the code's own fallback, as the import check treats
    imports there."""
    out: list[Found] = []
    from_imports: dict[int, tuple[ast.ImportFrom, list]] = {}
    for node, dotted in references(names):
        gone = next((m for m in meaning.missing if dotted == m or dotted.startswith(m + ".")),
                    None)
        if gone is None or (meaning.python2 and dotted.startswith(PORT_HANDLES)) \
                or _guarded(names, node):
            continue
        statement = names.statement_of(node)
        if isinstance(statement, ast.ImportFrom):
            from_imports.setdefault(id(statement), (statement, []))[1].append((node, gone))
        else:
            out.append(_gone(names, text, node, gone))
    for statement, aliases in from_imports.values():
        out += _from_import(text, statement, aliases)
    return out + _methods(names, text) + _symbol_inplace(names, text, meaning)


def _guarded(names, node):
    """Whether ``node`` lies in a ``try`` that catches its being gone: in its body, or in
    one of its handlers (the fallback for the body's)."""
    owner = names.owner(node)
    while owner is not None:
        parent, field_name = owner
        if isinstance(parent, ast.ExceptHandler):
            parent, field_name = names.owner(parent)[0], "body"
        if isinstance(parent, _TRIES) and field_name == "body" \
                and any(_catches_absence(h) for h in parent.handlers):
            return True
        owner = names.owner(parent)
    return False


def _catches_absence(handler):
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in _ABSENCE_ERRORS for t in types)


def _gone(names, text, node, gone):
    replacement = REPLACEMENTS.get(gone)
    line = node.lineno
    if replacement is None:
        advice = ADVICE.get(gone)
        return check(line, gone, f"{gone} does not exist in the installed environment"
                     + (f": {advice}" if advice else ""))
    new, why = replacement
    edit = _replace_reference(names, text, node, gone, new)
    if edit is None:
        shown = new[len(BUILTINS) + 1:] if new.startswith(f"{BUILTINS}.") else new
        return check(line, gone, f"{gone} does not exist any more: write {shown} ({why})")
    edits, imports = edit
    return Found(line, f"{gone} is gone: {new} ({why})", edits=edits, imports=imports)


def _replace_reference(names, text, node, gone, new):
    """``(edits, imports)`` that make ``node`` (a chain, an imported name or module) refer
    to ``new`` instead of ``gone``; None where no edit says it exactly."""
    old_parent, old_last = gone.rsplit(".", 1) if "." in gone else ("", gone)
    new_parent, new_last = new.rsplit(".", 1) if "." in new else ("", new)
    if isinstance(node, ast.alias):  # of an ``import`` (a from-import is _from_import's)
        return _replace_alias(names, text, node, gone, new)
    target = _sub_chain(names, node, gone)
    if target is None:
        return None
    if new_parent == old_parent and isinstance(target, ast.Attribute):
        end = text.end(target)
        return [((target.end_lineno, end - len(old_last)), old_last, new_last)], ()
    if new_parent == BUILTINS:
        if not names.builtin_at(target, new_last):
            return None
        return text.swap(target, new_last), ()
    module = new_parent or new  # a module re-exported by another one (os.errno: errno)
    reference = names.module_reference(module)
    if reference is None:
        return None
    imports = (f"import {module}",) if reference == module else ()
    return text.swap(target, f"{reference}.{new_last}" if new_parent else reference), imports


def _sub_chain(names, node, gone):
    """The part of the chain ``node`` that refers to ``gone``."""
    while isinstance(node, ast.Attribute):
        if names.qualified(node) == gone:
            return node
        node = node.value
    return None


def _replace_alias(names, text, alias, gone, new):
    """``import gone.module [as x]``: the statement names ``new``, keeping the name it
    binds."""
    if alias.asname is None and gone.split(".")[0] != new.split(".")[0]:
        return None
    if gone != alias.name:
        return None
    return text.swap(_alias_name(alias), new), ()


def _from_import(text, statement, aliases):
    """``from m import a, b``, some of whose names (or ``m`` itself) are gone: one edit that
    writes the statement anew, the names that moved imported from where they are now (each
    keeping the name it binds); a ``[check]`` for a name with no exact replacement."""
    module = statement.module
    out, moved = [], {}
    for alias, gone in aliases:
        new, why = REPLACEMENTS.get(gone, (None, ""))
        if new is None or new.startswith(f"{BUILTINS}."):
            out.append(_gone(None, text, alias, gone))
            continue
        if gone == f"{statement.module}.{alias.name}":
            moved[id(alias)] = new
        else:  # the module itself (or a package above it) moved
            module = new + statement.module[len(gone):]
        out.append(Found(statement.lineno, f"{gone} is gone: {new} ({why})"))
    if module == statement.module and not moved:
        return out
    groups: dict[str, list[str]] = {}
    kept = []
    for alias in statement.names:
        spelled = alias.name + (f" as {alias.asname}" if alias.asname else "")
        if id(alias) not in moved:
            kept.append(spelled)
            continue
        parent, last = moved[id(alias)].rsplit(".", 1)
        bound = alias.asname or alias.name
        groups.setdefault(parent, []).append(last if last == bound else f"{last} as {bound}")
    statements = [f"from {'.' * statement.level}{module} import {', '.join(kept)}"] if kept \
        else []
    statements += [f"from {parent} import {', '.join(spelled)}"
                   for parent, spelled in groups.items()]
    line_start = text.starts[statement.lineno - 1]
    indent = text.text[line_start:text.start(statement)]
    newline = "\r\n" if text.text[line_start:].split("\n", 1)[0].endswith("\r") else "\n"
    fixed = [f for f in out if f.check is None]
    fixed[0].edits = text.swap(statement, (newline + indent).join(statements))
    return out


def _alias_name(alias):
    """The dotted name of ``import a.b as c`` as a node of its own span."""
    node = ast.Name(id=alias.name)
    node.lineno, node.col_offset = alias.lineno, alias.col_offset
    node.end_lineno, node.end_col_offset = alias.lineno, alias.col_offset + len(alias.name)
    return node


# ---------------------------------------------------------------------- receivers
def _methods(names, text):
    out = []
    for call in names.calls:
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        method = call.func.attr
        cls = _receiver_class(names, call.func.value)
        if (cls, method) in METHODS:
            new = METHODS[(cls, method)]
            end = text.end(call.func)
            out.append(Found(call.lineno, f"{cls}.{method} is gone: {new}",
                             edits=[((call.func.end_lineno, end - len(method)), method, new)]))
        elif method in _UNKNOWN_RECEIVER and cls is None:
            out.append(check(call.lineno, method, f".{method}(): if this is the standard "
                             f"library's, write {_UNKNOWN_RECEIVER[method]}"))
    return out


def _receiver_class(names, receiver):
    """The dotted class ``receiver`` provably is an instance of (made by a call of it, or
    ``self`` in a subclass), or None."""
    if isinstance(receiver, ast.Name):
        if receiver.id == "self":
            return _own_class_base(names, receiver)
        receiver = names.reaching(receiver)
    if isinstance(receiver, ast.Call):
        dotted = names.qualified(receiver.func)
        if dotted in {cls for cls, _ in METHODS}:
            return dotted
    return None


def _own_class_base(names, node):
    scope = names.function_of(node)
    owner = names.owner(scope.node)
    if owner is not None and isinstance(owner[0], ast.ClassDef):
        bases = {names.qualified(b) for b in owner[0].bases}
        return next((cls for cls, _ in METHODS if cls in bases), None)
    return None


# ---------------------------------------------------------------------- Symbol in place
def _symbol_inplace(names, text, meaning):
    """``a += b`` with a ``Symbol`` on either side: ``a = a + (b)``."""
    out = []
    classic = meaning.python2 and not meaning.true_division  # '/=' is division's then
    for node in names.nodes:
        if not isinstance(node, ast.AugAssign) or type(node.op) not in _SYMBOL_INPLACE:
            continue
        if classic and isinstance(node.op, ast.Div):
            continue
        if not (_is_symbol(names, node.value) or _is_symbol(names, node.target)):
            continue
        if not reads_twice_safely(node.target):
            out.append(check(node.lineno, "Symbol in place", "an in-place operator on a Symbol "
                             "raises in MXNet 1.9.1: write 'a = a + b' by hand"))
            continue
        operator = _SYMBOL_INPLACE[type(node.op)]
        between = text.end(node.target)
        at = text.text.index(operator + "=", between)
        # point edits (the operator, parentheses): an edit inside the value still composes
        edits = [((node.lineno, at), operator + "=",
                  f"= {text.source(node.target)} {operator}")]
        if _needs_parentheses(node.value, node.op):
            edits += text.wrap(node.value, "(", ")")
        out.append(Found(node.lineno, "an in-place operator on a Symbol (MXNet 1.9.1 raises, "
                         "older MXNet ran 'a = a + b')", edits=edits))
    return out


def _needs_parentheses(value, op):
    """Whether ``a = a <op> value`` needs ``value`` in parentheses to compute ``value`` first,
    as ``a <op>= value`` did."""
    if isinstance(value, ast.BinOp):
        return _PRECEDENCE.get(type(value.op), 0) <= _PRECEDENCE[type(op)]
    return not isinstance(value, _ATOMS)


def _is_symbol(names, node, depth=0):
    """Whether ``node`` is provably an MXNet Symbol: made by ``mx.sym.*``, an item of one,
    arithmetic with one, or a name that provably holds one."""
    if depth > 20:
        return False
    if isinstance(node, ast.Call):
        return (names.qualified(node.func) or "").startswith(_SYMBOL_MODULES)
    if isinstance(node, ast.Subscript):
        return _is_symbol(names, node.value, depth + 1)
    if isinstance(node, ast.BinOp):
        return _is_symbol(names, node.left, depth + 1) or _is_symbol(names, node.right,
                                                                     depth + 1)
    if isinstance(node, ast.Name):
        return _is_symbol(names, names.reaching(node), depth + 1)
    return False
