"""``migrate --write --delete-vendored`` keeps a vendored copy while anything that stays may load
it: a load by name (``importlib.import_module`` with ``package=``, ``__import__`` with a
fromlist or a level, through every alias and argument form), a load by path (``imp``,
``runpy``, ``importlib.util`` / ``importlib.machinery``, ``exec(open(...))``), a computed name
near it, or a notebook, shell script, configuration or Cython file that imports or names it.
Each place is a ``[check]`` at ``file:line``; prose (a README, a notebook's markdown, a
docstring) keeps nothing.

Every tree is the synthetic fork tree (tests/tools/fork_tree) plus the file under test.
"""

import json
import shutil

import pytest
from test_migrate import FORK_TREE, run_migrate

pytest.importorskip("fissix")
pytest.importorskip("libcst")

COPY = "rfcn/core/module.py"
GROUP = "rfcn/core/DataParallelExecutorGroup.py"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "fork_tree"
    shutil.copytree(FORK_TREE, root)
    (root / "rfcn/__init__.py").write_text("")
    return root


def migrated(capsys, root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return run_migrate(capsys, root, "--write", "--delete-vendored")


def lines_at(lines, rel):
    return [line for line in lines if line.startswith(rel + ":")]


def assert_kept_by(root, status, lines, place, *words):
    """The copy is there, its finding names ``place`` and a [check] at ``place`` says why."""
    assert (root / COPY).exists() and (root / GROUP).exists()
    # the copy's own finding; a kept copy in a Python 2 tree is also ported (its [port] lines)
    [finding] = [line for line in lines_at(lines, COPY) if "[port]" not in line]
    assert finding.startswith(COPY + ":1: [check] vendored copy of the fork's module.py: kept, ")
    assert place in finding, finding
    checks = [line for line in lines if line.startswith(place + ": [check]")]
    assert len(checks) == 1, lines
    assert COPY in checks[0] and all(word in checks[0] for word in words), checks[0]
    assert status == 1


# --------------------------------------------------------------------------- by name
@pytest.mark.parametrize("rel, source, line", [
    ("rfcn/use.py", "import importlib\nimportlib.import_module('.module', package='core')\n", 2),
    ("rfcn/use.py", "import importlib as il\nil.import_module('.module', 'core')\n", 2),
    ("rfcn/use.py", "from importlib import import_module as im\n"
                    "im(name='.module', package='core')\n", 2),
    ("rfcn/use.py", "import importlib\nimportlib.import_module('..module', 'core.tools')\n", 2),
    ("rfcn/use.py", "m = __import__('core', fromlist=['module'])\n", 1),
    ("rfcn/use.py", "m = __import__('core', globals(), locals(), ('module',), 0)\n", 1),
    ("rfcn/use.py", "import builtins\nm = builtins.__import__('core.module')\n", 2),
    ("rfcn/use.py", "import __builtin__\nm = __builtin__.__import__('core.module')\n", 2),
    ("rfcn/core/use.py", "m = __import__('module', globals(), locals(), [], 1)\n", 1),
    ("rfcn/core/use.py", "import importlib\nimportlib.import_module('.module', __package__)\n",
     2),
    ("rfcn/use.py", "import runpy\nrunpy.run_module(mod_name='core.module')\n", 2),
    ("rfcn/use.py", "import importlib.util\nspec = importlib.util.find_spec('core.module')\n", 2),
    ("rfcn/use.py", "MODULE = 'core.module'\nimport importlib\n"
                    "importlib.import_module(MODULE)\n", 3),
])
def test_a_copy_loaded_by_name_is_kept_and_the_place_named(tree, capsys, rel, source, line):
    status, lines = migrated(capsys, tree, {rel: source})
    assert_kept_by(tree, status, lines, f"{rel}:{line}", "by name", "mxpatch_bind.compat")


def test_a_relative_name_is_resolved_against_its_package_not_the_importer(tree, capsys):
    # beside the importer '.module' would be the copy; of the package 'symbols_pkg' it is not
    status, lines = migrated(capsys, tree, {
        "rfcn/core/use.py": "import importlib\n"
                            "importlib.import_module('.module', 'symbols_pkg')\n"})
    assert not (tree / COPY).exists()
    assert lines_at(lines, COPY)[0].startswith(COPY + ":1: [deleted]")


# --------------------------------------------------------------------------- by path
@pytest.mark.parametrize("rel, source, line", [
    ("rfcn/use.py", "import imp\nm = imp.load_source('m', 'core/module.py')\n", 2),
    ("rfcn/use.py", "import imp as i\nm = i.load_source(name='m', pathname='rfcn/core/module.py')"
                    "\n", 2),
    ("rfcn/use.py", "import os\nimport runpy\n"
                    "runpy.run_path(os.path.join(os.path.dirname(__file__), 'core', 'module.py'))"
                    "\n", 3),
    ("rfcn/use.py", "from pathlib import Path\n"
                    "from importlib.util import spec_from_file_location as located\n"
                    "spec = located('m', location=Path(__file__).parent / 'core' / 'module.py')\n",
     3),
    ("tools/use.py", "import importlib.machinery as machinery\n"
                     "loader = machinery.SourceFileLoader('m', ROOT + '/core/module.py')\n", 2),
    ("rfcn/use.py", "exec(open('core/module.py').read())\n", 1),
    ("rfcn/use.py", "print 'python 2'\nexecfile('core/module.py')\n", 2),
    ("rfcn/use.py", "import imp\nfound = imp.find_module('module', ['core'])\n", 2),
])
def test_a_copy_loaded_by_path_is_kept_and_the_place_named(tree, capsys, rel, source, line):
    status, lines = migrated(capsys, tree, {rel: source})
    assert_kept_by(tree, status, lines, f"{rel}:{line}", "by its path")


def test_a_path_or_name_computed_near_the_copy_keeps_it(tree, capsys):
    status, lines = migrated(capsys, tree, {
        "rfcn/use.py": "import imp, sys\nm = imp.load_source('m', sys.argv[1])\n"})
    assert_kept_by(tree, status, lines, "rfcn/use.py:2", "computed at run time")


def test_a_computed_load_far_from_the_copy_keeps_nothing(tree, capsys):
    migrated(capsys, tree, {"unrelated/use.py": "import imp, sys\n"
                                                "m = imp.load_source('m', sys.argv[1])\n"})
    assert not (tree / COPY).exists()


def test_an_expression_too_deep_to_read_loads_nothing_and_a_load_of_one_keeps_the_copy(
        tree, capsys):
    deep = " + ".join(["'a'"] * 2000)  # ast reads it; reading its value recursively cannot
    migrated(capsys, tree, {"rfcn/deep.py": f"x = {deep}\n"})
    assert not (tree / COPY).exists()
    shutil.rmtree(tree)
    shutil.copytree(FORK_TREE, tree)
    status, lines = migrated(capsys, tree, {
        "rfcn/deep.py": f"import imp\nimp.load_source({deep})\n"})
    assert_kept_by(tree, status, lines, "rfcn/deep.py:2", "nested too deeply")


def test_a_string_that_names_the_copy_in_code_keeps_it_and_a_docstring_does_not(tree, capsys):
    docstring = '"""Replaces rfcn/core/module.py and core.module."""\n# core/module.py\n'
    migrated(capsys, tree, {"rfcn/docs_only.py": docstring})
    assert not (tree / COPY).exists()


def test_a_mock_patch_target_naming_the_copy_keeps_it(tree, capsys):
    status, lines = migrated(capsys, tree, {
        "rfcn/test_it.py": "from unittest import mock\n"
                           "patched = mock.patch('core.module.MutableModule')\n"})
    assert_kept_by(tree, status, lines, "rfcn/test_it.py:2", "'core.module.MutableModule'")


# --------------------------------------------------------------------------- notebooks
def notebook(*cells):
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source":
                                  text.splitlines(keepends=True)} for kind, text in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def json_line(text, code_line):
    """The notebook line holding ``code_line`` (a reference independent of the scan)."""
    [number] = [n for n, line in enumerate(text.splitlines(), 1) if json.dumps(code_line)[:-1]
                in line]
    return number


