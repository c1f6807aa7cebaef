"""The ``migrate`` command: scan, apply, report (the public functions of
:mod:`mxpatch_bind.migrate`, which re-exports them)."""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import namedtuple
from pathlib import Path
from typing import Callable

from .._cli_types import Parser, UsageError, run_parsed
from . import (
    contexts,
    daemon_threads,
    edits,
    extensions,
    files,
    fork_fixes,
    operators,
    traps,
    writes,
)
from . import port as py2
from .checks import CHECK, COMPAT_MODULE, INSTALL_EXTRA, OK, PORT, REWRITE
from .edits import parses_as_python3
from .fork import VENDORED_GROUP, VENDORED_MODULE
from .fork import vendored_kind as _vendored_kind
from .scanner import DELETE, IMPORTS, IO_ERROR, Scan
from .writes import DELETED, PORTED, REWRITTEN

__all__ = ["Finding", "scan", "apply", "check_imports", "build_extensions", "summary",
           "vendored_kind", "add_arguments", "run", "main"]

# What a finding asks for. Pending REWRITE / DELETE / PORT and every CHECK make the exit 1.
_PENDING = (REWRITE, DELETE, PORT, CHECK)
_UNDONE = {done: pending for pending, done in writes.DONE.items()}
__all__ += ["VENDORED_MODULE", "VENDORED_GROUP", "COMPAT_MODULE"]


class Finding(namedtuple("Finding", ["path", "line", "action", "message", "edit", "needs"],
                         defaults=(None, ()))):
    """One report line: ``path:line: [action] message``.

    ``path`` is relative to the scanned directory, with ``/`` separators; ``action`` is
    ``'rewrite'`` / ``'delete'`` / ``'port'`` (``--write`` / ``--delete-vendored`` /
    ``--to-python3`` do it), ``'rewritten'`` / ``'deleted'`` / ``'ported'`` (done by this
    run), ``'check'`` (a person has to look) or ``'ok'`` (handled by
    :mod:`mxpatch_bind.compat`, reported so nothing is silent). ``edit`` is what
    :func:`apply` does for it, and ``needs`` the ``(path, line)`` of the rewrites that must
    be done before a deletion; neither is printed.

    Examples
    --------
    >>> from mxpatch_bind.migrate import Finding
    >>> str(Finding('train.py', 3, 'check', 'optimizer_params without rescale_grad'))
    'train.py:3: [check] optimizer_params without rescale_grad'
    """

    __slots__ = ()

    def __str__(self):
        return f"{self.path}:{self.line}: [{self.action}] {self.message}"


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
    return _vendored_kind(tree)


