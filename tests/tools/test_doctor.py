"""``python -m mxpatch_bind doctor``: one line per check, exit status 0 unless one fails."""

import os
import subprocess
import sys
import types
from importlib import metadata

import mxnet as mx
import numpy as np
import pytest
import wrapt

import mxpatch_bind
from mxpatch_bind import doctor
from paths import REPO

REPO = str(REPO)
CHECKS = ("python", "numpy", "wrapt", "mxnet", "distribution", "supported", "features", "gpus",
          "foreign patches", "settings", "self-test", "restored")


def run_doctor(**env):
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])), **env)
    return subprocess.run([sys.executable, "-m", "mxpatch_bind", "doctor"], env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)


def lines_of(output):
    return {line.split(":")[0].split(None, 1)[1]: line for line in output.splitlines()
            if line.startswith(("ok ", "warn ", "FAIL "))}


@pytest.mark.slow  # the doctor runs as a child Python that imports MXNet
def test_doctor_passes_every_check_on_this_machine():
    result = run_doctor()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = lines_of(result.stdout)
    assert list(lines) == list(CHECKS)
    assert all(line.startswith("ok ") for line in lines.values())
    assert "ok    mxnet: %s at " % mx.__version__ in result.stdout
    assert "ok    numpy: %s (< 1.24" % np.__version__ in result.stdout
    assert "ok    python: %d.%d.%d" % sys.version_info[:3] in result.stdout
    assert "all 12 checks passed\n" in result.stdout
    assert "ok    settings: exec_cache_size=8, reshape_threads=" in result.stdout


@pytest.mark.slow  # the doctor runs as a child Python that imports MXNet
def test_doctor_fails_on_a_bad_settings_variable_naming_it():
    result = run_doctor(MXPATCH_BIND_EXEC_CACHE_SIZE="lots")
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("FAIL  settings: the environment variable MXPATCH_BIND_EXEC_CACHE_SIZE='lots' sets "
            "exec_cache_size; expected an integer >= 0; install() would refuse it"
            in result.stdout), result.stdout


@pytest.mark.slow  # the doctor runs as a child Python that imports MXNet
def test_doctor_says_which_settings_variables_it_read():
    result = run_doctor(MXPATCH_BIND_RESHAPE_THREADS="3")
    assert "ok    settings: exec_cache_size=8, reshape_threads=3 (from " \
        "MXPATCH_BIND_RESHAPE_THREADS)" in result.stdout, result.stdout


@pytest.mark.slow  # the doctor runs as a child Python that imports MXNet
def test_doctor_keeps_mxnets_subgraph_log_out_of_its_output():
    result = run_doctor()
    assert "Subgraph backend" not in result.stdout + result.stderr


def test_doctor_lists_the_build_features_as_mxnet_reports_them():
    features = mx.runtime.Features()
    expected = ", ".join("%s %s" % (name, "on" if features.is_enabled(name) else "off")
                         for name in ("CUDA", "CUDNN", "MKLDNN", "DIST_KVSTORE"))
    check = doctor.check_features(mx)
    assert check.level == "ok" and check.text == expected
    assert check.details == ["enabled: " + ", ".join(
        name for name, feature in sorted(features.items()) if feature.enabled)]


@pytest.mark.slow  # the doctor runs as a child Python that imports MXNet
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


@pytest.mark.parametrize("num_gpus, expected", [
    (0, [("cpu", 0), ("cpu", 1)]),
    (1, [("gpu", 0), ("cpu", 0)]),
    (2, [("gpu", 0), ("gpu", 1)]),
    (8, [("gpu", 0), ("gpu", 1)]),
])
def test_the_self_test_runs_on_two_gpus_one_gpu_and_the_cpu_or_two_cpus(num_gpus, expected):
    assert doctor.self_test_contexts(num_gpus) == expected


def test_the_self_test_on_two_cpu_contexts_matches_stock_exactly():
    check = doctor.check_self_test(mx, doctor.self_test_contexts(0))
    assert check.level == "ok", check.details
    assert "exactly (cpu(0), cpu(1);" in check.text


