"""Private to ``migrate``: Python 2 sources, read with fissix (the maintained lib2to3 fork).

Three jobs. :func:`analysis_text` turns a Python 2 file into Python 3 text *with the same
lines* (only the fixers that change syntax inside a line), so the scan reads Python 2 files
with :mod:`ast` like the others and reports their imports and constructions ``file:line``.
:func:`rewrite_imports` points import statements at ``mxpatch_bind.compat`` in a Python 2
file without porting it (fissix's tree gives the source back byte for byte). :func:`port`
runs the standard 2to3 fixers, for ``--to-python3``.
"""

from __future__ import annotations

import ast
import functools
import re

# fix_filter is left out too: Python 2's filter of a str gave a str (of a tuple, a tuple),
# which 2to3's list(filter(...)) does not; py2calls writes mxpatch_bind.py2.old_filter.
# Fixers that only change syntax Python 3 refuses and never add or remove a line: enough
# for ast to read a Python 2 file, with every line number kept.
_SYNTAX_FIXERS = ("except", "exec", "ne", "numliterals", "print", "raise", "repr", "unicode")
# fissix adds fix_sorted to lib2to3's set; the standard 2to3 run is lib2to3's set.
# fix_next is left out on purpose: it renames a loader's ``def next(self)`` to
# ``__next__``, and MXNet's own PrefetchingIter calls ``iters[i].next()`` on Python 3 too
# (the rename would reach the base DataIter.next instead of the loader's). fix_import too: it
# takes every folder holding an ``__init__.py`` for a package, so it made the scripts' own
# imports relative; model.ImportModel decides instead, and edits.make_relative rewrites.
_NOT_STANDARD = ("sorted", "next", "import", "filter")

# Names and modules that exist only in Python 2: a file that parses as Python 3 but uses
# them is still Python 2 code (NameError or ImportError at run time).
PY2_NAMES = {"xrange", "basestring", "unicode", "long", "raw_input", "execfile", "unichr",
             "reduce", "reload", "intern", "apply", "buffer", "cmp", "file"}
PY2_METHODS = {"has_key", "iteritems", "iterkeys", "itervalues", "viewitems", "viewkeys",
               "viewvalues"}
PY2_MODULES = {"cPickle", "Queue", "ConfigParser", "StringIO", "cStringIO", "urllib2",
               "urlparse", "HTMLParser", "httplib", "Tkinter", "__builtin__", "copy_reg",
               "commands", "SocketServer", "thread", "cookielib", "xmlrpclib", "anydbm",
               "dummy_thread", "repr", "htmlentitydefs", "UserDict", "UserList"}
_LINE = re.compile(r"^Line (\d+): (.*)$", re.S)


class Python2Error(Exception):
    """fissix could not read the file either (``lineno`` where it stopped)."""

    def __init__(self, message: str, lineno: int):
        super().__init__(message)
        self.lineno = lineno


def available() -> bool:
    """Whether fissix is installed (the ``migrate`` extra)."""
    try:
        import fissix  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def _tool(fixers, print_function=False):
    """One tool per fixer set (building one compiles every fixer's pattern: keep it)."""
    from fissix import refactor

    names = ["fissix.fixes.fix_" + name for name in fixers]
    return refactor.RefactoringTool(names, {"print_function": print_function})


@functools.lru_cache(maxsize=None)
def _standard_fixers():
    from fissix import refactor

    return tuple(name.rsplit(".fix_", 1)[1] for name in refactor.get_fixers_from_package(
        "fissix.fixes") if name.rsplit(".fix_", 1)[1] not in _NOT_STANDARD)


def _refactor(tool, text, filename):
    """fissix wants a final newline; give it one and take it back off."""
    from fissix.pgen2.parse import ParseError
    from fissix.pgen2.tokenize import TokenError

    added = not text.endswith("\n")
    try:
        tree = tool.refactor_string(text + "\n" if added else text, filename)
    except ParseError as error:
        raise Python2Error(f"not Python 2 either ({error.msg})",
                           error.context[1][0] if error.context else 1) from None
    except (TokenError, IndentationError, SyntaxError) as error:
        line = getattr(error, "lineno", None) or (error.args[1][0] if len(error.args) > 1
                                                  and isinstance(error.args[1], tuple) else 1)
        raise Python2Error(f"not Python 2 either ({error.args[0]})", line) from None
    out = str(tree)
    return out[:-1] if added and out.endswith("\n") else out


def analysis_text(text: str, filename: str) -> str:
    """``text`` (Python 2) as Python 3 that :mod:`ast` reads, line for line the same
    (unless it has ``def f((a, b))``, whose port adds lines).

    Raises
    ------
    Python2Error
        The file is not Python 2 either.
    """
    view = _refactor(_tool(_SYNTAX_FIXERS), text, filename)
    try:
        ast.parse(view)
        return view
    except TabError:
        return _refactor(_tool(_SYNTAX_FIXERS), expand_indentation(text), filename)
    except SyntaxError:
        # ``lambda (a, b): ...`` needs fix_tuple_params, which on a ``def`` adds lines:
        # only when the line-preserving set is not enough.
        return _refactor(_tool(_SYNTAX_FIXERS + ("tuple_params",)), text, filename)


