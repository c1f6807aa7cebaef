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
from paths import REPO

REPO = str(REPO)


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


# --------------------------------------------------------------------------- under install()
# What ctypes raises when mxnet-cu112's libmxnet.so cannot find CUDA 11.2's runtime.
LIBRARY_ERROR = ("libcudart.so.11.0: cannot open shared object file: No such file or "
                 "directory")


def fake_library_failure(tmp_path):
    fake = tmp_path / "fake"
    (fake / "mxnet").mkdir(parents=True)
    (fake / "mxnet" / "__init__.py").write_text("raise OSError(%r)\n" % LIBRARY_ERROR)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), REPO]))


def run_script(env, code, cwd):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=str(cwd),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, check=False)


INSTALL_THEN_IMPORT = """
    import mxpatch_bind
    mxpatch_bind.install()
    import mxnet
"""


def test_import_mxnet_after_install_with_numpy_too_new_ends_in_the_fix_not_in_wrapt(tmp_path):
    completed = run_script(broken_env.environment("numpy", tmp_path, REPO), INSTALL_THEN_IMPORT,
                           tmp_path)
    assert completed.returncode == 1
    last = completed.stderr.splitlines()[-1]
    assert last.startswith("mxpatch_bind._mxnet_env.NumpyTooNewError: MXNet ")
    assert says_the_fix(last, "numpy")
    # numpy's own error stays in the chain, as its cause; no import machinery frame is left.
    assert "AttributeError: module 'numpy' has no attribute 'bool'" in completed.stderr
    assert "The above exception was the direct cause" in completed.stderr
    assert "wrapt" not in completed.stderr and "importlib" not in completed.stderr


def test_import_mxnet_after_install_with_a_broken_native_library_ends_in_the_fix(tmp_path):
    completed = run_script(fake_library_failure(tmp_path), INSTALL_THEN_IMPORT, tmp_path)
    assert completed.returncode == 1
    assert completed.stderr.splitlines()[-1] == (
        "mxpatch_bind._mxnet_env.MXNetLibraryError: MXNet's native library failed to load "
        "(%s); fix: install the MXNet build that matches this machine: the CPU wheel "
        "mxnet==1.9.1, or the mxnet-cuXXX wheel whose CUDA version is installed (mxnet-cu112 "
        "needs CUDA 11.2's libraries)" % LIBRARY_ERROR)
    assert "wrapt" not in completed.stderr


def test_an_unrecognised_failure_under_install_passes_unchanged(tmp_path):
    fake = tmp_path / "fake"
    (fake / "mxnet").mkdir(parents=True)
    (fake / "mxnet" / "__init__.py").write_text("raise KeyError('something else')\n")
    completed = run_script(dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), REPO])),
                           INSTALL_THEN_IMPORT, tmp_path)
    assert completed.returncode == 1
    assert completed.stderr.splitlines()[-1] == "KeyError: 'something else'"
    assert "direct cause" not in completed.stderr


@pytest.mark.parametrize("statement", [
    "from mxpatch_bind import PerDeviceIter",
    "import mxpatch_bind; mxpatch_bind.bind",
    "from mxpatch_bind.compat import MutableModule",
])
def test_our_own_imports_of_mxnet_name_the_fix(tmp_path, statement):
    completed = run_script(broken_env.environment("numpy", tmp_path, REPO), statement, tmp_path)
    assert completed.returncode == 1
    last = completed.stderr.splitlines()[-1]
    assert last.startswith("mxpatch_bind._mxnet_env.NumpyTooNewError: ")
    assert says_the_fix(last, "numpy")


def test_a_missing_mxnet_is_still_a_module_not_found_error_naming_mxnet(tmp_path):
    completed = run_script(broken_env.environment("missing", tmp_path, REPO), """
        try:
            from mxpatch_bind import PerDeviceIter
        except ModuleNotFoundError as error:
            print(error.name, type(error).__name__)
    """, tmp_path)
    assert completed.stdout == "mxnet MXNetNotInstalledError\n", completed.stderr


def test_on_python_3_12_the_fix_is_python_3_11_not_an_uninstallable_numpy(tmp_path):
    # numpy<1.24 has no wheels for 3.12: its pip install would fail building from source.
    completed = run_script(broken_env.environment("numpy", tmp_path, REPO), """
        import sys
        sys.version_info = (3, 12, 1, "final", 0)
        from mxpatch_bind import _mxnet_env
        try:
            _mxnet_env.import_mxnet()
        except _mxnet_env.NumpyTooNewError as error:
            print(error.fix)
        print(_mxnet_env.MXNetNotInstalledError().fix)
    """, tmp_path)
    expected = ("use Python 3.11 (3.9 to 3.11 work): MXNet 1.x needs numpy<1.24, which has no "
                "wheels for Python 3.12")
    assert completed.stdout.splitlines() == [expected, expected], completed.stderr


def test_install_without_mxnet_prints_its_message_once(tmp_path):
    completed = run_script(broken_env.environment("missing", tmp_path, REPO),
                           "import mxpatch_bind; mxpatch_bind.install()", tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.count("MXNet is not installed") == 1, completed.stderr


@pytest.mark.slow  # a child Python that imports MXNet
def test_after_mxnet_imports_the_guard_is_gone_and_mxnet_names_its_own_loader():
    completed = run_script(dict(os.environ, PYTHONPATH=REPO), """
        import sys
        import mxpatch_bind
        from mxpatch_bind import _import_guard
        mxpatch_bind.install()
        armed = _import_guard._FINDER in sys.meta_path
        import mxnet
        print(armed, _import_guard._FINDER in sys.meta_path, mxpatch_bind.is_installed(),
              type(mxnet.__loader__).__name__, type(mxnet.__spec__.loader).__name__)
    """, REPO)
    assert completed.stdout.split() == ["True", "False", "True", "SourceFileLoader",
                                        "SourceFileLoader"], completed.stderr


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_the_launcher_says_the_fix_in_one_line_and_starts_nothing(tmp_path, kind):
    # The scheduler and servers would each print import mxnet's traceback.
    completed = run_in(kind, tmp_path, "-m", "mxpatch_bind.launch", "-n", "1", "--",
                       sys.executable, "-c", "print('worker ran')")
    assert completed.returncode == 1
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("python -m mxpatch_bind.launch: error: ")
    assert says_the_fix(line, kind)


def test_the_docs_stop_in_one_line_naming_the_install_when_mxnet_is_missing(tmp_path):
    # What sphinx-build does first: run docs/conf.py in docs/. Without MXNet autodoc would
    # drop bind, reshape, PerDeviceIter and compat and still build a page.
    completed = subprocess.run(
        [sys.executable, "-c", "import runpy; runpy.run_path('conf.py')"],
        env=broken_env.environment("missing", tmp_path, REPO), cwd=os.path.join(REPO, "docs"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert line.startswith("docs/conf.py: error: the API reference needs MXNet")
    assert 'pip install -e ".[cpu,docs]"' in line
