"""The house's own rules, kept by tests: modules a reader takes in at once, and the layout.

A module's size counts its code and docstrings: every line that holds a token other than a
comment, a newline or indentation (blank lines and comment lines are free).
"""

import io
import tokenize
from pathlib import Path

import mxpatch_bind

PACKAGE = Path(mxpatch_bind.__file__).parent
MAX_LINES = 450
_FREE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENDMARKER)


def lines_of_code_and_docstring(source):
    """The lines of ``source`` holding anything but comments and blanks."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _FREE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def test_the_count_leaves_out_comments_and_blank_lines_only():
    source = '"""Doc\n\nstring."""\n\n# a comment\nx = (1,\n     2)  # trailing\n'
    assert lines_of_code_and_docstring(source) == 5  # the docstring's 3 lines, then x's 2


def test_every_module_holds_at_most_450_lines_of_code_and_docstring():
    sizes = {str(path.relative_to(PACKAGE)): lines_of_code_and_docstring(path.read_text())
             for path in sorted(PACKAGE.rglob("*.py"))}
    assert len(sizes) >= 50
    assert {name: size for name, size in sizes.items() if size > MAX_LINES} == {}


def test_the_package_is_four_products_in_their_folders():
    folders = sorted(path.name for path in PACKAGE.iterdir()
                     if path.is_dir() and (path / "__init__.py").exists())
    # tools: the top level; _family_ops: the operators compat exports, one module each; the
    # demo (its training, figures, progress, network) in one
    assert folders == ["_family_ops", "data", "demo", "launch", "migrate", "module", "patching"]


def test_the_demo_is_one_folder_and_nothing_of_it_is_left_at_the_top():
    assert sorted(path.name for path in (PACKAGE / "demo").glob("*.py")) == [
        "__init__.py", "__main__.py", "figures.py", "nets.py", "progress.py", "training.py"]
    assert not [name for name in ("demo.py", "_demo_progress.py", "_nets.py")
                if (PACKAGE / name).exists()]
