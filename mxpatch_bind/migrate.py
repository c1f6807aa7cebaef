"""``python -m mxpatch_bind migrate PATH``: what a Deformable-ConvNets-based codebase needs.

Scans Python files with the standard :mod:`ast` module (nothing is imported or run) and
reports, ``file:line``, every vendored copy of the fork's ``module.py`` /
``DataParallelExecutorGroup.py`` (recognised by content), every import and construction of
their classes, the arguments that need care, ``_preload_opt_states``, ``optimizer_params``
without ``rescale_grad`` and ``mx.io.PrefetchingIter`` around a per-device loader.
``--write`` rewrites the imports to :mod:`mxpatch_bind.compat` keeping the formatting (with
libcst, the optional ``migrate`` extra); ``--delete-vendored`` deletes the vendored files.
Without them nothing is written. The exit status is 0 when nothing is left to do, 1 when
something is (a pending rewrite or deletion, or a finding a person has to look at), 2 on a
usage error. This module does not import MXNet.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import namedtuple
from pathlib import Path, PurePosixPath

__all__ = ["Finding", "scan", "apply", "summary", "vendored_kind", "add_arguments", "run",
           "main"]

# What a finding asks for. Pending REWRITE / DELETE and every CHECK make the exit status 1.
REWRITE, DELETE, CHECK, OK = "rewrite", "delete", "check", "ok"
REWRITTEN, DELETED = "rewritten", "deleted"
_PENDING = (REWRITE, DELETE, CHECK)

VENDORED_MODULE = "module.py"
VENDORED_GROUP = "DataParallelExecutorGroup.py"
DROP_INS = ("MutableModule", "Module")  # what mxpatch_bind.compat provides
COMPAT_MODULE = "mxpatch_bind.compat"
# The fork family's loaders: provide_data / provide_label hold one list per device.
FORK_LOADERS = ("AnchorLoader", "ROIIter", "TestLoader")
PREFETCHING_ITERS = ("mx.io.PrefetchingIter", "mxnet.io.PrefetchingIter")
# Constructor arguments that behave differently from stock Module, by keyword and position.
_CARE_ARGUMENTS = {
    "MutableModule": ("work_load_list", 5, "max_data_shapes", 6, "max_label_shapes", 7,
                      "fixed_param_prefix", 8),
    "Module": ("work_load_list", 5, "fixed_param_names", 6),
}
_CARE_NOTES = {
    "fixed_param_prefix": "fixed_param_prefix freezes by the fork's substring rule",
    "max_data_shapes": "max shapes are allocated once, at the first bind",
    "max_label_shapes": "max shapes are allocated once, at the first bind",
    "work_load_list": "work_load_list splits only flat batches (your loader splits images)",
    "fixed_param_names": "fixed_param_names are frozen as given",
}
_SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules", "venv", "site-packages"}


class Finding(namedtuple("Finding", ["path", "line", "action", "message"])):
    """One report line: ``path:line: [action] message``.

    ``path`` is relative to the scanned directory, with ``/`` separators; ``action`` is
    ``'rewrite'`` / ``'delete'`` (``--write`` / ``--delete-vendored`` do it), ``'rewritten'``
    / ``'deleted'`` (done by this run), ``'check'`` (a person has to look) or ``'ok'``
    (handled by :mod:`mxpatch_bind.compat`, reported so nothing is silent).

    Examples
    --------
    >>> from mxpatch_bind.migrate import Finding
    >>> str(Finding('train.py', 3, 'check', 'optimizer_params without rescale_grad'))
    'train.py:3: [check] optimizer_params without rescale_grad'
    """

    __slots__ = ()

    def __str__(self):
        return "%s:%d: [%s] %s" % (self.path, self.line, self.action, self.message)


# --------------------------------------------------------------------------- public API
def scan(path: str | os.PathLike) -> list[Finding]:
    """Every finding for the Python files under ``path`` (a directory or one file).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of Finding
        Sorted by path and line. A file that does not parse is one ``'check'`` finding.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from mxpatch_bind.migrate import scan
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / 'train.py').write_text(
    ...     "import mxnet as mx\\n"
    ...     "it = mx.io.PrefetchingIter(AnchorLoader(roidb, ctx=ctx))\\n")
    >>> [f.line for f in scan(root)], scan(root)[0].action
    ([2], 'check')
    """
    root, files = _python_files(Path(path))
    return _Scan(root, files).findings()


def apply(path: str | os.PathLike, findings: list[Finding], *, write: bool = False,
          delete_vendored: bool = False) -> list[Finding]:
    """Carry out the pending rewrites (``write``) and deletions (``delete_vendored``).

    Parameters
    ----------
    path : str or path-like
        The directory (or file) that was scanned.
    findings : list of Finding
        What :func:`scan` returned for it.
    write, delete_vendored : bool
        Default ``False``: with neither, nothing is written.

    Returns
    -------
    list of Finding
        ``findings`` with what was done marked ``'rewritten'`` / ``'deleted'``.

    Raises
    ------
    ImportError
        ``write`` without libcst installed (``pip install "mxpatch_bind[migrate]"``),
        before any file is touched.
    """
    if write:
        _require_libcst()
    root, _ = _python_files(Path(path))
    done = set()
    if write:
        for rel, lines in _group_lines(findings, REWRITE).items():
            done |= {(rel, line) for line in _rewrite_imports(root / rel, lines)}
    if delete_vendored:
        for rel in _group_lines(findings, DELETE):
            (root / rel).unlink()
            done.add((rel, 1))
    return [_mark_done(f) if (f.path, f.line) in done and f.action in (REWRITE, DELETE) else f
            for f in findings]


def summary(findings: list[Finding]) -> str:
    """The one-line summary that ends the report.

    Examples
    --------
    >>> from mxpatch_bind.migrate import Finding, summary
    >>> summary([Finding('a.py', 1, 'ok', 'x'), Finding('b.py', 2, 'check', 'y')])
    'migrate: 2 findings in 2 files: 1 to check by hand, 1 handled by mxpatch_bind.compat'
    """
    counts = {action: sum(f.action == action for f in findings)
              for action in (REWRITE, DELETE, REWRITTEN, DELETED, CHECK, OK)}
    words = {REWRITE: "to rewrite (--write)", DELETE: "to delete (--delete-vendored)",
             REWRITTEN: "rewritten", DELETED: "deleted", CHECK: "to check by hand",
             OK: "handled by mxpatch_bind.compat"}
    parts = ["%d %s" % (counts[a], words[a]) for a in words if counts[a]]
    files = len({f.path for f in findings})
    head = "migrate: %d finding%s in %d file%s" % (
        len(findings), "" if len(findings) == 1 else "s", files, "" if files == 1 else "s")
    return head + (": " + ", ".join(parts) if parts else ": nothing to migrate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``migrate``'s arguments to ``parser`` (for a ``migrate`` subcommand).

    Examples
    --------
    >>> import argparse
    >>> from mxpatch_bind.migrate import add_arguments
    >>> parser = argparse.ArgumentParser(prog='migrate')
    >>> add_arguments(parser)
    >>> parser.parse_args(['src', '--write']).write
    True
    """
    parser.add_argument("path", help="the codebase to scan: a directory or one .py file")
    parser.add_argument("--write", action="store_true",
                        help="rewrite imports of the fork's MutableModule / Module to "
                             "mxpatch_bind.compat, keeping formatting (needs libcst)")
    parser.add_argument("--delete-vendored", action="store_true",
                        help="delete the vendored copies of the fork's module.py and "
                             "DataParallelExecutorGroup.py")


