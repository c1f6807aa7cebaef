"""Private to ``migrate``: one scan of a tree, from files to findings.

Every file is read and parsed once (Python 3 with :mod:`ast`, Python 2 through fissix's
line-preserving view, anything else searched for its imports as text); the vendored copies
are recognised and classified; each other file is checked; then the deletions are planned
so that no copy is deleted while a file that stays imports it.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from . import daemon_threads, deletions, fork, frozen, imports, native_findings, port_findings
from . import port as py2
from .checks import (
    CHECK,
    DEFAULT_RULE,
    FORK_LOADERS,
    INSTALL_EXTRA,
    OK,
    FileChecks,
    is_per_device_loader,
)
from .files import FileProblem, lenient_text, read
from .meanings import Meanings
from .model import ImportModel

IO_ERROR = ("io-error",)  # the edit of a [check] that makes the exit status 2
IMPORTS = ("imports",)  # the edit of an import check's [check]: redone after a write
DELETE = deletions.DELETE  # the action of a copy --delete-vendored deletes
_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines as ast numbers them (``\\r\\n``, ``\\r`` and ``\\n`` end a line)."""
    return _NEWLINE.split(text)


class Copy:
    """A vendored copy: its kind, revision, freezing rule and signatures."""

    def __init__(self, rel, kind, tree):
        self.rel, self.kind = rel, kind
        self.signatures = fork.signatures(tree)
        self.revision = fork.classify(tree, kind)
        self.rule = fork.freezing_rule(tree)
        self.epoch_end_first = fork.epoch_end_first(tree)  # line, or 0
        known = fork.REVISIONS.get(self.revision.name or "", {})
        self.rescale_default = known.get("rescale_grad_default", "devices")

    def summary(self):
        """What makes this copy more than a revision compat covers, in a few words."""
        said = "; ".join(filter(None, [self.revision.note] + self.revision.differences))
        if self.revision.name is not None:
            return f"known revision {self.revision.name}: {said}"
        return said or "an abridged known revision"


class Parsed:
    """One file read and parsed: its text, its tree, and how it was read."""

    def __init__(self, entry, source, tree, view_text, python2):
        self.entry, self.source, self.tree = entry, source, tree
        self.lines = split_lines(source.text)
        self.view_text = view_text  # a Python 2 file's line-preserving view, else its text
        self.view_lines = split_lines(view_text) if python2 else self.lines
        self.python2 = python2  # None, or (reason, line) that makes it Python 2


