"""``migrate`` against the fault patterns a fresh hand-written mutant sample of migrate/ left
untested (issue 36, item 10): each test guards one pattern, on a small tree written here, and
says which in its comment. Each was seen failing on a one-line mutant of the code it guards.
"""

import functools
import os
import signal
import subprocess
import sys

import psutil
import pytest
from test_migrate import run_migrate
from test_migrate_family import FIT_FIRST, FIT_STOCK, copy_source, family_tree, lines_for
from test_migrate_imports import write_tree

from mxpatch_bind import migrate
from mxpatch_bind.migrate import extensions

pytest.importorskip("fissix")
pytest.importorskip("libcst")


# --------------------------------------------------------------------------- relative imports
EXPLICIT_RELATIVE = {
    "proj/core/runner.py": "from .module import MutableModule\n\n\n"
                           "def build(sym):\n    return MutableModule(sym, ['data'], None)\n",
    "proj/function/__init__.py": "",
    "proj/function/train_rpn.py": "from ..core.module import MutableModule  # the fork's\n",
    # Python 2 (the print statement): rewritten by fissix, not libcst
    "proj/function/test_rpn.py": "from ..core.module import MutableModule\nprint 'testing'\n",
}


def test_explicitly_relative_imports_of_a_copy_are_written_as_absolute_imports_of_compat(
        tmp_path, capsys):
    # Fault: the rewrite keeps the import's leading dots (``from .mxpatch_bind.compat``, no
    # such module) or looks the statement up at level 0 (not found, the copy kept).
    family_tree(tmp_path)
    write_tree(tmp_path, EXPLICIT_RELATIVE)
    run_migrate(capsys, tmp_path, "--write", "--delete-vendored")
    compat = "from mxpatch_bind.compat import MutableModule"
    assert {rel: (tmp_path / rel).read_text() for rel in EXPLICIT_RELATIVE} == {
        "proj/core/runner.py": EXPLICIT_RELATIVE["proj/core/runner.py"].replace(
            "from .module import MutableModule", compat),
        "proj/function/__init__.py": "",
        "proj/function/train_rpn.py": compat + "  # the fork's\n",
        "proj/function/test_rpn.py": compat + "\nprint 'testing'\n",
    }
    assert not (tmp_path / "proj/core/module.py").exists()


# --------------------------------------------------------------------------- .pyx allocators
# pycocotools' _mask.pyx in miniature: a buffer from PyMem_Malloc handed to NumPy, which frees
# it with free(); this one cimports nothing from libc.
OWNED_BUFFER_PYX = """\
# cython: language_level=2
from cpython.mem cimport PyMem_Malloc
cimport numpy as np
import numpy as np

np.import_array()

cdef extern from "numpy/arrayobject.h":
    void PyArray_ENABLEFLAGS(np.ndarray arr, int flags)

def zeros(int n):
    cdef double* data = <double*> PyMem_Malloc(n * sizeof(double))
    cdef np.npy_intp shape[1]
    shape[0] = <np.npy_intp> n
    for i in range(n):
        data[i] = 0
    cdef np.ndarray out = np.PyArray_SimpleNewFromData(1, shape, np.NPY_DOUBLE, data)
    PyArray_ENABLEFLAGS(out, np.NPY_OWNDATA)
    return out
"""


def test_a_malloc_the_pyx_port_swaps_in_is_cimported():
    # Fault: PyMem_Malloc becomes malloc with no ``from libc.stdlib cimport malloc`` (Cython:
    # "undeclared name not builtin: malloc").
    ported, changes = extensions.port_pyx(OWNED_BUFFER_PYX)
    assert ported == "from libc.stdlib cimport malloc\n" + OWNED_BUFFER_PYX.replace(
        "<double*> PyMem_Malloc(", "<double*> malloc(")
    assert changes == [(12, "PyMem_Malloc for a buffer NumPy frees with free(): malloc")]


