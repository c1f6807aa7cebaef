"""Python 2 as the oracle: a Python 2 program and migrate's port of it must print the same.

A program is a tree of files (``{relative path: source}``). :func:`assert_same_output` writes
it, runs it under Python 2.7 as the family ran it, ports a copy the way the README's one
command does (``scan`` then ``apply(write=True, delete_vendored=True, to_python3=True)``, or
the command itself with ``via='cli'``), runs the port under this Python 3 and compares exit
status and standard output exactly. Reading the rewritten text proves nothing; this does.

Where Python 2 comes from, in this order:

``MXPATCH_PYTHON2``
    The interpreter to use (when set, nothing else is tried: a broken one is reported).
``python2.7``, ``python2`` on ``PATH``
    Each run once to see that it *is* Python 2.7 (a pyenv shim exists but may fail).
``~/.pyenv/versions/2.7*/bin/python2.7``
    pyenv's own copies, newest first.

``MXPATCH_PYTHON2_PATH`` (``os.pathsep``-separated) is Python 2's ``PYTHONPATH``: the folder
that ``python2.7 -m pip install --target DIR numpy==1.16.6 pyyaml==5.4.1`` filled, where the
interpreter cannot import NumPy or PyYAML by itself. A test that needs what is missing skips
and names it; with ``MXPATCH_REQUIRE_PYTHON2=1`` (``.ci/run`` sets it) it fails instead.
"""

from __future__ import annotations

import difflib
import functools
import glob
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

PYTHON2 = "MXPATCH_PYTHON2"
PYTHON2_PATH = "MXPATCH_PYTHON2_PATH"
REQUIRE = "MXPATCH_REQUIRE_PYTHON2"
INSTALL_HINT = ("python2.7 -m pip install --target DIR numpy==1.16.6 pyyaml==5.4.1, then "
                f"{PYTHON2_PATH}=DIR")
README_COMMAND = ("--write", "--delete-vendored", "--to-python3", "--build-ext=cpu")
TIMEOUT_S = 120
_IS_27 = "import sys; sys.stdout.write('%d.%d' % sys.version_info[:2])"


class Found(NamedTuple):
    """A Python 2.7 interpreter (``executable``), or None and ``why_not``."""

    executable: str | None
    why_not: str


class Run(NamedTuple):
    """What one run of a program gave: its exit status and its two streams."""

    returncode: int
    stdout: str
    stderr: str


class Outputs(NamedTuple):
    """Both sides of one comparison, and the port's text (``{path: text}``)."""

    python2: Run
    python3: Run
    original: dict
    ported: dict
    findings: list


# ------------------------------------------------------------------ finding Python 2
def why_not_python27(executable: str) -> str:
    """Why ``executable`` is not a working Python 2.7 ('' when it is one)."""
    try:
        ran = subprocess.run([executable, "-c", _IS_27], capture_output=True, text=True,
                             timeout=60, env=program_environment())
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{executable} does not run ({error})"
    if ran.returncode != 0:
        said = (ran.stderr.strip().splitlines() or ["no message"])[0]
        return f"{executable} does not run (exit {ran.returncode}: {said})"
    if ran.stdout != "2.7":
        return f"{executable} is Python {ran.stdout}, not 2.7"
    return ""


def find_python2(environ=None) -> Found:
    """The first working Python 2.7 of the search the module's docstring describes."""
    environ = os.environ if environ is None else environ
    if environ.get(PYTHON2):
        why = why_not_python27(environ[PYTHON2])
        return Found(None if why else environ[PYTHON2], f"{PYTHON2}: {why}" if why else "")
    tried = []
    for name in ("python2.7", "python2"):
        executable = shutil.which(name, path=environ.get("PATH", os.defpath))
        if executable is None:
            tried.append(f"no {name} on PATH")
            continue
        why = why_not_python27(executable)
        if not why:
            return Found(executable, "")
        tried.append(why)
    home = environ.get("HOME") or os.path.expanduser("~")
    pattern = os.path.join(home, ".pyenv", "versions", "2.7*", "bin", "python2.7")
    for executable in sorted(glob.glob(pattern), key=_version_key, reverse=True):
        why = why_not_python27(executable)
        if not why:
            return Found(executable, "")
        tried.append(why)
    if not glob.glob(pattern):
        tried.append(f"no {pattern}")
    return Found(None, f"no Python 2.7 ({'; '.join(tried)}); set {PYTHON2} to one")


