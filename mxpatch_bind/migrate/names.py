"""Private to ``migrate``: what a name means where it is used, read from one module's ast.

Every fixer asks two questions here instead of matching names: *which module attribute does
this expression refer to* (:meth:`Names.meanings`, through every import form and alias:
``import yaml as y``, ``from json import dumps``, a function's own imports, a name a
function rebinds), and *which value does this local name hold at this use*
(:meth:`Names.reaching`: the ``open(...)`` of the ``with`` or the assignment that reaches
the use along the statements before it, until the name is rebound). Where the answer is
not one meaning or one value, the fixer does not rewrite: it reports a ``[check]``.

Why not libcst's ``ScopeProvider`` / ``QualifiedNameProvider``: their scope analysis is
flow-insensitive (every assignment of ``f`` in a function is a referent of every use of
``f``), which is exactly what the family's evaluation code defeats (``with open(x, 'r') as
f`` beside ``with open(cache, 'rb') as f: pickle.load(f)`` in one function); the reaching
value needs the statement order anyway. And the scan must run without the ``migrate`` extra,
on :mod:`ast` positions, for Python 2 files through their line-preserving view.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

BUILTINS = "builtins"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))


@dataclass(eq=False)
class Scope:
    """One scope: the names bound in it, each with the nodes that bind it."""

    node: ast.AST
    parent: Scope | None
    bindings: dict = field(default_factory=dict)  # name -> [binding node]
    declared: dict = field(default_factory=dict)  # name -> 'global' / 'nonlocal'
    stars: list = field(default_factory=list)  # ``from m import *`` nodes

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @property
    def is_comprehension(self) -> bool:
        return isinstance(self.node, _COMPREHENSIONS)


class Names:
    """The scopes and bindings of one parsed module.

    Parameters
    ----------
    tree : ast.Module
    star_bound : frozenset or None
        ``(name, dotted meaning or None)`` for each name the module's ``from m import *``
        statements bind (the scan knows them from the tree and the installed packages);
        None: not known, so every name a star import could bind is ambiguous.
    """

    def __init__(self, tree: ast.Module, star_bound: frozenset | None = None):
        self.tree = tree
        self.parent: dict[int, tuple[ast.AST, str]] = {}  # id(node) -> (parent, field)
        self.scope_of: dict[int, Scope] = {}
        self.nodes: list[ast.AST] = []  # every node, once (the fixers' walk)
        self.module = Scope(tree, None)
        # pre-order, with a stack of its own: a file's expressions nest deeper than Python's
        # recursion limit (a 2,000-term concatenation)
        stack = list(reversed(self._fields(tree, ast.iter_fields(tree), self.module)))
        while stack:
            owner, name, child, scope = stack.pop()
            self.parent[id(child)] = (owner, name)
            stack += reversed(self._visit(child, scope))
        self.calls = [n for n in self.nodes if isinstance(n, ast.Call)]
        self._loads: dict[str, list[ast.Name]] = {}
        for node in self.nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._loads.setdefault(node.id, []).append(node)
        self.star_bound: frozenset | None = None
        self.bind_stars(star_bound)

    def bind_stars(self, star_bound: frozenset | None) -> None:
        """Take what the module's star imports bind (see the class's parameters)."""
        self.star_bound = star_bound
        for bindings in self.module.bindings.values():
            bindings[:] = [b for b in bindings if not isinstance(b, StarBinding)]
        if self.module.stars and star_bound is not None:
            for name, meaning in star_bound:
                _bind(self.module, name, StarBinding(meaning))

    # ------------------------------------------------------------------ building
    @staticmethod
    def _fields(owner, fields, scope, inner=None, inner_fields=()):
        """``(owner, field, child, scope)`` for each child node of ``fields``, in order;
        the fields named in ``inner_fields`` in the scope ``inner``."""
        tasks = []
        for name, value in fields:
            where = inner if name in inner_fields else scope
            tasks += [(owner, name, child, where) for child in
                      (value if isinstance(value, list) else [value])
                      if isinstance(child, ast.AST)]
        return tasks

    def _visit(self, node, scope):
        """Record ``node``, bind what it binds; its children to visit, in order."""
        self.scope_of[id(node)] = scope
        self.nodes.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return self._function(node, scope)
        if isinstance(node, ast.ClassDef):
            _bind(scope, node.name, node)
            return self._fields(node, ast.iter_fields(node), scope, Scope(node, scope), ("body",))
        if isinstance(node, _COMPREHENSIONS):
            return self._comprehension(node, scope)
        if isinstance(node, ast.comprehension):
            return []  # its parts: the comprehension's tasks, each in its own scope
        if isinstance(node, ast.arguments):  # a function's: its parameters' scope is given
            return self._fields(node, ast.iter_fields(node), scope.parent, scope,
                                ("posonlyargs", "args", "vararg", "kwonlyargs", "kwarg"))
        self._bind_node(node, scope)
        return self._fields(node, ast.iter_fields(node), scope)

    def _function(self, node, scope):
        inner = Scope(node, scope)
        if not isinstance(node, ast.Lambda):
            _bind(scope, node.name, node)
        for arg in _arguments(node.args):
            _bind(inner, arg.arg, arg)
        # decorators, defaults, annotations run in the enclosing scope (ast.arguments: above)
        return self._fields(node, ast.iter_fields(node), scope, inner, ("body", "args"))

    def _comprehension(self, node, scope):
        inner = Scope(node, scope)
        tasks = []
        for index, generator in enumerate(node.generators):
            tasks.append((node, "generators", generator, inner))
            # the first iterable is evaluated in the enclosing scope
            tasks += self._fields(generator, [("iter", generator.iter)],
                                  scope if index == 0 else inner)
            tasks += self._fields(generator, [("target", generator.target),
                                              ("ifs", generator.ifs)], inner)
        return tasks + self._fields(node, [(name, getattr(node, name)) for name in
                                           ("elt", "key", "value") if hasattr(node, name)],
                                    inner)

    def _bind_node(self, node, scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            target = scope
            if self._is_walrus_target(node):
                while target.is_comprehension:
                    target = target.parent
            if target.declared.get(node.id) == "global":
                target = self.module
            _bind(target, node.id, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                _bind(scope, alias.asname or alias.name.split(".")[0], node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    scope.stars.append(node)
                else:
                    _bind(scope, alias.asname or alias.name, node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            scope.declared.update({name: kind for name in node.names})
        elif isinstance(node, ast.ExceptHandler) and node.name:
            _bind(scope, node.name, node)

    def _is_walrus_target(self, node):
        owner = self.parent.get(id(node))
        return owner is not None and isinstance(owner[0], ast.NamedExpr) and owner[1] == "target"

    # ------------------------------------------------------------------ scopes
    def resolve(self, name: ast.Name) -> Scope | None:
        """The scope whose binding of ``name`` a load reads, or None for a builtin (or a
        name only a star import may bind)."""
        return self.lookup(name.id, self.scope_of[id(name)])

    def lookup(self, name: str, scope: Scope | None) -> Scope | None:
        """The scope whose binding of ``name`` a load in ``scope`` reads, or None."""
        first = True
        while scope is not None:
            kind = scope.declared.get(name)
            if kind == "global":
                return self.module if name in self.module.bindings else None
            if kind is None and name in scope.bindings and (first or not scope.is_class):
                return scope
            first = False
            scope = scope.parent
        return None

    def builtin_at(self, node, name: str) -> bool:
        """Whether ``name`` read where ``node`` is reads the builtin of that name."""
        return self.lookup(name, self.scope_of[id(node)]) is None \
            and self._unbound(name) == {f"{BUILTINS}.{name}"}

    def function_of(self, node) -> Scope:
        """The innermost function (or module) scope ``node`` runs in."""
        scope: Scope | None = self.scope_of[id(node)]
        while scope is not None and (scope.is_comprehension or scope.is_class):
            scope = scope.parent
        return scope or self.module

    # ------------------------------------------------------------------ meanings
    def meanings(self, node) -> frozenset:
        """The dotted names ``node`` may refer to (``'yaml.load'``, ``'builtins.open'``,
        ``'.utils.f'`` for a relative import); ``None`` among them: something else too."""
        if isinstance(node, ast.Attribute):
            return frozenset(m + "." + node.attr if m else None for m in self.meanings(node.value))
        if not isinstance(node, ast.Name):
            return frozenset({None})
        scope = self.resolve(node)
        if scope is None:
            return self._unbound(node.id)
        return frozenset(_imported_as(binding, node.id) for binding in scope.bindings[node.id])

    def meanings_of_top(self, name: str) -> frozenset:
        """What the module's top-level ``name`` may mean (as :meth:`meanings`)."""
        return frozenset(_imported_as(b, name) for b in self.module.bindings.get(name, [None]))

    def qualified(self, node) -> str | None:
        """The one dotted name ``node`` refers to, or None where it may be anything else."""
        found = self.meanings(node)
        return next(iter(found)) if len(found) == 1 else None

    def _unbound(self, name):
        if self.module.stars and self.star_bound is None:
            return frozenset({f"{BUILTINS}.{name}", None})
        return frozenset({f"{BUILTINS}.{name}"})

    def binds_anything_but_imports(self, name: str) -> bool:
        """Whether the module binds ``name`` at its top level other than by an import."""
        return any(not isinstance(b, (ast.Import, ast.ImportFrom))
                   for b in self.module.bindings.get(name, []))

    def module_alias(self, module: str) -> str | None:
        """A top-level name bound to ``module`` by imports alone (``y`` after ``import yaml
        as y``), or None."""
        for name, bindings in self.module.bindings.items():
            if {_imported_as(b, name) for b in bindings} == {module}:
                return name
        return None

    def module_reference(self, module: str) -> str | None:
        """How top-level code can name ``module``: its alias, or ``module`` itself where its
        first part is free (the caller then adds ``import module``); None where taken."""
        alias = self.module_alias(module)
        if alias is not None:
            return alias
        top = module.split(".")[0]
        bindings = self.module.bindings.get(top, [])
        unknown_stars = self.module.stars and self.star_bound is None
        if all(_imported_as(b, top) == top for b in bindings) and not unknown_stars:
            return module
        return None

    # ------------------------------------------------------------------ flow
    def reaching(self, use: ast.Name) -> ast.AST | None:
        """The expression the local name ``use`` holds where it is read: the value of the
        one assignment ``name = value``, or the ``x`` of ``with x as name``, that reaches the
        use along the statements before it; None where that is not provable (a branch, a
        loop that rebinds it, a parameter, a global, a closure)."""
        scope = self.resolve(use)
        if scope is None or scope is not self.function_of(use) or scope.is_class \
                or isinstance(scope.node, ast.Lambda):  # a lambda's names are its parameters
            return None
        statement: ast.AST = self.statement_of(use)
        while True:
            owner, field_name = self.parent[id(statement)]
            siblings = getattr(owner, field_name)
            if not isinstance(siblings, list):
                return None
            index = next(i for i, s in enumerate(siblings) if s is statement)
            for before in reversed(siblings[:index]):
                binders = _binders(before, use.id)
                if binders:
                    return _bound_value(before, binders, use.id)
            if owner is scope.node or not isinstance(owner, (ast.stmt, ast.ExceptHandler)):
                return None  # the top of the scope, or a ``case`` of a ``match``
            found = self._entering(owner, field_name, use.id)
            if found is not _GO_ON:
                return found
            statement = owner if isinstance(owner, ast.stmt) else self.parent[id(owner)][0]

    def _entering(self, owner, field_name, name):
        """Going up from a statement list into ``owner``: its own binding (a ``with``'s
        ``as``), or None where what ran before is not one path (a loop, a ``try``)."""
        if isinstance(owner, (ast.With, ast.AsyncWith)):
            binders = [i for i in owner.items if _binders(i.optional_vars, name)]
            if binders:
                item = binders[-1]
                return item.context_expr if _is_name(item.optional_vars, name) else None
        if isinstance(owner, _LOOPS) and _binders(owner, name):
            return None
        if isinstance(owner, ast.ExceptHandler):
            if owner.name == name:
                return None
            owner = self.parent[id(owner)][0]
            field_name = "handlers"
        if isinstance(owner, _TRIES) and field_name != "body":
            ran = owner.body + (owner.handlers if field_name == "finalbody" else [])
            if any(_binders(s, name) for s in ran):
                return None
        return _GO_ON

    def statement_of(self, node) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = self.parent[id(node)][0]
        return node

    def loads(self, name: str, scope: Scope):
        """Every load of ``name`` that reads ``scope``'s binding."""
        for node in self._loads.get(name, []):
            if self.resolve(node) is scope:
                yield node

    def owner(self, node) -> tuple[ast.AST, str] | None:
        """``(parent node, field)`` of ``node``."""
        return self.parent.get(id(node))


