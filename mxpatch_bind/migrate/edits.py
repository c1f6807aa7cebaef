"""Private to ``migrate``: the new text of one file, from the edits its findings ask for.

Edits are made on the decoded text and nothing else is touched: a keyword added after a
construction's last argument, import statements pointed at ``mxpatch_bind.compat`` (libcst
for Python 3, fissix for Python 2: both give the rest of the file back as it was), then the
2to3 port. Each step works on what the previous one returned.
"""

from __future__ import annotations

import ast
import re

from . import port as py2

COMPAT_MODULE = "mxpatch_bind.compat"
_LINE_END = re.compile(r"\r\n|\r|\n")


class EditError(Exception):
    """An edit that cannot be made as planned (the file is then left as it was)."""


def line_starts(text: str) -> list[int]:
    """The offset where each line starts (lines as ast counts them)."""
    return [0] + [m.end() for m in _LINE_END.finditer(text)]


def insert_keywords(text: str, insertions: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(line, column, text)`` inserted, from the last one back."""
    starts = line_starts(text)
    for line, column, addition in sorted(insertions, reverse=True):
        offset = starts[line - 1] + column
        text = text[:offset] + addition + text[offset:]
    return text


def parses_as_python3(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def rewrite_imports(text: str, keys: set, filename: str) -> tuple[str, set]:
    """Point the ``from M import`` statements named by ``keys`` (``(line, level, module)``)
    at ``mxpatch_bind.compat``; returns the new text and the keys rewritten."""
    if parses_as_python3(text):
        return _rewrite_python3(text, keys)
    return py2.rewrite_imports(text, keys, COMPAT_MODULE, filename)


def _rewrite_python3(text, keys):
    import libcst as cst
    from libcst.helpers import get_full_name_for_node
    from libcst.metadata import MetadataWrapper, PositionProvider

    class ImportRewriter(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self):
            super().__init__()
            self.rewritten = set()

        def leave_ImportFrom(self, original_node, updated_node):  # noqa: N802 (libcst's name)
            line = self.get_metadata(PositionProvider, original_node).start.line
            module = get_full_name_for_node(original_node.module) if original_node.module \
                else ""
            key = (line, len(original_node.relative), module or "")
            if key not in keys:
                return updated_node
            self.rewritten.add(key)
            return updated_node.with_changes(
                module=cst.Attribute(value=cst.Name("mxpatch_bind"), attr=cst.Name("compat")),
                relative=[])

    rewriter = ImportRewriter()
    new = MetadataWrapper(cst.parse_module(text)).visit(rewriter)
    return (new.code if rewriter.rewritten else text), rewriter.rewritten


def port(text: str, filename: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` ported by the standard 2to3 fixers; the fixers' warnings, ``(line, text)``.

    Raises
    ------
    EditError
        The fixers' output does not compile as Python 3.
    """
    ported, warnings = py2.port(text, filename, parses_as_python3(text))
    try:
        compile(ported, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise EditError(f"the 2to3 fixers' output does not compile ({error.msg} at line "
                        f"{error.lineno}): not written; port it by hand") from None
    return ported, warnings
