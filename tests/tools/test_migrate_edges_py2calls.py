"""Edges of ``migrate.py2calls`` (issue 36, item 10): each Python 2 call in each spelling
(every import form of ``round`` / ``floor`` / ``ceil``, ``cmp`` by keyword, by position and
on ``.sort``, every bytes-taking call), ported by :func:`traps.fix` and reported by
:func:`traps.analyse` for a Python 2 file, both compared whole, so that a slip of one line
changes a result. Each expected text was read against what Python 2 computed."""

import ast

import pytest

from mxpatch_bind.migrate import traps
from mxpatch_bind.migrate.found import Meaning
from mxpatch_bind.migrate.names import Names

CASES = [
    pytest.param(
        ('import math\n'
         'from math import floor as fl\n'
         'a = round(x)\n'
         'b = round(x, 2)\n'
         'c = math.floor(x)\n'
         'd = math.ceil(x)\n'
         'e = fl(x)\n'),
        ('from mxpatch_bind.py2 import old_ceil, old_floor, old_round\n'
         'import math\n'
         'from math import floor as fl\n'
         'a = old_round(x)\n'
         'b = old_round(x, 2)\n'
         'c = old_floor(x)\n'
         'd = old_ceil(x)\n'
         'e = old_floor(x)\n'),
        [], True,
        [(3, 'round() returns an int on Python 3', False),
         (4, 'round() returns an int on Python 3', False),
         (5, 'floor() returns an int on Python 3', False),
         (6, 'ceil() returns an int on Python 3', False),
         (7, 'floor() returns an int on Python 3', False),],
        id="round_floor_and_ceil_become_python_2's_in_each_import_form"),
    pytest.param(
        ('import math\n'
         'a = int(math.floor(x))\n'
         'b = int(math.ceil(x)) + 1\n'
         'c = float(math.floor(x))\n'
         'd = int(round(x))\n'
         'e = int(math.floor(x), **k)\n'
         'f = str(math.floor(x))\n'),
        ('from mxpatch_bind.py2 import old_floor, old_round\n'
         'import math\n'
         'a = int(math.floor(x))\n'
         'b = int(math.ceil(x)) + 1\n'
         'c = float(old_floor(x))\n'
         'd = int(old_round(x))\n'
         'e = int(old_floor(x), **k)\n'
         'f = str(old_floor(x))\n'),
        [], True,
        [(4, 'floor() returns an int on Python 3', False),
         (5, 'round() returns an int on Python 3', False),
         (6, 'floor() returns an int on Python 3', False),
         (7, 'floor() returns an int on Python 3', False),],
        id='floor_and_ceil_inside_a_plain_int_stay'),
    pytest.param(
        ('from m import *\n'
         'a = round(x)\n'),
        ('from m import *\n'
         'a = round(x)  # migrate: check round\n'),
        [2], True,
        [(2, 'round', True),],
        id='a_round_a_star_import_may_rebind_is_a_marked_check'),
    pytest.param(
        ('a = sorted(x, cmp=f)\n'
         'b = sorted(x, f)\n'
         'x.sort(cmp=f)\n'
         'x.sort(cmp=lambda p, q: p - q)\n'
         'sorted(x)\n'
         'x.sort()\n'
         'sorted(x, reverse=True, cmp=f)\n'),
        ('import functools\n'
         'a = sorted(x, key=functools.cmp_to_key(f))\n'
         'b = sorted(x, key=functools.cmp_to_key(f))\n'
         'x.sort(key=functools.cmp_to_key(f))\n'
         'x.sort(key=functools.cmp_to_key(lambda p, q: p - q))\n'
         'sorted(x)\n'
         'x.sort()\n'
         'sorted(x, reverse=True, key=functools.cmp_to_key(f))\n'),
        [], True,
        [(1, 'cmp= is gone', False),
         (2, 'cmp= is gone', False),
         (3, 'cmp= is gone', False),
         (4, 'cmp= is gone', False),
         (7, 'cmp= is gone', False),],
        id='cmp_becomes_a_key_in_each_spelling'),
    pytest.param(
        ('a = sorted(x, cmp=f, key=g)\n'
         'b = sorted(x, f, g)\n'
         'x.sort(cmp=f, key=g)\n'),
        ('a = sorted(x, cmp=f, key=g)  # migrate: check cmp\n'
         'b = sorted(x, f, g)  # migrate: check cmp\n'
         'x.sort(cmp=f, key=g)  # migrate: check cmp\n'),
        [1, 2, 3], True,
        [(1, 'cmp', True),
         (2, 'cmp', True),
         (3, 'cmp', True),],
        id='cmp_with_a_key_is_a_marked_check'),
    pytest.param(
        ('functools = 1\n'
         'a = sorted(x, cmp=f)\n'),
        ('functools = 1\n'
         'a = sorted(x, cmp=f)  # migrate: check cmp\n'),
        [2], True,
        [(2, 'cmp', True),],
        id='cmp_where_functools_is_taken_is_a_marked_check'),
    pytest.param(
        ('import functools as ft\n'
         'a = sorted(x, cmp=f)\n'),
        ('import functools as ft\n'
         'a = sorted(x, key=ft.cmp_to_key(f))\n'),
        [], True,
        [(2, 'cmp= is gone', False),],
        id='cmp_names_an_aliased_functools_and_adds_no_import'),
    pytest.param(
        ('import functools\n'
         'a = sorted(x, cmp=f)\n'),
        ('import functools\n'
         'a = sorted(x, key=functools.cmp_to_key(f))\n'),
        [], True,
        [(2, 'cmp= is gone', False),],
        id='cmp_with_functools_imported_adds_no_import'),
    pytest.param(
        ('a = map(f, x, y)\n'
         'b = map(f, x)\n'
         'c = map(None, x, y)\n'
         'd = map(f, x, y, z)\n'),
        ('from mxpatch_bind.py2 import old_map\n'
         'a = old_map(f, x, y)\n'
         'b = map(f, x)\n'
         'c = old_map(None, x, y)\n'
         'd = old_map(f, x, y, z)\n'),
        [], True,
        [(1, 'map() over several sequences ran to the longest', False),
         (3, 'map() over several sequences ran to the longest', False),
         (4, 'map() over several sequences ran to the longest', False),],
        id='map_over_several_sequences_becomes_old_map'),
    pytest.param(
        ('a = file(p)\n'
         "b = file(p, 'w')\n"),
        ('a = open(p)\n'
         "b = open(p, 'w')\n"),
        [], True,
        [(1, 'file() is open()', False),
         (2, 'file() is open()', False),],
        id='file_becomes_open_unless_open_is_taken'),
    pytest.param(
        ('open = g\n'
         'a = file(p)\n'),
        ('open = g\n'
         'a = file(p)  # migrate: check file\n'),
        [2], True,
        [(2, 'file', True),],
        id='file_where_open_is_taken_is_a_marked_check'),
    pytest.param(
        ('a = filter(f, s)\n'
         'b = cmp(p, q)\n'
         'c = len(s)\n'),
        ('from mxpatch_bind.py2 import old_cmp, old_filter\n'
         'a = old_filter(f, s)\n'
         'b = old_cmp(p, q)\n'
         'c = len(s)\n'),
        [], True,
        [(1, "Python 2's filter()", False),
         (2, "Python 2's cmp()", False),],
        id='filter_and_cmp_become_their_helpers'),
    pytest.param(
        ('class V(object):\n'
         '    def __div__(self, o):\n'
         '        return 1\n'
         '\n'
         '    def __rdiv__(self, o):\n'
         '        return 2\n'
         '\n'
         '    def __idiv__(self, o):\n'
         '        return 3\n'),
        ('class V(object):\n'
         '    def __div__(self, o):\n'
         '        return 1\n'
         '\n'
         '    __truediv__ = __div__\n'
         '\n'
         '    def __rdiv__(self, o):\n'
         '        return 2\n'
         '\n'
         '    __rtruediv__ = __rdiv__\n'
         '\n'
         '    def __idiv__(self, o):\n'
         '        return 3\n'
         '\n'
         '    __itruediv__ = __idiv__\n'),
        [], True,
        [(2, '__div__ (Python 3 divides by __truediv__)', False),
         (5, '__rdiv__ (Python 3 divides by __rtruediv__)', False),
         (8, '__idiv__ (Python 3 divides by __itruediv__)', False),],
        id='a_class_dividing_by_div_gets_the_python_3_names'),
    pytest.param(
        ('class V(object):\n'
         '    def __div__(self, o):\n'
         '        return 1\n'
         '\n'
         '    def __truediv__(self, o):\n'
         '        return 2\n'
         '\n'
         '    def __rdiv__(self, o):\n'
         '        return 3\n'
         '    __rtruediv__ = __rdiv__\n'),
        ('class V(object):\n'
         '    def __div__(self, o):\n'
         '        return 1\n'
         '\n'
         '    def __truediv__(self, o):\n'
         '        return 2\n'
         '\n'
         '    def __rdiv__(self, o):\n'
         '        return 3\n'
         '    __rtruediv__ = __rdiv__\n'),
        [], True,
        [],
        id='a_class_that_has_the_python_3_name_already_keeps_it'),
    pytest.param(
        'a = coerce(p, q)\n',
        'a = coerce(p, q)  # migrate: check coerce\n',
        [1], True,
        [(1, 'coerce', True),],
        id='coerce_is_a_marked_check'),
    pytest.param(
        ('import hashlib, base64, struct, zlib, binascii\n'
         'a = hashlib.md5(name)\n'
         'b = hashlib.sha256(name)\n'
         "c = hashlib.new('md5', name)\n"
         'd = base64.b64encode(s)\n'
         "e = struct.pack('4s', s)\n"
         "f = struct.pack('2p', s)\n"
         'g = zlib.crc32(s)\n'
         'h = binascii.hexlify(s)\n'
         'k = base64.encodestring(s)\n'
         'm = hashlib.sha3_512(name)\n'
         'n = zlib.adler32(s)\n'
         "p = hashlib.md5('voc')\n"),
        ('import hashlib, base64, struct, zlib, binascii\n'
         'a = hashlib.md5(name)  # migrate: check bytes\n'
         'b = hashlib.sha256(name)  # migrate: check bytes\n'
         "c = hashlib.new('md5', name)  # migrate: check bytes\n"
         'd = base64.b64encode(s)  # migrate: check bytes\n'
         "e = struct.pack('4s', s)  # migrate: check bytes\n"
         "f = struct.pack('2p', s)  # migrate: check bytes\n"
         'g = zlib.crc32(s)  # migrate: check bytes\n'
         'h = binascii.hexlify(s)  # migrate: check bytes\n'
         'k = base64.encodestring(s)  # migrate: check bytes\n'
         'm = hashlib.sha3_512(name)  # migrate: check bytes\n'
         'n = zlib.adler32(s)  # migrate: check bytes\n'
         "p = hashlib.md5('voc')  # migrate: check bytes\n"),
        [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], True,
        [(2, 'bytes', True),
         (3, 'bytes', True),
         (4, 'bytes', True),
         (5, 'bytes', True),
         (6, 'bytes', True),
         (7, 'bytes', True),
         (8, 'bytes', True),
         (9, 'bytes', True),
         (10, 'bytes', True),
         (11, 'bytes', True),
         (12, 'bytes', True),
         (13, 'bytes', True),],
        id='a_str_given_where_bytes_are_taken_is_a_marked_check_in_each_spelling'),
    pytest.param(
        ('import hashlib, base64, struct, zlib\n'
         "a = hashlib.md5(b'x')\n"
         "b = hashlib.md5(s.encode('utf-8'))\n"
         "c = hashlib.new('md5')\n"
         "d = struct.pack('i', n)\n"
         "e = struct.pack('4s', b'abcd')\n"
         "v = b'abc'\n"
         'f = zlib.compress(v)\n'
         'g = zlib.crc32(bytes(s))\n'
         'h = zlib.crc32(bytearray(s))\n'
         'k = hashlib.md5(1)\n'
         'm = hashlib.md5()\n'
         'n = struct.pack(fmt, s)\n'),
        ('import hashlib, base64, struct, zlib\n'
         "a = hashlib.md5(b'x')\n"
         "b = hashlib.md5(s.encode('utf-8'))\n"
         "c = hashlib.new('md5')\n"
         "d = struct.pack('i', n)\n"
         "e = struct.pack('4s', b'abcd')\n"
         "v = b'abc'\n"
         'f = zlib.compress(v)\n'
         'g = zlib.crc32(bytes(s))\n'
         'h = zlib.crc32(bytearray(s))\n'
         'k = hashlib.md5(1)\n'
         'm = hashlib.md5()\n'
         'n = struct.pack(fmt, s)\n'),
        [], True,
        [],
        id='bytes_given_where_bytes_are_taken_are_no_check'),
    pytest.param(
        ('a = round(x)\n'
         'b = sorted(x, cmp=f)\n'
         'c = file(p)\n'),
        ('a = round(x)\n'
         'b = sorted(x, cmp=f)\n'
         'c = file(p)\n'),
        [], False,
        [],
        id="python_3_files_keep_python_2's_calls_as_they_are"),
]


@pytest.mark.parametrize("source, ported, marked, python2, found", CASES)
def test_each_python_2_call_is_ported_to_its_exact_text_and_reported_at_its_line(
        source, ported, marked, python2, found):
    meaning = Meaning(python2=python2)
    assert traps.fix(source, meaning) == (ported, marked)
    report = traps.analyse(source, Names(ast.parse(source), meaning.star_bound), meaning)
    assert [(f.line, f.what, f.check is not None) for f in report] == found