def test_the_pyx_port_that_swaps_the_allocator_compiles_with_cython(tmp_path):
    # The same fault, as the build meets it: Cython refuses the ported file.
    pytest.importorskip("Cython")
    ported = tmp_path / "owned.pyx"
    ported.write_text(extensions.port_pyx(OWNED_BUFFER_PYX)[0])
    ran = subprocess.run([sys.executable, "-m", "cython", "-o", str(tmp_path / "owned.c"),
                          str(ported)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "owned.c").stat().st_size > 0


# --------------------------------------------------------------------------- build timeouts
# A CUDA extension's build runs the repository's own setup script (where nvcc is); this one
# starts a compiler that outlasts the build's timeout. The next setup builds at once.
SLOW_SETUP = """\
import subprocess

compiler = subprocess.Popen(["sh", "-c", "echo $$ > compiler.pid; exec sleep 67"])
compiler.wait()
from setuptools import Extension, setup
setup(ext_modules=[Extension('slow_kernel', ['slow_kernel.cu'])])
"""
QUICK_SETUP = "from setuptools import Extension\nExtension('quick_kernel', ['quick_kernel.cu'])\n"
COMPILER = ["sleep", "67"]


def running_compiler(pid):
    """Whether ``pid`` is the fake compiler and still runs."""
    try:
        process = psutil.Process(pid)
        return process.cmdline() == COMPILER and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # ZombieProcess included
        return False


@pytest.mark.slow  # a compiler process left to outlast its timeout
def test_a_build_past_its_timeout_is_a_check_the_run_goes_on_and_its_compiler_ends(
        tmp_path, capsys, monkeypatch):
    # Fault: a timed-out build raises (the run stops), is reported built, or leaves its
    # compiler running (only the build's own process was killed).
    root = write_tree(tmp_path / "repo", {"lib/nms/setup.py": SLOW_SETUP,
                                          "lib/roi/setup.py": QUICK_SETUP})
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvcc").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(extensions, "build", functools.partial(extensions.build, timeout=5))
    pid_file = root / "lib/nms/compiler.pid"
    try:
        status = migrate.main([str(root), "--build-ext"])
        assert pid_file.exists(), "the build was ended before it started its compiler"
        assert not running_compiler(int(pid_file.read_text()))
    finally:
        if pid_file.exists() and running_compiler(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # this test's leftover
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        # the report comes before any write; the builds, which need the writes, after it
        "migrate: 0 findings in 0 files: nothing to migrate",
        "lib/nms/setup.py:1: [check] extension lib/nms/slow_kernel failed to build: timed out "
        "after 5 s",
        "lib/roi/setup.py:1: [ok] extension lib/roi/quick_kernel: built",
        "migrate: 2 findings in 2 files: 1 to check by hand, 1 handled by mxpatch_bind.compat"]
    assert status == 1
    assert err == ("migrate: building lib/nms/slow_kernel (lib/nms/setup.py) failed:\ntimed out "
                   "after 5 s\n")


# --------------------------------------------------------------------------- operator hints
def test_an_operator_only_the_other_family_has_is_named_with_its_family(tmp_path, capsys):
    # Fault: the hint looks for the name in the call's own family only (mx.nd.Group: no word
    # that mx.sym.Group exists), or names the other family's operator as if it were a twin.
    mx = pytest.importorskip("mxnet")
    from mxpatch_bind.migrate import operators

    assert hasattr(mx.sym, "Group") and not hasattr(mx.nd, "Group")
    assert not hasattr(mx.nd.contrib, "Group")
    assert hasattr(mx.nd.contrib, "isfinite") and not hasattr(mx.sym.contrib, "isfinite")
    assert not hasattr(mx.sym, "isfinite")
    root = write_tree(tmp_path, {"net.py": "import mxnet as mx\n"
                                           "both = mx.nd.Group([a, b])\n"
                                           "finite = mx.sym.contrib.isfinite(data=x)\n"})
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    assert lines[:-1] == [
        f"net.py:2: [check] mx.nd.Group is not in the installed MXNet {version} (only the "
        "Symbol API has it: mx.sym.Group, which takes no NDArrays), and the repository has "
        "no C++ source for it",
        f"net.py:3: [check] mx.sym.contrib.isfinite is not in the installed MXNet {version} "
        "(only the NDArray API has it: mx.nd.contrib.isfinite, which takes no Symbols), and "
        "the repository has no C++ source for it"]
    assert status == 1


# --------------------------------------------------------------------------- the report
def test_after_a_write_each_unresolved_import_is_reported_once(tmp_path, capsys):
    # Fault: the scan's import findings are kept beside the import check run after the
    # write, so each unresolved import of a Python 3 file is listed twice.
    family_tree(tmp_path)
    write_tree(tmp_path, {"proj/plot.py": "import nosuch_plotting_lib\nimport os\n",
                          "proj/old.py": "import nosuch_py2_lib\nprint 'x'\n",
                          "proj/core/rel.py": "from .nowhere import thing\n"})
    status, lines = run_migrate(capsys, tmp_path, "--write", "--delete-vendored",
                                "--to-python3")
    unresolved = [line for line in lines if "does not resolve" in line]
    assert [line.split(": [check] ")[0] for line in unresolved] == [
        "proj/core/rel.py:1", "proj/old.py:1", "proj/plot.py:1"]
    again = run_migrate(capsys, tmp_path)[1]
    assert [line for line in again if "does not resolve" in line] == unresolved
    assert status == 1


# --------------------------------------------------------------------------- keywords
def relation_networks_copy():
    """A copy whose fit calls each epoch_end_callback with -1 before training."""
    return copy_source(fit=FIT_STOCK).replace(
        "    def fit(" + FIT_STOCK + "):\n        pass\n",
        "    def fit(" + FIT_STOCK + "):\n" + FIT_FIRST)


@pytest.mark.parametrize("value", ["False", "True"])
def test_a_construction_that_passes_epoch_end_callback_first_is_left_as_it_is(tmp_path, capsys,
                                                                               value):
    # Fault: the keyword is added though the call passes it (SyntaxError: keyword argument
    # repeated), or a person's False is overridden.
    train = ("from core.module import MutableModule\n"
             f"mod = MutableModule(sym, ['data'], None, epoch_end_callback_first={value})\n")
    family_tree(tmp_path, module=relation_networks_copy(), train=train)
    status, lines = run_migrate(capsys, tmp_path, "--write", "--delete-vendored")
    written = (tmp_path / "proj/train_end2end.py").read_text()
    assert written == train.replace("from core.module", "from mxpatch_bind.compat")
    compile(written, "train_end2end.py", "exec")
    assert [line.split("] ")[0] for line in lines_for(lines, "proj/train_end2end.py")] == [
        "proj/train_end2end.py:1: [rewritten", "proj/train_end2end.py:2: [ok"]


@pytest.mark.parametrize("train, written", [
    # the only import names what compat lacks: not rewritten
    ("from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n",
     "from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n"),
    # another import of the same copy is rewritten: the keyword follows the name's own import
    ("from core.module import MutableModule as Drop\n"
     "from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n"
     "other = Drop(sym, ['data'], None)\n",
     "from mxpatch_bind.compat import MutableModule as Drop\n"
     "from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n"
     "other = Drop(sym, ['data'], None, epoch_end_callback_first=True)\n"),
    # the name is bound again by an import that is not rewritten: that one is the class
    ("from core.module import MutableModule\n"
     "from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n",
     "from mxpatch_bind.compat import MutableModule\n"
     "from core.module import MutableModule, _parse_data_desc\n"
     "mod = MutableModule(sym, ['data'], None)\n"),
])
def test_compats_keyword_is_not_added_where_the_class_stays_the_vendored_one(tmp_path, capsys,
                                                                             train, written):
    # Fault: the keyword is added wherever some import of the copy is rewritten, so the kept
    # copy's MutableModule is called with compat's keyword (TypeError when training starts).
    family_tree(tmp_path, module=relation_networks_copy(), train=train)
    status, lines = run_migrate(capsys, tmp_path, "--write", "--delete-vendored")
    assert (tmp_path / "proj/train_end2end.py").read_text() == written
    line = train.splitlines().index("mod = MutableModule(sym, ['data'], None)") + 1
    assert any(x.startswith(f"proj/train_end2end.py:{line}: [check] MutableModule(...): ")
               and x.endswith("add epoch_end_callback_first=True by hand") for x in lines), lines
    assert (tmp_path / "proj/core/module.py").exists()  # still imported: kept
    assert status == 1
