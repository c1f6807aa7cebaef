"""Private to ``migrate``: a call's positional arguments passed by keyword instead.

Where a modified copy's method took its parameters in another order than stock MXNet's
(3DCE's ``fit`` put ``iter_size`` after ``eval_end_callback``), a call written for the copy
passes the same values to other parameters of ``mxpatch_bind.compat``'s. Naming each
argument after the copy's own parameter keeps what the call meant, whatever the order.
"""

from __future__ import annotations

import ast
import re

_COMMENT = re.compile(r"#[^\n]*")


def keyword_insertions(call: ast.Call, first: int, names: list[str], lines: list[str],
                       view_lines: list[str]) -> list[tuple[int, int, str]] | None:
    """``[(line, column, 'name=')]``: the insertions that pass ``call``'s positional
    arguments from index ``first`` on by ``names`` (one per argument), or None where the text
    cannot be edited so: a ``*args``, an argument in parentheses of its own, a comma that is
    not the only thing before an argument, or a line that differs from the one ast read (a
    Python 2 line that the syntax fixers changed).

    Examples
    --------
    >>> import ast
    >>> source = "mod.fit(data, None, 2)"
    >>> call = ast.parse(source).body[0].value
    >>> keyword_insertions(call, 1, ["eval_data", "iter_size"], [source], [source])
    [(1, 14, 'eval_data='), (1, 20, 'iter_size=')]
    """
    args = call.args
    if not 0 < first < len(args) or len(names) != len(args) - first or any(
            isinstance(a, ast.Starred) for a in args):
        return None
    out = []
    for previous, argument, name in zip(args[first - 1:], args[first:], names):
        between = _text_between(previous, argument, lines, view_lines)
        # Only a comma (and blanks or comments) may separate the two: anything else is a
        # parenthesis of an argument's own, where 'name=' would not parse.
        if between is None or _COMMENT.sub("", between).strip() != ",":
            return None
        out.append((argument.lineno, _column(lines[argument.lineno - 1], argument.col_offset),
                    name + "="))
    return out


def _text_between(previous, argument, lines, view_lines):
    """The source from the end of ``previous`` to the start of ``argument``, or None when a
    line it spans is not the line ast read."""
    first_line, last_line = previous.end_lineno, argument.lineno
    if first_line is None or last_line > len(lines) or any(
            lines[n - 1] != view_lines[n - 1] for n in range(first_line, last_line + 1)):
        return None
    start = _column(lines[first_line - 1], previous.end_col_offset)
    end = _column(lines[last_line - 1], argument.col_offset)
    if first_line == last_line:
        return lines[first_line - 1][start:end]
    middle = lines[first_line:last_line - 1]
    return "\n".join([lines[first_line - 1][start:], *middle, lines[last_line - 1][:end]])


def _column(line, utf8_offset):
    # ast counts columns in UTF-8 bytes; the edit is made on text.
    return len(line.encode("utf-8")[:utf8_offset].decode("utf-8"))
