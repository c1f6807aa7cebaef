"""Private to ``migrate``: the family's compiled extensions, ported, guarded and built.

Three jobs.

- :func:`port_pyx`: what Cython 3 refuses in the family's Python 2 ``.pyx`` files, or what
  fails at the first call: ``cdef bytes s`` given ``str(x)`` (pycocotools' ``_mask.pyx``: on
  Python 3 a ``str`` is text; it now takes ``x`` encoded, or ``x`` when it is bytes already);
  ``/`` that fed an integer argument (``len(np_poly)/2``: ``//``); ``.astype('i')`` into an
  ``np.int_t`` buffer (``cpu_nms.pyx``: ``Buffer dtype mismatch, expected 'int_t' but got
  'int'`` on Linux, where ``int_t`` is 64 bits: ``np.int_``); ``np.int`` (gone from NumPy
  1.24: ``np.int_``). Each file gets ``# cython: language_level=2`` when it names none, as the
  code was written for it.
- :func:`guard_import`: an import of an extension that needs CUDA (``gpu_nms``: its
  ``Extension`` in a ``setup*.py`` lists a ``.cu`` source) is wrapped so that a CPU install
  imports the module and a call names CUDA instead of failing at import.
- :func:`build`: builds every extension of the tree's ``setup*.py`` files in place, in a
  child process: the CPU ones with setuptools and Cython (with NumPy's headers), the CUDA ones
  only where ``nvcc`` is found, through the repository's own ``setup`` script. A failed build
  is reported with the compiler's last lines; one past its timeout is ended with every
  process it started.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .files import skipped_dir
from .model import declared_extensions

LANGUAGE_LEVEL = "# cython: language_level=2"
_LEVEL = re.compile(r"^#\s*cython:.*language_level", re.M)
_BYTES_DECL = re.compile(r"^\s*cdef\s+bytes\s+(\w+)\s*$", re.M)
_INT_BUFFER = re.compile(r"(cdef\s+np\.ndarray\[np\.int_t[^\]]*\]\s+\w+\s*=.*)\.astype\('i'\)")
_NP_INT = re.compile(r"\bnp\.int\b(?![\w.])")
_LEN_HALF = re.compile(r"\blen\((\w+)\)\s*/\s*(\d+)\b")
GUARD_NOTE = "mxpatch_bind: a CPU build has no"
_ENDING_S = 30  # what a killed build gets to close its pipes


@dataclass(frozen=True)
class Ext:
    """One ``Extension`` of a ``setup*.py``: its name, folder, sources, and whether it
    needs CUDA."""

    name: str
    folder: Path
    sources: tuple
    cuda: bool
    setup: Path


# ---------------------------------------------------------------------- .pyx
def port_pyx(text: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` of a Python 2 ``.pyx`` as Cython 3 builds it and Python 3 runs it, and
    ``(line, what)`` for each change."""
    changes = []
    lines = text.splitlines(True)
    bytes_names = set(_BYTES_DECL.findall(text))
    for number, line in enumerate(lines, 1):
        new = line
        for name in bytes_names:
            match = re.match(rf"^(\s*){name}\s*=\s*str\((.+)\)\s*$", new.rstrip("\r\n"))
            if match and _balanced(match.group(2)):
                indent, value = match.groups()
                new = (f"{indent}{name} = {value}.encode('ascii') if isinstance({value}, str) "
                       f"else {value}{_ending(line)}")
        new = _INT_BUFFER.sub(r"\1.astype(np.int_)", new)
        new = _NP_INT.sub("np.int_", new)
        new = _LEN_HALF.sub(r"len(\1) // \2", new)
        if new != line:
            lines[number - 1] = new
            changes.append((number, _what(line, new)))
    text = "".join(lines)
    text = _numpy_owned_malloc(text, changes)
    if not _LEVEL.search(text):
        newline = "\r\n" if "\r\n" in text else "\n"
        text = LANGUAGE_LEVEL + newline + text
        changes.insert(0, (1, "language_level=2, which Cython 3 no longer assumes"))
    return text, changes