# --------------------------------------------------------------------------- public API
def scan(path: str | os.PathLike,
         progress: Callable[[int, int], None] | None = None) -> list[Finding]:
    """Every finding for the Python files under ``path`` (a directory or one file).

    Parameters
    ----------
    path : str or path-like
    progress : callable, optional
        Called as ``progress(files_read, files_in_all)`` after each file.

    Returns
    -------
    list of Finding
        Sorted by path and line. A file that cannot be read or parsed is one ``'check'``.

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
    root, entries = files.walk(Path(path))
    return Scan(root, entries, Finding, progress).findings()


def apply(path: str | os.PathLike, findings: list[Finding], *, write: bool = False,
          delete_vendored: bool = False, to_python3: bool = False,
          preview: Callable[[str], None] | None = None) -> list[Finding]:
    """Carry out the pending rewrites, ports and deletions that the flags ask for.

    Every file's new content and every deletion are worked out first, in memory; then each
    file is written atomically (a temporary file beside it, flushed, renamed over it, its
    mode kept); a file that cannot be edited or written stays exactly as it was and becomes
    one ``'check'``, and the others go on. A vendored copy is deleted only once every import
    of it has been rewritten, and none is deleted after a failed write.

    Parameters
    ----------
    path : str or path-like
        The directory (or file) that was scanned.
    findings : list of Finding
        What :func:`scan` returned for it.
    write, delete_vendored, to_python3 : bool
        Default ``False``: with none of them, nothing is written.
    preview : callable, optional
        Given, nothing is written: it is called with each file's patch instead, in the form
        ``git apply`` and ``patch -p1`` take (deletions included; a byte that is not UTF-8
        is decoded with ``surrogateescape``: ``text.encode('utf-8', 'surrogateescape')`` is
        the patch's bytes).

    Returns
    -------
    list of Finding
        ``findings`` with what was done marked ``'rewritten'`` / ``'deleted'`` /
        ``'ported'`` (with ``preview``: still pending), what failed turned into ``'check'``,
        and the 2to3 fixers' warnings.

    Raises
    ------
    ImportError
        ``write`` without libcst, or ``to_python3`` without fissix
        (the ``migrate`` extra: ``pip install ".[migrate]"`` in a checkout), before any file
        is touched.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from mxpatch_bind.migrate import apply, scan
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / 'old.py').write_text("print 'hello'\\n")
    >>> [f.action for f in apply(root, scan(root), to_python3=True)]
    ['ported']
    >>> (root / 'old.py').read_text()
    "print('hello')\\n"
    """
    _require(write, to_python3)
    planned = _plan(path, findings, write=write, delete_vendored=delete_vendored,
                    to_python3=to_python3)
    if preview is not None:
        for _, patch in planned.patch():
            preview(patch.decode("utf-8", "surrogateescape"))
        return [f._replace(action=_UNDONE.get(f.action, f.action)) for f in planned.findings]
    planned.commit()
    return planned.findings


def _plan(path, findings, *, write, delete_vendored, to_python3):
    root, entries = files.walk(Path(path), (".py", ".pyx"))
    return writes.plan(root, entries, findings, lambda f: _wanted(f, write, to_python3),
                       delete_vendored, _edited, Finding)


def _require(write, to_python3):
    if write:
        try:
            import libcst  # noqa: F401
        except ImportError:
            raise ImportError("--write needs libcst: " + INSTALL_EXTRA + " "
                              "(or pip install libcst)") from None
    if to_python3 and not py2.available():
        raise ImportError("--to-python3 needs fissix: " + INSTALL_EXTRA + " "
                          "(or pip install fissix)")


def _wanted(finding, write, to_python3):
    return ((finding.action == REWRITE and write and finding.edit is not None)
            or (finding.action == PORT and to_python3))


def _edited(text, chosen, filename):
    """(new text, the edit keys made, 2to3 warnings) for one file's chosen findings."""
    keywords = [f.edit for f in chosen if f.edit[0] == "keyword"]
    imports = {f.edit[1:] for f in chosen if f.edit[0] == "import"}
    imports |= {k[4][1:] for k in keywords}  # a keyword is made only with its import
    made = set()
    new = text
    if keywords:
        new = edits.insert_keywords(new, edits.keyword_insertions(keywords))
    if imports:
        lines_of = {(line, level, module) for line, level, module in imports}
        new, rewritten = edits.rewrite_imports(new, lines_of, filename)
        made |= {("import",) + key for key in rewritten}
        if keywords and any(k[4][1:] not in rewritten for k in keywords):
            # the construction would call the vendored class with compat's keyword: redo
            kept = [k for k in keywords if k[4][1:] in rewritten]
            new = edits.insert_keywords(text, edits.keyword_insertions(kept))
            new, rewritten = edits.rewrite_imports(new, lines_of, filename)
            keywords = kept
        made |= set(keywords)
    warnings = []
    ports = [f.edit for f in chosen if f.edit[0] == "port"]
    if ports:
        local = ports[0][2] if len(ports[0]) > 2 else ()
        meaning = ports[0][3] if len(ports[0]) > 3 else traps.Meaning(python2=True)
        new, warnings = edits.port(new, filename, frozenset(local))
        new = traps.fix(new, meaning)[0]
        made.add(("port",))
    for edit in {f.edit for f in chosen if f.edit[0] == "traps"}:
        new = traps.fix(new, edit[1])[0]
        made.add(edit)
    forks = {f.edit for f in chosen if f.edit[0] == "fork"}
    if forks and parses_as_python3(new):
        new, kinds = fork_fixes.fix(new)
        made |= {edit for edit in forks if edit[1] in kinds}
    for edit in {f.edit for f in chosen if f.edit[0] == "guard"}:
        new = extensions.guard_import(new, set(edit[1]))[0]
        made.add(edit)
    for edit in {f.edit for f in chosen if f.edit[0] == "context"}:
        new = contexts.choose_by_context(new, dict(edit[1]))
        made.add(edit)
    if any(f.edit[0] == "compat-op" for f in chosen):
        if parses_as_python3(new):
            new = operators.use_compat(new)
            made.add(("compat-op",))
    if any(f.edit[0] == "exit-threads" for f in chosen):
        new, stops = daemon_threads.add_stops(new)
        made |= {("exit-threads",)} if stops else set()
    if any(f.edit[0] == "pyx" for f in chosen):
        new = extensions.port_pyx(new)[0]
        made.add(("pyx",))
    return new, made, warnings