@pytest.mark.parametrize("version, level, words", [
    ((3, 11, 4), "ok", "the version the test suite runs on"),
    ((3, 9, 18), "ok", "allowed (3.9-3.11), though the test suite runs on 3.11"),
    ((3, 10, 0), "ok", "allowed (3.9-3.11)"),
    ((3, 8, 10), "warn", "outside 3.9-3.11"),
    ((3, 12, 1), "warn", "outside 3.9-3.11"),
])
def test_the_python_verdict(version, level, words):
    check = doctor.check_python(version)
    assert check.level == level and words in check.text


def test_numpy_1_24_or_later_fails_naming_the_fix(monkeypatch):
    monkeypatch.setattr(np, "__version__", "1.24.0")
    check = doctor.check_numpy()
    assert check.level == "FAIL"
    assert check.text == ('1.24.0: MXNet 1.x cannot be imported with numpy >= 1.24; '
                          'fix: pip install "numpy<1.24"')


@pytest.mark.parametrize("version, level", [("1.24.0rc1", "FAIL"), ("1.23.5", "ok"),
                                            ("1.23.5.post1", "ok"), ("2.0.0.dev0+git1", "FAIL")])
def test_numpy_versions_are_read_as_pep_440_says_a_pre_release_as_its_release(
        monkeypatch, version, level):
    monkeypatch.setattr(np, "__version__", version)
    assert doctor.check_numpy().level == level


def test_wrapt_older_than_2_4_fails_naming_the_fix(monkeypatch):
    monkeypatch.setattr(wrapt, "__version__", "2.3.9")
    check = doctor.check_wrapt()
    assert check.level == "FAIL" and 'fix: pip install "wrapt>=2.4"' in check.text


def test_the_distribution_check_names_the_cpu_build_that_cpu_extra_installs():
    check = doctor.check_distribution([("mxnet", "1.9.1")])
    assert check.level == "ok"
    assert check.text == 'mxnet 1.9.1, the CPU build that pip install ".[cpu]" installs'


def test_a_gpu_build_gets_a_warning_that_the_cpu_extra_would_replace_it():
    check = doctor.check_distribution([("mxnet-cu112", "1.9.1")])
    assert check.level == "warn"
    assert check.text.startswith('mxnet-cu112 1.9.1: pip install ".[cpu]" would replace this '
                                 'build with the CPU one')


def test_two_distributions_of_the_mxnet_package_get_a_warning():
    check = doctor.check_distribution([("mxnet", "1.9.1"), ("mxnet-cu117", "1.9.1")])
    assert check.level == "warn" and "mxnet 1.9.1, mxnet-cu117 1.9.1 all install" in check.text


def test_the_installed_distribution_of_mxnet_is_found_from_its_metadata():
    assert doctor._mxnet_distributions() == [("mxnet", metadata.version("mxnet"))]


def _fake_mxnet(num_gpus, cuda):
    features = {"CUDA": cuda}
    return types.SimpleNamespace(
        context=types.SimpleNamespace(num_gpus=lambda: num_gpus),
        runtime=types.SimpleNamespace(Features=lambda: types.SimpleNamespace(
            is_enabled=lambda name: features.get(name, False))))


def test_the_gpus_mxnet_sees_are_counted_and_named():
    count, check = doctor.check_gpus(_fake_mxnet(2, cuda=True))
    assert count == 2 and check.level == "ok" and check.text == "2: gpu(0), gpu(1)"


def test_a_cuda_build_that_sees_no_gpu_gets_a_warning():
    count, check = doctor.check_gpus(_fake_mxnet(0, cuda=True))
    assert count == 0 and check.level == "warn"
    assert check.text.startswith("none visible to this CUDA build of MXNet")


def test_this_cpu_build_reports_no_gpu():
    count, check = doctor.check_gpus(mx)
    assert (count, check.level) == (mx.context.num_gpus(), "ok")
