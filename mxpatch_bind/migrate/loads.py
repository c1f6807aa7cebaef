"""Private to ``migrate``: what a Python file loads other than by an ``import`` statement.

A vendored copy is deleted only when nothing that stays loads it, and a program loads a module
in more ways than ``import``: by name (``importlib.import_module('.module', package='core')``,
``__import__('core', fromlist=['module'])``, ``runpy.run_module``, ``importlib.util.find_spec``,
``imp.find_module``) or by path (``imp.load_source``, ``imp.load_module``, ``runpy.run_path``,
``importlib.util.spec_from_file_location``, ``importlib.machinery.SourceFileLoader``,
``execfile``, ``exec(open(path).read())``). Each call is found through every import form and
alias of its function (``import importlib as il``, ``from importlib import import_module as
im``), with its arguments by position or by keyword. A name or path is read where it is a
literal or is built from literals, ``__file__``, names assigned once, ``os.path`` calls,
``pathlib`` and f-strings; a path of which only the end is known (``os.path.join(root,
'core', 'module.py')``) is a *tail*; what cannot be read at all is *computed*. A string
elsewhere in the code that names a copy (``'core/module.py'``, ``'core.module'``: a
``mock.patch`` target, a file copied, a command run) is a *mention*.

Names are followed with :mod:`ast`, not libcst: the scan runs without the migrate extra.
:mod:`deletions` resolves what is found here against the copies.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass

ABSOLUTE, RELATIVE, TAIL = "absolute", "relative", "tail"
# {qualified function: {argument: (position, keyword)}}
_IMPORT = {"name": (0, "name"), "fromlist": (3, "fromlist"), "level": (4, "level")}
_BY_NAME = {
    "importlib.import_module": {"name": (0, "name"), "package": (1, "package")},
    "importlib.util.find_spec": {"name": (0, "name"), "package": (1, "package")},
    "builtins.__import__": _IMPORT,
    "importlib.__import__": _IMPORT,
    "runpy.run_module": {"name": (0, "mod_name")},
    "pkgutil.get_loader": {"name": (0, "module_or_name")},
    "pkgutil.find_loader": {"name": (0, "fullname")},
    "imp.find_module": {"name": (0, "name")},
}
# {qualified function: (position, keyword) of the path it loads}
_BY_PATH = {
    "imp.load_source": (1, "pathname"),
    "imp.load_module": (2, "pathname"),
    "runpy.run_path": (0, "path_name"),
    "importlib.util.spec_from_file_location": (1, "location"),
    "importlib.machinery.SourceFileLoader": (1, "path"),
    "builtins.execfile": (0, "filename"),
}
_RUNS_TEXT = {"builtins.exec", "builtins.eval", "builtins.compile"}  # exec(open(p).read())
_OPENS = {"builtins.open", "io.open", "codecs.open"}
_BUILTINS = {"__import__", "execfile", "exec", "eval", "compile", "open", "str"}
_MODULE_ALIASES = {"__builtin__": "builtins", "posixpath": "os.path", "ntpath": "os.path"}
_PATHLIB = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PATH_CHARS = re.compile(r"[\w.\-/\\]")
_UNKNOWN_BEFORE = "$}~%)"  # a variable ($ROOT, ${ROOT}, %ROOT%, ~) ends before the path


@dataclass(frozen=True)
class PathValue:
    """A path as far as it is known: ``absolute``, ``relative`` (to where the program runs),
    or a ``tail`` (what follows a part that cannot be known)."""

    anchor: str
    text: str

    def joined(self, other: PathValue) -> PathValue:
        if other.anchor == ABSOLUTE:
            return other
        if other.anchor == TAIL:
            return other
        return PathValue(self.anchor, posixpath.join(self.text, other.text))

    def parent(self) -> PathValue | None:
        head = posixpath.dirname(self.text.rstrip("/"))
        return PathValue(self.anchor, head) if head or self.anchor == RELATIVE else None


def path_value(text: str, unknown_before: bool = False) -> PathValue:
    """``text`` as a path (Windows separators read as ``/``); a tail when something that
    cannot be known comes before it."""
    text = text.replace("\\", "/")
    if unknown_before:
        return PathValue(TAIL, text)
    return PathValue(ABSOLUTE if text.startswith("/") else RELATIVE, text)


@dataclass(frozen=True)
class Load:
    """One place that may load a module: ``names`` ((level, dotted) as an import would find
    them), ``paths`` (files), ``dotted`` (dotted names a text mentions), or ``computed``
    (a name or path that cannot be read); ``how`` says what the place does."""

    line: int
    how: str
    names: tuple = ()
    paths: tuple = ()
    dotted: tuple = ()
    computed: bool = False
    kind: str = "load"  # "load", "path", or "mention"


def python_loads(tree: ast.Module, file_path: str | None, stems) -> list[Load]:
    """Every load by name or path in ``tree``, and the string constants that mention a file
    or dotted module ending in one of ``stems`` (the copies' module names).

    ``file_path`` is the file's absolute path (``__file__``), None where there is none (a
    notebook's cell).

    Examples
    --------
    >>> tree = ast.parse("import importlib as il\\nil.import_module('.module', 'core')\\n")
    >>> [(load.line, load.names) for load in python_loads(tree, None, {"module"})]
    [(2, ((0, 'core.module'),))]
    """
    reader = _Reader(tree, file_path)
    found, used = [], set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        try:
            load = reader.load(call)
        except RecursionError:  # an expression nested too deeply to read: maybe a load
            load = Load(call.lineno, "a call nested too deeply to read", computed=True) \
                if reader.qualified(call.func) in (*_BY_NAME, *_BY_PATH) else None
        if load is not None:
            found.append(load)
            used |= {id(n) for n in ast.walk(call)}
    found += _string_mentions(tree, used, stems)
    return sorted(found, key=lambda load: load.line)


def text_mentions(text: str, stems) -> list[tuple[int, str, PathValue | None, str | None]]:
    """``(offset, token, path, dotted)`` for each path to ``<stem>.py`` and each dotted name
    whose parts up to a stem (two parts or more: ``core.module``, ``rfcn.core.module.X``)
    ``text`` holds."""
    found: list[tuple[int, str, PathValue | None, str | None]] = []
    for stem in stems:
        if stem not in text:
            continue
        for match in re.finditer(rf"{re.escape(stem)}\.py(?![\w.])", text):
            start = match.start()
            while start and _PATH_CHARS.match(text[start - 1]):
                start -= 1
            token = text[start:match.end()]
            if token.replace("\\", "/").rsplit("/", 1)[-1] != stem + ".py":
                continue  # mymodule.py
            before = text[start - 1] if start else ""
            if before == "$":  # $ROOT/core/module.py: the variable's name is no folder
                token = "/" + token.replace("\\", "/").split("/", 1)[1] if "/" in \
                    token.replace("\\", "/") else token
            found.append((start, token, path_value(token, before in _UNKNOWN_BEFORE and
                                                   bool(before)), None))
    for match in _DOTTED.finditer(text):
        parts = match.group().split(".")
        for end in range(2, len(parts) + 1):
            if parts[end - 1] in stems:
                found.append((match.start(), match.group(), None, ".".join(parts[:end])))
    return sorted(found, key=lambda item: item[0])


# --------------------------------------------------------------------------- calls
class _Reader:
    """Qualified names of the file's imports, and the values of names assigned once."""

    def __init__(self, tree, file_path):
        self.aliases = _aliases(tree)
        self.values = {"__file__": path_value(file_path)} if file_path else {}
        assigned = {}
        for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)),
                           key=lambda n: n.lineno):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                try:
                    value = self.path(node.value)
                except RecursionError:  # ``'a' + 'b' + ...`` thousands of terms long
                    value = None
                assigned.setdefault(name, set()).add(value)
                self.values[name] = value if len(assigned[name]) == 1 else None

    def qualified(self, node) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return f"builtins.{node.id}" if node.id in _BUILTINS else None
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def load(self, call) -> Load | None:
        name = self.qualified(call.func)
        how = _spelled(call)
        if name in _BY_NAME:
            return self._by_name(call, name, how)
        if name in _BY_PATH:
            return self._by_path(call.lineno, how, _argument(call, *_BY_PATH[name]))
        if name in _RUNS_TEXT and call.args:
            opened = [n for n in ast.walk(call.args[0]) if isinstance(n, ast.Call)
                      and self.qualified(n.func) in _OPENS]
            if opened:
                return self._by_path(call.lineno, how, _argument(opened[0], 0, "file"))
        return None

    def _by_path(self, line, how, node):
        value = self.path(node) if node is not None else None
        if value is None or (value.anchor == TAIL and "/" not in value.text):
            return Load(line, how, computed=True, kind="path")  # the file's name is unknown
        return Load(line, how, paths=(value,), kind="path")

    def _by_name(self, call, function, how):
        spec = _BY_NAME[function]
        name = self.text(_argument(call, *spec["name"]))
        if name is None:
            return Load(call.lineno, how, computed=True)
        if function == "imp.find_module":
            return self._find_module(call, name, how)
        level, name = _leading_dots(name)
        if level and "package" in spec:
            return self._relative(call, spec, level, name, how)
        level = self._level(call, spec) if "level" in spec else 0
        if level is None:
            return Load(call.lineno, how, computed=True)
        names = [(level, name)]
        if "fromlist" in spec:
            listed = _argument(call, *spec["fromlist"])
            items = _strings(listed) if listed is not None else []
            if items is None:
                return Load(call.lineno, how, names=tuple(names), computed=True)
            names += [(level, f"{name}.{item}" if name else item) for item in items if item != "*"]
        return Load(call.lineno, how, names=tuple(names))

    def _relative(self, call, spec, level, name, how):
        """``import_module('.module', package=P)``: resolved against P, or against the
        calling file's own package where P is ``__package__`` / ``__name__``."""
        package = _argument(call, *spec["package"])
        if isinstance(package, ast.Name) and package.id in ("__package__", "__name__"):
            return Load(call.lineno, how, names=((level, name),))
        base = self.text(package) if package is not None else None
        if not base:
            return Load(call.lineno, how, computed=True)
        parts = base.split(".")
        if level - 1 >= len(parts):
            return None  # beyond the top package: ImportError, nothing loaded
        anchor = ".".join(parts[:len(parts) - (level - 1)])
        return Load(call.lineno, how, names=((0, f"{anchor}.{name}" if name else anchor),))

    def _level(self, call, spec):
        node = _argument(call, *spec["level"])
        if node is None:
            return 0
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            else None

    def _find_module(self, call, name, how):
        folders = _argument(call, 1, "path")
        if folders is None:
            return Load(call.lineno, how, names=((0, name),))
        values = [self.path(e) for e in getattr(folders, "elts", [None])]
        if any(v is None for v in values):
            return Load(call.lineno, how, computed=True, kind="path")
        paths = tuple(v.joined(PathValue(RELATIVE, name + ".py")) for v in values)
        return Load(call.lineno, how, paths=paths, kind="path")

    def text(self, node) -> str | None:
        """The string ``node`` makes, where all of it is known."""
        value = self.path(node) if node is not None else None
        return value.text if value is not None and value.anchor != TAIL else None

    def path(self, node) -> PathValue | None:  # noqa: C901 (one case per expression form)
        """The path (or string) ``node`` makes, as far as it is known."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return path_value(node.value)
        if isinstance(node, ast.Name):
            return self.values.get(node.id)
        if isinstance(node, ast.JoinedStr):
            return _formatted(node, self)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            left, right = self.path(node.left), self.path(node.right)
            if right is None:
                return None
            if isinstance(node.op, ast.Div):
                return left.joined(right) if left else _joined([None, right])
            if left is None:
                return PathValue(TAIL, right.text)
            return PathValue(left.anchor, left.text + right.text) if right.anchor != TAIL \
                else right
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.path(node.value)
            return inner.parent() if inner else None
        if isinstance(node, ast.Call):
            return self._call_path(node)
        return None

    def _call_path(self, call):
        function = self.qualified(call.func) or ""
        if function in ("os.path.join", *_PATHLIB) or (
                isinstance(call.func, ast.Attribute) and call.func.attr == "joinpath"):
            parts = list(call.args)
            if isinstance(call.func, ast.Attribute) and call.func.attr == "joinpath":
                parts.insert(0, call.func.value)
            return _joined([self.path(p) for p in parts])
        if function in ("os.path.dirname",):
            inner = self.path(call.args[0]) if call.args else None
            return inner.parent() if inner else None
        if function in ("os.path.abspath", "os.path.realpath", "os.path.normpath",
                        "os.path.expanduser", "builtins.str", "os.fspath") and call.args:
            return self.path(call.args[0])
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("resolve", "absolute") \
                and not call.args:
            return self.path(call.func.value)
        return None


def _joined(values):
    """``os.path.join`` of what is known; an unknown part makes the rest a tail."""
    result = PathValue(RELATIVE, "")
    for value in values:
        if value is None:
            result = None
        elif result is None:
            result = PathValue(TAIL, "/" + value.text) if value.anchor == RELATIVE \
                else value
        else:
            result = result.joined(value)
    return result


def _formatted(node, reader):
    """An f-string: its text, or the tail after its last unknown part."""
    text, known = "", True
    for part in node.values:
        if isinstance(part, ast.Constant):
            text += str(part.value)
            continue
        value = reader.path(part.value) if isinstance(part, ast.FormattedValue) else None
        if value is None or part.format_spec is not None or part.conversion != -1:
            text, known = "", False
        else:
            text += value.text
    if known:
        return path_value(text)
    return PathValue(TAIL, text) if text else None


def _aliases(tree):
    """``{local name: qualified name}`` of every import of the file, in any scope."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                full = _MODULE_ALIASES.get(alias.name, alias.name)
                if alias.asname:
                    aliases[alias.asname] = full
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = _MODULE_ALIASES.get(top, top)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = _MODULE_ALIASES.get(node.module, node.module)
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
    return aliases