class Scan:
    """Read ``entries`` (from :func:`files.walk`) and produce the findings."""

    def __init__(self, root, entries, finding, progress=None, absent=frozenset()):
        self.root, self.finding = root, finding
        self.out, self.files, self.unparsed, self.importers = [], {}, {}, []
        self.read_only = {e.rel: e.read_only for e in entries if e.read_only}
        for number, entry in enumerate(entries, 1):
            self._read(entry)
            if progress is not None:
                progress(number, len(entries))
        self.model = ImportModel(root, {rel: p.tree for rel, p in self.files.items()}, absent)
        for rel, parsed in self.files.items():
            self._implicit_imports(rel, parsed)
        self.copies = {}
        for rel, parsed in self.files.items():
            kind = fork.vendored_kind(parsed.tree)
            if kind is not None:
                self.copies[rel] = Copy(rel, kind, parsed.tree)
        self.loaders = set(FORK_LOADERS) | {
            node.name for parsed in self.files.values() for node in ast.walk(parsed.tree)
            if isinstance(node, ast.ClassDef) and is_per_device_loader(node)}

    # ----------------------------------------------------------------------- reading
    def _read(self, entry):
        if entry.problem is not None:
            self.add(entry.rel, 1, CHECK, entry.problem)
            return
        try:
            source = read(entry.path, entry.planned)
        except FileProblem as problem:
            self.add(entry.rel, 1, CHECK, str(problem), edit=IO_ERROR if problem.io_error
                     else None)
            self.unparsed[entry.rel] = lenient_text(entry.path)
            return
        try:
            self._parse(entry, source)
        except (RecursionError, MemoryError) as error:
            self.add(entry.rel, 1, CHECK, f"cannot analyse: {type(error).__name__} (nested too "
                                          "deeply or too large); look at it by hand")
            self.unparsed[entry.rel] = source.text

    def _parse(self, entry, source):
        try:
            tree = ast.parse(source.text, filename=str(entry.path))
        except SyntaxError as error:
            self._parse_python2(entry, source, error)
            return
        markers = py2.python2_markers(tree)
        python2 = None
        if markers:
            more = f" and {(len(markers) - 1)} more" if len(markers) > 1 else ""
            python2 = (f"{markers[0][1]} at line {markers[0][0]}{more}", markers[0][0])
        self.files[entry.rel] = Parsed(entry, source, tree, source.text, python2)

    def _parse_python2(self, entry, source, error):
        reason = f"{error.msg} at line {error.lineno or 1}"
        if not py2.available():
            self.add(entry.rel, error.lineno or 1, CHECK, f"cannot parse ({error.msg}; Python 2 "
                                                          f"code?): {INSTALL_EXTRA} (fissix) to "
                                                          "read Python 2")
            self.unparsed[entry.rel] = source.text
            return
        try:
            view = py2.analysis_text(source.text, str(entry.path))
            tree = ast.parse(view, filename=str(entry.path))
        except (py2.Python2Error, SyntaxError) as failure:
            line = getattr(failure, "lineno", None) or error.lineno or 1
            self.add(entry.rel, line, CHECK, f"cannot parse as Python 3 ({reason}) nor as Python 2 "
                                             f"({failure}): look at it by hand")
            self.unparsed[entry.rel] = source.text
            return
        self.files[entry.rel] = Parsed(entry, source, tree, view, (reason, error.lineno or 1))

    def _implicit_imports(self, rel, parsed):
        """A file that reads as Python 3 but relies on Python 2's implicit relative imports
        (``import sibling`` in a package's ``__init__.py``) is Python 2 code too."""
        found = self.model.implicit_imports(rel, parsed.tree)
        if found and parsed.python2 is None:
            line, what = found[0]
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            parsed.python2 = (f"implicit relative import '{what}' at line {line}{more}", line)

    # ----------------------------------------------------------------------- findings
    def add(self, rel, line, action, message, edit=None, needs=()):
        if edit not in (None, IO_ERROR, IMPORTS, ("delete",)) and rel in self.read_only:
            action, message, edit = CHECK, f"{message}; but {self.read_only[rel]}", None
        self.out.append(self.finding(str(rel), line, action, message, edit, needs))

    def findings(self):
        # the copies too: a copy that stays (kept, or not deleted) is ported like any file
        self.meanings = Meanings(self.model, dict(self.files))
        for rel, parsed in self.files.items():
            try:
                if rel in self.copies:  # the fork itself: nothing in it uses the fork
                    port_findings.copy_file(self, rel, parsed)
                    port_findings.decided_later(self, rel, parsed)
                    continue
                FileChecks(self, rel, parsed.tree, parsed.lines, parsed.view_lines).run()
                if parsed.python2 is not None:
                    port_findings.python2_file(self, rel, parsed)
                else:
                    port_findings.python3_file(self, rel, parsed)
                port_findings.decided_later(self, rel, parsed)
            except (RecursionError, MemoryError) as error:
                self.add(rel, 1, CHECK, f"cannot analyse: {type(error).__name__}; look at it by "
                                        "hand")
        self._frozen_findings()
        deletions.plan(self)
        native_findings.operator_findings(self)
        native_findings.extension_findings(self)
        daemon_threads.findings(self)
        self.import_findings()
        return sorted(self.out, key=lambda f: (f.path, f.line, f.action, f.message))

    def import_findings(self):
        """A ``[check]`` for each import that does not resolve as the repository runs (the
        files still Python 2 are checked once ported); returns them."""
        start = len(self.out)
        # an import --write points at mxpatch_bind.compat is the rewrite's to report
        rewritten = {(f.path, f.line) for f in self.out if f.action == "rewrite"}
        for rel, parsed in sorted(self.files.items()):
            if parsed.python2 is not None or rel in self.copies:
                continue  # a copy is deleted, or kept and reported as it is
            for line, message in imports.unresolved(self.model, rel, parsed.tree):
                if (str(rel), line) not in rewritten:
                    self.add(rel, line, CHECK, message, edit=IMPORTS)
        return self.out[start:]

    # ----------------------------------------------------------------------- frozen sets
    def _frozen_findings(self):
        """For each copy, what its rule froze of the repo's symbols for each FIXED_PARAMS
        list of its sub-project, against compat's default rule, and the prefixes that
        freeze nothing."""
        copies = [(rel, c) for rel, c in sorted(self.copies.items()) if c.rule[0] in frozen.RULES]
        if not copies:
            return
        trees = {rel: p.tree for rel, p in self.files.items() if rel not in self.copies}
        lists = frozen.prefix_lists(self.root, trees)
        for rel, copy in copies:
            names = frozen.symbol_parameters(
                {r: trees[r] for r in frozen.in_subproject(list(trees), rel)})
            mine = set(frozen.in_subproject([found.where.rsplit(":", 1)[0] for found in lists],
                                            rel))
            for found in lists:
                if names and found.where.rsplit(":", 1)[0] in mine:
                    self._frozen_finding(rel, copy.rule, names, found)

    def _frozen_finding(self, rel, rule_at, names, found):
        rule, line = rule_at[0], rule_at[1] or 1
        own = frozen.frozen(names, found.prefixes, rule)
        default = frozen.frozen(names, found.prefixes, DEFAULT_RULE)
        dead = frozen.dead_prefixes(names, found.prefixes, rule)
        more = f" and {(found.count - 1)} more configs" if found.count > 1 else ""
        listed = f"FIXED_PARAMS {list(found.prefixes)} ({found.where}{more})"
        if rule != DEFAULT_RULE and own != default:
            extra = sorted(default - own)
            self.add(rel, line, OK, f'{listed}: this copy\'s {rule} rule froze {len(own)} of the '
                                    f'{len(names)} arguments the repo\'s symbols name; compat\'s '
                                    f'default substring rule would freeze {len(default)} ('
                                    f'{len(extra)} more, e.g. {", ".join(extra[:4])}): the '
                                    f'constructions get fixed_param_rule={rule!r}, which keeps the '
                                    f'{len(own)}')
        if dead:
            also = (("; by substring they would freeze "
                    f"{len(frozen.frozen(names, dead, DEFAULT_RULE))} more") if rule != DEFAULT_RULE
                    else "")
            self.add(rel, line, CHECK, f'{listed}: under this copy\'s {rule} rule '
                                       f'{", ".join(map(repr, dead))} freeze nothing of the '
                                       f'repo\'s symbols, probably not what was meant{also}')

    def resolve(self, rel, module, level):
        """The vendored copy an import refers to, or None (by sys.path-like lookup: the
        importing file's directory and its parents, as the fork's scripts set it up)."""
        parts = module.split(".") if module else []
        if not parts:
            return None
        directory = PurePosixPath(rel).parent
        if level:
            bases = [directory] if level == 1 else list(directory.parents)[level - 2:level - 1]
        else:
            bases = [directory, *directory.parents]
        for base in bases:
            candidate = base.joinpath(*parts).with_suffix(".py")
            if candidate in self.copies:
                return candidate
        return None