def run(args: argparse.Namespace) -> int:
    """Scan, apply what ``args`` asks for, print the report; returns the exit status."""
    if not os.path.exists(args.path):
        print("migrate: error: no such file or directory: %r" % (args.path,), file=sys.stderr)
        return 2
    findings = scan(args.path)
    try:
        findings = apply(args.path, findings, write=args.write,
                         delete_vendored=args.delete_vendored)
    except ImportError as error:
        print("migrate: error: %s" % (error,), file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    print(summary(findings))
    return 1 if any(f.action in _PENDING for f in findings) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m mxpatch_bind.migrate PATH [--write] [--delete-vendored]``.

    Returns 0 when nothing is left to do, 1 when something is, 2 on a usage error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m mxpatch_bind migrate",
        description="Report (and with --write / --delete-vendored, fix) what a "
                    "Deformable-ConvNets-based codebase needs to run on stock MXNet.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


# --------------------------------------------------------------------------- files
def _python_files(path):
    """(root, sorted .py files under it); a file is its own one-file tree."""
    if path.is_file():
        return path.parent, [path]
    files = []
    for directory, subdirs, names in os.walk(path):
        subdirs[:] = sorted(d for d in subdirs
                            if not d.startswith(".") and d not in _SKIPPED_DIRS)
        files += [Path(directory) / n for n in sorted(names) if n.endswith(".py")]
    return path, files


def _rel(root, path):
    return PurePosixPath(path.relative_to(root).as_posix())


def _group_lines(findings, action):
    grouped = {}
    for f in findings:
        if f.action == action:
            grouped.setdefault(f.path, set()).add(f.line)
    return grouped


def _mark_done(finding):
    done = REWRITTEN if finding.action == REWRITE else DELETED
    return finding._replace(action=done)


# --------------------------------------------------------------------------- recognition
def vendored_kind(tree: ast.Module) -> str | None:
    """``'module.py'`` / ``'DataParallelExecutorGroup.py'`` for the fork's files, else None.

    By content: the fork's ``MutableModule`` keeps an inner ``_curr_module`` bound at
    ``_max_data_shapes``; the fork's ``DataParallelExecutorGroup`` counts devices as its
    ``batch_size`` (``self.batch_size = len(data_shapes)``; stock's starts at ``None``) and
    borrows memory through a ``_get_or_reshape`` inside ``_bind_ith_exec``.

    Parameters
    ----------
    tree : ast.Module
        A parsed file.

    Returns
    -------
    str or None

    Examples
    --------
    >>> import ast
    >>> from mxpatch_bind.migrate import vendored_kind
    >>> vendored_kind(ast.parse("class Module:\\n    def bind(self): pass\\n")) is None
    True
    """
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    module = classes.get("MutableModule")
    if (module is not None and {"bind", "forward", "init_optimizer"} <= _methods(module)
            and {"_curr_module", "_max_data_shapes"} <= _self_attributes(module)):
        return VENDORED_MODULE
    group = classes.get("DataParallelExecutorGroup")
    if (group is not None and {"bind_exec", "reshape", "_bind_ith_exec"} <= _methods(group)
            and _counts_devices_as_batch(group) and _borrows_by_reshape(group)):
        return VENDORED_GROUP
    return None


def _methods(cls):
    return {node.name for node in cls.body if isinstance(node, ast.FunctionDef)}


def _self_attributes(cls):
    return {node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "self"}


def _counts_devices_as_batch(cls):
    for node in ast.walk(cls):
        if (isinstance(node, ast.Assign) and any(_dotted(t) == "self.batch_size"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Call) and _dotted(node.value.func) == "len"):
            return True
    return False


def _borrows_by_reshape(cls):
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and method.name == "_bind_ith_exec":
            return any(isinstance(n, ast.FunctionDef) and n.name == "_get_or_reshape"
                       for n in ast.walk(method))
    return False


def _is_per_device_loader(cls):
    """A class whose ``provide_data`` returns a list (per device) of lists."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "provide_data":
            return any(isinstance(r, ast.Return) and isinstance(r.value, ast.ListComp)
                       and isinstance(r.value.elt, ast.ListComp) for r in ast.walk(node))
    return False


def _dotted(node):
    """``'a.b.c'`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


# --------------------------------------------------------------------------- the scan
class _Scan:
    """One scan of a tree: parse every file once, then check each non-vendored file."""

    def __init__(self, root, files):
        self.root = root
        self.trees, self.out = {}, []
        for path in files:
            self._parse(path)
        self.vendored = {rel: kind for rel, tree in self.trees.items()
                         if (kind := vendored_kind(tree)) is not None}
        self.loaders = set(FORK_LOADERS) | {
            node.name for tree in self.trees.values() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and _is_per_device_loader(node)}

    def _parse(self, path):
        rel = _rel(self.root, path)
        try:
            source = path.read_text(encoding="utf-8")
            self.trees[rel] = ast.parse(source, filename=str(path))
        except SyntaxError as error:
            self.out.append(Finding(str(rel), error.lineno or 1, CHECK,
                                    "cannot parse (%s; Python 2 code?): port it and scan "
                                    "again" % (error.msg,)))
        except (UnicodeDecodeError, ValueError) as error:
            self.out.append(Finding(str(rel), 1, CHECK, "cannot read: %s" % (error,)))

    def findings(self):
        for rel, tree in self.trees.items():
            if rel in self.vendored:
                self._add(rel, 1, DELETE, "vendored copy of the fork's %s: delete it "
                          "(stock MXNet with mxpatch_bind replaces it)" % (self.vendored[rel],))
            else:
                _FileScan(self, rel, tree).run()
        return sorted(self.out, key=lambda f: (f.path, f.line))

    def _add(self, rel, line, action, message):
        self.out.append(Finding(str(rel), line, action, message))

    def resolve(self, rel, module, level):
        """The vendored file an import refers to, or None (by sys.path-like lookup: the
        importing file's directory and its parents, as the fork's scripts set it up)."""
        parts = module.split(".") if module else []
        if not parts:
            return None
        directory = rel.parent
        if level:
            bases = [directory] if level == 1 else list(directory.parents)[level - 2:level - 1]
        else:
            bases = [directory, *directory.parents]
        for base in bases:
            candidate = base.joinpath(*parts).with_suffix(".py")
            if candidate in self.vendored:
                return candidate
        return None


class _FileScan:
    """The checks on one (non-vendored) file."""

    def __init__(self, scan, rel, tree):
        self.scan, self.rel, self.tree = scan, rel, tree
        self.fork_names = {}      # local name -> 'MutableModule' / 'Module'
        self.prefetchers = set(PREFETCHING_ITERS)
        self.fork_objects = set()  # dotted names assigned a fork/compat module

    def add(self, node, action, message):
        self.scan._add(self.rel, node.lineno, action, message)

    def run(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Import):
                self._import(node)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and self._fork_class(node.value):
                self.fork_objects |= {_dotted(t) for t in node.targets} - {None}
        for scope in _scopes(self.tree):
            self._scope(scope)

    # imports
    def _import_from(self, node):
        if node.module == COMPAT_MODULE:
            self.fork_names.update({a.asname or a.name: a.name for a in node.names
                                    if a.name in DROP_INS})
            return
        if node.module in ("mxnet.io", "mx.io"):
            self.prefetchers |= {a.asname or a.name for a in node.names
                                 if a.name == "PrefetchingIter"}
        target = self.scan.resolve(self.rel, node.module, node.level)
        if target is None:
            return
        names = [a.name for a in node.names]
        where = "the vendored %s" % (target,)
        self.fork_names.update({a.asname or a.name: a.name for a in node.names
                                if a.name in DROP_INS})
        if self.scan.vendored[target] == VENDORED_GROUP:
            self.add(node, CHECK, "imports DataParallelExecutorGroup from %s: no drop-in; a "
                     "stock mx.mod.Module with mxpatch_bind.install() replaces both" % where)
        elif set(names) <= set(DROP_INS):
            self.add(node, REWRITE, "imports %s from %s: becomes 'from %s import %s'"
                     % (", ".join(names), where, COMPAT_MODULE, ", ".join(names)))
        else:
            self.add(node, CHECK, "imports %s from %s: %s provides only %s; change it by "
                     "hand" % (", ".join(names), where, COMPAT_MODULE, " and ".join(DROP_INS)))

    def _import(self, node):
        for alias in node.names:
            target = self.scan.resolve(self.rel, alias.name, 0)
            if target is not None:
                self.add(node, CHECK, "imports the vendored %s as a module: import %s from "
                         "%s instead, by hand" % (target, " / ".join(DROP_INS), COMPAT_MODULE))

    # per scope: constructions, optimizer_params, prefetching
    def _scope(self, scope):
        nodes = list(_nodes_in_scope(scope))
        assigned = _assignments(nodes)
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node, assigned)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)

    def _fork_class(self, node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.fork_names.get(node.func.id)
        return None

    def _call(self, node, assigned):
        cls = self._fork_class(node)
        if cls is not None:
            self._construction(node, cls)
        if _dotted(node.func) in self.prefetchers:
            self._prefetching(node, assigned)
        for keyword in node.keywords:
            if keyword.arg == "optimizer_params":
                self._optimizer_params(node, keyword.value, assigned)

    def _construction(self, node, cls):
        care = _CARE_ARGUMENTS[cls]
        given = {kw.arg for kw in node.keywords}
        passed = [name for name, position in zip(care[::2], care[1::2])
                  if name in given or len(node.args) > position]
        detail = " with %s" % ", ".join(passed) if passed else ""
        notes = sorted({_CARE_NOTES[name] for name in passed})
        self.add(node, OK, "%s(...)%s: the drop-in keeps the fork's behaviour%s"
                 % (cls, detail, "".join("; " + note for note in notes)))

    def _attribute(self, node):
        if node.attr == "_preload_opt_states":
            self.add(node, OK, "%s: resumes the optimizer states; stock init_optimizer "
                     "honours it too" % (_dotted(node) or "_preload_opt_states"))
        elif node.attr == "_curr_module":
            self.add(node, CHECK, "%s: the fork's inner module; a drop-in module is a stock "
                     "Module, use it directly" % (_dotted(node) or "_curr_module"))

    def _optimizer_params(self, call, value, assigned):
        if _sets_rescale_grad(value, assigned, call.lineno) is True:
            return
        receiver = _dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
        if receiver in self.fork_objects:
            self.add(call, OK, "optimizer_params without rescale_grad on %s: the drop-in "
                     "keeps the fork's default 1/(number of devices); stock Module's is "
                     "1/(total samples)" % receiver)
        else:
            self.add(call, CHECK, "optimizer_params without rescale_grad: stock Module scales "
                     "by 1/(total samples), the fork by 1/(number of devices); set "
                     "rescale_grad explicitly")

    def _prefetching(self, call, assigned):
        wrapped = call.args[0] if call.args else next(
            (kw.value for kw in call.keywords if kw.arg == "iters"), None)
        loaders = sorted(self._loader_classes(wrapped, assigned, call.lineno))
        if loaders:
            self.add(call, CHECK, "%s around %s, a per-device loader: it reads provide_data "
                     "as one flat list (batch_size = provide_data[0][1][0]); keep the fork's "
                     "utils/PrefetchingIter or use mxpatch_bind.PerDevicePrefetchingIter"
                     % (_dotted(call.func), ", ".join(loaders)))

    def _loader_classes(self, node, assigned, line):
        if isinstance(node, (ast.List, ast.Tuple)):
            return set().union(*[self._loader_classes(e, assigned, line) for e in node.elts])
        if isinstance(node, ast.Name):
            value = _last_value(assigned, node.id, line)
            return self._loader_classes(value, assigned, line) if value is not None else set()
        if isinstance(node, ast.Call):
            name = (_dotted(node.func) or "").rsplit(".", 1)[-1]
            return {name} if name in self.scan.loaders else set()
        return set()


def _scopes(tree):
    """The module and every function: each is one scope for name lookups."""
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _nodes_in_scope(scope):
    """Nodes of ``scope`` without those of the functions nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _assignments(nodes):
    """``{name: [(line, value), ...]}`` of the plain ``name = value`` statements."""
    assigned = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append((node.lineno, node.value))
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and _constant(node.slice) == "rescale_grad"):
            assigned.setdefault(node.value.id, []).append((node.lineno, _SETS_RESCALE))
    return assigned


_SETS_RESCALE = ast.Constant(value="rescale_grad set by item assignment")


def _last_value(assigned, name, line):
    before = [(at, value) for at, value in assigned.get(name, ()) if at < line]
    return max(before, key=lambda item: item[0])[1] if before else None


def _sets_rescale_grad(value, assigned, line):
    """True / False when ``value`` (a dict) does or does not set rescale_grad; None unknown."""
    if isinstance(value, ast.Name):
        if any(v is _SETS_RESCALE for at, v in assigned.get(value.id, ()) if at < line):
            return True
        value = _last_value(assigned, value.id, line)
    if isinstance(value, ast.Dict):
        if any(key is None for key in value.keys):
            return None  # {**other}: cannot tell
        return any(_constant(key) == "rescale_grad" for key in value.keys)
    if isinstance(value, ast.Call) and _dotted(value.func) == "dict":
        if any(kw.arg == "rescale_grad" for kw in value.keywords):
            return True
        return None if value.args or any(kw.arg is None for kw in value.keywords) else False
    return None


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None


# --------------------------------------------------------------------------- rewriting
def _require_libcst():
    try:
        import libcst  # noqa: F401
    except ImportError:
        raise ImportError("--write needs libcst: pip install \"mxpatch_bind[migrate]\" "
                          "(or pip install libcst)") from None


def _rewrite_imports(path, lines):
    """Point the ``from ... import`` statements at ``lines`` to mxpatch_bind.compat, keeping
    everything else of the file byte for byte; returns the lines rewritten."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    class ImportRewriter(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self):
            super().__init__()
            self.rewritten = set()

        def leave_ImportFrom(self, original_node, updated_node):  # noqa: N802 (libcst's name)
            line = self.get_metadata(PositionProvider, original_node).start.line
            if line not in lines:
                return updated_node
            self.rewritten.add(line)
            return updated_node.with_changes(
                module=cst.Attribute(value=cst.Name("mxpatch_bind"), attr=cst.Name("compat")),
                relative=[])

    source = path.read_text(encoding="utf-8")
    rewriter = ImportRewriter()
    new = MetadataWrapper(cst.parse_module(source)).visit(rewriter)
    if rewriter.rewritten:
        path.write_text(new.code, encoding="utf-8")
    return rewriter.rewritten


if __name__ == "__main__":
    sys.exit(main())
