"""Edges of ``migrate.loads`` (issue 36, item 10): each loader by name and by path in each
import form and argument spelling (position, keyword, unpacked), relative names against
their package, ``__import__``'s fromlist and level, paths built from literals, ``__file__``,
``os.path`` and ``pathlib`` calls, f-strings and names assigned once or twice, and the
strings that mention a copy, each file's loads compared whole as
``(line, names, paths, dotted, computed, kind)``. The file runs as ``/repo/tools/run.py``."""

import ast

import pytest

from mxpatch_bind.migrate import loads

CASES = [
    pytest.param(
        ('import importlib as il\n'
         'from importlib import import_module as im\n'
         'import importlib\n'
         "il.import_module('core.module')\n"
         "im('core.module')\n"
         "importlib.import_module(name='core.module')\n"
         "importlib.util.find_spec('core.module')\n"),
        [(4, ((0, 'core.module'),), (), (), False, 'load'),
         (5, ((0, 'core.module'),), (), (), False, 'load'),
         (6, ((0, 'core.module'),), (), (), False, 'load'),
         (7, ((0, 'core.module'),), (), (), False, 'load'),],
        id='import_module_by_name_in_each_import_form'),
    pytest.param(
        ('import importlib\n'
         "importlib.import_module('.module', 'core')\n"
         "importlib.import_module('..module', package='rfcn.core')\n"
         "importlib.import_module('.', 'core')\n"
         "importlib.import_module('...module', 'core')\n"
         "importlib.import_module('.module', __package__)\n"
         "importlib.import_module('.module', __name__)\n"
         "importlib.import_module('.module', pkg)\n"
         "importlib.import_module('.module')\n"),
        [(2, ((0, 'core.module'),), (), (), False, 'load'),
         (3, ((0, 'rfcn.module'),), (), (), False, 'load'),
         (4, ((0, 'core'),), (), (), False, 'load'),
         (6, ((1, 'module'),), (), (), False, 'load'),
         (7, ((1, 'module'),), (), (), False, 'load'),
         (8, (), (), (), True, 'load'),
         (9, (), (), (), True, 'load'),],
        id='a_relative_name_resolves_against_its_package'),
    pytest.param(
        ("__import__('core', fromlist=['module', '*'])\n"
         "__import__('core', None, None, ('module',), 0)\n"
         "__import__('core', fromlist='module')\n"
         "__import__('core', fromlist=None)\n"
         "__import__('module', level=1)\n"
         "__import__('module', level=n)\n"
         "__import__('core', fromlist=names)\n"
         'import __builtin__\n'
         "__builtin__.__import__('core.module')\n"),
        [(1, ((0, 'core'), (0, 'core.module')), (), (), False, 'load'),
         (2, ((0, 'core'), (0, 'core.module')), (), (), False, 'load'),
         (3, ((0, 'core'), (0, 'core.module')), (), (), False, 'load'),
         (4, ((0, 'core'),), (), (), False, 'load'),
         (5, ((1, 'module'),), (), (), False, 'load'),
         (6, (), (), (), True, 'load'),
         (7, ((0, 'core'),), (), (), True, 'load'),
         (9, ((0, 'core.module'),), (), (), False, 'load'),],
        id='dunder_import_reads_its_fromlist_and_level'),
    pytest.param(
        ('import runpy, pkgutil, imp\n'
         "runpy.run_module(mod_name='core.module')\n"
         "pkgutil.get_loader('core.module')\n"
         "pkgutil.find_loader(fullname='core.module')\n"
         "imp.find_module('module')\n"
         "imp.find_module('module', ['core', 'lib'])\n"
         "imp.find_module('module', [where])\n"),
        [(2, ((0, 'core.module'),), (), (), False, 'load'),
         (3, ((0, 'core.module'),), (), (), False, 'load'),
         (4, ((0, 'core.module'),), (), (), False, 'load'),
         (5, ((0, 'module'),), (), (), False, 'load'),
         (6, (), (('relative', 'core/module.py'), ('relative', 'lib/module.py')), (), False,
          'path'),
         (7, (), (), (), True, 'path'),],
        id='other_loaders_by_name'),
    pytest.param(
        ('import imp, runpy, importlib.util, importlib.machinery\n'
         "imp.load_source('m', 'core/module.py')\n"
         "imp.load_module('m', f, '/abs/core/module.py', d)\n"
         "runpy.run_path(path_name='core/module.py')\n"
         "importlib.util.spec_from_file_location('m', location='core/module.py')\n"
         "importlib.machinery.SourceFileLoader('m', 'core/module.py')\n"
         "execfile('core/module.py')\n"
         "exec(open('core/module.py').read())\n"
         'import codecs\n'
         "exec(codecs.open('core/module.py').read())\n"
         "eval('1')\n"
         "imp.load_source('w', 'core\\\\module.py')\n"
         "imp.load_source('x', root + 'module.py')\n"
         "imp.load_source('y')\n"),
        [(2, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (3, (), (('absolute', '/abs/core/module.py'),), (), False, 'path'),
         (4, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (5, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (6, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (7, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (8, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (10, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (12, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (13, (), (), (), True, 'path'),
         (14, (), (), (), True, 'path'),],
        id='loaders_by_path'),
    pytest.param(
        ('import os\n'
         'from pathlib import Path\n'
         'import imp\n'
         'ROOT = os.path.dirname(__file__)\n'
         "imp.load_source('a', os.path.join(ROOT, 'core', 'module.py'))\n"
         "imp.load_source('b', os.path.join(root, 'core', 'module.py'))\n"
         "imp.load_source('c', Path(__file__).parent / 'core' / 'module.py')\n"
         "imp.load_source('d', str(Path(ROOT).joinpath('core', 'module.py')))\n"
         "imp.load_source('e', ROOT + '/core/module.py')\n"
         "imp.load_source('f', root + '/core/module.py')\n"
         "imp.load_source('g', f'{ROOT}/core/module.py')\n"
         "imp.load_source('h', f'{root}/core/module.py')\n"
         "imp.load_source('i', os.path.abspath('core/module.py'))\n"
         "imp.load_source('j', Path('core/module.py').resolve())\n"
         "imp.load_source('k', os.path.join(root, name))\n"
         "imp.load_source('l', f'{ROOT!r}/module.py')\n"
         "imp.load_source('m', os.path.join('/abs', 'core', 'module.py'))\n"
         "imp.load_source('n', os.path.join('core', '/abs/module.py'))\n"),
        [(5, (), (('absolute', '/repo/tools/core/module.py'),), (), False, 'path'),
         (6, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (7, (), (('absolute', '/repo/tools/core/module.py'),), (), False, 'path'),
         (8, (), (('absolute', '/repo/tools/core/module.py'),), (), False, 'path'),
         (9, (), (('absolute', '/repo/tools/core/module.py'),), (), False, 'path'),
         (10, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (11, (), (('absolute', '/repo/tools/core/module.py'),), (), False, 'path'),
         (12, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (13, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (14, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (15, (), (), (), True, 'path'),
         (16, (), (('tail', '/module.py'),), (), False, 'path'),
         (17, (), (('absolute', '/abs/core/module.py'),), (), False, 'path'),
         (18, (), (('absolute', '/abs/module.py'),), (), False, 'path'),],
        id='paths_built_from_literals_names_and_calls'),
    pytest.param(
        ('import importlib\n'
         "__import__('.module')\n"
         "importlib.import_module('..module', 'core')\n"
         "__import__('module', level='1')\n"
         "importlib.import_module(prefix + 'core.module')\n"
         "__import__('core', **kw)\n"
         "__import__('core', fromlist=['module', x])\n"),
        [(2, ((0, 'module'),), (), (), False, 'load'),
         (4, (), (), (), True, 'load'),
         (5, (), (), (), True, 'load'),
         (6, (), (), (), True, 'load'),
         (7, ((0, 'core'),), (), (), True, 'load'),],
        id='more_relative_and_level_spellings'),
    pytest.param(
        ('import imp, os\n'
         'from pathlib import Path\n'
         "imp.load_source('p', os.path.join(os.path.dirname(root + 'x.py'), 'core', 'module.py'))\n"
         "imp.find_module('module', ['core', where])\n"
         "imp.load_source('q', root / 'core' / 'module.py')\n"
         "imp.load_source('r', '/abs' + (root + '/core/module.py'))\n"
         "imp.load_source('s', Path('core/module.py').absolute())\n"
         "imp.load_source('t', os.path.join(f'{root}', 'core', 'module.py'))\n"),
        [(3, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (4, (), (), (), True, 'path'),
         (5, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (6, (), (('tail', '/core/module.py'),), (), False, 'path'),
         (7, (), (('relative', 'core/module.py'),), (), False, 'path'),
         (8, (), (('tail', '/core/module.py'),), (), False, 'path'),],
        id='more_path_spellings'),
    pytest.param(
        ('from .importlib import import_module\n'
         "import_module('core.module')\n"),
        [(2, (), (), ('core.module',), False, 'mention'),],
        id='a_function_imported_from_a_local_module_of_a_standard_name_is_no_loader'),
    pytest.param(
        ('import imp\n'
         "P = 'core/module.py'\n"
         "P = 'lib/module.py'\n"
         "imp.load_source('a', P)\n"
         "Q = 'core/module.py'\n"
         "Q = 'core/module.py'\n"
         "imp.load_source('b', Q)\n"),
        [(2, (), (('relative', 'core/module.py'),), (), False, 'mention'),
         (3, (), (('relative', 'lib/module.py'),), (), False, 'mention'),
         (4, (), (), (), True, 'path'),
         (5, (), (('relative', 'core/module.py'),), (), False, 'mention'),
         (6, (), (('relative', 'core/module.py'),), (), False, 'mention'),
         (7, (), (('relative', 'core/module.py'),), (), False, 'path'),],
        id='a_name_assigned_twice_is_unknown'),
    pytest.param(
        ('import importlib\n'
         'importlib.import_module(*args)\n'
         'importlib.import_module(**kw)\n'
         "importlib.import_module('core.module', *rest)\n"),
        [(2, (), (), (), True, 'load'),
         (3, (), (), (), True, 'load'),
         (4, ((0, 'core.module'),), (), (), False, 'load'),],
        id='unpacked_arguments_may_hold_the_name'),
    pytest.param(
        ("'''Docstring names core/module.py.'''\n"
         'import mock\n'
         "mock.patch('core.module.f')\n"
         "x = 'cp core/module.py $ROOT/core/module.py'\n"
         "y = 'mymodule.py'\n"
         "z = 'lib/module.pyc'\n"
         "w = 'rfcn.core.module.X'\n"
         'def f():\n'
         "    '''core.module'''\n"
         "    return '~/core/module.py'\n"),
        [(3, (), (), ('core.module',), False, 'mention'),
         (4, (), (('relative', 'core/module.py'),), (), False, 'mention'),
         (4, (), (('tail', '/core/module.py'),), (), False, 'mention'),
         (7, (), (), ('rfcn.core.module',), False, 'mention'),
         (10, (), (('tail', '/core/module.py'),), (), False, 'mention'),],
        id='strings_that_mention_a_copy'),
]


@pytest.mark.parametrize("source, found", CASES)
def test_each_load_is_read_as_the_names_or_paths_it_loads(source, found):
    read = loads.python_loads(ast.parse(source), "/repo/tools/run.py", {"module"})
    assert [(load.line, load.names, tuple((p.anchor, p.text) for p in load.paths),
             load.dotted, load.computed, load.kind) for load in read] == found


def test_without_a_file_path_a_path_from_file_is_unknown():
    source = "import imp, os\nimp.load_source('a', os.path.join(os.path.dirname(__file__), "\
             "'core', 'module.py'))\n"
    read = loads.python_loads(ast.parse(source), None, {"module"})
    assert [(load.line, load.paths) for load in read] == [
        (2, (loads.PathValue(loads.TAIL, "/core/module.py"),))]


def test_a_mention_is_found_for_each_stem_at_its_offset():
    found = loads.text_mentions("run core/module.py then lib.util.X and a/b/util.py", {"module",
                                                                                     "util"})
    assert found == [(4, "core/module.py", loads.PathValue(loads.RELATIVE, "core/module.py"),
                      None),
                     (24, "lib.util.X", None, "lib.util"),
                     (39, "a/b/util.py", loads.PathValue(loads.RELATIVE, "a/b/util.py"), None)]


def test_a_load_is_spelled_as_written_up_to_ninety_characters():
    short = "__import__('" + "m" * 76 + "')"  # 90 characters
    long = "__import__('" + "m" * 77 + "')"
    read = loads.python_loads(ast.parse(f"{short}\n{long}\n"), None, set())
    assert [load.how for load in read] == [short, long[:87] + "..."]
