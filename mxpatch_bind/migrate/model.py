"""Private to ``migrate``: how the repository runs, so that its imports are ported that way.

The family's code is not one package. Its scripts run as ``__main__`` (``python
rfcn/train_end2end.py``) with their own folder first on ``sys.path``; their ``_init_paths.py``
and the ``experiments/`` launchers put more folders there (``sys.path.insert(0, lib_path)``).
A file directly in such a folder is a top-level module, whose imports are absolute on Python 2
and 3 alike; a file below one, in folders holding ``__init__.py``, is a module of a package,
where Python 2 first tried ``import x`` as the sibling ``x`` (an implicit relative import) and
Python 3 needs ``from . import x``. 2to3 guesses instead that every folder holding an
``__init__.py`` is a package, which makes the scripts' imports relative: they then fail at once
(``attempted relative import with no known parent package``).

:class:`ImportModel` answers, for each file, which package it runs in and what each of its
imports refers to: a module of the tree (a ``.py`` file, a package, or a compiled extension:
a ``.pyx``, a source a ``setup*.py`` beside it builds, or a built ``.so``), the standard
library, an installed package, or nothing.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .files import skipped_dir

# What a name can be in the tree, and what the import check says of each.
PY, PACKAGE, EXTENSION = "module", "package", "extension"
_EXTENSION_SUFFIXES = (".so", ".pyd")
_PATH_CALLS = {"join", "dirname", "abspath", "realpath", "normpath"}


@dataclass(frozen=True)
class Target:
    """What an import refers to: ``kind`` (module, package, extension, stdlib, installed)
    and, for the tree's own, its path relative to the root."""

    kind: str
    rel: PurePosixPath | None = None