_GO_ON = object()


@dataclass(frozen=True)
class StarBinding:
    """A name a ``from m import *`` binds, with what it means there (None: not an import)."""

    meaning: str | None


def _bind(scope, name, node):
    scope.bindings.setdefault(name, []).append(node)


def _arguments(args):
    found = args.posonlyargs + args.args + args.kwonlyargs
    return found + [a for a in (args.vararg, args.kwarg) if a is not None]


def _imported_as(binding, name):
    """The dotted name an import binding gives ``name``, or None for any other binding."""
    if isinstance(binding, StarBinding):
        return binding.meaning
    if isinstance(binding, ast.Import):
        for alias in binding.names:
            if alias.asname == name:
                return alias.name
            if alias.asname is None and alias.name.split(".")[0] == name:
                return name
    elif isinstance(binding, ast.ImportFrom):
        base = "." * binding.level + (binding.module or "")
        for alias in binding.names:
            if (alias.asname or alias.name) == name:
                return f"{base}.{alias.name}" if base and not base.endswith(".") \
                    else base + alias.name
    return None


def _is_name(node, name):
    return isinstance(node, ast.Name) and node.id == name


def _binders(node, name) -> list[ast.AST]:
    """The nodes inside ``node`` that bind ``name`` in ``node``'s own scope (not inside a
    function, lambda, class body or comprehension it defines)."""
    if node is None:
        return []
    found: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and current.id == name \
                and isinstance(current.ctx, (ast.Store, ast.Del)):
            found.append(current)
        elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if current.name == name:
                found.append(current)
            stack += current.decorator_list
            continue
        elif isinstance(current, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name or a.name == "*"
                   for a in current.names):
                found.append(current)
        elif isinstance(current, ast.ExceptHandler) and current.name == name:
            found.append(current)
        elif isinstance(current, (ast.Global, ast.Nonlocal)) and name in current.names:
            found.append(current)
        if isinstance(current, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        stack += list(ast.iter_child_nodes(current))
    return found


def _bound_value(statement, binders, name):
    """The value ``statement`` (the last before a use that binds ``name``) leaves in it, or
    None where it is not one expression."""
    if len(binders) != 1:
        return None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            and _is_name(statement.targets[0], name):
        return statement.value
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        for item in statement.items:
            if item.optional_vars is binders[0]:
                return item.context_expr
    return None