@pytest.mark.parametrize("cell, code_line, words", [
    ("import os\nfrom core.module import MutableModule\n", "from core.module import", "import"),
    ("import importlib\nx = 1\nm = importlib.import_module('.module', package='core')\n",
     "m = importlib", "by name"),
    ("%matplotlib inline\n%run core/module.py\n", "%run core/module.py", "by its path"),
    ("!python -m core.module --help\n", "!python -m core.module", "'core.module'"),
    ("%%bash\ncd ..\npython rfcn/core/module.py\n", "python rfcn/core/module.py",
     "'rfcn/core/module.py'"),
    ("print 'a python 2 notebook'\nimport core.module\n", "import core.module", "import"),
])
def test_a_notebook_cell_that_loads_the_copy_keeps_it_at_its_json_line(tree, capsys, cell,
                                                                       code_line, words):
    text = notebook(("markdown", "# Demo\n"), ("code", "x = 2\n"), ("code", cell))
    status, lines = migrated(capsys, tree, {"rfcn/demo.ipynb": text})
    place = f"rfcn/demo.ipynb:{json_line(text, code_line)}"
    assert_kept_by(tree, status, lines, place, words, "in a notebook's code cell")
    cell_line = cell.splitlines().index(next(x for x in cell.splitlines()
                                             if x.startswith(code_line[:12]))) + 1
    assert f"{place}: [check] cell 3, line {cell_line}: " in "\n".join(lines)


