"""Private to ``migrate``: the fork's code that MXNet 1.9.1 refuses, in a vendored copy that
stays, and the port's fix for each, found by content (never by file name).

A copy that stays (modified, still imported, or kept because ``--delete-vendored`` was not
asked for) runs on the installed MXNet. Three places of the family's copies were written for
MXNet 0.x and fail on 1.9.1; ``--to-python3`` writes each back to what it computed there:

* ``arr = arr.reshape(shape)`` inside ``if np.prod(arr.shape) >= np.prod(shape):`` (the
  executor group's ``_get_or_reshape``, shrinking a shared buffer). MXNet 0.x returned a view
  of the buffer's first elements; 1.9.1 refuses a size change (``ValueError: Cannot reshape
  array of size 500 into shape (1, 2, 5)``, at the first smaller batch). The port writes that
  view: ``arr.reshape((-1,))[:int(np.prod(shape))].reshape(shape)`` (the same array where the
  sizes are equal, where the old line ran on 1.9.1 too).
* ``_update_params_on_kvstore(g.param_arrays, grads, kvstore)`` and ``_update_params(...,
  kvstore=kv)`` without the parameter names. MXNet 0.x pushed by index; 1.9.1 pushes by name
  (``_initialize_kvstore``, which the copies call with the names, initialised the store by
  name): ``TypeError`` at the first update. The port passes ``g.param_names``.
* ``def init_params(...)`` without ``allow_extra``, which 1.9.1's ``BaseModule.set_params``
  passes (``TypeError`` where an epoch ends). The port adds ``allow_extra=False``; the copy
  ignores it, as it ignored extra names before (it looks up only its own parameters).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from .textedit import Text, replace

_NAMES_NEEDED = ("_update_params_on_kvstore", "_update_params")
WHY = {
    "reshape": "this line shrinks a shared buffer with NDArray.reshape, which MXNet 1.9.1 refuses "
               "(ValueError: Cannot reshape array of size N into a smaller shape, at the first "
               "smaller batch): --to-python3 writes the view of the buffer's first elements "
               "that MXNet 0.x returned",
    "param_names": "this call of {name} passes no parameter names, which MXNet 1.9.1 pushes by "
                   "(TypeError at the first update): --to-python3 passes {names}",
    "allow_extra": "this init_params takes no allow_extra, which MXNet 1.9.1's "
                   "BaseModule.set_params passes (TypeError where an epoch ends): "
                   "--to-python3 adds allow_extra=False, which the copy ignores as it "
                   "ignored extra names before",
}


class Site(NamedTuple):
    """One place to fix: its line, its kind (a key of :data:`WHY`) and the report's words."""

    line: int
    kind: str
    message: str


def sites(tree: ast.Module) -> list[Site]:
    """The places of ``tree`` that MXNet 1.9.1 refuses and the port fixes.

    Examples
    --------
    >>> import ast
    >>> source = "def init_params(self, arg_params=None, force_init=False):\\n    pass\\n"
    >>> [(s.line, s.kind) for s in sites(ast.parse(source))]
    [(1, 'allow_extra')]
    """
    found = [Site(node.lineno, "reshape", WHY["reshape"]) for node, _ in _shrinking(tree)]
    for call, names in _unnamed_updates(tree):
        name = _callee(call)
        found.append(Site(call.lineno, "param_names",
                          WHY["param_names"].format(name=name, names=names)))
    found += [Site(node.lineno, "allow_extra", WHY["allow_extra"])
              for node in _without_allow_extra(tree)]
    return sorted(found)


