"""MXNet missing, or numpy too new for it: every command says the fix in one line, exit 1.

Each case runs in a subprocess whose PYTHONPATH starts with a simulation of the broken
environment (see ``broken_env``): a finder that hides ``mxnet``, or an ``mxnet`` that fails
at import with numpy 1.24's own ``np.bool`` error.
"""

import os
import subprocess
import sys
import textwrap

import broken_env
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_in(kind, tmp_path, *args):
    return subprocess.run([sys.executable] + list(args),
                          env=broken_env.environment(kind, tmp_path, REPO), cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, check=False)


def says_the_fix(line, kind):
    return all(words in line for words in broken_env.EXPECTED[kind])


@pytest.mark.parametrize("kind, error", [("missing", "MXNetNotInstalledError"),
                                         ("numpy", "NumpyTooNewError")])
def test_import_mxnet_raises_a_typed_error_that_ends_with_the_fix(tmp_path, kind, error):
    completed = run_in(kind, tmp_path, "-c", textwrap.dedent("""
        from mxpatch_bind import _mxnet_env
        try:
            _mxnet_env.import_mxnet()
        except _mxnet_env.MXNetEnvironmentError as error:
            assert isinstance(error, ImportError)
            print(type(error).__name__)
            print(error)
            print(error.fix)
    """))
    assert completed.returncode == 0, completed.stderr
    name, message, fix = completed.stdout.splitlines()
    assert name == error
    assert says_the_fix(message, kind) and message.endswith("; fix: " + fix)


def test_the_numpy_message_is_recognised_only_for_a_removed_alias(tmp_path):
    fake = tmp_path / "fake"
    (fake / "mxnet").mkdir(parents=True)
    (fake / "mxnet" / "__init__.py").write_text(
        "raise AttributeError(\"module 'numpy' has no attribute 'frobnicate'\")\n")
    completed = subprocess.run(
        [sys.executable, "-c", "from mxpatch_bind import _mxnet_env; _mxnet_env.import_mxnet()"],
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), REPO])),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert completed.returncode == 1
    assert completed.stderr.splitlines()[-1] == (
        "AttributeError: module 'numpy' has no attribute 'frobnicate'")


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_the_demo_prints_one_line_naming_the_fix_and_exits_1(tmp_path, kind):
    completed = run_in(kind, tmp_path, "-m", "mxpatch_bind", "demo", "--epochs", "1")
    assert completed.returncode == 1
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("python -m mxpatch_bind demo: ") and says_the_fix(line, kind)


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_the_benchmarks_print_one_line_naming_the_fix_and_exit_1(tmp_path, kind):
    completed = run_in(kind, tmp_path, "-m", "benchmarks", "lifecycle", "--tiny",
                       "--out", str(tmp_path / "out"))
    assert completed.returncode == 1
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("python -m benchmarks: ") and says_the_fix(line, kind)


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_doctor_fails_the_mxnet_check_with_the_fix_and_exits_1(tmp_path, kind):
    completed = run_in(kind, tmp_path, "-m", "mxpatch_bind", "doctor")
    assert completed.returncode == 1
    assert completed.stderr == ""
    lines = completed.stdout.splitlines()
    [mxnet_line] = [line for line in lines if line.startswith("FAIL  mxnet: ")]
    assert says_the_fix(mxnet_line, kind)
    assert "FAIL  self-test: not run: MXNet cannot be imported (see above)" in lines
    assert lines[-1] == "2 of 6 checks failed: mxnet, self-test"
    # What does not need MXNet is still checked.
    assert [line.split(":")[0] for line in lines[1:4]] == ["ok    python", "ok    numpy",
                                                           "ok    wrapt"]


def test_a_native_library_that_fails_to_load_is_named_with_the_fix(tmp_path):
    fake = tmp_path / "fake"
    (fake / "mxnet").mkdir(parents=True)
    # What ctypes raises when mxnet-cu112's libmxnet.so cannot find CUDA 11.2's runtime.
    (fake / "mxnet" / "__init__.py").write_text(
        "raise OSError('libcudart.so.11.0: cannot open shared object file: "
        "No such file or directory')\n")
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        from mxpatch_bind import _mxnet_env
        try:
            _mxnet_env.import_mxnet()
        except _mxnet_env.MXNetLibraryError as error:
            print(error)
    """)], env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), REPO])),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        "MXNet's native library failed to load (libcudart.so.11.0: cannot open shared object "
        "file: No such file or directory); fix: install the MXNet build that matches this "
        "machine: the CPU wheel mxnet==1.9.1, or the mxnet-cuXXX wheel whose CUDA version is "
        "installed (mxnet-cu112 needs CUDA 11.2's libraries)\n")
