"""The pytest plugin, in pytest subprocesses: the patch is process-global.

Scenarios that can share a session do: each is a file of its own in one session, and each
test reads its own file's outcomes (``-v`` lines) from that session's output.
"""

import configparser
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata

import broken_env
import pytest
from paths import REPO

# Pytest sessions in subprocesses: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

REPO = str(REPO)

# Load the plugin by module name whether or not the entry point is installed: blocking the
# entry point's name first avoids registering the same module twice when it is.
PLUGIN_ARGS = ("-p", "no:mxpatch_bind", "-p", "mxpatch_bind.pytest_plugin")

PER_DEVICE_BIND = textwrap.dedent("""
    import mxnet as mx

    def bind_per_device():
        net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3),
                                 name="conv")
        mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[("data", (2, 3, 8, 10))], [("data", (1, 3, 6, 6))]])
        return [shape for (_, shape), in mod.output_shapes]
""")

# Records MXNet's own methods before the plugin's pytest_configure and, at interpreter exit,
# says whether they are back in place by identity.
RESTORE_CHECK = textwrap.dedent("""
    import atexit
    import mxnet as mx
    import mxpatch_bind

    ORIGINAL = vars(mx.mod.Module)["bind"]

    @atexit.register
    def _report():
        print("AT EXIT: installed=%s original=%s" % (
            mxpatch_bind.is_installed(), vars(mx.mod.Module)["bind"] is ORIGINAL))
""")


@pytest.fixture
def run(pytester, monkeypatch):
    """Run pytest in a subprocess with the plugin loaded and this checkout importable."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])))

    def run_pytest(*args, plugin_args=PLUGIN_ARGS, subprocess=True):
        runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest_inprocess
        return runner(*plugin_args, "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
                      *args)
    return run_pytest


def test_without_the_option_nothing_is_installed_and_mxnet_is_not_imported(pytester, run):
    pytester.makepyfile("""
        import sys
        import mxpatch_bind

        def test_untouched():
            assert not mxpatch_bind.is_installed()
            assert mxpatch_bind.status().refcount == 0
            assert "mxnet" not in sys.modules
    """)
    result = run()
    result.assert_outcomes(passed=1)


def test_an_unused_plugin_adds_no_header_line_and_loads_neither_wrapt_nor_the_patch(pytester,
                                                                                     run):
    pytester.makepyfile("""
        import sys

        def test_nothing_loaded():
            loaded = [name for name in ("mxnet", "wrapt", "numpy", "mxpatch_bind.patching",
                                        "mxpatch_bind._mxnet_env") if name in sys.modules]
            assert loaded == []
            assert "mxpatch_bind.pytest_plugin" in sys.modules
    """)
    result = run()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*mxpatch_bind*")


def test_an_unsupported_mxnet_stops_the_run_with_a_usage_error(pytester, run):
    pytester.makeconftest("import mxnet\nmxnet.__version__ = '2.0.0'")
    pytester.makepyfile("def test_nothing(): pass")
    result = run("--mxpatch-bind")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mxpatch-bind:*'2.0.0'*"])


def test_mxpatch_force_patches_an_unsupported_mxnet_anyway(pytester, run):
    pytester.makeconftest("import mxnet\nmxnet.__version__ = '2.0.0'")
    pytester.makepyfile("""
        import mxpatch_bind

        def test_patched():
            assert mxpatch_bind.is_installed()
    """)
    result = run("--mxpatch-bind", "--mxpatch-force")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["mxpatch_bind: active (MXNet 2.0.0, *--mxpatch-force)"])


def test_the_session_fixture_keeps_the_patch_until_the_session_ends(pytester, run):
    pytester.makeconftest(RESTORE_CHECK)
    pytester.makepyfile("""
        import mxpatch_bind

        def test_first(mxpatch_session):
            assert mxpatch_session.installed

        def test_later_without_the_fixture():
            assert mxpatch_bind.is_installed()
    """)
    result = run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["AT EXIT: installed=False original=True"])


@pytest.mark.parametrize("arguments, problem", [
    ("True", "positional argument(s) (True,)"),
    ("froce=True", "unknown keyword(s) 'froce'"),
    ("force='yes'", "force='yes' is not True or False"),
])
def test_a_marker_with_other_arguments_is_a_usage_error_at_collection(pytester, run, arguments,
                                                                      problem):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.mxpatch_bind(%s)
        def test_marked():
            pass
    """ % arguments)
    result = run("--co", subprocess=False)  # the error comes before anything is installed
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error_lines = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert error_lines == [
        "ERROR: @pytest.mark.mxpatch_bind on "
        "test_a_marker_with_other_arguments_is_a_usage_error_at_collection.py::test_marked: "
        "%s; expected @pytest.mark.mxpatch_bind or @pytest.mark.mxpatch_bind(force=True)"
        % problem]


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_a_broken_environment_under_the_option_is_a_usage_error_naming_the_fix(
        pytester, run, monkeypatch, tmp_path_factory, kind):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([
        broken_env.path_for(kind, tmp_path_factory.mktemp(kind)), os.environ["PYTHONPATH"]]))
    pytester.makepyfile("def test_nothing(): pass")
    result = run("--mxpatch-bind")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    error_lines = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(error_lines) == 1 and error_lines[0].startswith("ERROR: --mxpatch-bind: ")
    assert all(words in error_lines[0] for words in broken_env.EXPECTED[kind])


