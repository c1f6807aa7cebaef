"""Private to ``migrate``: the files of a tree, other than its ``.py`` modules, that may load a
vendored copy.

Which files count, and how each is read:

* **Notebooks** (``.ipynb``): each code cell is Python (its imports, its loads by name or path,
  its strings that name a copy, as in a module); ``%run`` / ``%load`` load what they name;
  ``!`` lines and ``%%bash`` / ``%%sh`` / ``%%script`` cells are shell. A place is reported at
  the line of the notebook's JSON that holds the cell's line, and named as "cell N, line M"
  (N counts every cell from 1, as a reader scrolls; M counts the cell's lines from 1).
  Markdown and raw cells are prose: not read.
* **Shell and build scripts** (``.sh``, ``.bash``, ``.zsh``, ``.ksh``, ``.bat``, ``.cmd``,
  ``.ps1``, ``Makefile``, ``*.mk``, ``Dockerfile``, and any file whose ``#!`` line names a shell):
  the commands that run Python (``python core/module.py``, ``python -m core.module``,
  ``python -c "from core import module"``): every path to a copy, dotted name of one, and
  ``import`` they hold.
* **Python outside ``.py``** (``.pyw``, files whose ``#!`` line names python, Cython ``.pyx`` /
  ``.pxi``): read as a module where it parses; otherwise its import lines and the paths and
  dotted names it holds.
* **Configuration** (``.yaml``, ``.yml``, ``.cfg``, ``.ini``, ``.toml``, ``.json``, ``.conf``,
  ``.txt``): a path to a copy or its dotted name is read by some program of the tree.

Not counted: documentation (``.md``, ``.rst``, ``.html``, ``.tex``, and README, LICENSE,
NOTICE, CHANGELOG files whatever their suffix): prose that mentions ``core/module.py`` loads
nothing; C, C++ and CUDA sources; binary files; files over 16 MiB (data, not configuration).
"""

from __future__ import annotations

import ast
import json
import json.scanner
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import imports
from . import port as py2
from .files import skipped_dir
from .loads import Load, path_value, python_loads, text_mentions

_SHELL = {".sh", ".bash", ".zsh", ".ksh", ".bat", ".cmd", ".ps1", ".mk"}
_SHELL_NAMES = {"makefile", "gnumakefile", "dockerfile"}
_PYTHON = {".pyw"}
_CYTHON = {".pyx", ".pxi"}
_CONFIG = {".yaml", ".yml", ".cfg", ".ini", ".toml", ".json", ".conf", ".txt"}
_PROSE_NAMES = ("readme", "license", "licence", "notice", "changelog", "changes", "history",
                "authors", "contributing", "thirdpartynotices", "copying")
_KINDS = {"notebook": "a notebook's code cell", "shell": "a shell script",
          "python": "a Python script", "cython": "a Cython file",
          "config": "a configuration file"}
_LARGEST = 16 * 2 ** 20
_INLINE_IMPORT = re.compile(r"\bfrom[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+([\w.]+(?:[ \t]*,[ \t]*"
                            r"[\w.]+)*)|\bimport[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)")
_CELL_PYTHON = {"time", "timeit", "capture", "prun"}  # cell magics whose body is Python
_CELL_SHELL = {"bash", "sh", "script", "system"}


@dataclass(frozen=True)
class Place:
    """A load found in a file the scan does not parse: where, and what it does."""

    rel: PurePosixPath
    line: int
    kind: str  # a key of _KINDS
    load: Load
    note: str = ""  # "cell 3, line 2" in a notebook

    @property
    def words(self) -> str:
        return _KINDS[self.kind]


