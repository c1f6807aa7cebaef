"""Private to ``migrate``: recognising a vendored copy of the fork, its revision and its rule.

A copy is recognised by content (:func:`vendored_kind`), its freezing rule is read from
``MutableModule.__init__`` (:func:`freezing_rule`), and its methods' signatures are compared
with the fingerprints of every revision of the fork seen in the family
(:mod:`mxpatch_bind._fork_revisions`): a copy matching a revision that ``compat`` covers may
be deleted; any other is kept and named.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from ._fork_revisions import REVISIONS

VENDORED_MODULE = "module.py"
VENDORED_GROUP = "DataParallelExecutorGroup.py"
FORK_CLASSES = ("MutableModule", "Module", "DataParallelExecutorGroup")


class Revision(NamedTuple):
    """What is known about one copy: the revision it matches, or what no revision has."""

    name: str | None       # the matching known revision, None for an unknown one
    covered: bool          # compat (with stock MXNet) does everything this copy did
    differences: list      # str per method, parameter or default no known revision has
    note: str              # what the known revision adds, when it is not covered


# --------------------------------------------------------------------------- recognition
def vendored_kind(tree: ast.Module) -> str | None:
    """``'module.py'`` / ``'DataParallelExecutorGroup.py'`` for the fork's files, else None."""
    classes = _classes(tree)
    module = classes.get("MutableModule")
    if (module is not None and {"bind", "forward", "init_optimizer"} <= _methods(module)
            and {"_curr_module", "_max_data_shapes"} <= _self_attributes(module)):
        return VENDORED_MODULE
    group = classes.get("DataParallelExecutorGroup")
    if (group is not None and {"bind_exec", "reshape", "_bind_ith_exec"} <= _methods(group)
            and _counts_devices_as_batch(group) and _borrows_by_reshape(group)):
        return VENDORED_GROUP
    return None


def _classes(tree):
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _methods(cls):
    return {node.name for node in cls.body if isinstance(node, ast.FunctionDef)}


def _self_attributes(cls):
    return {node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "self"}


def _counts_devices_as_batch(cls):
    for node in ast.walk(cls):
        if (isinstance(node, ast.Assign) and any(dotted(t) == "self.batch_size"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Call) and dotted(node.value.func) == "len"):
            return True
    return False


def _borrows_by_reshape(cls):
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and method.name == "_bind_ith_exec":
            return any(isinstance(n, ast.FunctionDef) and n.name == "_get_or_reshape"
                       for n in ast.walk(method))
    return False


def dotted(node) -> str | None:
    """``'a.b.c'`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


# --------------------------------------------------------------------------- freezing rule
def freezing_rule(tree: ast.Module) -> tuple[str | None, int, str]:
    """How the copy's ``MutableModule`` turns ``fixed_param_prefix`` into names.

    Returns
    -------
    (rule, line, source)
        ``rule`` is ``'substring'`` (``prefix in name``), ``'startswith'``
        (``name.startswith(prefix)``), ``'other'`` (any other test: ``source`` shows it) or
        None (the copy has no ``MutableModule.__init__`` reading ``fixed_param_prefix``).
    """
    init = _method(_classes(tree).get("MutableModule"), "__init__")
    if init is None:
        return None, 0, ""
    loops = [node for node in ast.walk(init) if isinstance(node, ast.For)]
    # The loop over the symbol's arguments names the variable each rule tests: `prefix in
    # name` compares the two loops' variables, nothing else.
    argument = next((_target(loop) for loop in loops
                     if "list_arguments" in ast.unparse(loop.iter)), None)
    for loop in loops:
        if "fixed_param_prefix" in ast.unparse(loop.iter):
            return _rule_in(loop, _target(loop), argument)
    return None, 0, ""


def _target(loop):
    return loop.target.id if isinstance(loop.target, ast.Name) else None


def _rule_in(loop, prefix, argument):
    for node in ast.walk(loop):
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Compare) and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.In) and _is_name(test.left, prefix)
                    and _is_name(test.comparators[0], argument)):
                return "substring", test.lineno, ast.unparse(test)
            if (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
                    and test.func.attr == "startswith" and len(test.args) == 1
                    and _is_name(test.func.value, argument)
                    and _is_name(test.args[0], prefix)):
                return "startswith", test.lineno, ast.unparse(test)
            return "other", test.lineno, ast.unparse(test)
    return "other", loop.lineno, ast.unparse(loop)


def _is_name(node, name):
    return isinstance(node, ast.Name) and (name is None or node.id == name)


def _method(cls, name):
    if cls is None:
        return None
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name),
                None)


# --------------------------------------------------------------------------- signatures
def signatures(tree: ast.Module) -> dict[str, str]:
    """``{'Class.method': '(self, a, b=1)'}`` for the fork's classes in ``tree``."""
    out = {}
    for name, cls in sorted(_classes(tree).items()):
        if name not in FORK_CLASSES:
            continue
        for node in cls.body:
            if isinstance(node, ast.FunctionDef):
                out["%s.%s" % (name, node.name)] = "(%s)" % ast.unparse(node.args)
    return out


def parameters(signature: str) -> list[tuple[str, str | None]]:
    """``[(name, default source or None)]`` of a ``'(self, a, b=1)'`` signature string."""
    args = ast.parse("def f%s: pass" % signature).body[0].args  # type: ignore[attr-defined]
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    out = [(a.arg, None if d is None else ast.unparse(d)) for a, d in zip(positional, defaults)]
    if args.vararg:
        out.append(("*" + args.vararg.arg, None))
    out += [(a.arg, None if d is None else ast.unparse(d))
            for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append(("**" + args.kwarg.arg, None))
    return out


def classify(tree: ast.Module, kind: str) -> Revision:
    """The known revision ``tree``'s signatures match, or what no covered revision has.

    A copy that matches no revision exactly but whose every method signature is one of
    a covered revision's (an abridged copy) is covered; otherwise the differences name each
    method, parameter and default that no covered revision has.
    """
    found = signatures(tree)
    known = [(name, r) for name, r in REVISIONS.items() if r["kind"] == kind]
    for name, revision in known:
        if revision["methods"] == found:
            return Revision(name, revision["covered"], [], revision["note"])
    differences = _differences(found, [r["methods"] for _, r in known if r["covered"]])
    return Revision(None, not differences, differences, "")


def _differences(found, known):
    """What ``found`` has that no known revision has: methods, parameters, defaults."""
    out = []
    for method, signature in sorted(found.items()):
        seen = [k[method] for k in known if method in k]
        if not seen:
            out.append("method %s%s" % (method, signature))
            continue
        if signature in seen:
            continue
        out += _parameter_differences(method, parameters(signature),
                                      [parameters(s) for s in seen])
    # A copy lacking a method does less than the fork, not something compat lacks.
    return out


def _parameter_differences(method, params, seen):
    names = [n for n, _ in params]
    known_names = {n for s in seen for n, _ in s}
    out = ["%s: parameter %s that no known revision has" % (method, n)
           for n in names if n not in known_names]
    for n, default in params:
        known_defaults = {d for s in seen for m, d in s if m == n}
        if n in known_names and default not in known_defaults:
            out.append("%s: %s defaults to %s (known revisions: %s)" % (
                method, n, default, " or ".join(sorted(map(str, known_defaults)))))
    orders = {tuple(m for m, _ in s if m in names) for s in seen}
    if not out and tuple(n for n in names if n in known_names) not in orders:
        out.append("%s: parameters in an order no known revision has: %s"
                   % (method, ", ".join(names)))
    return out