@pytest.mark.parametrize("kind", broken_env.KINDS)
def test_the_fixture_in_a_broken_environment_fails_the_test_with_the_fix(
        pytester, run, monkeypatch, tmp_path_factory, kind):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([
        broken_env.path_for(kind, tmp_path_factory.mktemp(kind)), os.environ["PYTHONPATH"]]))
    pytester.makepyfile("""
        import pytest

        def test_with_fixture(mxpatch):
            pass

        @pytest.mark.mxpatch_bind
        def test_with_marker():
            pass
    """)
    result = run()
    result.assert_outcomes(errors=2)
    output = result.stdout.str()
    assert "Traceback" not in output and "exception" not in output
    messages = [line for line in result.stdout.lines if line.startswith("mxpatch_bind: ")]
    assert len(messages) == 2
    assert all(words in line for words in broken_env.EXPECTED[kind] for line in messages)


def test_the_options_have_their_own_group_and_prefix_in_help(pytester, run):
    result = run("--help", subprocess=False)  # installs nothing, so it may run in-process
    result.stdout.fnmatch_lines(["mxpatch_bind: per-device shapes for MXNet Module.bind:",
                                 "*--mxpatch-bind*", "*--mxpatch-force*",
                                 "*--mxpatch-ignore-mxnet-deprecations*",
                                 "*mxpatch_ignore_mxnet_deprecations (bool)*"])


MXNET_AND_OWN_DEPRECATIONS = textwrap.dedent("""
    import warnings
    import mxnet  # MXNet 1.x raises its own DeprecationWarnings here

    def test_own():
        warnings.warn("the project's own deprecation", DeprecationWarning)
""")


def run_without_warning_filters(pytester, monkeypatch, *args):
    """pytest in a subprocess with the plugin, and none of this suite's warning filters: the
    first import of MXNet happens there, as in a user's project."""
    monkeypatch.setenv("PYTHONPATH", REPO)
    return pytester.runpytest_subprocess(*PLUGIN_ARGS, "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("how", ["option", "ini"])
def test_mxnets_own_deprecation_warnings_can_be_hidden_and_the_projects_still_show(
        pytester, monkeypatch, how):
    pytester.makepyfile(test_user=MXNET_AND_OWN_DEPRECATIONS)
    shown = run_without_warning_filters(pytester, monkeypatch, "-rw")
    if how == "ini":
        pytester.makeini("[pytest]\nmxpatch_ignore_mxnet_deprecations = true\n")
    hidden = run_without_warning_filters(
        pytester, monkeypatch, "-rw", *(["--mxpatch-ignore-mxnet-deprecations"]
                                        if how == "option" else []))

    shown.assert_outcomes(passed=1, warnings=shown.parseoutcomes()["warnings"])
    assert shown.parseoutcomes()["warnings"] > 1  # MXNet's own, then the project's
    assert "site-packages/mxnet/" in shown.stdout.str()
    hidden.assert_outcomes(passed=1, warnings=1)
    hidden.stdout.fnmatch_lines(["*the project's own deprecation*"])
    assert "mxnet/" not in hidden.stdout.str()


def test_the_marker_is_registered(pytester, run):
    result = run("--markers", subprocess=False)
    result.stdout.fnmatch_lines(["@pytest.mark.mxpatch_bind(force=False):*"])


def test_setup_cfg_declares_the_pytest11_entry_point():
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    assert config["options.entry_points"]["pytest11"].split() == [
        "mxpatch_bind", "=", "mxpatch_bind.pytest_plugin"]


def _entry_point_installed():
    return any(ep.value == "mxpatch_bind.pytest_plugin"
               for ep in metadata.entry_points(group="pytest11"))


@pytest.mark.skipif(not _entry_point_installed(), reason="needs pip install -e .")
def test_the_installed_entry_point_loads_the_plugin_and_no_colon_disables_it(pytester, run):
    result = run("--help", plugin_args=(), subprocess=False)
    result.stdout.fnmatch_lines(["*--mxpatch-bind*"])
    result = run("--help", plugin_args=("-p", "no:mxpatch_bind"), subprocess=False)
    result.stdout.no_fnmatch_line("*--mxpatch-bind*")


# --------------------------------------------------------------------------- shared sessions
# Without the option: the fixture and the marker, each in a file of its own.
UNPATCHED_FILES = {
    "test_fixture.py": PER_DEVICE_BIND + """
import mxpatch_bind

def test_inside(mxpatch):
    assert mxpatch.installed and mxpatch.refcount == 1
    assert mxpatch.mxnet_version == mx.__version__
    assert bind_per_device() == [(2, 2, 6, 8), (1, 2, 4, 4)]

def test_after():
    assert not mxpatch_bind.is_installed()
""",
    "test_marker.py": PER_DEVICE_BIND + """
import pytest
import mxpatch_bind

@pytest.fixture
def shapes():
    return bind_per_device()

@pytest.mark.mxpatch_bind
def test_marked(shapes):
    assert mxpatch_bind.is_installed()
    assert shapes == [(2, 2, 6, 8), (1, 2, 4, 4)]

def test_unmarked():
    assert not mxpatch_bind.is_installed()
""",
    "test_marker_class.py": """
import pytest
import mxpatch_bind

@pytest.mark.mxpatch_bind
class TestPatched:
    def test_one(self):
        assert mxpatch_bind.status().refcount == 1

    def test_two(self):
        assert mxpatch_bind.status().refcount == 1

def test_outside():
    assert not mxpatch_bind.is_installed()
""",
    "test_marker_force.py": """
import pytest
import mxpatch_bind

@pytest.mark.mxpatch_bind(force=True)
def test_forced():
    assert mxpatch_bind.status().refcount == 1
""",
}

# With --mxpatch-bind: the whole session patched, MXNet's methods back at exit.
OPTION_FILES = {
    "conftest.py": RESTORE_CHECK,
    "test_option.py": PER_DEVICE_BIND + """
import mxpatch_bind

def test_patched():
    assert mxpatch_bind.is_installed()

def test_module_bind_takes_per_device_shapes():
    assert bind_per_device() == [(2, 2, 6, 8), (1, 2, 4, 4)]
""",
}


def _session(directory, files, *args):
    """Run one pytest session over ``files`` in ``directory``: (its -v outcomes, its output)."""
    for name, text in files.items():
        (directory / name).write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN_ARGS, "-p", "no:cacheprovider", "-W",
         "ignore::DeprecationWarning", "-v", "--strict-markers", *args],
        cwd=directory, env=env, capture_output=True, text=True, timeout=600, check=False)
    outcomes = dict(re.findall(r"^(test_\w+\.py::\S+) (PASSED|FAILED|ERROR|SKIPPED)",
                               result.stdout, re.MULTILINE))
    return outcomes, result.stdout + result.stderr