class ImportModel:
    """The repository as it runs: its ``sys.path`` folders and each file's package.

    Parameters
    ----------
    root : Path
        The scanned folder.
    trees : dict
        ``{relative path: ast.Module}`` for every Python file that parsed (Python 2 files
        through their line-preserving view).
    absent : frozenset of PurePosixPath, optional
        Files on disk to look at as deleted (the deletions a run plans).
    """

    def __init__(self, root: Path, trees: dict, absent: frozenset = frozenset()):
        self.root = Path(root)
        self.absent = absent  # files still on disk that the writes planned will delete
        self.trees = {PurePosixPath(rel): tree for rel, tree in trees.items()}
        self.modules = set(self.trees)  # every .py file, relative
        self.dirs_with_init = {rel.parent for rel in self.modules if rel.name == "__init__.py"}
        # every folder holding Python below it: on Python 3 one without __init__.py still
        # imports, as a namespace package
        self.dirs = {parent for rel in self.modules for parent in rel.parents}
        self.extensions = _extensions(self.root)
        self._children: dict = {}
        # {file: [(line, folder relative to the root, put first?)]}: its sys.path additions
        self.added = {rel: self._tree_folders(tree, rel) for rel, tree in self.trees.items()}
        self.roots = self._roots()
        self.loose_scripts = self._loose_scripts()

    # ------------------------------------------------------------------ sys.path
    def _roots(self) -> set[PurePosixPath]:
        roots = set()
        for rel, tree in self.trees.items():
            if runs_as_main(tree) and (not has_relative_import(tree) or sets_up_paths(tree)):
                roots.add(rel.parent)  # a script: its folder is first on sys.path
            elif runs_as_main(tree):  # run with -m: the folder above its package is
                top = rel.parent
                while top in self.dirs_with_init and top != PurePosixPath("."):
                    top = top.parent
                roots.add(top)
            roots |= {folder for _, folder, _, _ in self.added[rel] if folder is not None}
        return roots

    def _tree_folders(self, tree, rel):
        """``(line, folder, first, under)`` for each folder of the tree ``rel`` puts on
        sys.path (``folder`` None: one computed at run time, below ``under`` where that is
        known; ``under`` None where it may be anywhere in the tree)."""
        found = []
        for line, added, first, prefix in path_additions(tree, self.root / rel):
            if added is not None and not os.path.isabs(added):
                # relative to the working folder: the adding file's own, where the scripts
                # that import it run (SNIPER's init.py: 'lib', beside main_train.py)
                added = str((self.root / rel).parent / added)
            folder = self._in_tree(added)
            if added is None:
                under = self._in_tree(prefix) if prefix else None
                outside = prefix is not None and under is None
                found.append((line, None, first, "outside" if outside else under))
            elif folder is not None:
                found.append((line, folder, first, None))
        return found  # a folder outside the tree is not ours to model

    def _in_tree(self, path):
        """``path`` relative to the root, or None where it is elsewhere."""
        if path is None:
            return None
        try:
            return PurePosixPath(Path(os.path.normpath(path)).relative_to(
                self.root.resolve()).as_posix())
        except ValueError:
            return None

    @functools.cached_property
    def runs(self) -> dict:
        """``{entry point: runs.Run}``: each script's own sys.path and the modules it reaches
        (see :mod:`runs`)."""
        from .runs import entry_runs

        return entry_runs(self)

    def resolve_in(self, folders, module: str) -> Target | None:
        """What ``import module`` finds with ``folders`` as sys.path, or None. As Python
        does: the first folder holding ``module``'s top name as a module or a package with an
        ``__init__.py`` is the only one searched for the rest; folders without one
        (namespace packages) count only where neither a folder nor the standard library or
        the installed packages has such a module."""
        parts = [p for p in module.split(".") if p]
        namespaces = []
        for folder in folders:
            top = self.child(folder, parts[0])
            if top is None:
                continue
            if top.kind == PACKAGE and not self._regular(top.rel):
                namespaces.append(folder)
                continue
            return self._walk(folder, parts)
        outside = outside_target(parts[0])  # a regular package there wins over namespaces
        if outside is not None:
            return outside
        return next((found for folder in namespaces
                     for found in [self._walk(folder, parts)] if found is not None), None)

    def _regular(self, package):
        return package / "__init__.py" in self.modules \
            or (self.root / package / "__init__.py").is_file()

    def _loose_scripts(self) -> set[PurePosixPath]:
        """Files that run as scripts without saying so: work at their top level (a call, a
        loop), no ``if __name__ == '__main__'``, and no import in the tree names them.
        They are top-level modules (their imports stay absolute), with their own folder on
        ``sys.path``; they do not put that folder there for the others."""
        named = set()
        for tree in self.trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    named |= {part for a in node.names for part in a.name.split(".")}
                elif isinstance(node, ast.ImportFrom):
                    named |= set((node.module or "").split(".")) | {a.name for a in node.names}
        return {rel for rel, tree in self.trees.items()
                if rel.name != "__init__.py" and rel.stem not in named
                and rel.parent not in self.roots and _works_at_top_level(tree)
                and not has_relative_import(tree)}

    def _search_path(self, rel) -> list[PurePosixPath]:
        """The folders an absolute import in ``rel`` searches: the model's, deepest first;
        then, for a file no folder of the model reaches, the top of its own package (how it
        must be run); then the tree's root."""
        folders = sorted(self.roots, key=lambda r: (-len(r.parts), str(r)))
        if PurePosixPath(rel) in self.loose_scripts:
            folders.insert(0, PurePosixPath(rel).parent)
        elif self.package_of(rel) is None:
            top = PurePosixPath(rel).parent
            while top in self.dirs_with_init and top != PurePosixPath("."):
                top = top.parent
            folders.append(top)
        return folders + [PurePosixPath(".")]

    def package_of(self, rel) -> str | None:
        """The dotted package ``rel`` runs in: ``''`` for a top-level module (its folder is
        on ``sys.path``), None where no folder of the model reaches it."""
        rel = PurePosixPath(rel)
        if rel in getattr(self, "loose_scripts", ()):
            return ""
        directory = rel.parent
        parts: list[str] = []
        while True:
            if directory in self.roots:
                return ".".join(reversed(parts))
            if directory == PurePosixPath("."):
                return None
            parts.append(directory.name)
            directory = directory.parent

    def in_package(self, rel) -> bool:
        """Whether ``rel`` is a module of a package, where Python 2's implicit relative
        imports applied (a file no folder reaches counts as one when an ``__init__.py`` is
        beside it: how Python 2 ran it, imported from its parent)."""
        package = self.package_of(rel)
        if package is None:
            return PurePosixPath(rel).parent in self.dirs_with_init
        return package != ""

    def local_names(self, rel) -> frozenset[str]:
        """The names Python 2 took as siblings in ``rel``'s imports: every module, package
        and extension beside it, when it is a module of a package; none for a top-level
        module (a script's imports stay absolute)."""
        if not self.in_package(rel) or PurePosixPath(rel).parent not in self.dirs_with_init:
            return frozenset()  # Python 2 looked beside a file only in a package
        directory = PurePosixPath(rel).parent
        names = {m.stem for m in self.modules
                 if m.parent == directory and m.name != "__init__.py"}
        names |= {m.parent.name for m in self.modules if m.name == "__init__.py"
                  and m.parent.parent == directory and m.parent != directory}
        names |= {name for folder, name in self.extensions if folder == directory}
        return frozenset(names)

    def implicit_imports(self, rel, tree: ast.Module) -> list[tuple[int, str]]:
        """``(line, 'import x' / 'from x import')`` for each implicit relative import of
        ``rel``: what Python 2 found beside the file and Python 3 does not look for."""
        local = self.local_names(rel)
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(node.lineno, f"import {a.name}") for a in node.names
                          if a.name.split(".")[0] in local]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] in local:
                found.append((node.lineno, f"from {node.module} import"))
        return sorted(found)

    # ------------------------------------------------------------------ lookups
    def child(self, directory: PurePosixPath, name: str) -> Target | None:
        """``name`` as a module in ``directory``: a .py file, a package, or an extension."""
        key = (directory, name)
        if key not in self._children:
            self._children[key] = self._child(directory, name)
        return self._children[key]

    def _child(self, directory, name):
        if directory / name / "__init__.py" in self.modules:
            return Target(PACKAGE, directory / name)
        if directory / (name + ".py") in self.modules:
            return Target(PY, directory / (name + ".py"))
        if (directory, name) in self.extensions:
            return Target(EXTENSION, directory / name)
        if directory / name in self.dirs:
            return Target(PACKAGE, directory / name)  # a namespace package
        return self._on_disk(directory, name)

    def _on_disk(self, directory, name):
        """``name`` in ``directory`` as the file system has it, for what the scan did not
        read (a single file scanned: the rest of its folder)."""
        folder = self.root / directory
        try:  # pathlib raises ENAMETOOLONG past PATH_MAX: nothing can be imported there
            if (folder / name / "__init__.py").is_file() or (folder / name).is_dir():
                return Target(PACKAGE, directory / name)
            module = directory / (name + ".py")
            if (folder / (name + ".py")).is_file() and module not in self.absent:
                return Target(PY, module)
            if (folder / (name + ".pyx")).is_file() or any(folder.glob(name + ".*.so")) \
                    or (folder / (name + ".so")).is_file():
                return Target(EXTENSION, directory / name)
        except OSError:
            pass
        return None

    def sibling(self, rel, dotted: str) -> Target | None:
        """What ``import dotted`` means as an implicit relative import in ``rel``, or None."""
        return self._walk(PurePosixPath(rel).parent, dotted.split("."))

    def _walk(self, directory, parts):
        target = self.child(directory, parts[0])
        for part in parts[1:]:
            if target is None or target.kind != PACKAGE:
                return None
            target = self.child(target.rel, part)
        return target

    def resolve(self, rel, module: str, level: int) -> Target | None:
        """What ``from <level dots><module> import`` / ``import module`` in ``rel`` refers
        to when the repository runs, or None when nothing does."""
        parts = [p for p in module.split(".") if p]
        if level:
            if self.package_of(rel) == "":
                return None  # a top-level module has no parent package
            base = PurePosixPath(rel).parent
            for _ in range(level - 1):
                base = base.parent
            if not parts:
                return Target(PACKAGE, base)
            return self._walk(base, parts)
        for root in self._search_path(rel):
            found = self._walk(root, parts)
            if found is not None:
                return found
        return outside_target(parts[0])


