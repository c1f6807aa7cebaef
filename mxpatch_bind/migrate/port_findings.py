"""Private to ``migrate``: the scan's findings of the port-time fixers, per file (a vendored
copy's too: where it stays, it runs).

A file that needs no port gets one ``[port]`` finding naming the traps ``--to-python3``
fixes in it; a Python 2 file gets its ``[port]`` finding (the 2to3 port, which applies the
same fixers after it). Both get a ``[check]`` for each place a fixer could not prove, for
each ``/`` kept as ``old_div`` / ``old_idiv``, and for each marker the port left; every run
lists them until a person decides.
"""

from __future__ import annotations

import ast

from . import division, fork_fixes, traps
from . import port as py2
from .checks import CHECK, PORT
from .textedit import MARKER_PREFIX, markers


def python3_file(scan, rel, parsed) -> None:
    """The traps of a file that parses as Python 3: ``--to-python3`` fixes them. One that
    ran on Python 2 (in a Python 2 tree, with nothing only Python 3 parses) and that the 2to3
    fixers change (``d.keys() + e.keys()``, ``len(map(...))``) is ported like the others."""
    meaning = scan.meanings.of(rel)
    if meaning.python2 and _port_changes(parsed):
        parsed.python2 = ("it ran on Python 2 (a Python 2 tree) and the 2to3 fixers change it",
                          1)
        python2_file(scan, rel, parsed)
        return
    names = scan.meanings.names[rel]
    found = traps.analyse(parsed.source.text, names, meaning)
    words = _fixed_words(found)
    lines = [f.line for f in found if f.check is None]
    if meaning.python2 and not meaning.true_division:
        divisions = division.Divisions(names)
        kept = divisions.kept()
        proven = sorted(set(kept) | set(divisions.integral()))
        if proven:
            words.insert(0, f"'/' at {_at(proven)} (Python 2 divided integers to an integer)")
            lines += proven
        _kept_divisions(scan, rel, kept)
    _checks(scan, rel, found)
    if words:
        scan.add(rel, min(lines), PORT, f"Python 3 traps: {'; '.join(words)}: --to-python3 fixes "
                                        "them", edit=("traps", meaning))


def python2_file(scan, rel, parsed) -> None:
    """A Python 2 file: its port, and what the port's fixers will not prove."""
    reason, line = parsed.python2
    meaning = scan.meanings.of(rel)
    names = scan.meanings.names[rel]
    found = traps.analyse(parsed.view_text, names, meaning)
    also = "; ".join(_fixed_words(found))
    scan.add(rel, line, PORT, f"Python 2 code ({reason}): --to-python3 ports it with the 2to3 "
                              "fixers" + (f", and fixes: {also}" if also else ""),
             edit=("port", parsed.entry.path.name, tuple(sorted(scan.model.local_names(rel))),
                   meaning))
    if not meaning.true_division:
        _kept_divisions(scan, rel, division.Divisions(names).kept())
    _checks(scan, rel, found)
    nexts = sorted({n.lineno for n in ast.walk(parsed.tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and n.func.attr == "next"
                    and not n.args})
    if nexts:
        scan.add(rel, nexts[0], CHECK, f".next() at {_at(nexts)}: kept as it is (an MXNet "
                                       "DataIter has next() on Python 3 too); a generator or "
                                       "file needs next(x)")


def copy_file(scan, rel, parsed) -> None:
    """A vendored copy of the fork: where it stays (modified, still imported, or not deleted
    by this run) it runs, so it is ported like any file, and the fork's places that MXNet
    1.9.1 refuses are fixed (:mod:`fork_fixes`); a run that deletes it does neither."""
    if parsed.python2 is not None:
        python2_file(scan, rel, parsed)
    else:
        python3_file(scan, rel, parsed)
    for site in fork_fixes.sites(parsed.tree):
        scan.add(rel, site.line, PORT, f"the fork's code, where the copy stays: {site.message}",
                 edit=("fork", site.kind))


def _port_changes(parsed):
    if not py2.available():
        return False
    try:
        return py2.port(parsed.source.text, str(parsed.entry.path), True)[0] != parsed.source.text
    except py2.Python2Error:
        return False


def decided_later(scan, rel, parsed) -> None:
    """Every run, until a person decides each: the ``old_div`` / ``old_idiv`` calls and the
    markers the port left."""
    for line in division.helper_calls(scan.meanings.names[rel]):
        scan.add(rel, line, CHECK, f"old_div/old_idiv ({division.HELPERS_MODULE}): a '/' from "
                                   "Python 2, run by Python 2's rule (an integer from two "
                                   "integers); write '//' where an integer is meant, '/' "
                                   "where a float is")
    for line, words in sorted(markers(parsed.source.text).items()):
        if words.startswith(division.MARKER):
            scan.add(rel, line, CHECK, "'/' from Python 2: an integer there, a float on "
                                       "Python 3; write '//' where an integer was meant, "
                                       f"then delete the marker {division.MARKER!r}")
        else:
            what = words[len(MARKER_PREFIX):].strip()
            scan.add(rel, line, CHECK, f"{what}: a Python 2 meaning the port could not prove "
                                       f"here; decide it, then delete the marker {words!r}")


def _checks(scan, rel, found):
    for place in found:
        if place.check is not None:
            scan.add(rel, place.line, CHECK, place.check)


def _kept_divisions(scan, rel, kept):
    if kept:
        scan.add(rel, kept[0], CHECK, f"'/' at {_at(kept)}: on Python 3 it divides integers to "
                                      "a float; the port writes old_div / old_idiv (Python 2's "
                                      "rule, at run time), listed until a person writes '//' "
                                      "or '/'")


def _fixed_words(found):
    """``"<what> at lines 3, 7"`` for each kind of fix, in the order first found."""
    by_what: dict[str, list[int]] = {}
    for place in found:
        if place.check is None:
            by_what.setdefault(place.what, []).append(place.line)
    return [f"{what} at {_at(sorted(set(lines)))}" for what, lines in by_what.items()]


def _at(numbers):
    shown = ", ".join(map(str, numbers[:8]))
    more = f" and {len(numbers) - 8} more" if len(numbers) > 8 else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"