def fix(text: str) -> tuple[str, set[str]]:
    """``text`` (Python 3) with every :func:`sites` place fixed; the kinds fixed.

    Examples
    --------
    >>> new, kinds = fix("def init_params(self, force_init=False):\\n    pass\\n")
    >>> new.splitlines()[0], sorted(kinds)
    ('def init_params(self, force_init=False, allow_extra=False):', ['allow_extra'])
    """
    tree = ast.parse(text)
    source = Text(text)
    edits, kinds = [], set()
    for assign, test in _shrinking(tree):
        call = assign.value
        array, shape = source.source(call.func.value), source.source(call.args[0])
        prod = source.source(test.left.func)
        edits += source.swap(call, f"{array}.reshape((-1,))[:int({prod}({shape}))]"
                                   f".reshape({shape})")
        kinds.add("reshape")
    for call, names in _unnamed_updates(tree):
        positional = (_callee(call) == "_update_params_on_kvstore" and len(call.args) == 3
                      and not call.keywords)
        edits += source.keyword(call, names if positional else f"param_names={names}")
        kinds.add("param_names")
    for node in _without_allow_extra(tree):
        edits += _add_parameter(source, node)
        kinds.add("allow_extra")
    return (replace(text, edits) if edits else text), kinds


# --------------------------------------------------------------------------- the reshape
def _shrinking(tree):
    """``(assignment, if test)`` for each ``a = a.reshape(s)`` directly in the body of an
    ``if P.prod(a.shape) >= P.prod(s):``."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and _is_size_test(node.test)):
            continue
        array = ast.unparse(node.test.left.args[0].value)
        shape = ast.unparse(node.test.comparators[0].args[0])
        for statement in node.body:
            if _is_reshape_of(statement, array, shape):
                out.append((statement, node.test))
    return out


def _is_size_test(test):
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.GtE)):
        return False
    left, right = test.left, test.comparators[0]
    return (all(isinstance(side, ast.Call) and len(side.args) == 1 and not side.keywords
                and isinstance(side.func, ast.Attribute) and side.func.attr == "prod"
                for side in (left, right))
            and ast.unparse(left.func) == ast.unparse(right.func)
            and isinstance(left.args[0], ast.Attribute) and left.args[0].attr == "shape")


def _is_reshape_of(statement, array, shape):
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    call = statement.value
    return (ast.unparse(statement.targets[0]) == array and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr == "reshape"
            and ast.unparse(call.func.value) == array and len(call.args) == 1
            and not call.keywords and ast.unparse(call.args[0]) == shape)


# --------------------------------------------------------------------------- the update
def _callee(call):
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _unnamed_updates(tree):
    """``(call, names source)`` for each update call without parameter names whose first
    argument is ``X.param_arrays`` (the names are then ``X.param_names``)."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _callee(node) in _NAMES_NEEDED and node.args):
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Attribute) and first.attr == "param_arrays"):
            continue
        keywords = {k.arg for k in node.keywords}
        if "param_names" in keywords or None in keywords:  # named, or **kwargs
            continue
        if _callee(node) == "_update_params_on_kvstore":
            needs = len(node.args) < 4 and not any(isinstance(a, ast.Starred) for a in node.args)
        else:  # _update_params: the names matter only with a kvstore
            needs = ("kvstore" in keywords or len(node.args) == 5) and len(node.args) < 6
        if needs:
            out.append((node, f"{ast.unparse(first.value)}.param_names"))
    return out


# --------------------------------------------------------------------------- init_params
def _without_allow_extra(tree):
    """Each ``def init_params`` with ``force_init`` and no ``allow_extra`` nor ``**kwargs``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "init_params":
            args = node.args
            names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            if "force_init" in names and "allow_extra" not in names and args.kwarg is None:
                out.append(node)
    return out


def _add_parameter(source, node):
    """The edit that adds ``allow_extra=False`` after the last parameter of ``node``."""
    args = node.args
    last = max([*args.posonlyargs, *args.args, *args.kwonlyargs,
                *([args.vararg] if args.vararg else [])],
               key=lambda a: (a.lineno, a.col_offset))
    defaults = [d for d in args.defaults + args.kw_defaults if d is not None]
    after = max([last, *defaults], key=lambda n: (n.end_lineno, n.end_col_offset))
    return source.after(after, ", allow_extra=False")
