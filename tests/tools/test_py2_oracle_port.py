"""The 2to3 port itself, proven by running it: each Python 2 program prints under Python 2.7
what its port prints under Python 3 (tests/py2_oracle.py). One syntax family per test."""

import pytest
from py2_oracle import assert_same_output

pytest.importorskip("fissix")
pytest.importorskip("libcst")


def test_print_statements_print_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import sys
        print 'plain', 1, 2.5, None
        print
        print 'a' 'b', ('tuple', 1)
        print >>sys.stderr, 'to the error stream'
        print >>sys.stdout, 'to standard output', 3
        print '%s=%d' % ('n', 4)
        """})


def test_dict_methods_give_the_same_items(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        d = {'b': 2, 'a': 1, 'c': 3}
        print sorted(d.iteritems()), sorted(d.iterkeys()), sorted(d.itervalues())
        print sorted(d.keys()), sorted(d.values()), sorted(d.items())
        print d.has_key('a'), d.has_key('z'), len(d.keys())
        keys = d.keys()
        keys.sort()
        print keys, sorted(d.viewkeys() & set(['a', 'z']))
        print dict((k, v * 2) for k, v in d.iteritems())['c']
        """})


def test_xrange_and_lists_from_map_filter_zip_are_lists_again(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        from itertools import izip, imap
        print [i * i for i in xrange(4)], sum(xrange(10)), list(xrange(5, 0, -2))
        squares = map(lambda x: x * x, [1, 2, 3])
        print squares, squares[0], len(map(str, range(3)))
        print map(lambda a, b: a + b, [1, 2], [10, 20])
        evens = filter(lambda x: x % 2 == 0, range(7))
        print evens, evens[-1]
        pairs = zip('abc', range(3))
        print pairs, pairs[1], zip(*pairs)
        print list(izip([1], [2])), list(imap(abs, [-1, -2]))
        print reduce(lambda a, b: a * b, [1, 2, 3, 4])
        """})


def test_except_and_raise_forms_behave_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        def fail(kind):
            if kind == 1:
                raise ValueError, 'bad value'
            if kind == 2:
                raise KeyError('missing')
            raise TypeError, ('a tuple', 2)

        for kind in (1, 2, 3):
            try:
                fail(kind)
            except ValueError, error:
                print 'value', error.args
            except (KeyError, TypeError), error:
                print type(error).__name__, error.args
        try:
            int('x')
        except Exception, e:
            print 'caught', type(e).__name__
        """})


def test_octal_long_and_other_literals_keep_their_values(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        mode = 0755
        print mode, 0o17, 0x1F, 010 + 1, 0
        big = 10L
        print big + 1, type(big + 1) in (int, long), 3 <> 4, `42`
        exec 'answer = 6 * 7'
        print answer, int('12'), long('34') + 1
        """})


def test_unicode_and_str_keep_their_text(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        # -*- coding: utf-8 -*-
        word = u'caf\\xe9'
        print len(word), word == u'caf\\xe9', isinstance(word, basestring)
        print isinstance('x', basestring), unicode(12) + u'!', unichr(65)
        print 'abc'.upper(), u'abc'.upper() == 'ABC', str(3) + 'x'
        """})


def test_other_renamed_modules_and_builtins_work_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import cPickle
        import Queue
        import sys
        from StringIO import StringIO
        queue = Queue.Queue()
        queue.put(3)
        print queue.get(), sys.maxint > 2 ** 31, callable(len)
        buffer_ = StringIO()
        buffer_.write('written')
        print buffer_.getvalue(), cPickle.loads(cPickle.dumps([1, 'a']))
        print apply(max, (3, 9)), intern('s'), round(7.0) == 7
        """})


# An implicit relative import inside a package (Python 2 looked beside the importing
# module first), and a script's folder on sys.path holding packages (absolute imports there).
PACKAGE_TREE = {
    "main.py": """\
        import sys
        sys.path.insert(0, 'lib')
        from pkg import core
        import tools.report
        line = tools.report.line()
        print core.run(), line
        """,
    "helpers.py": "def double(x):\n    return 'top-level helpers, not the package sibling'\n",
    "lib/pkg/__init__.py": "",
    "lib/pkg/helpers.py": "def double(x):\n    return 2 * x\n",
    "lib/pkg/core.py": """\
        import helpers
        from helpers import double


        def run():
            return double(3), helpers.double(4)
        """,
    "lib/tools/__init__.py": "",
    "lib/tools/report.py": """\
        from pkg.helpers import double


        def line():
            print 'reporting'
            return double(5)
        """,
}


def test_implicit_relative_imports_find_the_package_sibling_as_python_2_did(tmp_path):
    assert_same_output(tmp_path, PACKAGE_TREE)


# SNIPER's layout: init.py, imported by the scripts at the root, puts 'lib' (relative to the
# working folder) first on sys.path; lib/ is also a package, yet its modules run top-level
# (``import inference``), where Python 2 found ``bbox`` absolutely, from lib/.
LIB_ON_PATH_TREE = {
    "init.py": "import sys\nsys.path.insert(0, 'lib')\n",
    "main.py": """\
        import init
        from inference import run
        print run()
        """,
    "lib/__init__.py": "",
    "lib/inference.py": """\
        from bbox.transform import scale


        def run():
            return scale(3)
        """,
    "lib/bbox/__init__.py": "",
    "lib/bbox/transform.py": "def scale(x):\n    return 2 * x\n",
}


def test_a_package_folder_a_script_puts_on_sys_path_by_a_relative_name_keeps_absolute_imports(
        tmp_path):
    outputs = assert_same_output(tmp_path, LIB_ON_PATH_TREE)
    assert "from bbox.transform import scale" in outputs.ported["lib/inference.py"]


@pytest.mark.slow  # the README's command in a process of its own (about 2 s)
def test_the_readmes_command_ports_a_package_tree_that_prints_the_same(tmp_path):
    outputs = assert_same_output(tmp_path, PACKAGE_TREE, via="cli")
    assert "from . import helpers" in outputs.ported["lib/pkg/core.py"]


@pytest.mark.slow  # the README's command in a process of its own (about 2 s)
def test_the_readmes_command_ports_print_and_dict_methods_that_print_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        d = dict(a=1, b=2)
        for k, v in sorted(d.iteritems()):
            print k, v, d.has_key(k)
        print map(abs, [-1, 2]), [x for x in xrange(3)]
        """}, via="cli")