def check_imports(path: str | os.PathLike) -> list[Finding]:
    """A ``'check'`` for each import under ``path`` that does not resolve as the repository
    runs: not a module of the tree (its scripts' folders and the folders they put on
    ``sys.path``), one of its extensions, the standard library or an installed package.

    Files still Python 2 are left out (their imports are checked once ported).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from mxpatch_bind.migrate import check_imports
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / 'train.py').write_text("import os\\nfrom . import helpers\\n")
    >>> [(f.line, f.action) for f in check_imports(root)]
    [(2, 'check')]
    """
    return _import_check(path)


def _import_check(path, planned=None):
    """:func:`check_imports`, of the tree as ``planned`` (a :class:`writes.Plan`) leaves it."""
    root, entries = files.walk(Path(path))
    if planned is None:
        scanned = Scan(root, entries, Finding)
    else:
        scanned = Scan(root, planned.planned(entries), Finding, absent=planned.absent)
    return sorted(scanned.import_findings(), key=lambda f: (f.path, f.line, f.message))


def build_extensions(path: str | os.PathLike, cuda: bool = True,
                     stream=None) -> list[Finding]:
    """Build the compiled extensions of the tree at ``path`` in place; one ``'ok'`` finding
    per extension built or skipped (CUDA ones without nvcc, or with ``cuda=False``), one
    ``'check'`` per failed build, whose compiler output goes to ``stream`` (default:
    standard error).

    Needs Cython and NumPy (``pip install cython "numpy<1.24"``) and a C compiler.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from mxpatch_bind.migrate import build_extensions
    >>> build_extensions(pathlib.Path(tempfile.mkdtemp()))  # no setup*.py: nothing to build
    []
    """
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    stream = sys.stderr if stream is None else stream
    found = []
    for built in extensions.build(root, cuda=cuda):
        setup = built.ext.setup.relative_to(root).as_posix()
        where = f"{built.ext.folder.relative_to(root).as_posix()}/{built.ext.name}"
        if built.status == "failed":
            stream.write(f"migrate: building {where} ({setup}) failed:\n{built.detail}\n")
            found.append(Finding(setup, 1, CHECK, f"extension {where} failed to build: "
                                                  f"{(built.detail.splitlines() or [''])[-1]}"))
        else:
            found.append(Finding(setup, 1, OK, f"extension {where}: {built.status}"
                                               + (f" ({built.detail})" if built.detail else "")))
    return found


def summary(findings: list[Finding]) -> str:
    """The one-line summary that ends the report.

    Examples
    --------
    >>> from mxpatch_bind.migrate import Finding, summary
    >>> summary([Finding('a.py', 1, 'ok', 'x'), Finding('b.py', 2, 'check', 'y')])
    'migrate: 2 findings in 2 files: 1 to check by hand, 1 handled by mxpatch_bind.compat'
    """
    words = {REWRITE: "to rewrite (--write)", DELETE: "to delete (--delete-vendored)",
             PORT: "to port (--to-python3)", REWRITTEN: "rewritten", DELETED: "deleted",
             PORTED: "ported", CHECK: "to check by hand", OK: "handled by mxpatch_bind.compat"}
    counts = {action: sum(f.action == action for f in findings) for action in words}
    parts = [f"{counts[a]} {words[a]}" for a in words if counts[a]]
    count = len({f.path for f in findings})
    head = (f'migrate: {len(findings)} finding{"" if len(findings) == 1 else "s"} in {count} file'
           f'{"" if count == 1 else "s"}')
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
                             "mxpatch_bind.compat, and write each copy's freezing rule "
                             "where it is not compat's default (needs libcst; fissix for "
                             "Python 2 files)")
    parser.add_argument("--delete-vendored", action="store_true",
                        help="delete the vendored copies of the fork's module.py and "
                             "DataParallelExecutorGroup.py that nothing else imports and "
                             "that mxpatch_bind.compat covers")
    parser.add_argument("--to-python3", action="store_true",
                        help="port Python 2 files with the standard 2to3 fixers (needs "
                             "fissix) and report what they cannot do")
    parser.add_argument("--check-imports", action="store_true",
                        help="report only the imports that do not resolve as the repository "
                             "runs (and the Python 2 files, checked once ported); every run "
                             "checks them after its writes, and exits 0 only when all resolve")
    parser.add_argument("--build-ext", nargs="?", const="auto", choices=["auto", "cpu"],
                        help="then build the tree's compiled extensions in place (every "
                             "Extension of its setup*.py: the CPU ones with Cython and NumPy's "
                             "headers; the CUDA ones where nvcc is, unless --build-ext=cpu); a "
                             "failed build is a [check], the compiler's last lines on stderr")
    parser.add_argument("--diff", action="store_true",
                        help="print what --write / --to-python3 / --delete-vendored would "
                             "change as a patch on stdout (git apply or patch -p1 makes the "
                             "same writes; the report goes to stderr), and write nothing")