def port(text: str, filename: str, parses_as_python3: bool) -> tuple[str, list[tuple[int, str]]]:
    """``text`` ported by the standard 2to3 fixers, and the fixers' own warnings (kept for
    the run: the scan ports a file to see whether the port changes it, the write again)."""
    ported, warnings = _port(text, filename, parses_as_python3)
    return ported, list(warnings)


@functools.lru_cache(maxsize=256)
def _port(text: str, filename: str, parses_as_python3: bool) -> tuple[str, list[tuple[int, str]]]:
    """``text`` ported by the standard 2to3 fixers, and the fixers' own warnings.

    Imports are left as they are (``edits.make_relative`` makes the implicit relative ones
    explicit, by the import model). A file that already parses as
    Python 3 keeps its ``print(...)`` calls as calls (2to3 would print a tuple for
    ``print(a, b)``, the Python 2 meaning that such a file did not have in mind).

    Returns
    -------
    (str, list of (int, str))
        The ported text; ``(line, message)`` for what the fixers could not convert.
    """
    if mixes_tabs(text):
        text = expand_indentation(text)
        warnings_before = [(1, "indentation mixed tabs and spaces: tabs expanded to 8 columns, "
                               "as Python 2 read them")]
    else:
        warnings_before = []
    tool = _tool(_standard_fixers(), print_function=parses_as_python3)
    del tool.fixer_log[:]  # the fixers append to this very list: empty it in place
    ported = _refactor(tool, text, filename)
    warnings = warnings_before
    for message in tool.fixer_log:
        match = _LINE.match(message)
        if match:
            warnings.append((int(match.group(1)), " ".join(match.group(2).split())))
    return ported, warnings


def mixes_tabs(text: str) -> bool:
    """Whether Python 3 refuses the file's indentation (Python 2 took a tab as 8 columns)."""
    try:
        compile(text, "<text>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except TabError:
        return True
    except SyntaxError:
        return _TAB_INDENT.search(text) is not None and _SPACE_INDENT.search(text) is not None
    return False


def expand_indentation(text: str) -> str:
    """Every line's leading tabs expanded to 8-column stops, the rest of it untouched."""
    return _INDENT.sub(lambda m: m.group(0).expandtabs(8), text)


_INDENT = re.compile(r"^[ \t]+", re.M)
_TAB_INDENT = re.compile(r"^ *\t", re.M)
_SPACE_INDENT = re.compile(r"^ +\S", re.M)


def python2_markers(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` for the Python 2-only names, methods and imports of a parsed file.

    A name the file assigns itself (``xrange = range``) does not count. Implicit relative
    imports are the import model's to find (``model.ImportModel.implicit_imports``).
    """
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    assigned |= {a.asname or a.name for n in ast.walk(tree)
                 if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assigned |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    assigned |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}
    assigned |= {n.name for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    markers = []
    for node in ast.walk(tree):
        what = _marker(node, assigned)
        if what:
            markers.append((getattr(node, "lineno", 1), what))
    return sorted(markers)


def _marker(node, assigned):
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in PY2_NAMES and node.id not in assigned:
            return node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in PY2_METHODS:
            return "." + node.func.attr + "()"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in PY2_MODULES:
                return "import " + alias.name
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module.split(".")[0] in PY2_MODULES:
            return "from " + node.module + " import"
    return None


def rewrite_imports(text: str, keys: set, target: str, filename: str) -> tuple[str, set]:
    """Point the ``from M import ...`` statements named by ``keys`` at ``target``.

    ``keys`` holds ``(line, level, module)``: the statement's first line, its number of
    leading dots and its dotted module. Everything else keeps its bytes.

    Returns
    -------
    (str, set)
        The new text and the keys rewritten.
    """
    from fissix import pygram, pytree
    from fissix.pgen2 import driver, token

    grammar = pygram.python_grammar  # with the print statement: this is Python 2 code
    added = not text.endswith("\n")
    tree = driver.Driver(grammar, convert=pytree.convert).parse_string(
        text + "\n" if added else text)
    done = set()
    for node in tree.pre_order():
        if node.type != pygram.python_symbols.import_from:
            continue
        level, module, parts = _from_module(node, token)
        key = (node.get_lineno(), level, module)
        if key in keys and parts:
            prefix = parts[0].prefix
            for part in parts[1:]:
                part.remove()
            parts[0].replace(pytree.Leaf(token.NAME, target, prefix=prefix))
            done.add(key)
    out = str(tree)
    return (out[:-1] if added and out.endswith("\n") else out), done


def _from_module(node, token):
    """(level, dotted module, the nodes that spell it) of a fissix ``import_from``."""
    parts = []
    for child in node.children[1:]:
        if child.type == token.NAME and child.value == "import":
            break
        parts.append(child)
    spelled = "".join(str(p).strip() for p in parts)
    module = spelled.lstrip(".")
    return len(spelled) - len(module), module, parts
