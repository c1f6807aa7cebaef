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


def keyword_insertions(keyword_edits: list[tuple]) -> list[tuple[int, int, str]]:
    """The ``(line, column, text)`` insertions of ``('keyword', line, column, text, import
    key, *more insertions)`` edits: one keyword added, or several arguments named."""
    return [insertion for edit in keyword_edits for insertion in (edit[1:4], *edit[5:])]


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


def port(text: str, filename: str, local: frozenset = frozenset()
         ) -> tuple[str, list[tuple[int, str]]]:
    """``text`` ported by the standard 2to3 fixers, its implicit relative imports of the
    ``local`` names made explicit; the warnings, ``(line, text)``.

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
    if local:
        ported, left = make_relative(ported, local)
        warnings += [(line, f"'import {name}': a submodule of the sibling package "
                            f"{name.split('.')[0]!r} imported by its dotted name; write "
                            "'from . import' by hand")
                     for line, name in left]
    return ported, warnings


def make_relative(text: str, local: frozenset) -> tuple[str, list[tuple[int, str]]]:
    """``text`` (Python 3) with each import of a ``local`` name made explicitly relative, as
    Python 2 resolved it: ``import x`` -> ``from . import x``, ``from x.y import z`` ->
    ``from .x.y import z``; ``import os, x`` becomes two statements. Returns the new text
    and ``(line, name)`` for the ``import x.y`` it cannot write the same way (that binds
    ``x``, which ``from . import`` cannot say in one statement).
    """
    import libcst as cst
    from libcst.helpers import get_full_name_for_node
    from libcst.metadata import MetadataWrapper, PositionProvider

    def is_local(dotted):
        return dotted.split(".")[0] in local

    class Relative(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self):
            super().__init__()
            self.left = []

        def leave_ImportFrom(self, original_node, updated_node):  # noqa: N802 (libcst's name)
            if updated_node.relative or updated_node.module is None \
                    or not is_local(get_full_name_for_node(updated_node.module)):
                return updated_node
            return updated_node.with_changes(relative=[cst.Dot()])

        def leave_Import(self, original_node, updated_node):  # noqa: N802 (libcst's name)
            names = list(updated_node.names)
            mine = [a for a in names if is_local(get_full_name_for_node(a.name))]
            if not mine:
                return updated_node
            dotted = [a for a in mine if "." in get_full_name_for_node(a.name) and not a.asname]
            if dotted:
                line = self.get_metadata(PositionProvider, original_node).start.line
                self.left += [(line, get_full_name_for_node(a.name)) for a in dotted]
                return updated_node
            statements = []
            others = [a for a in names if a not in mine]
            if others:
                statements.append(updated_node.with_changes(names=_last_without_comma(others)))
            statements += [_relative_import(alias) for alias in mine]
            if len(statements) == 1:
                return statements[0]
            return cst.FlattenSentinel(statements)

        def leave_SimpleStatementLine(self, original_node, updated_node):  # noqa: N802
            # ``import os, x`` came back as two statements on one line: give each its own
            # line (the first keeps the comments above, the last the one after)
            if len(original_node.body) != 1 or len(updated_node.body) < 2:
                return updated_node
            lines = [cst.SimpleStatementLine(body=[statement]) for statement in updated_node.body]
            lines[0] = lines[0].with_changes(leading_lines=updated_node.leading_lines)
            lines[-1] = lines[-1].with_changes(trailing_whitespace=updated_node.trailing_whitespace)
            return cst.FlattenSentinel(lines)

    def _last_without_comma(aliases):
        return [*aliases[:-1], aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]

    def _relative_import(alias):
        dotted = get_full_name_for_node(alias.name)
        alias = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if "." in dotted:  # import x.y as z -> from .x import y as z
            head, last = dotted.rsplit(".", 1)
            return cst.ImportFrom(module=cst.parse_expression(head), relative=[cst.Dot()],
                                  names=[alias.with_changes(name=cst.Name(last))])
        return cst.ImportFrom(module=None, relative=[cst.Dot()], names=[alias])

    module = cst.parse_module(text)
    rewriter = Relative()
    new = MetadataWrapper(module).visit(rewriter)
    return new.code, rewriter.left