def places(root: Path, stems) -> list[Place]:
    """Every load of a module (by import, name or path) and every mention of a file or dotted
    module ending in one of ``stems``, in the files of ``root`` that count (see the module's
    documentation).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "run.sh").write_text("cd rfcn\\npython core/module.py\\n")
    ...     [(str(p.rel), p.line, p.load.paths[0].text) for p in places(Path(folder), {"module"})]
    [('run.sh', 2, 'core/module.py')]
    """
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not skipped_dir(Path(directory), d))
        for name in sorted(names):
            path = Path(directory) / name
            try:
                kind = _kind(path)
            except OSError:  # a path past PATH_MAX: the scan reports its folder once
                continue
            if kind is None:
                continue
            text = _text(path)
            if text is None or (kind == "config" and not any(s in text for s in stems)):
                continue
            rel = PurePosixPath(path.relative_to(root).as_posix())
            found += _read(rel, kind, text, str(path.resolve()), stems)
    return found


def _kind(path):
    name = path.name.lower()
    suffix = path.suffix.lower()
    if name.startswith(_PROSE_NAMES) or path.is_symlink() or suffix == ".py":
        return None
    if suffix == ".ipynb":
        return "notebook"
    if suffix in _SHELL or name in _SHELL_NAMES:
        return "shell"
    if suffix in _PYTHON:
        return "python"
    if suffix in _CYTHON:
        return "cython"
    if suffix in _CONFIG:
        return "config"
    if not suffix:
        return _shebang(path)
    return None


def _shebang(path):
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    return "python" if b"python" in first else "shell"


def _text(path):
    try:
        if path.stat().st_size > _LARGEST:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _read(rel, kind, text, file_path, stems):
    if kind == "notebook":
        return _notebook(rel, text, stems)
    if kind == "shell":
        return [Place(rel, load.line, kind, load) for load in shell_loads(text, stems)]
    if kind == "config":
        return [Place(rel, load.line, kind, load) for load in mention_loads(text, stems)]
    loads = _python(text, file_path, stems)
    if loads is None:
        loads = mention_loads(text, stems) + _import_lines(text, inline=False)
    return [Place(rel, load.line, kind, load) for load in loads]


# --------------------------------------------------------------------------- Python
def _python(text, file_path, stems):
    """The loads of Python source (Python 2 through fissix's view), None if it parses as
    neither."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        try:
            tree = ast.parse(py2.analysis_text(text, file_path or "<cell>"))
        except (ImportError, py2.Python2Error, SyntaxError, ValueError, RecursionError):
            return None
    found = [Load(entry.line, entry.spelled(), names=tuple(
                 (entry.level, module) for module in imports.modules_named(entry)), kind="import")
             for entry in imports.statements(tree)]
    return found + python_loads(tree, file_path, stems)


# --------------------------------------------------------------------------- text
def shell_loads(text: str, stems, first_line: int = 1) -> list[Load]:
    """The paths, dotted names and ``import`` statements a shell text holds."""
    return mention_loads(text, stems, first_line) + _import_lines(text, True, first_line)


def mention_loads(text: str, stems, first_line: int = 1) -> list[Load]:
    """The paths to a copy and the dotted names of one that ``text`` holds, as loads."""
    found = []
    for offset, token, path, dotted in text_mentions(text, stems):
        line = first_line + text.count("\n", 0, offset)
        found.append(Load(line, repr(token), paths=(path,) if path else (),
                          dotted=(dotted,) if dotted else (), kind="mention"))
    return found


def _import_lines(text, inline, first_line=1):
    """``import`` / ``from ... import`` statements in text: anywhere in a line (a shell's
    ``python -c``) or only where a line starts (a Cython file)."""
    found = []
    for match in _INLINE_IMPORT.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        if not inline and text[start:match.start()].strip():
            continue
        line = first_line + text.count("\n", 0, match.start())
        if match.group(4):
            names = tuple((0, name.strip()) for name in match.group(4).split(","))
        else:
            level, module = len(match.group(1)), match.group(2)
            prefix = module + "." if module else ""
            names = ((level, module),) if module else ()
            names += tuple((level, prefix + n.strip()) for n in match.group(3).split(","))
        if inline:  # a shell's: where it runs from is unknown, its names are read as text
            found.append(Load(line, match.group().strip(), kind="import",
                              dotted=tuple(module for level, module in names if not level)))
        else:
            found.append(Load(line, match.group().strip(), names=names, kind="import"))
    return found


# --------------------------------------------------------------------------- notebooks
class _Located(str):
    """A JSON string that knows where its opening quote is."""

    offset = 0


def _located_string(text, end, strict=True):
    value, stop = json.decoder.scanstring(text, end, strict)
    located = _Located(value)
    located.offset = end - 1
    return located, stop


def _located_json(text):
    """``json.loads`` whose string values carry their offset in ``text``."""
    decoder = json.JSONDecoder()
    decoder.parse_string = _located_string
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(text)


def _notebook(rel, text, stems):
    try:
        notebook = _located_json(text)
    except (ValueError, RecursionError):
        return [Place(rel, load.line, "config", load) for load in mention_loads(text, stems)]
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if cells is None and isinstance(notebook, dict):  # nbformat 3: cells in worksheets
        cells = [c for sheet in notebook.get("worksheets", []) for c in sheet.get("cells", [])]
    found = []
    for number, cell in enumerate(cells or [], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        pieces = cell.get("source", cell.get("input", []))
        pieces = [pieces] if isinstance(pieces, str) else [p for p in pieces if isinstance(p, str)]
        json_lines = _json_lines(text, pieces)
        for load in _cell_loads("".join(pieces), stems):
            line = json_lines[min(load.line, len(json_lines)) - 1] if json_lines else 1
            found.append(Place(rel, line, "notebook", load, f"cell {number}, line {load.line}"))
    return found


def _json_lines(text, pieces):
    """For each line of a cell's source, the notebook line that holds it."""
    lines = []
    for piece in pieces:
        where = text.count("\n", 0, getattr(piece, "offset", 0)) + 1
        lines += [where] * max(1, piece.count("\n") + (0 if piece.endswith("\n") else 1))
    return lines


