"""The launcher's arguments are checked before any process starts, in the API and the CLI."""

import io
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mxpatch_bind.launch import launch, main
from paths import REPO, TESTS

REPO = REPO
WORKER = TESTS / "dist_scripts" / "launch_worker.py"
WAIT_S = 90
COMMAND = [sys.executable, str(WORKER), "show"]


@pytest.fixture
def nothing_may_start(monkeypatch):
    """Make starting a process fail the test: a refusal must come before any."""

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started: {!r}".format(args))

    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_numpy_integers_and_floats_are_accepted():
    out, err = io.StringIO(), io.StringIO()

    code = launch(COMMAND, np.int64(1), num_servers=np.int32(1), timeout=np.float64(WAIT_S),
                  grace=np.float32(0.5), stdout=out, stderr=err)

    assert code == 0, err.getvalue()
    assert "[worker 0] DMLC_NUM_WORKER=1" in out.getvalue().splitlines()
    assert "[worker 0] DMLC_NUM_SERVER=1" in out.getvalue().splitlines()


@pytest.mark.parametrize("arguments, error, message", [
    ({"num_workers": 0}, ValueError, "num_workers must be an integer >= 1, got 0"),
    ({"num_workers": np.int64(-1)}, ValueError, "num_workers must be an integer >= 1, got -1"),
    ({"num_workers": True}, TypeError,
     "num_workers must be an integer >= 1, got True of type bool"),
    ({"num_workers": 1.5}, TypeError,
     "num_workers must be an integer >= 1, got 1.5 of type float"),
    ({"num_workers": "2"}, TypeError,
     "num_workers must be an integer >= 1, got '2' of type str"),
    ({"num_servers": 0}, ValueError, "num_servers must be an integer >= 1, got 0"),
    ({"timeout": math.nan}, ValueError,
     "timeout must be a finite number of seconds > 0, or None for no limit, got nan"),
    ({"timeout": math.inf}, ValueError, "got inf"),
    ({"timeout": 0}, ValueError, "got 0"),
    ({"timeout": -1.0}, ValueError, "got -1.0"),
    ({"timeout": "30"}, TypeError, "got '30' of type str"),
    ({"timeout": False}, TypeError, "got False of type bool"),
    ({"grace": math.nan}, ValueError, "grace must be a finite number of seconds >= 0, got nan"),
    ({"grace": -0.5}, ValueError, "grace must be a finite number of seconds >= 0, got -0.5"),
    ({"grace": math.inf}, ValueError, "got inf"),
    ({"grace": None}, TypeError, "got None of type NoneType"),
    ({"command": "python train.py"}, TypeError, "got 'python train.py'"),
    ({"command": []}, ValueError, "command must be a non-empty list of str"),
    ({"command": iter(["python"])}, TypeError, "command must be a non-empty list of str"),
    ({"command": ["python", 3]}, TypeError, "command[1] must be a str, got 3 of type int"),
    ({"command": ["python", b"x"]}, TypeError, "command[1] must be a str, got b'x'"),
    ({"command": ["python", Path("x")]}, TypeError, "command[1] must be a str"),
    ({"command": ["python", "a\0b"]}, ValueError, "command[1] must not contain a NUL"),
    ({"env": {"A": 1}}, TypeError, "env must map str to str, got 'A': 1"),
    ({"env": {1: "a"}}, TypeError, "env must map str to str, got 1: 'a'"),
    ({"env": ["A"]}, TypeError, "env must be a dict of str to str or None, got ['A']"),
    ({"env": {"A=B": "x"}}, ValueError, "got 'A=B': 'x'"),
    ({"env": {"": "x"}}, ValueError, "got '': 'x'"),
    ({"env": {"DMLC_INTERFACE": "lo"}}, ValueError,
     "env must not set 'DMLC_INTERFACE': the launcher owns every DMLC_* variable except "
     "DMLC_LOG_STACK_TRACE_DEPTH and DMLC_PS_WATER_MARK, and MXPATCH_LAUNCH_WORKER_INDEX and "
     "PORT"),
    ({"env": {"PORT": "8080"}}, ValueError, "env must not set 'PORT'"),
    ({"env": {"DMLC_PS_ROOT_URI": "127.0.0.1"}}, ValueError, "must not set 'DMLC_PS_ROOT_URI'"),
], ids=lambda value: re.sub(r" at 0x[0-9a-f]+", "", repr(value)))  # ids the same every run
def test_a_bad_argument_is_refused_by_type_and_value_before_anything_starts(
        arguments, error, message, nothing_may_start):
    call = dict({"command": COMMAND, "num_workers": 1}, **arguments)

    with pytest.raises(error, match=re.escape(message)):
        launch(**call)


def test_an_env_with_only_variables_the_launcher_does_not_own_is_accepted(nothing_may_start):
    # Gets as far as starting the scheduler, which the fixture refuses.
    with pytest.raises(AssertionError, match="a process was started"):
        launch(COMMAND, 1, env={"DMLC_PS_WATER_MARK": "10", "PS_VERBOSE": "1", "A": ""},
               stderr=io.StringIO())


@pytest.mark.parametrize("argv, complaint", [
    (["-n", "0", "--", "python"], "argument -n/--num-workers: must be an integer >= 1, got '0'"),
    (["-n", "1.5", "--", "python"],
     "argument -n/--num-workers: must be an integer >= 1, got '1.5'"),
    (["-n", "2", "-s", "0", "--", "python"],
     "argument -s/--num-servers: must be an integer >= 1, got '0'"),
    (["-n", "2", "--"], "a worker command is required"),
    (["-n", "2", "--timeout", "nan", "--", "python"],
     "argument --timeout: must be a finite number of seconds >= 0 (0: no limit), got 'nan'"),
    (["-n", "2", "--timeout", "inf", "--", "python"], "argument --timeout: "),
    (["-n", "2", "--timeout", "-1", "--", "python"], "argument --timeout: "),
    (["-n", "2", "--grace", "nan", "--", "python"],
     "argument --grace: must be a finite number of seconds >= 0, got 'nan'"),
    (["-n", "2", "--grace", "-0.1", "--", "python"], "argument --grace: "),
    (["--", "python"], "the following arguments are required: -n/--num-workers"),
], ids=repr)
def test_the_cli_refuses_a_bad_flag_with_one_line_and_status_2(
        argv, complaint, capsys, nothing_may_start):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)

    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and complaint in err
    assert err.startswith("python -m mxpatch_bind.launch: error: ")


def test_the_cli_refuses_a_nan_timeout_without_a_traceback():
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "mxpatch_bind.launch", "-n", "2", "--timeout", "nan", "--",
         "python"], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=WAIT_S)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "python -m mxpatch_bind.launch: error: argument --timeout: must be a finite number of "
        "seconds >= 0 (0: no limit), got 'nan' (see python -m mxpatch_bind.launch --help)"]
