"""Private to ``migrate``: which vendored copies ``--delete-vendored`` deletes, and what keeps
the others.

A copy that compat covers is deleted unless something that stays may load it: an import that
``--write`` does not rewrite, a load by name or by path (:mod:`loads`), a computed name in the
folder that holds the copy's package, or a file other than a ``.py`` module that imports it or
names it (a notebook, a script, a configuration, Cython: :mod:`mentions`). Each such place is a
``[check]`` at ``file:line`` (in a notebook: the JSON line that holds the cell's line, the cell
and its line named in the message), and the copy's own finding says it is kept and by what.
A kept copy keeps what it imports in turn.

How a name or path is matched to a copy:

* a module name, as an import in that file finds it (:meth:`Scan.resolve`: the file's folder
  and the folders above it);
* a path, against the folders a program may run from (the file's folder and those above it);
  failing that, or where only its end is known (``$ROOT/core/module.py``), by its last parts
  (two or more), preferring the copies of the file's own sub-project (``experiments/rfcn/``
  belongs to ``rfcn/``); a file name alone (``module.py``) only beside the file or above it;
* a dotted name a text mentions (``python -m core.module``, ``'core.module.MutableModule'``),
  as an import finds it, else by its last parts as a path is.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from . import imports, mentions
from .checks import CHECK, COMPAT_MODULE, DROP_INS
from .loads import ABSOLUTE, RELATIVE, python_loads

DELETE = "delete"
# A last resort for a file that parses as neither Python 3 nor Python 2: its import lines.
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import\b"
                          r"|import[ \t]+([\w.]+))", re.M)
_INSTEAD = f"import {' / '.join(DROP_INS)} from {COMPAT_MODULE} instead, by hand"


@dataclass(frozen=True)
class Use:
    """A place that may load ``copy``: ``where:line`` (``note``: where in a notebook), the
    rewrite that removes it (``key``) or None, and what it does (``how``: None for an import
    statement of a ``.py`` module)."""

    where: PurePosixPath
    line: int
    copy: PurePosixPath
    key: tuple | None = None
    how: str | None = None
    kind: str = "import"
    words: str = ""  # what kind of file, for a file that is not a .py module
    note: str = ""

    @property
    def place(self) -> str:
        return f"{self.where}:{self.line}" + (f" ({self.note})" if self.note else "")


def plan(scan) -> None:
    """Add each copy's finding (deleted, or kept and why) and a ``[check]`` at each place that
    keeps a copy compat covers, to ``scan``."""
    uses = _uses(scan)
    deletable = {rel for rel, copy in scan.copies.items() if copy.revision.covered}
    changed = True
    while changed:  # a kept copy's own imports keep what it imports
        changed = False
        for use in uses:
            if use.copy in deletable and use.where not in deletable and use.key is None:
                deletable.discard(use.copy)
                changed = True
    blockers: dict = {}
    for use in uses:
        if use.where not in deletable and use.key is None:
            blockers.setdefault(use.copy, []).append(use)
    for rel, copy in sorted(scan.copies.items()):
        _copy_finding(scan, rel, copy, rel in deletable, blockers.get(rel, []), uses)
    _place_findings(scan, uses)


# --------------------------------------------------------------------------- uses
def _uses(scan) -> list[Use]:
    rewrites = {(f.path, f.line): f.edit for f in scan.out
                if f.action == "rewrite" and f.edit and f.edit[0] == "import"}
    found = []
    sources = [(rel, _tree_imports(p.tree)) for rel, p in scan.files.items()]
    sources += [(rel, _text_imports(text)) for rel, text in scan.unparsed.items()]
    for rel, named in sources:
        for line, level, module in named:
            target = scan.resolve(rel, module, level)
            if target is not None and target != rel:
                found.append(Use(rel, line, target, rewrites.get((str(rel), line))))
    if not scan.copies:
        return found
    stems = {copy.stem for copy in scan.copies}
    for rel, parsed in scan.files.items():
        file_path = str((scan.root / rel).resolve())
        found += _loads_uses(scan, rel, python_loads(parsed.tree, file_path, stems))
    for rel, text in scan.unparsed.items():
        found += _loads_uses(scan, rel, mentions.mention_loads(text, stems))
    for place in mentions.places(scan.root, stems):
        found += _loads_uses(scan, place.rel, [place.load], place.words, place.note, place.line)
    loading = {(u.where, u.line, u.note) for u in found if u.kind != "mention"}
    # a line that loads a copy also names it (a .pyx's import): the load says it
    return [u for u in found if u.kind != "mention" or (u.where, u.line, u.note) not in loading]


def _loads_uses(scan, rel, loads, words="", note="", line=None):
    """The uses of ``loads`` found in ``rel`` (at ``line`` where the file's line is not the
    load's own: a notebook's)."""
    found = []
    for load in loads:
        kind = "computed" if load.computed else load.kind
        found += [Use(PurePosixPath(rel), line or load.line, copy, None, load.how, kind, words,
                      note) for copy in sorted(_targets(scan, rel, load)) if copy != rel]
    return found


def _targets(scan, rel, load) -> set:
    """The copies ``load`` (found in ``rel``) may load."""
    found = set()
    for level, module in load.names:
        target = scan.resolve(rel, module, level)
        if target is not None:
            found.add(target)
    for path in load.paths:
        found |= _by_path(scan, rel, path)
    for dotted in load.dotted:
        target = scan.resolve(rel, dotted, 0)
        found |= {target} if target is not None else _by_parts(
            scan, rel, dotted.split(".")[:-1] + [dotted.split(".")[-1] + ".py"])
    if load.computed:
        found |= {copy for copy in scan.copies if _near(rel, copy)}
    return found


def _by_path(scan, rel, value) -> set:
    """The copies a path found in ``rel`` may name (see the module's documentation)."""
    text = posixpath.normpath(value.text) if value.text else ""
    if value.anchor == ABSOLUTE:
        root = str(scan.root.resolve())
        if text.startswith(root + "/"):
            return {PurePosixPath(text[len(root) + 1:])} & set(scan.copies)
        return _by_parts(scan, rel, text.strip("/").split("/"))
    if value.anchor == RELATIVE:
        folder = PurePosixPath(rel).parent
        found = {PurePosixPath(posixpath.normpath(str(base / text)))
                 for base in (folder, *folder.parents)} & set(scan.copies)
        parts = [p for p in text.split("/") if p not in ("", ".", "..")]
        return found or (_by_parts(scan, rel, parts) if len(parts) > 1 else set())
    if value.text.startswith("/"):  # a tail whose parts are whole
        return _by_parts(scan, rel, value.text.strip("/").split("/"))
    if "/" not in value.text:
        return {copy for copy in scan.copies if _near(rel, copy)}  # its file name unknown
    return set(_in_subproject(rel, [c for c in scan.copies if str(c).endswith(value.text)]))


def _by_parts(scan, rel, parts) -> set:
    """The copies whose path ends with ``parts`` (two or more; a file name alone: only the
    copies near ``rel``), those of ``rel``'s sub-project where there are any."""
    parts = [p for p in parts if p]
    matching = [c for c in scan.copies if len(c.parts) >= len(parts)
                and list(c.parts[-len(parts):]) == parts]
    if len(parts) < 2:
        return {c for c in matching if _near(rel, c)}
    return set(_in_subproject(rel, matching))


def _in_subproject(rel, copies):
    """The copies whose top folder is a folder of ``rel``'s path, or all where none is."""
    folders = PurePosixPath(rel).parts[:-1]
    mine = [c for c in copies if len(c.parts) > 1 and c.parts[0] in folders]
    return mine or copies


def _near(importer, copy):
    """Whether a computed import in ``importer`` may reach ``copy``: the importer lies in the
    folder that holds the copy's package (``rfcn/`` for ``rfcn/core/module.py``)."""
    holder = PurePosixPath(copy).parent.parent
    return holder == PurePosixPath(".") or holder in PurePosixPath(importer).parents


# --------------------------------------------------------------------------- findings
def _copy_finding(scan, rel, copy, deletable, blockers, uses):
    what = f"vendored copy of the fork's {copy.kind}"
    if not copy.revision.covered:
        scan.add(rel, 1, CHECK, f"{what}, modified: kept ({copy.summary()}); "
                                "mxpatch_bind.compat does not do this")
    elif not deletable:
        scan.add(rel, 1, CHECK, f"{what}: kept, {_why_kept(blockers)}")
    else:
        needs = tuple(sorted({(str(u.where), u.line) for u in uses
                              if u.copy == rel and u.key is not None}))
        note = f"; {copy.revision.note}" if copy.revision.note else ""
        scan.add(rel, 1, DELETE, f"{what}: delete it (stock MXNet with mxpatch_bind replaces "
                                 f"it){note}", edit=("delete",), needs=needs)


_WHY = (("import", "still imported by {} (imports that --write cannot rewrite)"),
        ("load", "loaded by name by {} (a call --write cannot rewrite)"),
        ("path", "loaded by its path by {}"),
        ("computed", "maybe loaded by {} (a module name or path computed at run time, in the "
                     "folder that holds the copy's package)"),
        ("mention", "named in {} (a file that stays and may load it)"))


def _why_kept(blockers):
    said = []
    for kind, words in _WHY:
        places = sorted({u.place for u in blockers if u.kind == kind or (
            kind == "import" and u.kind not in dict(_WHY))})
        if places:
            said.append(words.format(", ".join(places)))
    return "; ".join(said)


def _place_findings(scan, uses):
    """One ``[check]`` at each place (not a copy, not a ``.py`` import statement, which the
    import's own finding reports) that keeps a copy compat covers."""
    kept = {}
    for use in uses:
        copy = scan.copies[use.copy]
        if use.how is not None and use.where not in scan.copies and copy.revision.covered:
            kept.setdefault((use.where, use.line, use.note, use.how, use.kind, use.words),
                            set()).add(use.copy)
    for (where, line, note, how, kind, words), copies in sorted(kept.items(), key=str):
        named = " and ".join(map(str, sorted(copies)))
        lead = f"{note}: " if note else ""
        within = f" in {words}" if words else ""
        if kind == "computed":
            text = f"{how}: a name or path computed at run time, which may load the vendored " \
                   f"{named}{within}: kept"
        elif kind == "mention":
            text = f"names the vendored {named} ({how}{within}): kept while it does; change it " \
                   "by hand, then run migrate again"
        else:
            by = {"path": "by its path", "import": "by an import"}.get(kind, "by name")
            text = f"{how}: loads the vendored {named} {by}{within}, which --write cannot " \
                   f"rewrite: kept; {_INSTEAD}"
        scan.add(where, line, CHECK, lead + text)


# --------------------------------------------------------------------------- static imports
def _tree_imports(tree):
    """(line, level, dotted module) for every module an import statement of ``tree`` may
    load: ``from a import b [as c]`` names ``a`` and ``a.b``."""
    return [(found.line, found.level, module) for found in imports.statements(tree)
            for module in imports.modules_named(found)]


def _text_imports(text):
    out = []
    for match in _IMPORT_LINE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match.group(3):
            out.append((line, 0, match.group(3)))
        else:
            out.append((line, len(match.group(1)), match.group(2)))
    return out

