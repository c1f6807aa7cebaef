"""Edges of ``migrate.textedit`` (issue 36, item 10): each case pins one line's effect on the
text it returns, a case on each side of a boundary, so that a slip of that line changes a
result the test compares whole."""

import ast

import pytest

from mxpatch_bind.migrate import textedit


def _names(text):
    return [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)]


def test_every_line_ending_starts_a_line_and_a_form_feed_does_not():
    assert textedit.offsets("a\r\nb\rc\nd\x0ce") == [0, 3, 5, 7]


@pytest.mark.parametrize("text, lines", [
    ("a\r\nb\rc\n", ["a\r\n", "b\r", "c\n"]),
    ("a\nb", ["a\n", "b"]),
    ("", []),
])
def test_the_lines_of_a_text_keep_their_endings_and_a_last_line_without_one(text, lines):
    assert textedit.lines_of(text) == lines


@pytest.mark.parametrize("text", [
    "s = '\u00e9'; y = 1\nz = '\u00e9' + w\n",
    "x = 1\ny = '\u00e9'; v",  # the character past the last byte: no final newline
])
def test_a_name_after_a_non_ascii_character_is_read_at_its_own_characters(text):
    source = textedit.Text(text)
    assert [source.source(n) for n in _names(text)] == [n.id for n in _names(text)]


@pytest.mark.parametrize("call, passed", [
    ("f(a)", "f(a, k=1)"),
    ("f()", "f( k=1)"),
    ("f(a,)", "f(a, k=1)"),
    ("f(a )", "f(a, k=1 )"),
    ("f(\n    a,\n)", "f(\n    a, k=1\n)"),
    ("f(a)(b)", "f(a)(b, k=1)"),
])
def test_a_keyword_is_passed_last_with_one_comma_before_it(call, passed):
    node = ast.parse(call).body[0].value
    assert textedit.replace(call, textedit.Text(call).keyword(node, "k=1")) == passed


def test_edits_apply_from_the_last_offset_back_and_a_later_insertion_lands_outside():
    edits = [((1, 0), "", "A"), ((1, 0), "", "B"), ((1, 3), "d", "D")]
    assert textedit.replace("abcdef", edits) == "BAabcDef"


def test_overlapping_edits_raise_a_conflict_that_names_the_line():
    with pytest.raises(textedit.EditConflict, match="^edits overlap at line 2: not written"):
        textedit.replace("a\nbc\nd", [((2, 2), "bc", "X"), ((2, 3), "c", "Y")])


@pytest.mark.parametrize("text, added", [
    ('"""Doc."""\nfrom __future__ import division\nimport os\nx = 1\n',
     '"""Doc."""\nfrom __future__ import division\nimport yaml\nimport os\nx = 1\n'),
    ("# licence\n# more\nimport os\n", "# licence\n# more\nimport yaml\nimport os\n"),
    ("x = 1\nimport os\n", "import yaml\nx = 1\nimport os\n"),
    ('"""Doc."""\nx = 1\nimport os\n', '"""Doc."""\nimport yaml\nx = 1\nimport os\n'),
    ('"""Doc\nmore."""\nfrom __future__ import print_function\nx = 1\n',
     '"""Doc\nmore."""\nfrom __future__ import print_function\nimport yaml\nx = 1\n'),
    ("from os import path\nimport sys\n", "import yaml\nfrom os import path\nimport sys\n"),
    ('x = 1\n"""not a docstring"""\n', 'import yaml\nx = 1\n"""not a docstring"""\n'),
    ('"""a"""\n"""b"""\nimport os\n', '"""a"""\nimport yaml\n"""b"""\nimport os\n'),
    ("import os\r\nx = 1\n", "import yaml\r\nimport os\r\nx = 1\n"),
    ("import os\nx = 1\r\n", "import yaml\nimport os\nx = 1\r\n"),
    ("from __future__ import division\n", "from __future__ import division\nimport yaml\n"),
    ("from __future__ import (division,\n    print_function)\nx = 1\n",
     "from __future__ import (division,\n    print_function)\nimport yaml\nx = 1\n"),
    ("", "import yaml\n"),
])
def test_an_added_import_goes_above_the_first_import_below_docstring_and_future(text, added):
    assert textedit.add_import(text, "import yaml") == added


def test_a_marker_counts_in_a_comment_not_in_a_string():
    text = "x = 1  # migrate: check a\ns = '# migrate: check b'\ny = 2  # other\n"
    assert textedit.marked_lines(text) == [1]
    assert textedit.marked_lines("x = 1  # XYZ\n", "XYZ") == [1]
    assert textedit.markers("x = 1  # note # migrate: check foo\ny = '# migrate: check'\n") \
        == {1: "# migrate: check foo"}


def test_a_text_that_does_not_tokenize_has_no_markers():
    assert textedit.marked_lines("x = (  # migrate: check a\n") == []
    assert textedit.markers("x = (  # migrate: check a\n") == {}


def test_a_marker_goes_where_a_line_ends_outside_a_string_and_only_once():
    text = 's = """a\nb"""\nx = 1\ny = 2  # migrate: check z\nw = 3\r\n'
    marks = {n: f"# migrate: check {w}" for n, w in zip(range(1, 6), "ABCzE")}
    marks[9] = "# migrate: check past the end"
    assert textedit.mark(text, marks) == (
        's = """a\nb"""  # migrate: check B\nx = 1  # migrate: check C\n'
        "y = 2  # migrate: check z\nw = 3  # migrate: check E\r\n", [2, 3, 5])