def _argument(call, position, keyword):
    """The argument at ``position`` or named ``keyword``; None where it is not given (a
    ``*args`` / ``**kwargs`` that might hold it counts as given but unreadable)."""
    if position < len(call.args) and not any(isinstance(a, ast.Starred)
                                             for a in call.args[:position + 1]):
        return call.args[position]
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return ast.Name(id="<unpacked>")  # may hold it: unreadable
    return None


def _strings(node):
    """The strings of a literal list / tuple / set (a fromlist), None where not literal."""
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]  # __import__ accepts a string as its fromlist's one name
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant)
                 and isinstance(e.value, str)]
        return items if len(items) == len(node.elts) else None
    return None


def _leading_dots(name):
    stripped = name.lstrip(".")
    return len(name) - len(stripped), stripped


def _spelled(call):
    text = ast.unparse(call)
    return text if len(text) <= 90 else text[:87] + "..."


def _string_mentions(tree, used, stems):
    """Loads of kind "mention": the string constants (not docstrings, not the arguments of a
    load already found) that name a copy's file or dotted module."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef,
                                       ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) \
                or id(node) in used or id(node) in docstrings:
            continue
        for _, token, path, dotted in text_mentions(node.value, stems):
            found.append(Load(node.lineno, repr(token), paths=(path,) if path else (),
                              dotted=(dotted,) if dotted else (), kind="mention"))
    return found