def _version_key(executable):
    """2.7.18 after 2.7.9: the version folder's numbers, not its spelling."""
    version = Path(executable).parents[1].name
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def missing_modules(executable: str, modules, environ=None) -> list[str]:
    """The ``modules`` that ``executable`` cannot import with :data:`PYTHON2_PATH`."""
    missing = []
    for module in modules:
        ran = subprocess.run([executable, "-c", f"import {module}"], capture_output=True,
                             timeout=60, env=python2_environment(environ))
        if ran.returncode != 0:
            missing.append(module)
    return missing


@functools.lru_cache(maxsize=None)
def _gate(modules: tuple) -> tuple[str | None, str]:
    """(interpreter, '') or (None, why); run once per set of modules in a session."""
    found = find_python2()
    if found.executable is None:
        return None, found.why_not
    missing = missing_modules(found.executable, modules)
    if missing:
        where = os.environ.get(PYTHON2_PATH) or "not set"
        return None, (f"Python 2.7 at {found.executable} cannot import {', '.join(missing)} "
                      f"({PYTHON2_PATH} is {where}): {INSTALL_HINT}")
    return found.executable, ""


def python2(*modules: str) -> str:
    """The Python 2.7 interpreter, able to import ``modules``; else the test skips, saying
    why, or fails where :data:`REQUIRE` is ``1`` (CI: the oracle must run there)."""
    executable, why = _gate(tuple(sorted(modules)))
    if executable is None:
        unavailable(why)
    return executable


def unavailable(why: str, environ=None):
    """Skip with ``why``; fail with it where :data:`REQUIRE` is ``1``."""
    environ = os.environ if environ is None else environ
    if environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 and {why}", pytrace=False)
    pytest.skip(why)


# ------------------------------------------------------------------ running
def program_environment(extra=None):
    """The environment a program runs in, under either Python: this one's without its
    ``PYTHON*`` variables (a Python 3 path or warning filter must reach neither side)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    # the same string hashes and the same stream encoding on both sides, run after run
    env.update(PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra or {})
    return env


def python3_environment():
    """:func:`program_environment` where the port finds this ``mxpatch_bind`` (its
    ``mxpatch_bind.py2`` helpers) even in a checkout that is not installed."""
    import mxpatch_bind

    return program_environment({"PYTHONPATH": str(Path(mxpatch_bind.__file__).parents[1])})


def python2_environment(environ=None):
    """:func:`program_environment` with :data:`PYTHON2_PATH` as Python 2's path."""
    environ = os.environ if environ is None else environ
    path = environ.get(PYTHON2_PATH)
    return program_environment({"PYTHONPATH": path} if path else None)


def run(executable: str, root: Path, main: str, environment) -> Run:
    """``executable main`` in ``root``, as the program's user ran it."""
    ran = subprocess.run([executable, main], cwd=root, capture_output=True, timeout=TIMEOUT_S,
                         env=environment)
    return Run(ran.returncode, ran.stdout.decode("utf-8", "replace"),
               ran.stderr.decode("utf-8", "replace"))


