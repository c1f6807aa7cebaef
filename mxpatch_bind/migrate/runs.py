"""Private to ``migrate``: how each entry point of the tree runs, for the import check.

An entry point is a script: a file with a module-level ``if __name__ == '__main__':``, or one
that works at its top level and that nothing imports (:attr:`model.ImportModel.loose_scripts`).
Python
starts it with its own folder first on ``sys.path`` (a script with explicit relative imports
and no path set-up of its own runs with ``python -m`` from the folder above its package: that
folder). Then the script and what it imports run in order, and each ``sys.path.insert(0, X)``
/ ``sys.path.append(X)`` among them (the one in an ``_init_paths.py`` the script imports first)
changes the path for what follows. The modules an entry point reaches are those its imports
find, transitively: the top-level imports in the order they run, then the imports inside
functions (they run later, with the path as the top level left it).

A tree of sub-projects, each with its own ``_init_paths`` (``faster_rcnn/``, ``rfcn/``,
``fpn/``, ``deeplab/`` in Deformable-ConvNets, each putting ``../lib`` on the path), so has
one path per script, not one for the whole tree: an import that only a sibling sub-project
satisfies fails when the script runs, and :func:`imports.unresolved` says so, naming the entry
point.

Approximations, each on the side of fewer findings: an import is checked with the path the run
ends with (one that runs before the ``sys.path.insert`` it needs passes); a run that puts a
folder computed at run time on the path (``sys.path.insert(0, args.root)``) is not *known*, and
the modules it reaches are checked against the tree-wide path as before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath

from .model import PACKAGE, PY, has_relative_import, runs_as_main, sets_up_paths

_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Run:
    """One entry point's run: ``folders`` (the tree's folders on ``sys.path`` when its top
    level is done, in the order Python searches them) and ``reached`` (the tree's modules it
    imports, itself included)."""

    entry: PurePosixPath
    folders: tuple
    reached: frozenset
    known: bool = True  # False: a folder computed at run time was put on the path

    def spelled_path(self) -> str:
        return ", ".join(f"{folder}/" if str(folder) != "." else "./" for folder in self.folders)


def entry_runs(model) -> dict:
    """``{entry point: Run}`` for every script of ``model`` (an :class:`model.ImportModel`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from mxpatch_bind.migrate.model import ImportModel
    >>> trees = {"a/_init_paths.py": "import os, sys\\n"
    ...          "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\\n",
    ...          "a/train.py": "import _init_paths\\nimport util\\n"
    ...                        "if __name__ == '__main__':\\n    pass\\n",
    ...          "lib/util.py": ""}
    >>> with tempfile.TemporaryDirectory() as root:
    ...     model = ImportModel(Path(root), {k: ast.parse(v) for k, v in trees.items()})
    ...     run = entry_runs(model)[PurePosixPath("a/train.py")]
    >>> run.spelled_path(), sorted(map(str, run.reached))
    ('lib/, a/', ['a/_init_paths.py', 'a/train.py', 'lib/util.py'])
    """
    statements = {rel: _statements(tree) for rel, tree in model.trees.items()}
    runs = {}
    for rel, tree in sorted(model.trees.items()):
        if runs_as_main(tree) or rel in model.loose_scripts:
            runs[rel] = _Simulation(model, statements, rel, tree).run()
    return runs


def _statements(tree):
    """``(line, level, module, names, at top level)`` of each import of ``tree``."""
    deferred = {id(n) for node in ast.walk(tree) if isinstance(node, _DEFERRED)
                for n in ast.walk(node) if n is not node}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, 0, a.name, (), id(node) not in deferred) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.level, node.module or "",
                          tuple(a.name for a in node.names), id(node) not in deferred))
    return sorted(found)


class _Simulation:
    """One entry point run: files executed in import order, ``sys.path`` as they change it."""

    def __init__(self, model, statements, entry, tree):
        self.model, self.statements, self.entry = model, statements, entry
        self.first, self.last = [], []  # folders inserted at 0 (latest first), appended
        self.start = _start_folder(model, entry, tree)
        self.reached, self.later = set(), []
        self.known = True

    def folders(self):
        ordered = self.first + [self.start] + self.last
        return tuple(dict.fromkeys(ordered))

    def run(self) -> Run:
        self._execute(self.entry)
        while self.later:
            rel, level, module, names = self.later.pop(0)
            for target in self._targets(rel, level, module, names):
                self._execute(target)
        grown = True
        while grown:  # what the final path finds that the path at the time did not
            before = len(self.reached)
            for rel in list(self.reached):
                for _, level, module, names, _ in self.statements[rel]:
                    for target in self._targets(rel, level, module, names):
                        self._execute(target)
            grown = len(self.reached) > before
        return Run(self.entry, self.folders(), frozenset(self.reached), self.known)

    def _execute(self, rel):
        if rel in self.reached:
            return
        self.reached.add(rel)
        events = [(added[0], 0, added[1:]) for added in self.model.added[rel]]
        events += [(statement[0], 1, statement) for statement in self.statements[rel]]
        for _, kind, event in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0:
                self._add(*event)
            elif event[4]:
                for target in self._targets(rel, *event[1:4]):
                    self._execute(target)
            else:
                self.later.append((rel, *event[1:4]))

    def _add(self, folder, first, under):
        if folder is None:
            # a folder computed at run time: harmless where it lies outside the tree or below
            # a folder without Python (the fork's external/mxnet/<version>)
            self.known = self.known and (under == "outside" or (
                under is not None and under not in self.model.dirs))
        elif first:
            self.first.insert(0, folder)
        else:
            self.last.append(folder)

    def _targets(self, rel, level, module, names):
        """The tree's modules ``from <level><module> import <names>`` runs, as this run's
        path finds them."""
        parts = [p for p in module.split(".") if p]
        if level:
            base = PurePosixPath(rel).parent
            for _ in range(level - 1):
                base = base.parent
            chain = self._chain(base, parts) if parts else [(base, PACKAGE)]
        else:
            chain = next((found for folder in self.folders()
                          for found in [self._chain(folder, parts)] if found), [])
            if not chain:  # Python 2's implicit relative import
                chain = self._chain(PurePosixPath(rel).parent, parts)
        if chain and chain[-1][1] == PACKAGE:
            chain += [c for name in names for c in self._chain(chain[-1][0], [name])]
        return [file for where, kind in chain for file in [_file(self.model, where, kind)]
                if file is not None]

    def _chain(self, folder, parts):
        """``[(path, kind)]`` of each package and module importing ``parts`` from ``folder``
        runs, or [] where the first part is not there."""
        chain, where = [], folder
        for part in parts:
            target = self.model.child(where, part)
            if target is None or target.rel is None:
                return chain
            chain.append((target.rel, target.kind))
            if target.kind != PACKAGE:
                return chain
            where = target.rel
        return chain


def _file(model, where, kind):
    if kind == PY and where in model.modules:
        return where
    if kind == PACKAGE and where / "__init__.py" in model.modules:
        return where / "__init__.py"
    return None


def _start_folder(model, rel, tree):
    """The folder Python puts first on ``sys.path`` for the script ``rel``."""
    folder = PurePosixPath(rel).parent
    if has_relative_import(tree) and not sets_up_paths(tree):
        while folder in model.dirs_with_init and folder != PurePosixPath("."):
            folder = folder.parent  # python -m package.module, from above the package
    return folder
