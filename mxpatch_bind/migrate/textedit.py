"""Private to ``migrate``: point edits of a file's text at :mod:`ast` positions.

The fixers edit the decoded text, never a re-rendered tree, so every byte they do not mean
to change stays. An edit is ``((line, offset), old, new)``: at text offset ``offset``
(``line`` only orders equal offsets), ``old`` is replaced by ``new``; an empty ``old`` is an
insertion. :func:`replace` applies them from the last offset back, so that one fixer's
edits never move another's.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

MARKER_PREFIX = "# migrate: check"  # a comment the port leaves where a person decides
_LINE_END = re.compile(r"\r\n|\r|\n")


def offsets(text: str) -> list[int]:
    """The text offset where each line starts, lines as :mod:`ast` counts them (``\\r\\n``,
    ``\\r`` and ``\\n`` end a line; a form feed does not, unlike ``str.splitlines``)."""
    return [0] + [m.end() for m in _LINE_END.finditer(text)]


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` with their endings, as :mod:`ast` counts them."""
    starts = offsets(text)
    pieces = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    return pieces[:-1] if pieces and pieces[-1] == "" else pieces


def absolute(starts: list[int], line: int, column_bytes: int, text: str) -> int:
    """The text offset of an ast position (its column counts UTF-8 bytes)."""
    start = starts[line - 1]
    end = text.find("\n", start)
    line_text = text[start:end if end >= 0 else len(text)]
    if line_text.isascii():
        return start + column_bytes
    return start + len(line_text.encode("utf-8")[:column_bytes].decode("utf-8", "replace"))


class Text:
    """A file's text with its line offsets, to turn ast nodes into edits."""

    def __init__(self, text: str):
        self.text = text
        self.starts = offsets(text)

    def start(self, node) -> int:
        return absolute(self.starts, node.lineno, node.col_offset, self.text)

    def end(self, node) -> int:
        return absolute(self.starts, node.end_lineno, node.end_col_offset, self.text)

    def source(self, node) -> str:
        return self.text[self.start(node):self.end(node)]

    def wrap(self, node, opening: str, closing: str) -> list:
        """Edits that put ``opening`` before ``node`` and ``closing`` after it."""
        return [((node.lineno, self.start(node)), "", opening),
                ((node.end_lineno, self.end(node)), "", closing)]

    def swap(self, node, new: str) -> list:
        """The edit that replaces ``node``'s text by ``new``."""
        start = self.start(node)
        return [((node.lineno, start), self.text[start:self.end(node)], new)]

    def keyword(self, call: ast.Call, keyword: str) -> list:
        """The edit that passes ``keyword`` last to ``call`` (before its closing
        parenthesis)."""
        end = self.end(call) - 1  # ')'
        inside = self.text[:end].rstrip()
        comma = "" if inside.endswith(("(", ",")) else ","
        return [((call.end_lineno, len(inside)), "", f"{comma} {keyword}")]

    def after(self, node, addition: str) -> list:
        """The edit that inserts ``addition`` right after ``node``."""
        return [((node.end_lineno, self.end(node)), "", addition)]


class EditConflict(ValueError):
    """Two fixers' edits overlap: the file is left as it was (the caller makes it a
    ``[check]``), never written half-fixed."""


def replace(text: str, edits: list) -> str:
    """Apply ``((line, offset), old, new)`` edits from the last offset back (insertions at
    one offset in the order given: a nested fix's opening lands inside an enclosing one's).

    Raises
    ------
    EditConflict
        An edit's ``old`` text is no longer where it was read (another edit overlapped it).
    """
    original = text
    for (_line, offset), old, new in sorted(edits, key=lambda e: e[0][1], reverse=True):
        if old and text[offset:offset + len(old)] != old:
            line = original.count("\n", 0, offset) + 1
            raise EditConflict(f"edits overlap at line {line}: not written; port it by hand")
        text = text[:offset] + new + text[offset + len(old):]
    return text


def add_import(text: str, statement: str) -> str:
    """``statement`` just above the module's first import (below a licence header of
    comments, the docstring and the ``__future__`` imports)."""
    tree = ast.parse(text)
    at = 0
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom)
                                            and node.module != "__future__"):
            at = node.lineno - 1
            break
        docstring = index == 0 and isinstance(node, ast.Expr) \
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        if not (docstring or isinstance(node, ast.ImportFrom)):  # code before any import
            break
        at = node.end_lineno or at
    lines = lines_of(text)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    lines.insert(at, statement + newline)
    return "".join(lines)


def marked_lines(text: str, marker: str = MARKER_PREFIX) -> list[int]:
    """The lines that carry ``marker`` in a comment (not in a string)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return sorted({t.start[0] for t in tokens
                   if t.type == tokenize.COMMENT and marker in t.string})


def markers(text: str) -> dict[int, str]:
    """``{line: the marker's words}`` for each :data:`MARKER_PREFIX` comment."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {}
    return {t.start[0]: t.string[t.string.index(MARKER_PREFIX):] for t in tokens
            if t.type == tokenize.COMMENT and MARKER_PREFIX in t.string}


def mark(text: str, marks: dict[int, str]) -> tuple[str, list[int]]:
    """Add each ``{line: marker}`` at the end of its line, where the line ends outside a
    string; returns the text and the lines marked."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    ends = {t.start[0]: t for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL)}
    lines = lines_of(text)
    marked = []
    for number, marker in sorted(marks.items()):
        if ends.get(number) is None or number > len(lines) or marker in lines[number - 1]:
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        lines[number - 1] = f"{body}  {marker}{line[len(body):]}"
        marked.append(number)
    return "".join(lines), marked