def outside_target(top: str) -> Target | None:
    """The standard library's or an installed package's ``top``, or None."""
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top == "__future__":
        return Target("stdlib")
    try:
        if importlib.util.find_spec(top) is not None:
            return Target("installed")
    except (ImportError, ValueError):
        pass
    return None


def runs_as_main(tree: ast.Module) -> bool:
    """Whether the file has a module-level ``if __name__ == '__main__':``."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
                    isinstance(n, ast.Constant) and n.value == "__main__" for n in names):
                return True
    return False


def has_relative_import(tree: ast.Module) -> bool:
    """Whether the file imports explicitly relatively: it runs as a module of a package
    (imported, or ``python -m package.module``), never as a plain script."""
    return any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


def sets_up_paths(tree: ast.Module) -> bool:
    """Whether the file sets ``sys.path`` up for itself (``import _init_paths``, or a
    ``sys.path`` call of its own): a script run by its path, even where a port made its
    imports relative."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                a.name.split(".")[-1] == "_init_paths" for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and _is_sys_path(node.func.value):
            return True
    return False


def _works_at_top_level(tree: ast.Module) -> bool:
    """Whether the module does work when run: a call, a loop or a ``with`` at its top level
    (not only definitions, imports, assignments and the ``if`` of a version check)."""
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
        if isinstance(node, (ast.For, ast.While, ast.With)):
            return True
    return False


