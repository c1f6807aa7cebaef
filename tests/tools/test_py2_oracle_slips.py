"""Corners of issue 36's port that a mutation sample found untested (docs/mutation.rst,
sample 19): each a small program Python 2.7 ran, whose port must print the same
(tests/py2_oracle.py), or, where Python 2 has no part (an MXNet Symbol, a name the installed
Python lacks), the ported program's own output or text."""

import subprocess
import sys

import pytest
from py2_oracle import assert_same_output, checked
from test_migrate import run_migrate
from test_migrate_imports import write_tree

from mxpatch_bind.migrate import traps

pytest.importorskip("fissix")
pytest.importorskip("libcst")


def test_a_count_rebound_later_in_a_while_loop_is_not_taken_for_its_first_value(tmp_path):
    # the second pass hands np.linspace a float: n is no int there, though only 3 is bound above
    assert_same_output(tmp_path, {"main.py": """\
        import numpy as np
        n = 3
        while n < 10:
            print np.linspace(0, 1, n).tolist()
            n = n * 2.5
        """}, modules=("numpy",))


def test_an_import_added_to_a_crlf_file_without_a_final_newline_ends_in_crlf_too():
    new, _ = traps.fix("import os\r\nsep = os.sep\r\nx = a / b", True)
    assert new.startswith("from mxpatch_bind.py2 import old_div\r\nimport os\r\n"), new
    assert "\n" not in new.replace("\r\n", "")


