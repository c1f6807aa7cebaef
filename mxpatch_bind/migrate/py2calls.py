"""Private to ``migrate``: Python 2 calls that Python 3 computes differently or refuses,
ported to what Python 2 computed (a Python 2 file only; 2to3 leaves each of them).

- ``round(x[, n])``, ``math.floor(x)``, ``math.ceil(x)`` in every import form returned floats
  (and ``round`` rounded halves away from zero): they become :func:`mxpatch_bind.py2.old_round`
  / ``old_floor`` / ``old_ceil``, which do that. ``int(math.floor(x))`` and ``int(math.ceil(
  x))`` stay: there both Pythons compute the same integer.
- ``sorted(x, cmp=f)``, ``sorted(x, f)`` and ``x.sort(cmp=f)``: Python 3 has no ``cmp``; they
  get ``key=functools.cmp_to_key(f)``, which orders the same. With ``key`` as well (Python 2
  compared the keys with ``f``), a person decides.
- ``map(f, a, b)`` over several sequences ran to the longest, padding with None (Python 3's
  stops at the shortest); ``map(None, a, b)`` zipped them: both become
  :func:`mxpatch_bind.py2.old_map`.
- ``filter(f, s)`` of a str gave a str, of a tuple a tuple (Python 3's is an iterator, true
  in an ``if`` even when empty): :func:`mxpatch_bind.py2.old_filter`; ``cmp(a, b)`` is gone:
  ``old_cmp``.
- A class's ``__div__`` / ``__rdiv__`` / ``__idiv__``: Python 3's ``/`` calls
  ``__truediv__`` and the others; the class gets those names for the same methods.
- ``file(...)`` was ``open(...)``; ``coerce`` is gone (a person decides).
- A str given where Python 3 takes bytes (``hashlib.md5(name)``, ``base64.b64encode(s)``,
  ``struct.pack('4s', s)``, ``zlib.compress(s)``): Python 2's str was bytes. A ``[check]``
  (it fails loudly as it is; made bytes, what it returns would print otherwise).

Where a call may be one of these but the name may also be something else (a star import, a
rebinding), nothing is rewritten: a ``[check]``, marked in the port.
"""

from __future__ import annotations

import ast

from .found import Found, check
from .names import BUILTINS, Names
from .textedit import Text

_OLD = {f"{BUILTINS}.round": "old_round", "math.floor": "old_floor", "math.ceil": "old_ceil"}
_EXACT_INSIDE_INT = {"math.floor", "math.ceil"}
_GONE = {f"{BUILTINS}.coerce": "coerce() is gone"}
# Python 2 builtins whose Python 3 namesake computes otherwise (or is gone): their helpers.
_HELPERS = {f"{BUILTINS}.filter": "old_filter", f"{BUILTINS}.cmp": "old_cmp"}
_HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s",
           "sha3_224", "sha3_256", "sha3_384", "sha3_512")
# Calls that take bytes where Python 2 took its str: {dotted: the bytes argument's position}.
_BYTES_ARGUMENTS = {**{f"hashlib.{h}": 0 for h in _HASHES}, "hashlib.new": 1,
                    **{f"base64.{f}": 0 for f in ("b64encode", "standard_b64encode",
                                                  "urlsafe_b64encode", "b32encode", "b16encode",
                                                  "encodebytes", "encodestring")},
                    "zlib.compress": 0, "zlib.crc32": 0, "zlib.adler32": 0,
                    "binascii.hexlify": 0, "binascii.crc32": 0}
_DIVISION_METHODS = {"__div__": "__truediv__", "__rdiv__": "__rtruediv__",
                     "__idiv__": "__itruediv__"}


