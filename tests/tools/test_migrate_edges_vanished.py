"""Edges of ``migrate.vanished`` (issue 36, item 10): each kind of gone name (an attribute
renamed beside its parent, one moved to another module, a builtin, an imported module, a
from-import mixing moved and kept names, CRLF lines), each ``try`` that does or does not
catch its absence, each receiver of a gone method, and each in-place operator on a Symbol,
ported by :func:`traps.fix` and reported by :func:`traps.analyse`, both compared whole.
``missing`` stands for what the scan found gone in the installed environment."""

import ast

import pytest

from mxpatch_bind.migrate import traps, vanished
from mxpatch_bind.migrate.found import Meaning
from mxpatch_bind.migrate.names import Names

CASES = [
    pytest.param(
        ('import time, base64\n'
         't = time.clock()\n'
         'u = time.clock_gettime(0)\n'
         'b = base64.encodestring(s)\n'
         'c = base64.decodestring(s)\n'
         'n = base64.encodestring.__name__\n'),
        ['base64.decodestring', 'base64.encodestring', 'time.clock'], False,
        ('import time, base64\n'
         't = time.process_time()\n'
         'u = time.clock_gettime(0)\n'
         'b = base64.encodebytes(s)\n'
         'c = base64.decodebytes(s)\n'
         'n = base64.encodebytes.__name__\n'),
        [],
        [(2, 'time.clock is gone: time.process_time', False),
         (4, 'base64.encodestring is gone: base64.encodebytes', False),
         (5, 'base64.decodestring is gone: base64.decodebytes', False),
         (6, 'base64.encodestring is gone: base64.encodebytes', False),],
        id='a_gone_attribute_with_a_replacement_beside_it_is_renamed_in_place'),
    pytest.param(
        ('import inspect\n'
         'a = inspect.getargspec(f)\n'),
        ['inspect.getargspec'], False,
        ('import mxpatch_bind.py2\n'
         'import inspect\n'
         'a = mxpatch_bind.py2.getargspec(f)\n'),
        [],
        [(2, 'inspect.getargspec is gone: mxpatch_bind.py2.getargspec', False),],
        id='a_replacement_in_another_module_is_imported'),
    pytest.param(
        ('import inspect\n'
         'import mxpatch_bind.py2 as p2\n'
         'a = inspect.getargspec(f)\n'),
        ['inspect.getargspec'], False,
        ('import inspect\n'
         'import mxpatch_bind.py2 as p2\n'
         'a = p2.getargspec(f)\n'),
        [],
        [(3, 'inspect.getargspec is gone: mxpatch_bind.py2.getargspec', False),],
        id='a_replacement_in_a_module_already_imported_under_an_alias_uses_the_alias'),
    pytest.param(
        ('import inspect\n'
         'mxpatch_bind = None\n'
         'a = inspect.getargspec(f)\n'),
        ['inspect.getargspec'], False,
        ('import inspect\n'
         'mxpatch_bind = None\n'
         'a = inspect.getargspec(f)\n'),
        [],
        [(3, 'inspect.getargspec', True),],
        id='a_replacement_in_a_module_whose_name_is_taken_is_a_check'),
    pytest.param(
        ('import numpy as np\n'
         'a = np.float(x)\n'
         'b = np.int\n'
         'c = np.long(x)\n'
         'd = np.unicode\n'),
        ['numpy.float', 'numpy.int', 'numpy.long', 'numpy.unicode'], False,
        ('import numpy as np\n'
         'a = float(x)\n'
         'b = int\n'
         'c = int(x)\n'
         'd = str\n'),
        [],
        [(2, 'numpy.float is gone: builtins.float', False),
         (3, 'numpy.int is gone: builtins.int', False),
         (4, 'numpy.long is gone: builtins.int', False),
         (5, 'numpy.unicode is gone: builtins.str', False),],
        id='a_numpy_alias_of_a_builtin_becomes_the_builtin'),
    pytest.param(
        ('import numpy as np\n'
         'float = 1\n'
         'a = np.float(x)\n'),
        ['numpy.float'], False,
        ('import numpy as np\n'
         'float = 1\n'
         'a = np.float(x)\n'),
        [],
        [(3, 'numpy.float', True),],
        id='a_numpy_alias_whose_builtin_is_rebound_is_a_check'),
    pytest.param(
        ('import xml.etree.cElementTree as ET\n'
         'import xml.etree.cElementTree\n'
         'import PIL.Image\n'
         'x = PIL.Image.ANTIALIAS\n'),
        ['PIL.Image.ANTIALIAS', 'xml.etree.cElementTree'], False,
        ('import xml.etree.ElementTree as ET\n'
         'import xml.etree.ElementTree\n'
         'import PIL.Image\n'
         'x = PIL.Image.LANCZOS\n'),
        [],
        [(1, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),
         (2, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),
         (4, 'PIL.Image.ANTIALIAS is gone: PIL.Image.LANCZOS', False),],
        id='an_imported_gone_module_is_renamed_keeping_its_bound_name'),
    pytest.param(
        ('import os.errno as oe\n'
         'import os.errno\n'
         'import xml.etree.cElementTree.sub as s\n'),
        ['os.errno', 'xml.etree.cElementTree'], False,
        ('import errno as oe\n'
         'import os.errno\n'
         'import xml.etree.cElementTree.sub as s\n'),
        [],
        [(1, 'os.errno is gone: errno', False),
         (2, 'os.errno', True),
         (3, 'xml.etree.cElementTree', True),],
        id='an_imported_gone_module_under_another_top_name_is_renamed_only_where_it_keeps_its_name'),
    pytest.param(
        ('from xml.etree.cElementTree import parse, ElementTree\n'
         'from xml.etree.cElementTree.sub import x\n'),
        ['xml.etree.cElementTree'], False,
        ('from xml.etree.ElementTree import parse, ElementTree\n'
         'from xml.etree.ElementTree.sub import x\n'),
        [],
        [(1, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),
         (1, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),
         (2, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),],
        id='a_from_import_out_of_a_gone_module_imports_from_the_new_one'),
    pytest.param(
        ('from collections import Mapping, OrderedDict as OD\r\n'
         'x = 1\r\n'),
        ['collections.Mapping'], False,
        ('from collections import OrderedDict as OD\r\n'
         'from collections.abc import Mapping\r\n'
         'x = 1\r\n'),
        [],
        [(1, 'collections.Mapping is gone: collections.abc.Mapping', False),],
        id='moved_names_beside_kept_ones_keep_their_aliases_and_crlf_lines'),
    pytest.param(
        'from xml.etree import cElementTree as ET\n',
        ['xml.etree.cElementTree'], False,
        'from xml.etree import ElementTree as ET\n',
        [],
        [(1, 'xml.etree.cElementTree is gone: xml.etree.ElementTree', False),],
        id='a_gone_module_imported_from_its_package_is_imported_from_the_new_one'),
    pytest.param(
        'from collections import Mapping, OrderedDict, Sequence as S\n',
        ['collections.Mapping', 'collections.Sequence'], False,
        ('from collections import OrderedDict\n'
         'from collections.abc import Mapping, Sequence as S\n'),
        [],
        [(1, 'collections.Mapping is gone: collections.abc.Mapping', False),
         (1, 'collections.Sequence is gone: collections.abc.Sequence', False),],
        id='moved_names_leave_the_others_in_their_from_import'),
    pytest.param(
        ('def f():\n'
         '    from collections import Mapping\r\n'
         '    return Mapping\r\n'),
        ['collections.Mapping'], False,
        ('def f():\n'
         '    from collections.abc import Mapping\r\n'
         '    return Mapping\r\n'),
        [],
        [(2, 'collections.Mapping is gone: collections.abc.Mapping', False),],
        id='a_from_import_of_moved_names_only_is_rewritten_whole'),
    pytest.param(
        'from multiprocessing.dummy import cpu_count, Pool\n',
        ['multiprocessing.dummy.cpu_count'], False,
        ('from multiprocessing.dummy import Pool\n'
         'from multiprocessing import cpu_count\n'),
        [],
        [(1, 'multiprocessing.dummy.cpu_count is gone: multiprocessing.cpu_count', False),],
        id='a_name_moved_out_of_a_gone_module_is_imported_from_the_new_one'),
    pytest.param(
        'from numpy import float, int\n',
        ['numpy.float'], False,
        'from numpy import float, int\n',
        [],
        [(1, 'numpy.float', True),],
        id='a_from_import_of_a_numpy_alias_is_a_check'),
    pytest.param(
        ('import platform\n'
         'd = platform.linux_distribution()\n'
         'e = platform.gone_thing()\n'),
        ['platform.gone_thing', 'platform.linux_distribution'], False,
        ('import platform\n'
         'd = platform.linux_distribution()\n'
         'e = platform.gone_thing()\n'),
        [],
        [(2, 'platform.linux_distribution', True),
         (3, 'platform.gone_thing', True),],
        id='gone_names_without_a_replacement_are_checks_with_advice_where_there_is_some'),
    pytest.param(
        ('import time\n'
         'try:\n'
         '    t = time.clock()\n'
         'except AttributeError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except ValueError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except (ValueError, ImportError):\n'
         '    t = 0\n'
         'try:\n'
         '    pass\n'
         'except NameError:\n'
         '    t = time.clock()\n'
         'try:\n'
         '    pass\n'
         'except Exception:\n'
         '    pass\n'
         'else:\n'
         '    t = time.clock()\n'
         'finally:\n'
         '    u = time.clock()\n'
         'try:\n'
         '    t = time.clock()\n'
         'except errors.AttributeError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except BaseException:\n'
         '    t = 0\n'),
        ['time.clock'], False,
        ('import time\n'
         'try:\n'
         '    t = time.clock()\n'
         'except AttributeError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.process_time()\n'
         'except ValueError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except (ValueError, ImportError):\n'
         '    t = 0\n'
         'try:\n'
         '    pass\n'
         'except NameError:\n'
         '    t = time.clock()\n'
         'try:\n'
         '    pass\n'
         'except Exception:\n'
         '    pass\n'
         'else:\n'
         '    t = time.process_time()\n'
         'finally:\n'
         '    u = time.process_time()\n'
         'try:\n'
         '    t = time.process_time()\n'
         'except errors.AttributeError:\n'
         '    t = 0\n'
         'try:\n'
         '    t = time.clock()\n'
         'except BaseException:\n'
         '    t = 0\n'),
        [],
        [(7, 'time.clock is gone: time.process_time', False),
         (27, 'time.clock is gone: time.process_time', False),
         (29, 'time.clock is gone: time.process_time', False),
         (31, 'time.clock is gone: time.process_time', False),],
        id="a_gone_name_inside_a_try_that_catches_its_absence_is_the_code's_fallback"),
    pytest.param(
        ('import sys, string\n'
         'm = sys.maxint\n'
         'j = string.join(a)\n'
         'c = string.letters\n'),
        ['string.join', 'string.letters', 'sys.maxint'], True,
        ('import sys, string\n'
         'm = sys.maxint\n'
         'j = string.join(a)\n'
         'c = string.letters\n'),
        [],
        [(4, 'string.letters', True),],
        id='a_python_2_file_leaves_what_2to3_renames_to_the_port'),
    pytest.param(
        ('import sys\n'
         'm = sys.maxint\n'),
        ['sys.maxint'], False,
        ('import sys\n'
         'm = sys.maxint\n'),
        [],
        [(2, 'sys.maxint', True),],
        id='a_python_3_file_reports_what_2to3_would_rename'),
    pytest.param(
        ('import threading, array\n'
         't = threading.Thread(target=f)\n'
         't.isAlive()\n'
         'x.isAlive()\n'
         'x.getchildren()\n'
         'x.getiterator()\n'
         "a = array.array('f')\n"
         'a.tostring()\n'
         'a.fromstring(s)\n'
         'class T(threading.Thread):\n'
         '    def run(self):\n'
         '        self.isAlive()\n'
         'class U(object):\n'
         '    def run(self):\n'
         '        self.isAlive()\n'
         'def g(self):\n'
         '    self.isAlive()\n'
         'threading.Thread(target=f).isAlive()\n'
         't.join()\n'
         't.isAlive\n'
         't.getchildren()\n'),
        [], False,
        ('import threading, array\n'
         't = threading.Thread(target=f)\n'
         't.is_alive()\n'
         'x.isAlive()\n'
         'x.getchildren()\n'
         'x.getiterator()\n'
         "a = array.array('f')\n"
         'a.tobytes()\n'
         'a.frombytes(s)\n'
         'class T(threading.Thread):\n'
         '    def run(self):\n'
         '        self.is_alive()\n'
         'class U(object):\n'
         '    def run(self):\n'
         '        self.isAlive()\n'
         'def g(self):\n'
         '    self.isAlive()\n'
         'threading.Thread(target=f).is_alive()\n'
         't.join()\n'
         't.isAlive\n'
         't.getchildren()\n'),
        [],
        [(3, 'threading.Thread.isAlive is gone: is_alive', False),
         (4, 'isAlive', True),
         (5, 'getchildren', True),
         (6, 'getiterator', True),
         (8, 'array.array.tostring is gone: tobytes', False),
         (9, 'array.array.fromstring is gone: frombytes', False),
         (12, 'threading.Thread.isAlive is gone: is_alive', False),
         (15, 'isAlive', True),
         (17, 'isAlive', True),
         (18, 'threading.Thread.isAlive is gone: is_alive', False),],
        id='a_gone_method_is_renamed_where_its_receiver_is_provably_of_its_class'),
    pytest.param(
        ('import mxnet as mx\n'
         "b = mx.symbol.Variable('b')\n"
         "a = mx.sym.Variable('a')\n"
         'a += b\n'
         "a = mx.sym.Variable('a')\n"
         'a -= b - c\n'
         "a = mx.sym.Variable('a')\n"
         'a *= b + c\n'
         "a = mx.sym.Variable('a')\n"
         'a /= b\n'
         "a = mx.sym.Variable('a')\n"
         'a += b * c\n'
         "a = mx.sym.Variable('a')\n"
         'a -= -b\n'
         "a = mx.sym.Variable('a')\n"
         'a *= b if c else d\n'
         "a = mx.sym.Variable('a')\n"
         'a -= b ** 2\n'
         "a = mx.sym.Variable('a')\n"
         'a /= b * c\n'
         "a = mx.sym.Variable('a')\n"
         'a -= b // c\n'
         "a = mx.sym.Variable('a')\n"
         'a *= b % c\n'
         "a = mx.sym.Variable('a')\n"
         'a -= [b][0]\n'),
        [], False,
        ('import mxnet as mx\n'
         "b = mx.symbol.Variable('b')\n"
         "a = mx.sym.Variable('a')\n"
         'a = a + b\n'
         "a = mx.sym.Variable('a')\n"
         'a = a - (b - c)\n'
         "a = mx.sym.Variable('a')\n"
         'a = a * (b + c)\n'
         "a = mx.sym.Variable('a')\n"
         'a = a / b\n'
         "a = mx.sym.Variable('a')\n"
         'a = a + b * c\n'
         "a = mx.sym.Variable('a')\n"
         'a = a - -b\n'
         "a = mx.sym.Variable('a')\n"
         'a = a * (b if c else d)\n'
         "a = mx.sym.Variable('a')\n"
         'a = a - b ** 2\n'
         "a = mx.sym.Variable('a')\n"
         'a = a / (b * c)\n'
         "a = mx.sym.Variable('a')\n"
         'a = a - b // c\n'
         "a = mx.sym.Variable('a')\n"
         'a = a * (b % c)\n'
         "a = mx.sym.Variable('a')\n"
         'a = a - [b][0]\n'),
        [],
        [(4, 'an in-place operator on a Symbol', False),
         (6, 'an in-place operator on a Symbol', False),
         (8, 'an in-place operator on a Symbol', False),
         (10, 'an in-place operator on a Symbol', False),
         (12, 'an in-place operator on a Symbol', False),
         (14, 'an in-place operator on a Symbol', False),
         (16, 'an in-place operator on a Symbol', False),
         (18, 'an in-place operator on a Symbol', False),
         (20, 'an in-place operator on a Symbol', False),
         (22, 'an in-place operator on a Symbol', False),
         (24, 'an in-place operator on a Symbol', False),
         (26, 'an in-place operator on a Symbol', False),],
        id='an_in_place_operator_on_a_symbol_becomes_an_assignment_with_its_value_first'),
    pytest.param(
        ('import mxnet as mx\n'
         'c = mx.contrib.sym.X()\n'
         'c += 1\n'
         'd = mx.contrib.symbol.Y()[0]\n'
         'd *= 2\n'
         'e = 3\n'
         'e += d\n'
         "s = mx.sym.Variable('s')\n"
         'k = 1\n'
         'k += s + 1\n'
         'k = 1\n'
         'k += 1 + s\n'
         'g = 2\n'
         'g //= d\n'
         'h = 1\n'
         'h += 2\n'
         'm = mx.nd.zeros(1)\n'
         'm += 1\n'),
        [], False,
        ('import mxnet as mx\n'
         'c = mx.contrib.sym.X()\n'
         'c = c + 1\n'
         'd = mx.contrib.symbol.Y()[0]\n'
         'd = d * 2\n'
         'e = 3\n'
         'e += d\n'
         "s = mx.sym.Variable('s')\n"
         'k = 1\n'
         'k = k + (s + 1)\n'
         'k = 1\n'
         'k = k + (1 + s)\n'
         'g = 2\n'
         'g //= d\n'
         'h = 1\n'
         'h += 2\n'
         'm = mx.nd.zeros(1)\n'
         'm += 1\n'),
        [],
        [(3, 'an in-place operator on a Symbol', False),
         (5, 'an in-place operator on a Symbol', False),
         (10, 'an in-place operator on a Symbol', False),
         (12, 'an in-place operator on a Symbol', False),],
        id='an_in_place_operator_on_an_item_or_sum_of_symbols_is_rewritten_too'),
    pytest.param(
        ('import mxnet as mx\n'
         "b = mx.sym.Variable('b')\n"
         'f()[0] += b\n'),
        [], False,
        ('import mxnet as mx\n'
         "b = mx.sym.Variable('b')\n"
         'f()[0] += b\n'),
        [],
        [(3, 'Symbol in place', True),],
        id='an_in_place_operator_on_a_symbol_target_read_by_a_call_is_a_check'),
    pytest.param(
        ('import mxnet as mx\n'
         "a = mx.sym.Variable('a')\n"
         'a /= b\n'),
        [], True,
        ('from mxpatch_bind.py2 import old_idiv\n'
         'import mxnet as mx\n'
         "a = mx.sym.Variable('a')\n"
         'a = old_idiv(a, b)\n'),
        [],
        [],
        id="a_python_2_symbol_divided_in_place_is_division's"),
]


