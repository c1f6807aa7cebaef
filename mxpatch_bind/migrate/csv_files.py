"""Private to ``migrate``: a file the ``csv`` module reads or writes, opened in binary mode.

Python 2's ``csv`` documentation asked for ``open(path, 'rb')`` (``'wb'`` to write); Python
3's ``csv`` reads and writes text and refuses bytes (``_csv.Error: iterator should return
strings, not bytes``: 3DCE_new's ``rcnn/dataset/DeepLesion.py`` reading ``DL_info.csv``).
Where every use of the handle is the ``csv`` call's (or closes it), the ``'b'`` goes and
``newline=''`` comes, as Python 3's ``csv`` documentation asks (the module handles the line
ends itself, as it did on the binary file). A handle used otherwise too is a ``[check]``.
"""

from __future__ import annotations

import ast

from .found import Found, check
from .names import BUILTINS, Names
from .textedit import Text

# the csv calls that take a file, and its keyword
_CSV_CALLS = {"csv.reader": "csvfile", "csv.writer": "csvfile", "csv.DictReader": "f",
              "csv.DictWriter": "f"}
_OPENS = {f"{BUILTINS}.open", "io.open"}
_NEUTRAL = {"close", "closed", "name"}


def found(names: Names, source: Text) -> list[Found]:
    """The mode edit (or the ``[check]``) of each binary ``open`` a ``csv`` call reads or
    writes through."""
    out, done = [], set()
    for call in ast.walk(names.tree):
        if not isinstance(call, ast.Call) or names.qualified(call.func) not in _CSV_CALLS:
            continue
        opened = _opened(names, _file_argument(names, call))
        mode = _mode(opened) if opened is not None else None
        if id(opened) in done or not (isinstance(mode, ast.Constant)
                                      and isinstance(mode.value, str) and "b" in mode.value):
            continue
        done.add(id(opened))
        if not _only_csv_uses(names, opened):
            out.append(check(opened.lineno, "csv file", "this binary file is given to csv "
                             "and used otherwise too: Python 3's csv reads and writes text "
                             "(open it with newline='' and no 'b' where it is csv's)"))
            continue
        quote = source.source(mode)[-1]
        edits = source.swap(mode, quote + mode.value.replace("b", "") + quote)
        if not any(k.arg == "newline" for k in opened.keywords):
            edits += source.keyword(opened, "newline=''")
        out.append(Found(opened.lineno, "csv's file opened in binary mode (Python 3's csv "
                         "refuses bytes)", edits=edits))
    return out


def _file_argument(names, call):
    if call.args:
        return call.args[0]
    keyword = _CSV_CALLS[names.qualified(call.func)]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _opened(names, handle):
    """The ``open(...)`` call ``handle`` provably holds; else None."""
    if isinstance(handle, ast.Name):
        handle = names.reaching(handle)
    if isinstance(handle, ast.Call) and names.qualified(handle.func) in _OPENS:
        return handle
    return None


def _mode(opened):
    if len(opened.args) > 1:
        return opened.args[1]
    return next((k.value for k in opened.keywords if k.arg == "mode"), None)


def _only_csv_uses(names, opened):
    """Whether the handle ``opened`` returns goes only to csv calls (or is closed)."""
    owner, field_name = names.owner(opened)
    if isinstance(owner, ast.withitem) and field_name == "context_expr":
        target = owner.optional_vars
    elif isinstance(owner, ast.Assign) and len(owner.targets) == 1:
        target = owner.targets[0]
    else:  # csv.reader(open(path, 'rb')): the call is its only use
        return isinstance(owner, (ast.Call, ast.keyword))
    if not isinstance(target, ast.Name):
        return False
    for load in names.loads(target.id, names.resolve(target)):
        reached = names.reaching(load)
        if reached is None and load.lineno >= opened.lineno:
            return False  # a use the name may reach from elsewhere too
        if reached is opened and not _csv_use(names, load):
            return False
    return True


def _csv_use(names, load):
    owner, _ = names.owner(load)
    if isinstance(owner, ast.Attribute):
        return owner.attr in _NEUTRAL
    call = names.owner(owner)[0] if isinstance(owner, ast.keyword) else owner
    return isinstance(call, ast.Call) and names.qualified(call.func) in _CSV_CALLS \
        and _file_argument(names, call) is load