@pytest.fixture(scope="module")
def unpatched_session(tmp_path_factory):
    return _session(tmp_path_factory.mktemp("unpatched"), UNPATCHED_FILES)


@pytest.fixture(scope="module")
def option_session(tmp_path_factory):
    return _session(tmp_path_factory.mktemp("option"), OPTION_FILES, "--mxpatch-bind")


def _file_outcomes(session, name):
    outcomes, output = session
    mine = {test.split("::", 1)[1]: outcome for test, outcome in outcomes.items()
            if test.startswith(name + "::")}
    return mine, output


def test_the_option_installs_the_patch_for_the_session_and_removes_it_at_the_end(
        option_session):
    outcomes, output = _file_outcomes(option_session, "test_option.py")
    assert outcomes == {"test_patched": "PASSED",
                        "test_module_bind_takes_per_device_shapes": "PASSED"}, output
    assert "AT EXIT: installed=False original=True" in output.splitlines(), output


def test_the_header_names_the_mxnet_version_when_the_patch_is_active(option_session):
    import mxnet
    _, output = option_session
    assert re.search(r"^mxpatch_bind: active \(MXNet %s, .*--mxpatch-bind\)$"
                     % re.escape(mxnet.__version__), output, re.MULTILINE), output


def test_the_mxpatch_fixture_patches_one_test_and_yields_the_status(unpatched_session):
    outcomes, output = _file_outcomes(unpatched_session, "test_fixture.py")
    assert outcomes == {"test_inside": "PASSED", "test_after": "PASSED"}, output


def test_the_marker_patches_a_marked_test_and_its_fixtures_only(unpatched_session):
    outcomes, output = _file_outcomes(unpatched_session, "test_marker.py")
    assert outcomes == {"test_marked": "PASSED", "test_unmarked": "PASSED"}, output


def test_the_marker_on_a_class_patches_each_of_its_tests(unpatched_session):
    outcomes, output = _file_outcomes(unpatched_session, "test_marker_class.py")
    assert outcomes == {"TestPatched::test_one": "PASSED", "TestPatched::test_two": "PASSED",
                        "test_outside": "PASSED"}, output


def test_the_marker_accepts_force_true(unpatched_session):
    outcomes, output = _file_outcomes(unpatched_session, "test_marker_force.py")
    assert outcomes == {"test_forced": "PASSED"}, output


def test_the_shared_sessions_ran_every_scenario_and_nothing_else(unpatched_session,
                                                                  option_session):
    # Every test of every file ran and passed: a file that failed to import would otherwise
    # only be missing from the others' outcomes.
    for session, count in ((unpatched_session, 8), (option_session, 2)):
        outcomes, output = session
        assert list(outcomes.values()) == ["PASSED"] * count, output