def found(names: Names, text: Text) -> list[Found]:
    """Every such call of a Python 2 file."""
    out = []
    for node in names.nodes:
        if isinstance(node, ast.Call):
            out += _rounding(names, text, node) + _cmp(names, text, node) \
                + _map(names, text, node) + _file(names, text, node) \
                + _helper(names, text, node) + _bytes_arguments(names, text, node)
        elif isinstance(node, ast.ClassDef):
            out += _division_methods(text, node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            gone = _GONE.get(names.qualified(node) or "")
            if gone:
                out.append(check(node.lineno, node.id, f"{node.id}: {gone}", python2_only=True))
    return out


def _rounding(names, text, call):
    meanings = names.meanings(call.func)
    wanted = [m for m in meanings if m in _OLD]
    if not wanted:
        return []
    dotted = names.qualified(call.func)
    short = wanted[0].rsplit(".", 1)[1]
    if dotted is None:
        return [check(call.lineno, short, f"{short}(...) may be Python 2's {wanted[0]} (a float "
                      f"there, an int on Python 3) or something else bound to the name: write "
                      f"mxpatch_bind.py2.{_OLD[wanted[0]]} where it is", python2_only=True)]
    if dotted in _EXACT_INSIDE_INT and _inside_int(names, call):
        return []
    return [Found(call.lineno, f"{short}() returns an int on Python 3",
                  edits=text.swap(call.func, _OLD[dotted]), helpers=frozenset({_OLD[dotted]}))]


def _inside_int(names, call):
    owner = names.owner(call)
    return owner is not None and isinstance(owner[0], ast.Call) and owner[1] == "args" \
        and len(owner[0].args) == 1 and not owner[0].keywords \
        and names.qualified(owner[0].func) == f"{BUILTINS}.int"


def _cmp(names, text, call):
    """``sorted(x, cmp=f)`` / ``sorted(x, f)`` / ``x.sort(cmp=f)``."""
    is_sorted = names.qualified(call.func) == f"{BUILTINS}.sorted"
    is_sort = isinstance(call.func, ast.Attribute) and call.func.attr == "sort"
    if not (is_sorted or is_sort):
        return []
    given = next((k for k in call.keywords if k.arg == "cmp"), None)
    positional = call.args[1] if is_sorted and len(call.args) > 1 else None
    if given is None and positional is None:
        return []
    if any(k.arg == "key" for k in call.keywords) or (is_sorted and len(call.args) > 2):
        return [check(call.lineno, "cmp", "a cmp and a key together (Python 2 compared the keys "
                      "with cmp): write key=functools.cmp_to_key(...) over the key by hand",
                      python2_only=True)]
    function = given.value if given is not None else positional
    reference = names.module_reference("functools")
    if reference is None:
        return [check(call.lineno, "cmp", "cmp= is gone: 'functools' is bound to something "
                      "else here; write key=functools.cmp_to_key(...)", python2_only=True)]
    opening = f"key={reference}.cmp_to_key("
    if given is not None:  # 'cmp=' becomes the opening; point edits, so a fix inside stays
        start = text.start(given)
        edits = [((given.lineno, start), text.text[start:text.start(function)], opening)]
    else:
        edits = [((function.lineno, text.start(function)), "", opening)]
    edits += text.after(function, ")")
    return [Found(call.lineno, "cmp= is gone", edits=edits,
                  imports=("import functools",) if reference == "functools"
                  and "functools" not in names.module.bindings else ())]


def _map(names, text, call):
    if names.qualified(call.func) != f"{BUILTINS}.map" or len(call.args) < 3 or call.keywords:
        return []
    return [Found(call.lineno, "map() over several sequences ran to the longest",
                  edits=text.swap(call.func, "old_map"), helpers=frozenset({"old_map"}))]


def _file(names, text, call):
    if names.qualified(call.func) != f"{BUILTINS}.file":
        return []
    if not names.builtin_at(call, "open"):
        return [check(call.lineno, "file", "file() was open(): 'open' is bound to something "
                      "else here", python2_only=True)]
    return [Found(call.lineno, "file() is open()", edits=text.swap(call.func, "open"))]


def _helper(names, text, call):
    helper = _HELPERS.get(names.qualified(call.func) or "")
    if helper is None:
        return []
    builtin = helper[len("old_"):]
    return [Found(call.lineno, f"Python 2's {builtin}()", edits=text.swap(call.func, helper),
                  helpers=frozenset({helper}))]


def _division_methods(text, cls):
    """A class that divides by ``__div__``: Python 3's ``/`` calls ``__truediv__`` (Python
    2's, where ``old_div`` now sends it); the same method under that name too."""
    defined = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    out = []
    for old, new in _DIVISION_METHODS.items():
        method = defined.get(old)
        if method is not None and new not in defined and not _assigns(cls, new):
            # the ``def`` line's indent (a decorator's would hold its ``@``)
            indent = text.text[text.starts[method.lineno - 1]:text.start(method)]
            out.append(Found(method.lineno, f"{old} (Python 3 divides by {new})",
                             edits=text.after(method, f"\n\n{indent}{new} = {old}")))
    return out


def _assigns(cls, name):
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                 for t in n.targets) for n in cls.body)


def _bytes_arguments(names, text, call):
    """A Python 2 str handed to a call that takes bytes on Python 3: a ``[check]``. Not even
    a literal is made bytes: the call then returns bytes where Python 2 returned its str,
    and what prints or joins it would differ without a word; as it is, it fails loudly."""
    dotted = names.qualified(call.func) or ""
    if dotted == "struct.pack" and call.args and _is_text(call.args[0]) \
            and any(c in call.args[0].value for c in "sp"):
        arguments = call.args[1:]
    elif dotted in _BYTES_ARGUMENTS and len(call.args) > _BYTES_ARGUMENTS[dotted]:
        arguments = [call.args[_BYTES_ARGUMENTS[dotted]]]
    else:
        return []
    if all(_is_bytes(names, a) for a in arguments if not isinstance(a, ast.Constant)
           or isinstance(a.value, (str, bytes))):
        return []
    return [check(call.lineno, "bytes", f"{dotted} takes bytes on Python 3, where Python 2 took "
                  "its str: .encode() what is text here (and .decode() what it returns where "
                  "text is meant)", python2_only=True)]


def _is_text(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_bytes(names, node, depth=0):
    """Whether ``node`` is provably bytes: a bytes literal, ``x.encode(...)``, ``bytes(...)``,
    or a name that provably holds one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bytes)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "encode":
            return True
        return names.qualified(node.func) in (f"{BUILTINS}.bytes", f"{BUILTINS}.bytearray")
    if isinstance(node, ast.Name) and depth < 20:
        return _is_bytes(names, names.reaching(node), depth + 1)
    return False