def _cell_loads(code, stems):
    """A code cell's loads: its Python, with IPython's magics and shell lines read apart."""
    lines = code.split("\n")
    first = lines[0].strip()
    if first.startswith("%%"):
        magic = first[2:].split()[0] if first[2:].split() else ""
        if magic in _CELL_SHELL:
            return shell_loads("\n".join(lines[1:]), stems, first_line=2)
        if magic not in _CELL_PYTHON:
            return []
        lines[0] = ""
    found, python = [], []
    for number, line in enumerate(lines, 1):
        python.append(_python_line(line, number, stems, found))
    loads = _python("\n".join(python), None, stems)
    if loads is None:
        loads = mention_loads(code, stems) + _import_lines(code, inline=False)
    return found + loads


def _python_line(line, number, stems, found):
    """The line as Python sees it (a magic becomes ``pass``); what a magic or shell line
    loads goes to ``found``."""
    stripped = line.lstrip()
    indent = line[:len(line) - len(stripped)]
    shell = re.match(r"(?:[\w, ]+=\s*)?!(.*)", stripped)
    if shell:
        found += shell_loads(shell.group(1), stems, number)
    elif stripped.startswith("%"):
        found += _line_magic(stripped[1:], number, stems)
    elif not stripped.endswith("?"):
        return line
    return indent + "pass"


def _line_magic(text, number, stems):
    words = text.split()
    if not words or words[0] not in ("run", "load"):
        return shell_loads(text, stems, number) if words and words[0] in ("sx", "system") \
            else []
    arguments = words[1:]
    if "-m" in arguments and arguments.index("-m") + 1 < len(arguments):
        module = arguments[arguments.index("-m") + 1]
        return [Load(number, "%" + text, names=((0, module),), kind="import")]
    target = next((a for a in arguments if not a.startswith("-")), None)
    if target is None:
        return []
    return [Load(number, "%" + text, paths=(path_value(target.strip("'\"")),), kind="path")]