def test_a_pickle_read_through_an_unpickler_gets_its_file_opened_in_binary(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import cPickle
        with open('cache.pkl', 'w') as f:
            cPickle.dump({'boxes': [1, 2]}, f)
        with open('cache.pkl') as f:
            print cPickle.Unpickler(f).load()
        """})


def test_a_pickle_file_opened_with_keyword_options_is_left_as_it_is_and_listed(tmp_path):
    # adding 'rb' would pass the mode twice: open() refuses that
    outputs = assert_same_output(tmp_path, {"main.py": """\
        import cPickle
        with open('cache.pkl', 'wb') as f:
            cPickle.dump([1, 2], f)
        options = {'mode': 'rb'}
        f = open('cache.pkl', **options)
        print cPickle.load(f)
        f.close()
        """})
    assert checked(outputs, "main.py", 5)


def test_a_file_opened_in_mode_u_alone_reads_the_same_lines(tmp_path):
    assert_same_output(tmp_path, {"lines.txt": "first\nsecond\n", "main.py": """\
        with open('lines.txt', 'U') as f:
            print f.read().splitlines()
        """})


def test_hashlib_new_is_checked_on_its_data_not_on_its_algorithms_name(tmp_path):
    outputs = assert_same_output(tmp_path, {"main.py": """\
        import hashlib
        h = hashlib.new('md5')
        h.update(b'voc')
        print h.hexdigest(), hashlib.new('sha1', b'voc').hexdigest()[:8]
        """})
    assert not checked(outputs, "main.py", 2) and not checked(outputs, "main.py", 4)


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_a_symbol_subtracted_in_place_by_a_difference_subtracts_the_whole_difference(
        tmp_path, capsys):
    pytest.importorskip("mxnet")
    root = write_tree(tmp_path, {"net.py": """\
        import mxnet as mx

        data = mx.sym.Variable('data')
        out = data * 10
        out -= data - 1
        print(out.eval(ctx=mx.cpu(), data=mx.nd.array([1, 2]))[0].asnumpy().tolist())
        """})
    run_migrate(capsys, root, "--to-python3")
    ran = subprocess.run([sys.executable, "net.py"], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "[10.0, 19.0]\n"  # 10x - (x - 1)


def test_a_name_that_only_begins_with_a_gone_ones_name_is_kept(tmp_path, capsys):
    root = write_tree(tmp_path, {"timing.py": """\
        import time
        start = time.clock()
        tick = time.clock_gettime(time.CLOCK_MONOTONIC)
        """})
    status, report = run_migrate(capsys, root)
    assert [line for line in report if line.startswith("timing.py:")] == [
        "timing.py:2: [port] Python 3 traps: time.clock is gone: time.process_time (time.clock "
        "(removed in Python 3.8) was the process's CPU time on Linux (C's clock()), which "
        "time.process_time is) at line 2: --to-python3 fixes them"]
    run_migrate(capsys, root, "--to-python3")
    assert (root / "timing.py").read_text() == (
        "import time\nstart = time.process_time()\n"
        "tick = time.clock_gettime(time.CLOCK_MONOTONIC)\n")


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_a_symbol_divided_in_place_under_true_division_becomes_what_older_mxnet_ran(
        tmp_path, capsys):
    # a Python 2 file that divides truly: its '/=' is no classic division left to old_idiv
    pytest.importorskip("mxnet")
    root = write_tree(tmp_path, {"net.py": """\
        from __future__ import division
        import mxnet as mx

        data = mx.sym.Variable('data')
        out = data * 3
        out /= 2
        print out.eval(ctx=mx.cpu(), data=mx.nd.array([1, 2]))[0].asnumpy().tolist()
        """})
    run_migrate(capsys, root, "--to-python3")
    ran = subprocess.run([sys.executable, "net.py"], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "[1.5, 3.0]\n"


def test_without_fissix_a_file_that_divides_truly_in_a_python_2_tree_has_no_division_listed(
        tmp_path, capsys, monkeypatch):
    # with fissix the port drops the __future__ import, so the file goes the Python 2 way
    from mxpatch_bind.migrate import port
    monkeypatch.setattr(port, "available", lambda: False)
    root = write_tree(tmp_path, {"cache.py": "def hit(d, key):\n    return d.has_key(key)\n",
                                 "util.py": """\
        from __future__ import division


        def half(n):
            return n / 2
        """})
    status, report = run_migrate(capsys, root)
    assert report[0].startswith("cache.py:2: [port] Python 2 code (.has_key() at line 2)")
    assert [line for line in report if line.startswith("util.py")] == []


def test_a_division_of_an_unknown_by_an_integer_is_listed_as_kept_for_a_person(tmp_path, capsys):
    root = write_tree(tmp_path, {"half.py": "def half(n):\n    print 'half'\n    return n / 2\n"})
    status, report = run_migrate(capsys, root)
    kept = "half.py:3: [check] '/' at line 3: on Python 3"
    assert any(line.startswith(kept) for line in report), report


def test_a_cycle_of_star_imports_is_read_like_any_tree(tmp_path, capsys):
    # b imports a's names while a imports b's: Python runs it; the scan must not go round
    root = write_tree(tmp_path, {"main.py": "from a import *\nprint(half(7), SCALE)\n",
                                 "a.py": "from b import *\ndef half(n):\n    return n // SCALE\n",
                                 "b.py": "SCALE = 2\nfrom a import *\n"})
    status, report = run_migrate(capsys, root)
    assert report == ["migrate: 0 findings in 0 files: nothing to migrate"]


def test_eight_kept_divisions_are_all_shown_and_a_ninth_is_counted(tmp_path, capsys):
    body = "".join(f"    r{i} = a / b\n" for i in range(9))
    root = write_tree(tmp_path, {"eight.py": "def f(a, b):\n    print 'x'\n" + body[:-15],
                                 "nine.py": "def f(a, b):\n    print 'x'\n" + body})
    status, report = run_migrate(capsys, root)
    kept = [line.split(": on Python 3")[0] for line in report if "[check] '/' at" in line]
    assert kept == ["eight.py:3: [check] '/' at lines 3, 4, 5, 6, 7, 8, 9, 10",
                    "nine.py:3: [check] '/' at lines 3, 4, 5, 6, 7, 8, 9, 10 and 1 more"]


def test_a_pickle_read_in_universal_newline_mode_gets_rb(tmp_path):
    # Python 3.11 refuses 'U'; 'rUb' would stop the port where Python 2 read the pickle
    assert_same_output(tmp_path, {"main.py": """\
        import cPickle
        with open('cache.pkl', 'w') as f:
            cPickle.dump({'boxes': [1, 2]}, f)
        with open('cache.pkl', 'rU') as f:
            print cPickle.load(f)
        """})


def test_a_decorated_div_method_gets_its_true_division_twin_at_the_def_s_indent(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        def deco(f):
            return f
        class V(object):
            def __init__(self, v):
                self.v = v
            @deco
            def __div__(self, o):
                return V(self.v / o)
        print "half", (V(7) / 2).v, (V(7.0) / 2).v
        """})


def test_os_errno_becomes_the_errno_module_it_re_exported(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import os
        def missing(e):
            return e.errno == os.errno.ENOENT
        print "ok", missing(OSError(2, "x")), missing(OSError(13, "y"))
        """})


def test_a_lambda_s_parameter_is_not_taken_for_the_file_of_the_same_name_outside():
    # only the lambda's own f (a parameter) is read by pickle: the outer text file is not its
    source = "import pickle\nf = open(p)\ng = lambda f: pickle.load(f)\nf.close()\n"
    new, _ = traps.fix(source, True)
    assert "\nf = open(p)\n" in new, new
