"""The oracle's own harness (tests/py2_oracle.py): which interpreter counts as Python 2, that
a missing one skips saying why and fails in CI, and that a difference is caught and shown."""

import os
import stat
import sys

import py2_oracle
import pytest
from py2_oracle import Outputs, Run


def fake_interpreter(folder, name, body):
    """An executable shell script ``folder/name`` running ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def environment(tmp_path, **more):
    """A PATH and HOME of the test's own, holding nothing but what the test puts there."""
    return {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path / "home"), **more}


def test_a_shim_on_path_that_does_not_run_is_passed_over_and_named(tmp_path):
    fake_interpreter(tmp_path / "bin", "python2.7",
                     "echo 'pyenv: python2.7: command not found' >&2; exit 127")
    found = py2_oracle.find_python2(environment(tmp_path))
    assert found.executable is None
    assert "python2.7 does not run (exit 127: pyenv: python2.7: command not found)" \
        in found.why_not
    assert "no python2 on PATH" in found.why_not and py2_oracle.PYTHON2 in found.why_not


def test_a_python_3_called_python2_is_not_taken_for_python_2(tmp_path):
    fake_interpreter(tmp_path / "bin", "python2", f'exec "{sys.executable}" "$@"')
    found = py2_oracle.find_python2(environment(tmp_path))
    assert found.executable is None
    assert f"python2 is Python {sys.version_info[0]}.{sys.version_info[1]}, not 2.7" \
        in found.why_not


def test_an_explicit_interpreter_is_the_only_one_tried_and_its_fault_is_named(tmp_path):
    fake_interpreter(tmp_path / "bin", "python2.7", "printf 2.7")  # would pass: never asked
    env = environment(tmp_path, MXPATCH_PYTHON2=sys.executable)
    found = py2_oracle.find_python2(env)
    assert found.executable is None
    assert found.why_not.startswith(f"MXPATCH_PYTHON2: {sys.executable} is Python 3.")


def test_pyenv_versions_are_tried_newest_first_after_path(tmp_path):
    home = tmp_path / "home"
    for version in ("2.7.9", "2.7.18"):
        fake_interpreter(home / ".pyenv/versions" / version / "bin", "python2.7",
                         f"printf 2.7; echo {version} >> '{tmp_path}/asked'")
    found = py2_oracle.find_python2(environment(tmp_path))
    assert found == (str(home / ".pyenv/versions/2.7.18/bin/python2.7"), "")
    assert (tmp_path / "asked").read_text() == "2.7.18\n"


def test_nothing_found_says_every_place_looked(tmp_path):
    found = py2_oracle.find_python2(environment(tmp_path))
    assert found.executable is None
    assert "no python2.7 on PATH" in found.why_not and "no python2 on PATH" in found.why_not
    assert ".pyenv/versions/2.7*/bin/python2.7" in found.why_not


def test_without_python_2_an_oracle_test_skips_saying_why():
    with pytest.raises(pytest.skip.Exception, match="no Python 2.7 here"):
        py2_oracle.unavailable("no Python 2.7 here", environ={})


def test_in_ci_a_missing_python_2_fails_the_test_instead_of_skipping():
    with pytest.raises(pytest.fail.Exception, match="MXPATCH_REQUIRE_PYTHON2=1 and no numpy"):
        py2_oracle.unavailable("no numpy", environ={py2_oracle.REQUIRE: "1"})


def test_python_2_gets_its_own_path_and_none_of_this_pythons_variables(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/python3/site")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    env = py2_oracle.python2_environment({py2_oracle.PYTHON2_PATH: "/py2lib"})
    assert env["PYTHONPATH"] == "/py2lib" and "PYTHONWARNINGS" not in env
    assert env["PYTHONHASHSEED"] == "0" and os.environ["PYTHONPATH"] == "/python3/site"


def outputs(python2, python3):
    return Outputs(Run(*python2), Run(*python3), {"main.py": "print 1 / 2\n"},
                   {"main.py": "from mxpatch_bind.py2 import old_div\nprint(old_div(1, 2))\n"},
                   [])


def test_the_same_output_and_exit_status_is_no_mismatch():
    assert py2_oracle.mismatch(outputs((0, "0\n", ""), (0, "0\n", "warning\n"))) == ""


def test_a_mismatch_shows_both_outputs_the_error_and_what_migrate_changed():
    message = py2_oracle.mismatch(outputs((0, "0\n", ""), (1, "", "Traceback\nNameError: x\n")))
    assert "--- Python 2 (exit 0):\n0\n--- the port under Python 3 (exit 1):\n" in message
    assert "NameError: x" in message
    assert "-print 1 / 2\n+from mxpatch_bind.py2 import old_div\n+print(old_div(1, 2))" \
        in message


def test_a_different_exit_status_alone_is_a_mismatch():
    assert py2_oracle.mismatch(outputs((0, "0\n", ""), (1, "0\n", "boom"))) != ""
