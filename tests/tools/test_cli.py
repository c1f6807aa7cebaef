"""``python -m mxpatch_bind``: subcommands, --help and --version, and typed options.

Parsing runs in-process (it imports nothing heavy and patches nothing); what the process
prints and exits with is checked in subprocesses.
"""

import argparse
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import benchmarks.__main__ as bench
import mxpatch_bind
from mxpatch_bind import __main__ as cli
from mxpatch_bind import _cli_types, demo
from paths import REPO

REPO = str(REPO)


def run_python(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout,
                          check=False)


def test_help_goes_to_stdout_lists_every_command_and_exits_0():
    completed = run_python("-m", "mxpatch_bind", "--help")
    assert completed.returncode == 0
    assert completed.stderr == ""
    assert completed.stdout.startswith("usage: python -m mxpatch_bind ")
    for name in ("demo", "doctor", "migrate", "launch"):
        assert "\n    %s " % name in completed.stdout


def test_version_prints_the_package_version():
    completed = run_python("-m", "mxpatch_bind", "--version")
    assert completed.returncode == 0
    assert completed.stdout == "mxpatch_bind %s\n" % mxpatch_bind.__version__


def test_help_imports_neither_mxnet_nor_wrapt():
    completed = run_python("-c", textwrap.dedent("""
        import sys
        from mxpatch_bind.__main__ import main
        try:
            main(["--help"])
        except SystemExit as exit:
            assert exit.code == 0
        print(sorted(name for name in ("mxnet", "wrapt", "numpy", "mxpatch_bind.patching")
                     if name in sys.modules))
    """))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv, expected", [
    ([], "a command is required: one of demo, doctor, migrate, launch"),
    (["frobnicate"], "invalid command 'frobnicate' (choose from demo, doctor, migrate, launch)"),
    (["--epochs", "demo"], "unrecognized arguments: --epochs"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_a_missing_or_unknown_command_is_a_one_line_usage_error(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and expected in captured.err
    assert captured.err.startswith("python -m mxpatch_bind: error: ")


def test_the_arguments_after_the_command_go_to_its_own_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--epochs", "0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("python -m mxpatch_bind demo: error: "
                                              "argument --epochs: ")


def test_a_command_help_is_its_own(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m mxpatch_bind demo ") and "--epochs" in out


def test_an_option_the_command_does_not_know_is_named_by_the_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["doctor", "--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "python -m mxpatch_bind doctor: error: unrecognized arguments: --bogus "
        "(see python -m mxpatch_bind doctor --help)\n")


def test_a_command_whose_module_is_not_installed_fails_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "migrate",
                        cli.Command("mxpatch_bind._no_such_module", "absent"))
    assert cli.main(["migrate", "--help"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("python -m mxpatch_bind: error: not available: this installation "
                            "of mxpatch_bind %s has no mxpatch_bind._no_such_module module\n"
                            % mxpatch_bind.__version__)


def test_the_demo_keeps_its_options():
    args = demo.parse_args(["--epochs", "2", "--devices", "3", "--min-accuracy", "0.5"])
    assert (args.epochs, args.devices, args.min_accuracy) == (2, 3, 0.5)


@pytest.mark.parametrize("argv, expected", [
    (["--devices", "0"], "argument --devices: expected an integer >= 1, got '0'"),
    (["--epochs", "0"], "argument --epochs: expected an integer >= 1, got '0'"),
    (["--epochs", "-2"], "argument --epochs: expected an integer >= 1, got '-2'"),
    (["--epochs", "1.5"], "argument --epochs: expected an integer >= 1, got '1.5'"),
    (["--per-device", "nan"], "argument --per-device: expected an integer >= 1, got 'nan'"),
    (["--samples", "0"], "argument --samples: expected an integer >= 1, got '0'"),
    (["--group-window", "0"], "argument --group-window: expected an integer >= 1, got '0'"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (["--min-accuracy", "nan"], "argument --min-accuracy: expected a finite number, got 'nan'"),
    (["--min-accuracy", "1.5"],
     "argument --min-accuracy: expected a fraction from 0 to 1, got '1.5'"),
    (["--sizes", "4,8"], "argument --sizes: expected 8 <= MIN <= MAX; got '4,8'"),
    (["--samples", "7", "--devices", "2", "--per-device", "4"],
     "--samples 7 is less than one batch of 8 images (--devices 2 x --per-device 4)"),
])
def test_a_bad_demo_option_is_a_one_line_usage_error(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        demo.parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == ("python -m mxpatch_bind demo: error: %s "
                   "(see python -m mxpatch_bind demo --help)\n" % expected)


def test_a_bad_demo_option_exits_2_without_a_traceback():
    completed = run_python("-m", "mxpatch_bind", "demo", "--devices", "0")
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and "--devices" in completed.stderr


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf", "2.5"])
def test_a_bad_benchmark_rounds_value_is_a_one_line_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--rounds", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "argument --rounds: expected an integer >= 1, got %r" % value in err


@pytest.mark.parametrize("helper, text, value", [
    (_cli_types.positive_int, "1", 1), (_cli_types.nonneg_int, "0", 0),
    (_cli_types.positive_float, "1e-3", 1e-3), (_cli_types.nonneg_float, "0", 0.0),
    (_cli_types.fraction, "1", 1.0), (_cli_types.fraction, "0", 0.0),
])
def test_the_type_helpers_accept_values_in_range(helper, text, value):
    assert helper(text) == value


@pytest.mark.parametrize("helper, text", [
    (_cli_types.positive_int, "0"), (_cli_types.positive_int, "x"),
    (_cli_types.nonneg_int, "-1"), (_cli_types.nonneg_int, "1e3"),
    (_cli_types.positive_float, "0"), (_cli_types.positive_float, "inf"),
    (_cli_types.nonneg_float, "-0.1"), (_cli_types.nonneg_float, "nan"),
    (_cli_types.fraction, "-0.01"), (_cli_types.fraction, "1.01"), (_cli_types.fraction, "nan"),
])
def test_the_type_helpers_reject_values_out_of_range_naming_them(helper, text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace(".", r"\.")):
        helper(text)


# --------------------------------------------------------------------------- as a user runs it
SCRIPT = shutil.which("mxpatch-bind", path=os.path.dirname(sys.executable))
needs_script = pytest.mark.skipif(SCRIPT is None, reason="the mxpatch-bind console script is "
                                  "not installed beside this Python")


def run_script(*args, timeout=120):
    return subprocess.run([SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, check=False)


@needs_script
@pytest.mark.parametrize("command", ["demo", "doctor", "migrate", "launch"])
def test_the_console_script_names_itself_and_each_help_is_plain_text(command):
    completed = run_script(command, "--help")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: mxpatch-bind %s " % command)
    for markup in ("``", ":func:", ":class:", ":mod:", ":meth:", "::\n"):
        assert markup not in completed.stdout, markup


@needs_script
def test_the_console_script_reports_an_unknown_option_as_one(tmp_path):
    completed = run_script("--bogus")
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr == ("mxpatch-bind: error: unrecognized arguments: --bogus "
                                "(see mxpatch-bind --help)\n")


@needs_script
def test_launch_is_a_subcommand_with_the_launchers_options():
    completed = run_script("launch", "-n", "0", "--", "python")
    assert completed.returncode == 2
    assert completed.stderr == (
        "mxpatch-bind launch: error: argument -n/--num-workers: must be an integer >= 1, got "
        "'0' (see mxpatch-bind launch --help)\n")


@pytest.mark.parametrize("prog, args", [
    ("python -m mxpatch_bind demo", ["--epochs", "0"]),
    ("python -m mxpatch_bind doctor", ["extra"]),
    ("python -m mxpatch_bind migrate", []),
    ("python -m mxpatch_bind launch", ["-n", "2"]),
    ("python -m mxpatch_bind.launch", ["-n", "2"]),  # the launcher by its module path
])
def test_every_command_reports_a_usage_error_in_one_form(prog, args):
    completed = run_python(*prog.split()[1:], *args, timeout=120)
    assert completed.returncode == 2, completed.stderr
    [line] = completed.stderr.splitlines()
    assert line.startswith(prog + ": error: ") and line.endswith("(see %s --help)" % prog)


@pytest.mark.slow  # trains the demo in a subprocess, as tests/tools/test_bench.py's demo runs
def test_the_demo_writes_no_bar_control_characters_to_a_file(tmp_path):
    pytest.importorskip("tqdm")
    log = tmp_path / "log.txt"
    with open(str(log), "w") as stream:
        completed = subprocess.run(
            [sys.executable, "-m", "mxpatch_bind", "demo", "--epochs", "1", "--samples", "16",
             "--sizes", "16,24", "--min-accuracy", "0"], stdout=stream, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=REPO), timeout=300, check=False)
    text = log.read_text()
    assert completed.returncode == 0, text
    assert "\r" not in text and "\x1b" not in text
    assert "speed-up of per-device over stock" in text


def test_help_text_shows_a_tilde_reference_by_its_last_name_as_sphinx_does():
    from mxpatch_bind._cli_types import plain
    assert plain("see :func:`~a.b.run` and :mod:`mxpatch_bind.compat`::") == (
        "see run and mxpatch_bind.compat:")
    assert plain(":class:`the error <mxpatch_bind.DataLoadError>`") == "the error"