def run(args: argparse.Namespace) -> int:
    """Scan, plan what ``args`` asks for, print the report, then write; returns the exit
    status.

    The whole report, the import check of the tree as the writes will leave it included,
    is printed and flushed before the first write; a write that then fails adds one
    ``[check]`` line, and ``--build-ext``'s lines (the builds need the writes) follow with
    a summary of everything. With ``--diff`` the report goes to stderr and stdout carries
    the patch alone.

    0: nothing left to do; 1: something is (a pending change or a finding a person has to
    look at); 2: a usage or I/O error (a file that could not be read, written or deleted).
    """
    if not os.path.lexists(args.path):
        raise UsageError(f"no such file or directory: {args.path!r}")
    try:
        _require(args.write, args.to_python3)
    except ImportError as error:
        raise UsageError(str(error)) from None
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    findings = scan(args.path, progress=progress)
    if progress is not None:
        progress.done()
    if args.check_imports:
        findings = [f for f in findings if f.edit == IMPORTS or f.action == PORT]
    planned = _plan(args.path, findings, write=args.write, delete_vendored=args.delete_vendored,
                    to_python3=args.to_python3)
    if args.diff:  # the report on stderr, the patch alone on stdout; builds are writes too
        findings = [f._replace(action=_UNDONE.get(f.action, f.action)) for f in planned.findings]
        _report(findings, sys.stderr)
        _print_patch(planned)
        return _status(findings)
    findings = planned.findings
    if any(f.action in writes.DONE.values() for f in findings):
        findings = [f for f in findings if f.edit != IMPORTS] + _import_check(args.path, planned)
    _report(findings, sys.stdout)  # all of it before the first write
    failed = {id(before): after for before, after in planned.commit()}
    findings = [failed.get(id(f), f) for f in findings]
    for line in sorted(failed.values(), key=_order):
        print(line, flush=True)
    if args.build_ext:
        built = build_extensions(args.path, cuda=args.build_ext == "auto")
        findings += built
        _report(findings, sys.stdout, only=built)  # they need the writes: their lines follow
    return _status(findings)


def _order(finding):
    return finding.path, finding.line, finding.action, finding.message


def _report(findings, stream, only=None):
    """Print ``only`` (default: all the findings), sorted, then the summary of ``findings``."""
    for finding in sorted(findings if only is None else only, key=_order):
        print(finding, file=stream)
    print(summary(findings), file=stream, flush=True)


def _status(findings):
    if any(f.edit == IO_ERROR for f in findings):
        return 2
    return 1 if any(f.action in _PENDING for f in findings) else 0


def _print_patch(planned):
    out = getattr(sys.stdout, "buffer", None)  # the files' own bytes, whatever the encoding
    sys.stdout.flush()
    for _, patch in planned.patch():
        if out is None:
            sys.stdout.write(patch.decode("utf-8", "surrogateescape"))
        else:
            out.write(patch)
    (sys.stdout if out is None else out).flush()


class _Progress:
    """``migrate: read 120/450 files`` on one terminal line, redrawn at most 10 times a
    second (a large tree takes minutes; a silent terminal looks hung)."""

    def __init__(self, stream):
        self.stream, self.shown_at = stream, 0.0

    def __call__(self, number, total):
        import time

        now = time.monotonic()
        if now - self.shown_at >= 0.1 or number == total:
            self.shown_at = now
            self.stream.write(f"\x0dmigrate: read {number}/{total} files")
            self.stream.flush()

    def done(self):
        self.stream.write("\r\033[K")
        self.stream.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m mxpatch_bind.migrate PATH [--write] [--delete-vendored] [--to-python3]
    [--diff]``.

    Returns 0 when nothing is left to do, 1 when something is, 2 on a usage or I/O error.
    """
    parser = Parser(
        prog="python -m mxpatch_bind migrate",
        description="Report (and with --write / --delete-vendored / --to-python3, fix) what "
                    "a Deformable-ConvNets-based codebase needs to run on Python 3 and "
                    "stock MXNet.")
    add_arguments(parser)
    return run_parsed(parser, argv, run)