# ---------------------------------------------------------------------- the file system
def _extensions(root: Path) -> set[tuple[PurePosixPath, str]]:
    """``(folder, name)`` of every compiled extension the tree has or builds."""
    found = set()
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if not skipped_dir(Path(directory), d)]
        rel = PurePosixPath(Path(directory).relative_to(root).as_posix())
        for name in names:
            if name.endswith(".pyx"):
                found.add((rel, name[:-4]))
            elif name.endswith(_EXTENSION_SUFFIXES):
                found.add((rel, name.split(".")[0]))
            elif name.startswith("setup") and name.endswith(".py"):
                found |= {(rel, ext) for ext, _ in declared_extensions(Path(directory) / name)}
    return found


def declared_extensions(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """``(name, sources)`` of each ``Extension('name', [sources])`` a ``setup*.py`` declares
    (the name's last dotted part: ``build_ext --inplace`` puts it beside the script)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, OSError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and call_name(node.func) == "Extension":
            name = _string(node.args[0] if node.args else _keyword(node, "name"))
            listed = node.args[1] if len(node.args) > 1 else _keyword(node, "sources")
            sources = tuple(s for s in (_string(e) for e in getattr(listed, "elts", [])) if s)
            if name:
                found.append((name.rsplit(".", 1)[-1], sources))
    return found


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
        else None


def call_name(func):
    """The called name of ``f(...)`` or ``x.f(...)``, else None."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


# ---------------------------------------------------------------------- sys.path edits
def path_additions(tree: ast.Module, path: Path) -> list[tuple]:
    """``(line, folder, first, prefix)`` for each folder a file puts on ``sys.path`` at its top
    level (``sys.path.insert(0, X)``: first; ``sys.path.append(X)``; or a function of its own
    that does either with its argument), where ``X`` is built from ``__file__``, string
    constants and ``os.path`` calls. Where it is built otherwise ``folder`` is None and
    ``prefix`` what is known of its start (``os.path.join(here, '../external/mxnet',
    config.MXNET_VERSION)``: ``here/../external/mxnet``), or None.

    Examples
    --------
    >>> tree = ast.parse("import sys\\nsys.path.insert(0, '/repo/lib')\\n"
    ...                  "sys.path.append(os.path.join('/repo/ext', version))\\n")
    >>> path_additions(tree, Path("/repo/tools/a.py"))
    [(2, '/repo/lib', True, None), (3, None, False, '/repo/ext')]
    """
    values = {"__file__": str(path.resolve())}
    adders = _path_adders(tree)
    added = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = _evaluate(node.value, values)
            if value is not None:
                values[node.targets[0].id] = value
        for call in _calls_in(node):
            argument = _path_argument(call, adders)
            if argument is not None:
                value = _evaluate(argument[0], values)
                prefix = _known_start(argument[0], values) if value is None else None
                added.append((node.lineno, value, argument[1], prefix))
    return added


def _calls_in(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _is_sys_path(node):
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _path_argument(call, adders):
    """``(node, first)``: the folder a call puts on sys.path and whether it goes first
    (``insert(0, ...)``), or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and _is_sys_path(func.value):
        if func.attr == "insert" and len(call.args) == 2:
            first = isinstance(call.args[0], ast.Constant) and call.args[0].value == 0
            return call.args[1], first
        if func.attr == "append" and len(call.args) == 1:
            return call.args[0], False
    if isinstance(func, ast.Name) and func.id in adders and len(call.args) > adders[func.id][0]:
        return call.args[adders[func.id][0]], adders[func.id][1]
    return None


def _path_adders(tree):
    """``{function name: (index of the argument it puts on sys.path, first?)}`` for the
    file's own."""
    adders = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args]
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                argument = _path_argument(call, {})
                if argument is not None and isinstance(argument[0], ast.Name) \
                        and argument[0].id in params:
                    adders[node.name] = (params.index(argument[0].id), argument[1])
    return adders


def _known_start(node, values):
    """The folder an ``os.path.join`` whose later parts are computed starts with, or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"):
        return None
    known = []
    for argument in node.args:
        value = _evaluate(argument, values)
        if value is None:
            break
        known.append(value)
    return os.path.join(*known) if known and known[0].startswith("/") else None


def _evaluate(node, values):
    """The string an ``os.path`` expression makes, or None where it cannot be known."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return values.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _PATH_CALLS and not node.keywords:
        args = [_evaluate(a, values) for a in node.args]
        if not args or any(a is None for a in args):
            return None
        if node.func.attr == "join":
            return os.path.join(*args)
        if node.func.attr == "dirname":
            return os.path.dirname(args[0])
        return os.path.normpath(args[0])
    return None
