"""Edges of ``migrate.port_findings`` (issue 36, item 10): the report's lines for a tree
holding each kind of file the scan reports a port for (a Python 2 file with ``.next()``
calls of each arity, a file Python 3 parses whose divisions are proven or kept and whose
marker a person has yet to decide, a file ``old_div`` was written into, a file Python 3
parses that the 2to3 fixers change), compared whole, and the plurals of the lines listed."""

import pytest
from test_migrate import run_migrate
from test_migrate_imports import write_tree

pytest.importorskip("fissix")

TREE = {
    "py2.py": "def f(it, a, b):\n    print 'x'\n    x = it.next()\n    y = g.next()\n"
              "    z = it.next(1)\n    return x\n",
    "p3.py": "import json\n\n\ndef half(n, m):\n    return len(n) / 2, n / m\n\n\n"
             "def dump(o):\n    return json.dumps(o)  # migrate: check json\n",
    "done.py": "from mxpatch_bind.py2 import old_div\n\n\ndef h(a, b):\n"
               "    return old_div(a, b)  # migrate: check '/'\n",
    "keys.py": "def k(d, e):\n    return d.keys() + e.keys(), len(d) / 2\n",
}
REPORT = [
    "done.py:5: [check] '/' from Python 2: an integer there, a float on Python 3; write '//' "
    "where an integer was meant, then delete the marker \"# migrate: check '/'\"",
    "done.py:5: [check] old_div/old_idiv (mxpatch_bind.py2): a '/' from Python 2, run by "
    "Python 2's rule (an integer from two integers); write '//' where an integer is meant, "
    "'/' where a float is",
    "keys.py:1: [port] Python 2 code (it ran on Python 2 (a Python 2 tree) and the 2to3 "
    "fixers change it): --to-python3 ports it with the 2to3 fixers",
    "p3.py:5: [check] '/' at line 5: on Python 3 it divides integers to a float; the port "
    "writes old_div / old_idiv (Python 2's rule, at run time), listed until a person writes "
    "'//' or '/'",
    "p3.py:5: [port] Python 3 traps: '/' at line 5 (Python 2 divided integers to an "
    "integer); bytes in json at line 9: --to-python3 fixes them",
    "p3.py:9: [check] json: a Python 2 meaning the port could not prove here; decide it, "
    "then delete the marker '# migrate: check json'",
    "py2.py:2: [port] Python 2 code (Missing parentheses in call to 'print'. Did you mean "
    "print(...)? at line 2): --to-python3 ports it with the 2to3 fixers",
    "py2.py:3: [check] .next() at lines 3, 4: kept as it is (an MXNet DataIter has next() on "
    "Python 3 too); a generator or file needs next(x)",
    "migrate: 8 findings in 4 files: 3 to port (--to-python3), 5 to check by hand",
]


def test_each_kind_of_file_to_port_is_reported_with_its_checks(tmp_path, capsys):
    status, report = run_migrate(capsys, write_tree(tmp_path, TREE))
    assert report == REPORT


def test_each_fix_is_named_once_with_its_lines_in_the_order_first_found(tmp_path, capsys):
    root = write_tree(tmp_path, {"nine.py": "import json\n\n\n" + "".join(
        f"def f{i}(o):\n    return json.dumps(o), round(o)\n" for i in range(9)) + "print 'x'\n"})
    status, report = run_migrate(capsys, root)
    assert report[0].endswith(
        "--to-python3 ports it with the 2to3 fixers, and fixes: bytes in json at lines 5, 7, 9, "
        "11, 13, 15, 17, 19 and 1 more; round() returns an int on Python 3 at lines 5, 7, 9, "
        "11, 13, 15, 17, 19 and 1 more")


def test_a_python_2_tree_s_files_list_only_their_fixes_and_divisions_by_their_own_meaning(
        tmp_path, capsys):
    root = write_tree(tmp_path, {
        "traps.py": "import json\nif json:\n    from yaml import load\nelse:\n"
                    "    from json import load\n\n\ndef read(f):\n    return load(f)\n\n\n"
                    "def dump(a, b):\n    return json.dumps(a) + json.dumps(b)\n",
        "integral.py": "def half(n):\n    return len(n) / 2\n",
        "future2.py": "from __future__ import division\n\n\ndef f(a, b):\n    print 'x'\n"
                      "    return a / b\n"})
    status, report = run_migrate(capsys, root)
    assert report == [
        "future2.py:5: [port] Python 2 code (Missing parentheses in call to 'print'. Did you "
        "mean print(...)? at line 5): --to-python3 ports it with the 2to3 fixers",
        "integral.py:2: [port] Python 3 traps: '/' at line 2 (Python 2 divided integers to an "
        "integer): --to-python3 fixes them",
        "traps.py:9: [check] may be yaml.load without a Loader (the name may also be something "
        "else): pass Loader=yaml.FullLoader where it is",
        "traps.py:13: [port] Python 3 traps: bytes in json at line 13: --to-python3 fixes them",
        "migrate: 4 findings in 3 files: 3 to port (--to-python3), 1 to check by hand"]


def test_a_python_3_tree_s_file_the_2to3_fixers_would_change_is_left_as_it_is(tmp_path, capsys):
    root = write_tree(tmp_path, {"keys.py": "def k(d, e):\n    return d.keys() + e.keys()\n",
                                 "mod.py": "x = f'{1}'\n"})
    status, report = run_migrate(capsys, root)
    assert report == ["migrate: 0 findings in 0 files: nothing to migrate"]
