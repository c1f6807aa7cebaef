"""Private to ``migrate``: every import of a file, and whether each resolves as the repo runs.

"Done" means the tree imports: each ``import`` / ``from ... import`` of every file must find
a module of the tree (by :class:`model.ImportModel`), one of its compiled extensions, the
standard library or an installed package. What does not is a ``[check]`` at ``file:line``,
and the exit status is 1 until none is left. An import inside ``try:`` with an ``except
ImportError`` (or broader) is optional, as the code itself says, and is not checked.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .model import EXTENSION, ImportModel

# The package to install for the import names the family uses whose distribution is named
# otherwise (the others: pip install NAME).
_DISTRIBUTIONS = {"cv2": "opencv-python", "yaml": "PyYAML", "PIL": "Pillow",
                  "skimage": "scikit-image", "sklearn": "scikit-learn",
                  "Cython": "Cython", "easydict": "easydict", "mxnet": "mxnet"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass(frozen=True)
class Imported:
    """One module an import statement names: ``from <level dots><module> import <names>``
    (``names`` empty for ``import module``)."""

    line: int
    level: int
    module: str
    names: tuple = ()
    optional: bool = False

    def spelled(self) -> str:
        dots = "." * self.level
        if self.names or self.level:
            return f"from {dots}{self.module} import {', '.join(self.names) or '...'}"
        return f"import {self.module}"


def statements(tree: ast.Module) -> list[Imported]:
    """Every import statement of ``tree``, whether optional (in a ``try`` that catches
    ImportError)."""
    optional_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            optional_nodes |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        optional = id(node) in optional_nodes
        if isinstance(node, ast.Import):
            found += [Imported(node.lineno, 0, a.name, (), optional) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(Imported(node.lineno, node.level, node.module or "",
                                  tuple(a.name for a in node.names), optional))
    return sorted(found, key=lambda i: (i.line, i.module))


def _catches_import_error(handler):
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types)


def modules_named(imported: Imported) -> list[str]:
    """The dotted modules an import may load: ``from a import b`` may load ``a`` and
    ``a.b`` (``b`` a submodule), ``from . import b`` the sibling ``b``."""
    if not imported.names:
        return [imported.module]
    named = [imported.module] if imported.module else []
    prefix = imported.module + "." if imported.module else ""
    return named + [prefix + name for name in imported.names if name != "*"]


def unresolved(model: ImportModel, rel, tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, message)`` for each import of ``rel`` that nothing provides.

    Implicit relative imports of a module of a package count as resolved: the port makes
    them explicit (the scan reports the file as Python 2 until then).
    """
    local = model.local_names(rel)
    runs = [run for run in model.runs.values() if run.known and rel in run.reached]
    problems = []
    for imported in statements(tree):
        if imported.optional or imported.module == "mxpatch_bind.compat":
            continue
        if not imported.level and imported.module.split(".")[0] in local:
            continue
        if runs and not imported.level:
            message = _in_runs(model, rel, imported, runs)
        else:
            problem = _problem(model, rel, imported)
            message = f"'{imported.spelled()}' does not resolve: {problem}" if problem else None
        if message:
            problems.append((imported.line, message))
    return problems


def _in_runs(model, rel, imported, runs):
    """The message for an absolute import of a module that entry points reach: it must
    resolve with each one's sys.path (:mod:`runs`); None where it does."""
    failing = [run for run in runs if model.resolve_in(run.folders, imported.module) is None]
    if not failing:
        return None
    problem = _problem(model, rel, imported)
    if problem is not None and len(failing) == len(runs):
        return f"'{imported.spelled()}' does not resolve: {problem}"  # wherever it runs
    names = [str(run.entry) for run in failing]
    who = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    whose = "" if len(failing) == 1 else f" of {names[0]}"
    why = f": {problem}" if problem else _elsewhere(model, rel, imported.module, failing[0])
    return (f"'{imported.spelled()}' does not resolve when {who} run{'s' * (len(failing) == 1)}"
            f" (sys.path{whose}: {failing[0].spelled_path()}){why}")


def _elsewhere(model, rel, module, run):
    """Where the tree-wide path finds ``module``, and why ``run`` does not: the folder it
    needs is not on its path, or another folder's package of that name comes first."""
    target = model.resolve(rel, module, 0)
    if target is None or target.rel is None:
        return ""
    folder = target.rel
    for _ in module.split("."):
        folder = folder.parent
    top = module.split(".")[0]
    if folder in run.folders:
        first = next(f for f in run.folders if model.child(f, top) is not None)
        return (f": the tree has it at {target.rel}, but {first / top} comes first on that "
                "sys.path and has no such module")
    return (f": the tree has it at {target.rel}, found only with {folder}/ on sys.path, "
            "which that run does not put there")


def _problem(model, rel, imported):
    if imported.level and model.package_of(rel) == "":
        return ("a relative import in a top-level module (its folder is on sys.path when the "
                "repository runs): Python 3 raises 'attempted relative import with no known "
                "parent package'; import it absolutely")
    target = model.resolve(rel, imported.module, imported.level)
    if target is None:
        top = imported.module.split(".")[0]
        if imported.level:
            return f"no module {'.' * imported.level}{imported.module} beside {rel}"
        if model.resolve(rel, top, 0) is None:
            install = _DISTRIBUTIONS.get(top, top)
            return (f"{top!r} is not in the tree, the standard library or the installed "
                    f"packages (pip install {install}?)")
        return f"no module {imported.module!r} (its package {top!r} has no such module)"
    if imported.level and imported.names and target.kind not in (EXTENSION,) \
            and not imported.module and target.rel is not None:
        missing = [name for name in imported.names
                   if model.child(target.rel, name) is None and name != "*"
                   and not _defines(model, target.rel, name)]
        if missing:
            return f"nothing named {', '.join(missing)} beside {rel}"
    return None


def _defines(model, package_rel, name):
    """Whether the package's ``__init__.py`` binds ``name`` at its top level."""
    tree = model.trees.get(package_rel / "__init__.py")
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name or a.name == "*" for a in node.names):
            return True
    return False