def test_a_notebooks_markdown_and_its_outputs_keep_nothing(tree, capsys):
    text = json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["rfcn/core/module.py is gone\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1,
         "source": ["from mxpatch_bind.compat import MutableModule\n"],
         "outputs": [{"output_type": "stream", "name": "stdout",
                      "text": ["loaded core.module from rfcn/core/module.py\n"]}]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    migrated(capsys, tree, {"rfcn/demo.ipynb": text})
    assert not (tree / COPY).exists()


# --------------------------------------------------------------------------- other files
@pytest.mark.parametrize("rel, text, line, words", [
    ("tools/train.sh", "#!/bin/sh\nset -e\npython rfcn/core/module.py\n", 3, "a shell script"),
    ("tools/train.sh", "cd rfcn && python -c 'from core import module'\n", 1, "a shell script"),
    ("tools/run_all", "#!/bin/bash\npython -m rfcn.core.module\n", 2, "a shell script"),
    ("Makefile", "check:\n\tpython $(ROOT)/rfcn/core/module.py\n", 2, "a shell script"),
    ("experiments/rfcn/cfgs/a.yaml", "network:\n  module_file: core/module.py\n", 2,
     "a configuration file"),
    ("rfcn/settings.json", '{\n  "module": "rfcn.core.module"\n}\n', 2,
     "a configuration file"),
    ("rfcn/setup.cfg", "[tool]\nmodules = core.module\n", 2, "a configuration file"),
    ("rfcn/files.txt", "core/loader.py\ncore/module.py\n", 2, "a configuration file"),
    ("rfcn/fast.pyx", "cimport numpy as np\nfrom core.module import MutableModule\n"
                      "cdef int x = 1\n", 2, "a Cython file"),
    ("rfcn/tool", "#!/usr/bin/env python\nimport imp\nm = imp.load_source('m', 'core/module.py')"
                  "\n", 3, "a Python script"),
])
def test_a_script_config_or_cython_file_that_names_the_copy_keeps_it(tree, capsys, rel, text,
                                                                      line, words):
    status, lines = migrated(capsys, tree, {rel: text})
    assert_kept_by(tree, status, lines, f"{rel}:{line}", words)


@pytest.mark.parametrize("rel, text", [
    ("README.md", "Migrated: `rfcn/core/module.py` and `core.module` are gone.\n"),
    ("docs/notes.rst", "python rfcn/core/module.py\n"),
    ("rfcn/README", "python -m core.module\n"),
    ("LICENSE.txt", "rfcn/core/module.py\n"),
    ("rfcn/op.cu", "// python rfcn/core/module.py\n"),
    ("rfcn/cfg.yaml", "module: mxnet.module\nfile: mymodule.py\nname: module\n"),
    ("tools/train.sh", "python rfcn/core/tester.py  # formerly needed core module\n"),
])
def test_prose_code_of_other_languages_and_near_names_keep_nothing(tree, capsys, rel, text):
    status, lines = migrated(capsys, tree, {rel: text})
    assert not (tree / COPY).exists(), lines
    assert lines_at(lines, COPY)[0].startswith(COPY + ":1: [deleted]")


def test_a_config_naming_core_module_keeps_its_own_sub_projects_copy_only(tree, capsys):
    shutil.copytree(tree / "rfcn", tree / "fpn")
    migrated(capsys, tree, {"experiments/fpn/cfgs/a.yaml": "code: core/module.py\n"})
    assert (tree / "fpn/core/module.py").exists()
    assert not (tree / COPY).exists()


def test_the_examples_of_the_load_finders_hold():
    import doctest

    from mxpatch_bind.migrate import loads, mentions
    assert doctest.testmod(loads).failed == 0 and doctest.testmod(mentions).failed == 0
    assert doctest.testmod(loads).attempted and doctest.testmod(mentions).attempted
