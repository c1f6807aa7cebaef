"""The family's compiled extensions: the Python 2 ``.pyx`` that Cython 3 refuses or that
fails at its first call, ported; a CUDA-only extension's import guarded; the build command
that builds a migrated tree's extensions in place and fails loudly. The ``.pyx`` sources are
written here, each reproducing one of the family's traps."""

import os
import subprocess
import sys
import textwrap

import pytest

from mxpatch_bind import migrate
from mxpatch_bind.migrate import extensions
from test_migrate import run_migrate
from test_migrate_imports import write_tree
from toolchain import has_c_compiler, needs_c_compiler

pytest.importorskip("fissix")
pytest.importorskip("libcst")

# pycocotools' _frString, cpu_nms's buffers and _mask's len()/2, in miniature
TRAPS_PYX = """\
import numpy as np
cimport numpy as np

def counts_length(obj):
    cdef bytes py_string
    cdef char* c_string
    py_string = str(obj['counts'])
    c_string = py_string
    return len(c_string)

def order(np.ndarray[np.float32_t, ndim=1] scores):
    cdef np.ndarray[np.int_t, ndim=1] order = scores.argsort()[::-1].astype('i')
    cdef np.ndarray[np.int_t, ndim=1] kept = np.zeros((scores.shape[0]), dtype=np.int)
    cdef unsigned long half = len(order)/2
    return order.tolist(), kept.tolist(), half
"""

SETUP = """\
from distutils.extension import Extension
import numpy as np

ext_modules = [
    Extension('traps', ['traps.pyx'], include_dirs=[np.get_include()]),
    Extension('gpu_nms', ['nms_kernel.cu', 'gpu_nms.pyx'], include_dirs=[np.get_include()]),
]
"""


def test_port_pyx_fixes_each_trap_and_names_it():
    ported, changes = extensions.port_pyx(TRAPS_PYX)
    assert ported.startswith(extensions.LANGUAGE_LEVEL + "\n")
    assert "    py_string = obj['counts'].encode('ascii') if isinstance(obj['counts'], str) " \
           "else obj['counts']\n" in ported
    assert ".astype(np.int_)\n" in ported and "dtype=np.int_)" in ported
    assert "= len(order) // 2\n" in ported
    assert [line for line, _ in changes] == [1, 7, 12, 13, 14]
    assert extensions.port_pyx(ported) == (ported, [])  # once


def test_a_str_call_that_is_not_the_whole_value_is_left_alone():
    # mx-maskrcnn's _mask.pyx already encodes: str(x).encode('utf8') is bytes on Python 3
    text = "cdef bytes py_string\npy_string = str(obj['counts']).encode('utf8')\n"
    assert extensions.port_pyx(text)[0] == extensions.LANGUAGE_LEVEL + "\n" + text


def test_the_cuda_only_extensions_are_read_from_the_setup_scripts(tmp_path):
    root = write_tree(tmp_path, {"lib/nms/setup_linux.py": SETUP,
                                 "lib/nms/setup_windows.py": "Extension('win_only', ['a.cu'])\n"})
    assert extensions.cuda_only(root) == {(root / "lib/nms", "gpu_nms")}
    assert [e.name for e in extensions.extensions(root)] == ["traps", "gpu_nms"]


GUARDED = {
    "lib/__init__.py": "",
    "lib/nms/__init__.py": "",
    "lib/nms/setup_linux.py": SETUP,
    "lib/nms/gpu_nms.pyx": "def gpu_nms(dets, thresh):\n    return []\n",
    "lib/nms/nms.py": "from gpu_nms import gpu_nms as nms_gpu\n\n\ndef fast(d):\n"
                      "    return nms_gpu(d, 0.3)\n",
    "lib/train.py": "from nms import nms\nprint 'imported'\nnms.fast([])\n",
}