def write_tree(root: Path, files: dict) -> Path:
    """``files`` (``{relative path: text}``, dedented) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def port(root: Path, via: str = "api") -> list:
    """Port the tree at ``root`` in place as a user would: through the public API, or
    (``via='cli'``) the README's one command. Returns the findings (the API) or the report's
    lines (the command)."""
    if via == "cli":
        ran = subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", str(root),
                              *README_COMMAND], capture_output=True, text=True,
                             timeout=TIMEOUT_S, env=python3_environment())
        assert ran.returncode in (0, 1), f"migrate exited {ran.returncode}:\n{ran.stderr}"
        return ran.stdout.splitlines()
    from mxpatch_bind import migrate

    return migrate.apply(root, migrate.scan(root), write=True, delete_vendored=True,
                         to_python3=True)


def _texts(root):
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.py"))}


def compare(tmp_path: Path, files: dict, main: str = "main.py", *, modules=(),
            via: str = "api", python2_only=None, prepare: str | None = None) -> Outputs:
    """Run ``files`` under Python 2 and their port under Python 3.

    ``python2_only``: files only the Python 2 side has (what its machine had built, such as
    a CUDA extension a CPU machine lacks); they are neither ported nor copied.
    ``prepare``: a script of ``files`` run under Python 2 before the tree is copied and
    ported, so that both sides find what it wrote (a cache Python 2 pickled).
    """
    executable = python2(*modules)
    original = write_tree(tmp_path / "python2", files)
    if prepare is not None:
        prepared = run(executable, original, prepare, python2_environment())
        assert prepared.returncode == 0, f"{prepare} failed under Python 2:\n{prepared.stderr}"
    ported = tmp_path / "python3"
    shutil.copytree(original, ported)
    findings = port(ported, via)
    write_tree(original, python2_only or {})
    return Outputs(run(executable, original, main, python2_environment()),
                   run(sys.executable, ported, main, python3_environment()),
                   {k: textwrap.dedent(v) for k, v in files.items()}, _texts(ported), findings)


def mismatch(outputs: Outputs, reference: str = "Python 2") -> str:
    """'' when the port printed what the ``reference`` (``outputs.python2``) printed and
    exited the same, else what differs: both outputs, the port's error, and what migrate
    changed."""
    two, three = outputs.python2, outputs.python3
    if (two.returncode, two.stdout) == (three.returncode, three.stdout):
        return ""
    lines = [f"the port does not print what {reference} printed",
             f"--- {reference} (exit {two.returncode}):", two.stdout.rstrip("\n"),
             f"--- the port under Python 3 (exit {three.returncode}):", three.stdout.rstrip("\n")]
    if three.returncode:
        lines += ["--- the port's standard error (last lines):",
                  *three.stderr.strip().splitlines()[-12:]]
    lines.append("--- what migrate changed:")
    for rel, text in outputs.ported.items():
        before = outputs.original.get(rel, "")
        lines += [line.rstrip("\n") for line in difflib.unified_diff(
            before.splitlines(True), text.splitlines(True), f"a/{rel}", f"b/{rel}", n=0)]
    return "\n".join(lines)


def assert_same_output(tmp_path: Path, files: dict, main: str = "main.py", **options) -> Outputs:
    """:func:`compare`, then fail unless Python 2 ran cleanly and the port printed the same.

    A program that fails under Python 2 is a fault of the test, said as such.
    """
    outputs = compare(tmp_path, files, main, **options)
    assert outputs.python2.returncode == 0, (
        f"the Python 2 program itself failed:\n{outputs.python2.stderr}")
    assert outputs.python2.stdout, "the Python 2 program printed nothing to compare"
    problem = mismatch(outputs)
    assert not problem, problem
    return outputs


def assert_python3_file_unchanged_in_meaning(outputs: Outputs, tmp_path: Path, main: str):
    """For a file only Python 3 parses, inside a Python 2 tree that :func:`compare` ported:
    it never ran on Python 2, so the port must print what the file printed unported, under
    this Python 3."""
    environment = python3_environment()
    unported = run(sys.executable, tmp_path / "python2", main, environment)
    assert unported.returncode == 0, f"the unported {main} failed:\n{unported.stderr}"
    both = outputs._replace(python2=unported,
                            python3=run(sys.executable, tmp_path / "python3", main, environment))
    problem = mismatch(both, reference=f"the unported {main} under Python 3")
    assert not problem, problem


def assert_loud(tmp_path: Path, files: dict, error: str, main: str = "main.py",
                **options) -> Outputs:
    """For what the port cannot compute as Python 2 did: Python 2 ran cleanly, and the port
    stops with ``error`` (its standard error names it) instead of printing something else.
    Never silently wrong: loud, or the same."""
    outputs = compare(tmp_path, files, main, **options)
    assert outputs.python2.returncode == 0, (
        f"the Python 2 program itself failed:\n{outputs.python2.stderr}")
    assert outputs.python3.returncode != 0, (
        "the port ran to the end where it was expected to stop with " + error + "\n"
        + mismatch(outputs))
    assert error in outputs.python3.stderr, outputs.python3.stderr
    return outputs


def checked(outputs: Outputs, path: str, line: int) -> list:
    """The ``[check]`` findings migrate reported at ``path:line`` (the original's line)."""
    return [f for f in outputs.findings if getattr(f, "action", None) == "check"
            and f.path == path and f.line == line]


def same_lines(outputs: Outputs, normalize) -> None:
    """Python 2 ran cleanly and the port printed the same lines once each is ``normalize``-d
    (for the differences docs/migration.rst lists as kept: Python 2's own arbitrary order,
    its float ``str``, its print's soft space)."""
    assert outputs.python2.returncode == 0, outputs.python2.stderr
    assert outputs.python3.returncode == 0, mismatch(outputs)
    two, three = (text.stdout.splitlines() for text in (outputs.python2, outputs.python3))
    assert [normalize(line) for line in two] == [normalize(line) for line in three], \
        mismatch(outputs)