def _balanced(expression):
    """Whether ``expression`` closes every bracket it opens and never closes more (so that
    ``str(<expression>)`` is the whole right-hand side, not ``str(a).encode(b)``)."""
    depth = 0
    for char in expression:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _numpy_owned_malloc(text, changes):
    """``PyMem_Malloc`` -> ``malloc`` in a file that hands its buffers to NumPy with
    ``NPY_OWNDATA`` and never calls ``PyMem_Free``: NumPy frees them with ``free()``, and on
    Python 3 ``PyMem_Malloc`` is pymalloc's (pycocotools' ``_mask.pyx``: ``free(): invalid
    pointer``, the process aborts when an IoU array is freed)."""
    if "NPY_OWNDATA" not in text or "PyMem_Free(" in text or "PyMem_Malloc(" not in text:
        return text
    lines = text.splitlines(True)
    for number, line in enumerate(lines, 1):
        if "PyMem_Malloc(" in line and not line.lstrip().startswith(("#", "from", "cimport")):
            lines[number - 1] = line.replace("PyMem_Malloc(", "malloc(")
            changes.append((number, "PyMem_Malloc for a buffer NumPy frees with free(): malloc"))
    text = "".join(lines)
    if not re.search(r"^from libc\.stdlib cimport .*\bmalloc\b", text, re.M):
        newline = "\r\n" if "\r\n" in text else "\n"
        text = f"from libc.stdlib cimport malloc{newline}" + text
    return text


def _ending(line):
    return line[len(line.rstrip("\r\n")):]


def _what(old, new):
    if "isinstance(" in new and "isinstance(" not in old:
        return "str() into a bytes variable: encoded on Python 3"
    if "malloc(" in new and "PyMem_Malloc(" in old:
        return "PyMem_Malloc for a buffer NumPy frees with free(): malloc"
    if ".astype(np.int_)" in new and ".astype(np.int_)" not in old:
        return "astype('i') into an np.int_t buffer: np.int_ (64 bits on Linux)"
    if "//" in new and "//" not in old:
        return "'/' into an integer argument: '//'"
    return "np.int (gone from NumPy 1.24): np.int_"


# ---------------------------------------------------------------------- setup files
def extensions(root: Path) -> list[Ext]:
    """Every ``Extension`` the tree's ``setup*.py`` files declare (Windows ones left out)."""
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not skipped_dir(Path(directory), d))
        for name in sorted(names):
            if name.startswith("setup") and name.endswith(".py") and "windows" not in name:
                found += _declared(Path(directory) / name)
    return found


def _declared(setup: Path) -> list[Ext]:
    return [Ext(name, setup.parent, sources, any(s.endswith((".cu", ".cuh")) for s in sources),
                setup) for name, sources in declared_extensions(setup)]


def cuda_only(root: Path) -> set[tuple[Path, str]]:
    """``(folder, name)`` of the extensions that need CUDA."""
    return {(ext.folder, ext.name) for ext in extensions(root) if ext.cuda}


# ---------------------------------------------------------------------- guards
def guard_import(text: str, names: set[str]) -> tuple[str, list[int]]:
    """Wrap each module-level ``from [.]X import a, b`` of a CUDA-only extension ``X`` (in
    ``names``) in ``try: ... except ImportError:``, defining each name as a function that
    raises ImportError naming CUDA; returns the text and the lines guarded."""
    tree = ast.parse(text)
    lines = text.splitlines(True)
    guarded = []
    for node in reversed(tree.body):
        if not isinstance(node, ast.ImportFrom) or not node.module \
                or node.module.split(".")[-1] not in names or node.lineno != node.end_lineno:
            continue
        line = lines[node.lineno - 1]
        newline = _ending(line) or "\n"
        body = line.rstrip("\r\n")
        stubs = "".join(
            f"    def {alias.asname or alias.name}(*args, **kwargs):{newline}"
            f"        raise ImportError({_needs_cuda(node.module)!r}){newline}"
            for alias in node.names if alias.name != "*")
        lines[node.lineno - 1] = (f"try:{newline}    {body.strip()}{newline}"
                                  f"except ImportError:  # {GUARD_NOTE} "
                                  f"{node.module.lstrip('.')}{newline}{stubs}")
        guarded.append(node.lineno)
    return "".join(lines), sorted(guarded)


