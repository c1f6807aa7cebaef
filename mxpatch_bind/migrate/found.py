"""Private to ``migrate``: what the port-time fixers are told about a file, and what they
find in it.

The scan decides, once per file, what the file meant when it ran (:class:`Meaning`: was it
Python 2, did it divide truly, what its star imports bind, which names the installed
environment no longer has); the same fixer code then reports (the scan) and rewrites (the
port) from it, so that a report never says one thing and the rewrite does another.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Meaning:
    """What one file meant when it ran: the facts its fixers need beyond its own text.

    Attributes
    ----------
    python2 : bool
        It ran on Python 2 (its ``round`` returned a float, its ``str`` was bytes, the
        pickles it wrote are Python 2's). False for a file only Python 3 parses.
    true_division : bool
        It imported ``division`` from ``__future__`` (read before the port drops the line).
    star_bound : frozenset or None
        The names its ``from m import *`` statements bind; None where that is not known.
    missing : frozenset
        The dotted names it refers to that the installed environment no longer has.
    """

    python2: bool = False
    true_division: bool = False
    star_bound: frozenset | None = None
    missing: frozenset = frozenset()


@dataclass
class Found:
    """One place a fixer found: the edits that fix it, or the ``[check]`` a person needs.

    Attributes
    ----------
    line : int
    what : str
        A few words for the report (``"yaml.load without a Loader"``).
    edits : list
        :mod:`textedit` edits; empty where ``check`` is set.
    imports : tuple of str
        Import statements the edits need (``"import base64"``).
    helpers : frozenset of str
        Names the edits call from :mod:`mxpatch_bind.py2`.
    check : str or None
        Set: nothing is rewritten; the report's ``[check]`` message.
    marker : str or None
        Set on a check that only a Python 2 file has: the comment the port leaves on the
        line, so that every later report still lists it (the ported file is Python 3).
    """

    line: int
    what: str
    edits: list = field(default_factory=list)
    imports: tuple = ()
    helpers: frozenset = frozenset()
    check: str | None = None
    marker: str | None = None


def check(line: int, what: str, message: str, python2_only: bool = False) -> Found:
    """A :class:`Found` that a person decides (``python2_only``: it gets a marker)."""
    return Found(line, what, check=message,
                 marker=f"# migrate: check {what}" if python2_only else None)
