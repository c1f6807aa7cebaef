"""Private to ``migrate``: a planned change of one file as a patch, in the form git writes.

``git apply`` and ``patch -p1`` both take it and make the same bytes ``--write`` makes: the
patch carries each file's bytes as they are (its encoding, CRLF newlines, a last line without a
newline marked ``\\ No newline at end of file``); lines end at ``\\n`` only (``str.splitlines``
would also end them at a form feed). A deletion removes every line under ``deleted file mode``,
and an empty file's deletion is that header alone, as git writes it (with the ``index`` line
of the files' object names, which ``patch`` needs to read it). Names git would quote
(non-ASCII, control characters, ``"`` and ``\\``) are C-quoted as git quotes them; a name with a
space gets git's tab after it on the ``---`` / ``+++`` lines, where ``patch`` needs it.
"""

from __future__ import annotations

import difflib
import hashlib
import stat

CONTEXT = 3  # lines of context around each change, as diff -u
_NO_NEWLINE = b"\\ No newline at end of file\n"
_NONE = b"0" * 40  # the object name of no file
_ESCAPES = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0B: b"\\v", 0x0C: b"\\f",
            0x0D: b"\\r", 0x22: b'\\"', 0x5C: b"\\\\"}


def file_patch(rel: str, old: bytes, new: bytes | None, mode: int) -> bytes:
    """The patch that turns ``old`` into ``new`` (``None``: deletes the file) at ``rel``.

    Parameters
    ----------
    rel : str
        The path relative to the tree, ``/``-separated (as ``os.fsdecode`` gives it).
    old, new : bytes
        The file's content before and after (for a symbolic link, its target).
    mode : int
        The file's ``st_mode``, which a deletion names (100644, 100755 or 120000); a change
        leaves the mode alone.

    Examples
    --------
    >>> print(file_patch("a.py", b"x = 1\\n", b"x = 2\\n", 0o100644).decode(), end="")
    diff --git a/a.py b/a.py
    index 7d4290a117a4ddcc11daae7ea675841033830c8f..407de3068e7b5950585d5abed9776d104235a85d
    --- a/a.py
    +++ b/a.py
    @@ -1 +1 @@
    -x = 1
    +x = 2
    """
    name = rel.encode("utf-8", "surrogateescape")
    a, b = _quoted(b"a/" + name), _quoted(b"b/" + name)
    tab = b"\t" if b" " in name and not a.startswith(b'"') else b""
    head = b"diff --git " + a + b" " + b + b"\n"
    if new is None:
        head += b"deleted file mode %o\nindex %s..%s\n" % (_git_mode(mode), _blob(old), _NONE)
        if not old:
            return head
        head += b"--- " + a + tab + b"\n+++ /dev/null\n"
    else:
        # no mode: patch would set 0644 on a 0664 file; without one it keeps the file's
        head += b"index %s..%s\n" % (_blob(old), _blob(new))
        head += b"--- " + a + tab + b"\n+++ " + b + tab + b"\n"
    return head + b"".join(_hunks(lines(old), lines(new or b"")))


def lines(data: bytes) -> list[bytes]:
    """``data``'s lines, each with its ``\\n``; the last one without, when the data ends so.

    Examples
    --------
    >>> lines(b"a\\r\\nb\\x0cc\\nd")
    [b'a\\r\\n', b'b\\x0cc\\n', b'd']
    """
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _hunks(old: list[bytes], new: list[bytes]):
    matcher = difflib.SequenceMatcher(None, old, new)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        yield b"@@ -%s +%s @@\n" % (_range(first[1], last[2] - first[1]),
                                     _range(first[3], last[4] - first[3]))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (_line(b" ", line) for line in old[i1:i2])
                continue
            yield from (_line(b"-", line) for line in old[i1:i2])
            yield from (_line(b"+", line) for line in new[j1:j2])


def _line(sign: bytes, line: bytes) -> bytes:
    return sign + line if line.endswith(b"\n") else sign + line + b"\n" + _NO_NEWLINE


def _range(start: int, length: int) -> bytes:
    """A hunk's ``start,length`` as diff -u writes it (``start`` 0-based here)."""
    if length == 1:
        return b"%d" % (start + 1)
    return b"%d,%d" % (start + 1 if length else start, length)


def _quoted(name: bytes) -> bytes:
    """``name`` as git writes it in a patch: C-quoted when it holds a byte git quotes."""
    if not any(byte < 0x20 or byte >= 0x7F or byte in (0x22, 0x5C) for byte in name):
        return name
    return b'"' + b"".join(_ESCAPES.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte >= 0x7F
                                                  else bytes([byte])) for byte in name) + b'"'


def _blob(data: bytes) -> bytes:
    """git's object name of ``data``: ``patch`` reads a header with no hunk (an empty file's
    deletion) as git's only when it has an ``index`` line."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().encode()


def _git_mode(mode: int) -> int:
    if stat.S_ISLNK(mode):
        return 0o120000
    return 0o100755 if mode & 0o111 else 0o100644
