"""The pytest plugin, each case in its own pytest subprocess: the patch is process-global."""

import configparser
import os
import textwrap
from importlib import metadata

import broken_env
import pytest

# Each test runs a pytest session in a subprocess: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def test_the_option_installs_the_patch_for_the_session_and_removes_it_at_the_end(pytester,
                                                                                  run):
    pytester.makeconftest(RESTORE_CHECK)
    pytester.makepyfile(PER_DEVICE_BIND + textwrap.dedent("""
        import mxpatch_bind

        def test_patched():
            assert mxpatch_bind.is_installed()

        def test_module_bind_takes_per_device_shapes():
            assert bind_per_device() == [(2, 2, 6, 8), (1, 2, 4, 4)]
    """))
    result = run("--mxpatch-bind")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["AT EXIT: installed=False original=True"])


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


def test_the_header_names_the_mxnet_version_when_the_patch_is_active(pytester, run):
    pytester.makepyfile("def test_nothing(): pass")
    import mxnet
    result = run("--mxpatch-bind")
    result.stdout.fnmatch_lines(["mxpatch_bind: active (MXNet %s, *--mxpatch-bind)"
                                 % mxnet.__version__])


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


def test_the_mxpatch_fixture_patches_one_test_and_yields_the_status(pytester, run):
    pytester.makepyfile(PER_DEVICE_BIND + textwrap.dedent("""
        import mxpatch_bind

        def test_inside(mxpatch):
            assert mxpatch.installed and mxpatch.refcount == 1
            assert mxpatch.mxnet_version == mx.__version__
            assert bind_per_device() == [(2, 2, 6, 8), (1, 2, 4, 4)]

        def test_after():
            assert not mxpatch_bind.is_installed()
    """))
    run().assert_outcomes(passed=2)


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


def test_the_marker_patches_a_marked_test_and_its_fixtures_only(pytester, run):
    pytester.makepyfile(PER_DEVICE_BIND + textwrap.dedent("""
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
    """))
    run("--strict-markers").assert_outcomes(passed=2)


def test_the_marker_on_a_class_patches_each_of_its_tests(pytester, run):
    pytester.makepyfile("""
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
    """)
    run("--strict-markers").assert_outcomes(passed=3)


def test_the_marker_accepts_force_true(pytester, run):
    pytester.makepyfile("""
        import pytest
        import mxpatch_bind

        @pytest.mark.mxpatch_bind(force=True)
        def test_forced():
            assert mxpatch_bind.status().refcount == 1
    """)
    run("--strict-markers").assert_outcomes(passed=1)


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
                                 "*--mxpatch-bind*", "*--mxpatch-force*"])


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
