"""``python -m mxpatch_bind doctor``: one line per check, exit status 0 only when all pass."""

import os
import subprocess
import sys

import mxnet as mx
import wrapt

import mxpatch_bind
from mxpatch_bind import doctor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKS = ("mxnet", "supported", "wrapt", "foreign patches", "self-test", "restored")


def run_doctor(**env):
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])), **env)
    return subprocess.run([sys.executable, "-m", "mxpatch_bind", "doctor"], env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)


def lines_of(output):
    return {line.split(":")[0].split(None, 1)[1]: line for line in output.splitlines()
            if line.startswith(("ok ", "FAIL "))}


def test_doctor_passes_every_check_on_this_machine():
    result = run_doctor()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = lines_of(result.stdout)
    assert list(lines) == list(CHECKS)
    assert all(line.startswith("ok ") for line in lines.values())
    assert "ok    mxnet: %s at " % mx.__version__ in result.stdout
    assert "features: " in result.stdout
    assert "all 6 checks passed" in result.stdout


def test_doctor_reports_pure_python_wrapt_when_its_extension_is_disabled():
    result = run_doctor(WRAPT_DISABLE_EXTENSIONS="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pure Python (WRAPT_DISABLE_EXTENSIONS is set)" in lines_of(result.stdout)["wrapt"]


def test_doctor_fails_on_an_unsupported_mxnet_version_and_skips_the_self_test(monkeypatch,
                                                                               capsys):
    monkeypatch.setattr(mx, "__version__", "2.0.0")
    assert doctor.main([]) == 1
    lines = lines_of(capsys.readouterr().out)
    assert lines["supported"].startswith("FAIL ") and "'2.0.0'" in lines["supported"]
    assert lines["self-test"].startswith("FAIL ") and "not run" in lines["self-test"]
    assert not mxpatch_bind.is_installed()


def test_doctor_fails_when_another_wrapper_sits_on_module_bind(capsys):
    def passthrough(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    original = vars(mx.mod.Module)["bind"]
    foreign = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", passthrough)
    try:
        status = doctor.main([])
    finally:
        wrapt.unwrap_object(mx.mod.Module, "bind", foreign)
    assert vars(mx.mod.Module)["bind"] is original
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL  foreign patches: something else patched MXNet" in out
    assert "mxnet.module.module.Module.bind: <" in out
    assert lines_of(out)["self-test"].startswith("ok ")


def test_doctor_does_not_count_an_installed_mxpatch_bind_as_foreign(capsys):
    with mxpatch_bind.patched():
        assert doctor.main([]) == 0
        assert mxpatch_bind.is_installed()
    assert lines_of(capsys.readouterr().out)["foreign patches"].startswith("ok ")
