"""Private to ``migrate``: what each file of a tree meant when it ran (:class:`found.Meaning`).

Decided once per scan, for the report and the port alike: whether a file ran on Python 2 (it
is Python 2, or it parses as Python 3 inside a Python 2 tree without anything only Python 3
parses), whether it divided truly (``from __future__ import division``), what its star
imports bind (a module of the tree: its ``__all__`` or its public top-level names; an installed
one: what importing it gives), and which of the names it refers to outside the tree the
installed environment no longer has (:mod:`environment`, one child process for the tree).
"""

from __future__ import annotations

import ast

from . import environment, vanished
from .division import has_future_division, python3_only
from .found import Meaning
from .model import EXTENSION, PACKAGE
from .names import Names

_NOT_PROBED = {"mxnet"}  # its operators are operators.py's; importing it costs seconds


class Meanings:
    """The :class:`found.Meaning` of every parsed file of one scan.

    Parameters
    ----------
    model : model.ImportModel
    files : dict
        ``{relative path: scanner.Parsed}``.
    """

    def __init__(self, model, files: dict):
        self.model, self.files = model, files
        self.names = {rel: _names(parsed.tree) for rel, parsed in files.items()}
        self.python2_tree = any(p.python2 is not None for p in files.values())
        self.python3_only = {rel: python3_only(p.tree) for rel, p in files.items()
                             if p.python2 is None}
        self.references = {rel: vanished.references(names) for rel, names in self.names.items()}
        asked, stars = set(), set()
        for rel in self.names:
            dotted_names = {dotted for _, dotted in self.references[rel]}
            outside = {top for top in {d.split(".")[0] for d in dotted_names}
                       if self._outside(rel, top)}
            asked |= {dotted for dotted in dotted_names if dotted.split(".")[0] in outside}
            stars |= {node.module for node in self._stars(rel) if self._outside_star(rel, node)}
        self.environment = environment.probe(asked, stars)
        self._exports: dict = {}

    def of(self, rel) -> Meaning:
        """What ``rel`` meant when it ran."""
        parsed = self.files[rel]
        star_bound = self.star_bound(rel)
        self.names[rel].bind_stars(star_bound)
        return Meaning(python2=self.ran_on_python2(rel),
                       true_division=has_future_division(parsed.tree),
                       star_bound=star_bound, missing=self.missing(rel))

    def ran_on_python2(self, rel) -> bool:
        if self.files[rel].python2 is not None:
            return True
        return self.python2_tree and self.python3_only.get(rel) is None

    def missing(self, rel) -> frozenset:
        """The first gone part of each name ``rel`` refers to outside the tree."""
        gone = self.environment.gone
        return frozenset(gone[dotted] for _, dotted in self.references[rel] if dotted in gone)

    def version_of(self, dotted: str) -> str:
        return self.environment.versions.get(dotted.split(".")[0], "")

    # ------------------------------------------------------------------ star imports
    def star_bound(self, rel, seen=frozenset()) -> frozenset | None:
        """``(name, dotted meaning or None)`` for what ``rel``'s star imports bind; None
        where one of them is not known."""
        bound: set = set()
        for node in self._stars(rel):
            names = self._star_names(rel, node, seen | {rel})
            if names is None:
                return None
            bound |= names
        return frozenset(bound)

    def _stars(self, rel):
        return [n for n in self.files[rel].tree.body if isinstance(n, ast.ImportFrom)
                and any(a.name == "*" for a in n.names)]

    def _star_names(self, rel, node, seen):
        target = self._star_target(rel, node)
        if target is None:
            return None
        if target.rel is None:  # the standard library or an installed package
            names = self.environment.stars.get(node.module)
            return None if names is None else frozenset((n, f"{node.module}.{n}") for n in names)
        if target.kind == EXTENSION:
            return None  # a compiled module: what it binds is not in the tree's text
        source = target.rel / "__init__.py" if target.kind == PACKAGE else target.rel
        if source in seen or source not in self.files:
            return None
        return self._exported(source, seen)

    def _star_target(self, rel, node):
        # Python 2 looked beside a package's module first (``from sibling import *`` in
        # mx-maskrcnn's rcnn/symbol/__init__.py), as the port's import fixer reads it too
        if not node.level and node.module and self.ran_on_python2(rel) \
                and node.module.split(".")[0] in self.model.local_names(rel):
            return self.model.sibling(rel, node.module)
        return self.model.resolve(rel, node.module or "", node.level)

    def _exported(self, rel, seen):
        """What ``from <rel> import *`` binds, each name with its meaning where it is an
        absolute import there (a name ``rel`` defines itself means nothing outside it)."""
        if rel not in self._exports:
            names = self.names[rel]
            more = self.star_bound(rel, seen)
            names.bind_stars(more)
            listed = _all_of(self.files[rel].tree)
            public = listed if listed is not None else [
                n for n in names.module.bindings if not n.startswith("_")]
            exported = set()
            for name in public:
                meaning = _meaning(names, name)
                exported.add((name, meaning))
            self._exports[rel] = None if more is None and names.module.stars else \
                frozenset(exported)
        return self._exports[rel]

    def _outside(self, rel, top):
        if top in _NOT_PROBED:
            return False
        target = self.model.resolve(rel, top, 0)
        return target is not None and target.rel is None

    def _outside_star(self, rel, node):
        return not node.level and node.module and self._outside(rel, node.module.split(".")[0])


def _meaning(names, name):
    """What the top-level ``name`` of a module means for a module that star-imports it."""
    meanings = {_absolute(m) for m in names.meanings_of_top(name)}
    return meanings.pop() if len(meanings) == 1 else None


def _absolute(meaning):
    return None if meaning is None or meaning.startswith(".") else meaning


def _names(tree):
    try:
        return Names(tree)
    except (RecursionError, MemoryError):  # the scan reports the file as too deep to analyse
        return Names(ast.Module(body=[], type_ignores=[]))


def _all_of(tree):
    """The literal ``__all__`` of a module, or None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [v for v in value if isinstance(v, str)]
    return None
