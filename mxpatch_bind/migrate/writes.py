"""Private to ``migrate``: a run's writes, planned in memory, shown, then made.

:func:`plan` works out every file's new bytes and every deletion without touching the tree,
and marks the findings as they will be (``'rewritten'``, ``'ported'``, ``'deleted'``), so
that the report, the import check of the tree as it will be (:meth:`Plan.planned`) and
``--diff``'s patch (:meth:`Plan.patch`) all come before the first write;
:meth:`Plan.commit` then makes them, each file atomically, and hands back the findings whose
write failed. A vendored copy is deleted only once every rewrite of an import of it is
planned, and only when every write was made.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from . import edits, files
from .checks import CHECK, PORT, REWRITE
from .patch import file_patch
from .scanner import DELETE, IO_ERROR
from .textedit import EditConflict

REWRITTEN, DELETED, PORTED = "rewritten", "deleted", "ported"
DONE = {REWRITE: REWRITTEN, DELETE: DELETED, PORT: PORTED}


@dataclass
class Write:
    """One file's planned write: its bytes before and after, and the findings it does."""

    path: Path
    old: bytes
    new: bytes
    carries: list[int]  # indexes into Plan.findings


@dataclass
class Deletion:
    """One planned deletion: what the file holds (for the patch), and its finding."""

    path: Path
    old: bytes
    mode: int
    carries: int


class Plan:
    """What a run writes and deletes, and its findings marked as they will be."""

    def __init__(self, root: Path, findings: list):
        self.root = root
        self.findings = list(findings)
        self.writes: dict[str, Write] = {}
        self.deletions: dict[str, Deletion] = {}
        self.done: set[tuple[str, int]] = set()  # (path, line) of each finding done

    def planned(self, entries: list[files.Entry]) -> list[files.Entry]:
        """``entries`` (from :func:`files.walk`) as the tree will be: the deleted ones left
        out, the written ones carrying their new bytes."""
        return [dataclasses.replace(e, planned=self.writes[str(e.rel)].new)
                if str(e.rel) in self.writes else e
                for e in entries if str(e.rel) not in self.deletions]

    @property
    def absent(self) -> frozenset:
        """The files to be deleted, relative to the root."""
        return frozenset(PurePosixPath(rel) for rel in self.deletions)

    def patch(self) -> Iterator[tuple[str, bytes]]:
        """``(path, patch)`` for each file the run changes: the writes, then the deletions."""
        for rel, write in sorted(self.writes.items()):
            yield rel, file_patch(rel, write.old, write.new, 0)  # a change keeps the mode
        for rel, deletion in self.deletions.items():
            yield rel, file_patch(rel, deletion.old, None, deletion.mode)

    def commit(self) -> list[tuple]:
        """Make the writes, then the deletions; returns ``(finding as planned, finding as it
        ended)`` for each finding a failure turned into a ``'check'``.

        After a failed write no copy is deleted: the file not written may import one, and a
        copy kept for it keeps what it imports (the deletions were planned for a tree with
        every write made)."""
        changed, unwritten = [], []
        for rel in sorted(self.writes):
            write = self.writes[rel]
            try:
                files.write_atomically(write.path, write.new)
            except files.FileProblem as problem:
                unwritten.append(rel)
                changed += [self._failed(index, IO_ERROR, str(problem))
                            for index in write.carries]
        for deletion in self.deletions.values():
            try:
                if unwritten:
                    more = f" and {len(unwritten) - 3} more" if len(unwritten) > 3 else ""
                    raise files.FileProblem(f"not deleted: the write of "
                                            f"{', '.join(unwritten[:3])}{more} failed")
                files.delete(deletion.path)
            except files.FileProblem as problem:
                changed.append(self._failed(deletion.carries, IO_ERROR if problem.io_error
                                            else None, str(problem)))
        return changed

    def _failed(self, index, edit, why):
        before = self.findings[index]
        self.findings[index] = before._replace(action=CHECK, edit=edit,
                                               message=f"{before.message}; {why}")
        return before, self.findings[index]