def test_a_cuda_only_import_is_guarded_and_a_call_names_cuda(tmp_path, capsys):
    root = write_tree(tmp_path, GUARDED)
    status, lines = run_migrate(capsys, root)
    assert ("lib/nms/nms.py:1: [port] imports the CUDA extension gpu_nms at module level: a "
            "CPU build fails at import; --to-python3 guards it (a call then names CUDA)") in lines
    run_migrate(capsys, root, "--to-python3")
    assert (root / "lib/nms/nms.py").read_text().startswith(
        "try:\n    from .gpu_nms import gpu_nms as nms_gpu\nexcept ImportError:")
    ran = subprocess.run([sys.executable, "lib/train.py"], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert ran.stdout == "imported\n"
    assert "ImportError: gpu_nms is a CUDA extension, not built on this machine" in ran.stderr
    assert run_migrate(capsys, root, "--to-python3")[1][-1].endswith("nothing to migrate")


# The family's proposal operators: gpu_nms_wrapper(thresh, in_data[0].context.device_id)
# whatever the context, beside a cpu_nms_wrapper(thresh) in the same module.
TWINS = {
    "lib/nms/__init__.py": "",
    "lib/nms/setup_linux.py": SETUP,
    "lib/nms/gpu_nms.pyx": "def gpu_nms(dets, thresh, device_id):\n    return []\n",
    "lib/nms/cpu_nms.py": "def cpu_nms(dets, thresh):\n"
                          "    return [i for i, d in enumerate(dets) if d[4] > thresh]\n",
    "lib/nms/nms.py": """\
        from cpu_nms import cpu_nms
        from gpu_nms import gpu_nms


        def cpu_nms_wrapper(thresh):
            def _nms(dets):
                return cpu_nms(dets, thresh)
            return _nms


        def gpu_nms_wrapper(thresh, device_id):
            def _nms(dets):
                return gpu_nms(dets, thresh, device_id)
            return _nms
        """,
    "proj/__init__.py": "",
    "proj/proposal.py": """\
        from nms.nms import gpu_nms_wrapper


        def keep(in_data, thresh):
            nms = gpu_nms_wrapper(thresh, in_data[0].context.device_id)
            return nms(in_data[0].asnumpy().tolist())


        def keep_on_zero(dets):
            return gpu_nms_wrapper(0.5, 0)(dets)
        """,
    "proj/test.py": """\
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))
        import mxnet as mx
        from proposal import keep

        if __name__ == '__main__':
            dets = mx.nd.array([[0, 0, 9, 9, 0.9], [1, 1, 9, 9, 0.2], [5, 5, 9, 9, 0.7]])
            print keep([dets], 0.5)
        """,
}


def test_a_cuda_call_given_a_contexts_device_chooses_the_cpu_twin_on_a_cpu_context(
        tmp_path, capsys):
    root = write_tree(tmp_path, TWINS)
    status, lines = run_migrate(capsys, root)
    assert ("proj/proposal.py:5: [port] calls gpu_nms_wrapper with a context's device_id: a "
            "CPU context then needs CUDA; --to-python3 makes each call choose cpu_nms_wrapper "
            "on a CPU context") in lines
    run_migrate(capsys, root, "--to-python3")
    ported = (root / "proj/proposal.py").read_text()
    assert ported.startswith("from nms.nms import gpu_nms_wrapper, cpu_nms_wrapper\n")
    assert ("nms = (gpu_nms_wrapper(thresh, in_data[0].context.device_id) if "
            "in_data[0].context.device_type == 'gpu' else cpu_nms_wrapper(thresh))") in ported
    assert "return gpu_nms_wrapper(0.5, 0)(dets)" in ported  # no context: the guard names CUDA
    ran = subprocess.run([sys.executable, "proj/test.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "[0, 2]\n"), ran.stderr
    again = run_migrate(capsys, root, "--to-python3")[1]
    assert not [line for line in again if "gpu_nms_wrapper" in line], again
    assert (root / "proj/proposal.py").read_text() == ported


def test_the_compiler_tests_skip_where_the_compiler_setuptools_would_run_is_missing(
        tmp_path, monkeypatch):
    compiler = tmp_path / "my-cc"
    compiler.write_text("#!/bin/sh\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CC", "my-cc -pthread")  # a command with its options, as Python's
    assert has_c_compiler()
    monkeypatch.setenv("CC", "no-such-cc -pthread")
    assert not has_c_compiler()


@pytest.mark.slow  # compiles a C extension (about 10 s)
@needs_c_compiler
def test_the_build_command_builds_the_ported_extension_and_it_runs(tmp_path, capsys):
    pytest.importorskip("Cython")
    root = write_tree(tmp_path, {"lib/nms/setup_linux.py": SETUP,
                                 "lib/nms/traps.pyx": TRAPS_PYX,
                                 "lib/nms/gpu_nms.pyx": "def gpu_nms(d, t):\n    return []\n"})
    status, lines = run_migrate(capsys, root, "--to-python3", "--build-ext=cpu")
    assert "lib/nms/setup_linux.py:1: [ok] extension lib/nms/traps: built" in lines
    assert ("lib/nms/setup_linux.py:1: [ok] extension lib/nms/gpu_nms: skipped (needs CUDA; a "
            "CPU build)") in lines
    assert status == 0, lines
    code = textwrap.dedent("""\
        import numpy as np, traps
        print(traps.counts_length({'counts': 'abc'}), traps.counts_length({'counts': b'ab'}))
        print(traps.order(np.array([0.1, 0.9, 0.5], dtype=np.float32)))
        """)
    ran = subprocess.run([sys.executable, "-c", code], cwd=root / "lib/nms",
                         capture_output=True, text=True, timeout=60)
    assert ran.stdout == "3 2\n([1, 2, 0], [0, 0, 0], 1)\n", ran.stderr


# SNIPER's lib/chips in miniature: a .pyx that cimports libcpp over a C++ source
CPP_PYX = """\
from libcpp.vector cimport vector

cdef extern from 'twice.h' namespace 'demo':
    vector[int] twice(vector[int]& values)

def doubled(values):
    return twice(values)
"""
CPP_HEADER = "#include <vector>\nnamespace demo { std::vector<int> twice(std::vector<int>& v); }\n"
CPP_SOURCE = textwrap.dedent("""\
    #include "twice.h"
    namespace demo {
    std::vector<int> twice(std::vector<int>& v) {
        std::vector<int> out;
        for (int x : v) out.push_back(2 * x);
        return out;
    }
    }
    """)


@pytest.mark.slow  # compiles a C++ extension (about 10 s)
@needs_c_compiler
def test_a_pyx_built_with_cpp_sources_is_compiled_as_cpp_and_runs(tmp_path):
    pytest.importorskip("Cython")
    root = write_tree(tmp_path, {
        "lib/chips/setup.py": "Extension('chips', ['chips.pyx', 'twice.cpp'], language='c++')\n",
        "lib/chips/chips.pyx": CPP_PYX, "lib/chips/twice.h": CPP_HEADER,
        "lib/chips/twice.cpp": CPP_SOURCE})
    found = migrate.build_extensions(root, cuda=False)
    assert [(f.path, f.action) for f in found] == [("lib/chips/setup.py", "ok")], found
    ran = subprocess.run([sys.executable, "-c", "import chips; print(chips.doubled([1, 5]))"],
                         cwd=root / "lib/chips", capture_output=True, text=True, timeout=60)
    assert ran.stdout == "[2, 10]\n", ran.stderr


@pytest.mark.slow  # runs the compiler on a broken source
def test_a_failed_build_is_a_check_with_the_compilers_words(tmp_path, capsys):
    pytest.importorskip("Cython")
    root = write_tree(tmp_path, {"ext/setup.py": "Extension('broken', ['broken.pyx'])\n",
                                 "ext/broken.pyx": "cdef int x = 'not an int'\n"})
    found = migrate.build_extensions(root, cuda=False)
    assert [(f.path, f.action) for f in found] == [("ext/setup.py", "check")]
    assert found[0].message.startswith("extension ext/broken failed to build")
    assert "building ext/broken (ext/setup.py) failed:" in capsys.readouterr().err


def test_diff_with_build_ext_builds_nothing_and_shows_the_pyx_port(tmp_path, capsys):
    from test_migrate import snapshot
    root = write_tree(tmp_path, {"lib/nms/setup_linux.py": SETUP,
                                 "lib/nms/traps.pyx": TRAPS_PYX})
    before = snapshot(root)
    status = migrate.main([str(root), "--to-python3", "--build-ext", "--diff"])
    patch, report = capsys.readouterr()
    assert snapshot(root) == before
    assert "+" + extensions.LANGUAGE_LEVEL in patch.splitlines()
    assert "lib/nms/traps.pyx:" in report  # the port the patch shows, as a finding
    assert "extension" not in report  # nothing built, so no build's line
    assert status == 1