def _needs_cuda(module):
    name = module.split(".")[-1]
    return (f"{name} is a CUDA extension, not built on this machine (no nvcc): run on a GPU "
            f"machine after 'python -m mxpatch_bind migrate PATH --build-ext' there, or use "
            f"the CPU code path")


# ---------------------------------------------------------------------- building
@dataclass(frozen=True)
class Built:
    """What :func:`build` did with one extension: ``status`` is ``'built'``, ``'skipped'``
    (CUDA without nvcc) or ``'failed'``; ``detail`` the reason or the compiler's last lines."""

    ext: Ext
    status: str
    detail: str = ""


# A .pyx built beside C++ sources (SNIPER's chips.pyx with cchips.cpp, its setup.py's
# language='c++') is Cython's C++ output: as C, libcpp's headers do not compile.
_BUILD_CPU = """\
import sys
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
name, sources = sys.argv[1], sys.argv[2:]
language = "c++" if any(s.endswith((".cpp", ".cc", ".cxx")) for s in sources) else None
setup(name=name, script_args=["build_ext", "--inplace", "--quiet"],
      ext_modules=cythonize([Extension(name, sources, include_dirs=[numpy.get_include(), "."],
                                       language=language)],
                            compiler_directives={"language_level": 2}, quiet=True))
"""


def build(root: Path, cuda: bool = True, timeout: float = 1800) -> list[Built]:
    """Build every extension of the tree in place; the CUDA ones only when ``cuda`` and
    ``nvcc`` is on PATH (through the repository's own ``setup`` script, with ``CUDAHOME``
    set from ``nvcc``'s real path where it is not set: the family's ``locate_cuda`` looks
    beside ``nvcc``)."""
    results = []
    nvcc = shutil.which("nvcc") if cuda else None
    cuda_setups_done = set()
    for ext in extensions(root):
        if ext.cuda:
            if nvcc is None:
                why = "needs CUDA; no nvcc on PATH" if cuda else "needs CUDA; a CPU build"
                results.append(Built(ext, "skipped", why))
                continue
            if ext.setup not in cuda_setups_done:  # the repository's own script, as it is
                cuda_setups_done.add(ext.setup)
                home = os.environ.get("CUDAHOME") or str(Path(os.path.realpath(nvcc)).parents[1])
                results.append(_run(ext, [sys.executable, ext.setup.name, "build_ext",
                                          "--inplace"], timeout, {"CUDAHOME": home}))
            continue
        results.append(_run(ext, [sys.executable, "-c", _BUILD_CPU, ext.name, *ext.sources],
                            timeout))
    return results


def _run(ext, command, timeout, env=None):
    # Its own session: a build that outlasts ``timeout`` is ended with the compilers it
    # started (killing the build's process alone leaves them running, orphaned).
    try:
        process = subprocess.Popen(command, cwd=ext.folder, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, **(env or {})}, start_new_session=True)
    except OSError as error:
        return Built(ext, "failed", str(error))
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_session(process)
        return Built(ext, "failed", f"timed out after {timeout:.0f} s")
    except BaseException:  # Ctrl-C reaches the terminal's group only, not this session
        _end_session(process)
        raise
    if process.returncode != 0:
        tail = (stdout + stderr).strip().splitlines()[-12:]
        return Built(ext, "failed", "\n".join(tail))
    return Built(ext, "built")


def _end_session(process):
    """SIGKILL every process of the build's session, then read its pipes to their end: they
    close when the last process holding them has ended."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.communicate(timeout=_ENDING_S)
    except subprocess.TimeoutExpired:  # a process that left the session holds the pipes
        process.kill()
        process.wait()