@pytest.mark.parametrize("source, missing, python2, ported, marked, found", CASES)
def test_each_gone_name_is_ported_to_its_exact_text_and_reported_at_its_line(
        source, missing, python2, ported, marked, found):
    meaning = Meaning(python2=python2, missing=frozenset(missing))
    assert traps.fix(source, meaning) == (ported, marked)
    report = traps.analyse(source, Names(ast.parse(source)), meaning)
    assert [(f.line, f.what.split(" (")[0], f.check is not None) for f in report] == found


def test_a_gone_name_with_advice_says_it_and_one_without_says_only_that_it_is_gone():
    source = "import platform\nd = platform.dist()\ne = platform.gone_thing()\n"
    meaning = Meaning(missing=frozenset({"platform.dist", "platform.gone_thing"}))
    report = traps.analyse(source, Names(ast.parse(source)), meaning)
    assert [f.check for f in report] == [
        "platform.dist does not exist in the installed environment: the 'distro' package "
        "has what it returned",
        "platform.gone_thing does not exist in the installed environment"]


def test_a_numpy_alias_whose_builtin_is_rebound_says_which_builtin_to_write():
    source = "import numpy as np\nint = 1\na = np.long(x)\n"
    meaning = Meaning(missing=frozenset({"numpy.long"}))
    report = traps.analyse(source, Names(ast.parse(source)), meaning)
    assert [f.check.split(" (")[0] for f in report] == [
        "numpy.long does not exist any more: write int"]


def test_the_references_are_the_longest_chains_the_from_imports_and_the_dotted_imports():
    source = ("import numpy as np\nimport os.path\nimport os\nimport xml.etree.cElementTree as ET\n"
              "from . import rel\nfrom .m import r2\nfrom collections import *\n"
              "from collections import Mapping as M, deque\nx = np.random.rand(3).shape\n"
              "y = os.path.join\nz = f().attr\nw = len(x).real\nv = M.register\n"
              "u = dict.fromkeys\nt = rel.attr\n")
    names = Names(ast.parse(source), frozenset())  # the star import binds nothing else
    found = [(node.lineno, dotted) for node, dotted in vanished.references(names)]
    assert found == [(2, "os.path"), (4, "xml.etree.cElementTree"), (8, "collections.Mapping"),
                     (8, "collections.deque"), (9, "numpy.random.rand"), (10, "os.path.join"),
                     (13, "collections.Mapping.register")]