def plan(root: Path, entries: list[files.Entry], findings: list,
         wanted: Callable, delete_vendored: bool, edited: Callable, finding: type) -> Plan:
    """The plan for ``findings``: the edits of those ``wanted(finding)`` picks, made by
    ``edited(text, findings, filename) -> (new text, edit keys made, 2to3 warnings)``, and
    with ``delete_vendored`` the deletions they allow; ``finding`` builds a warning's line."""
    planned = Plan(root, findings)
    by_path = {str(e.rel): e for e in entries}
    # a copy's own edits (its port) wait until its deletion is decided: a deleted copy is
    # neither ported nor reported as such
    copies = {f.path for f in findings if f.action == DELETE} if delete_vendored else set()
    paths = sorted({f.path for f in findings if wanted(f)})
    for rel in [p for p in paths if p not in copies]:
        _plan_file(planned, by_path.get(rel), rel, _chosen(planned, rel, wanted), edited,
                   finding)
    if delete_vendored:
        _plan_deletions(planned)
    moot = []
    for rel in [p for p in paths if p in copies]:
        if rel in planned.deletions:
            moot += _chosen(planned, rel, wanted)
        else:
            _plan_file(planned, by_path.get(rel), rel, _chosen(planned, rel, wanted), edited,
                       finding)
    _drop(planned, set(moot))
    return planned


def _chosen(planned, rel, wanted):
    return [i for i, f in enumerate(planned.findings) if f.path == rel and wanted(f)]


def _drop(planned, indexes):
    """Leave the findings at ``indexes`` out of ``planned`` (the edits of a deleted copy),
    keeping what the writes and deletions carry pointed at the same findings."""
    if not indexes:
        return
    kept = [i for i in range(len(planned.findings)) if i not in indexes]
    moved = {old: new for new, old in enumerate(kept)}
    planned.findings = [planned.findings[i] for i in kept]
    for write in planned.writes.values():
        write.carries = [moved[i] for i in write.carries]
    for deletion in planned.deletions.values():
        deletion.carries = moved[deletion.carries]


def _plan_file(planned, entry, rel, chosen, edited, finding):
    """The chosen findings' edits in one file, as one write."""
    result = planned.findings
    try:
        if entry is None or entry.problem or entry.read_only:
            raise files.FileProblem("not written: %s" % (
                (entry and (entry.problem or entry.read_only)) or "no longer there"))
        old = files.read_bytes(entry.path)
        source = files.decode(old)
        new_text, made, warnings = edited(source.text, [result[i] for i in chosen],
                                          str(entry.path))
        new = source.encode(new_text) if new_text != source.text else old
    except (files.FileProblem, edits.EditError, EditConflict, RecursionError, MemoryError,
            UnicodeEncodeError) as problem:
        io_error = getattr(problem, "io_error", False)
        for i in chosen:
            result[i] = result[i]._replace(action=CHECK, edit=IO_ERROR if io_error else None,
                                           message=f"{result[i].message}; {_problem_text(problem)}")
        return
    carries = []
    for i in chosen:
        if _key(result[i]) in made:
            result[i] = result[i]._replace(action=DONE[result[i].action])
            planned.done.add((result[i].path, result[i].line))
            carries.append(i)
        else:
            result[i] = result[i]._replace(action=CHECK, message=result[i].message
                                           + "; not done: the statement was not found as read")
    if new != old:
        planned.writes[rel] = Write(entry.path, old, new, carries)
    result += [finding(rel, line, CHECK, f"2to3: {text}") for line, text in warnings]


def _plan_deletions(planned):
    for i, finding in enumerate(planned.findings):
        if finding.action != DELETE:
            continue
        missing = [need for need in finding.needs if tuple(need) not in planned.done]
        if missing:
            importers = ", ".join(f"{rel}:{line}" for rel, line in missing)
            planned.findings[i] = finding._replace(
                action=CHECK, message=f"{finding.message}; not deleted: still imported by "
                                      f"{importers} (its import is not rewritten: --write)")
            continue
        path = Path(planned.root) / finding.path
        try:
            old, mode = files.content(path)
        except files.FileProblem as problem:
            planned.findings[i] = finding._replace(action=CHECK, edit=IO_ERROR,
                                                   message=f"{finding.message}; {problem}")
            continue
        planned.deletions[finding.path] = Deletion(path, old, mode, i)
        planned.findings[i] = finding._replace(action=DELETED)


def _problem_text(problem):
    if isinstance(problem, (RecursionError, MemoryError)):
        return f"not written: {type(problem).__name__} while editing"
    return str(problem)


def _key(finding):
    return finding.edit if finding.edit[0] != "port" else ("port",)
