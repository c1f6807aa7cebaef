"""The benchmarks and the demo run (at a tiny size): their figures are not checked, their shape is.

``python -m benchmarks --tiny`` (from the checkout) runs every benchmark in a few seconds; the figures
themselves come from full runs and live in docs/performance.md.
"""

import json
import os
import subprocess
import sys

import pytest

import benchmarks.__main__ as bench

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_DEMO = ["--epochs", "1", "--samples", "64", "--sizes", "16,32", "--per-device", "2"]


def run_module(*args, timeout=600, module="mxpatch_bind"):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", module] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory):
    """All benchmarks once, tiny, in a subprocess (they install and uninstall the patch)."""
    out = tmp_path_factory.mktemp("bench")
    completed = run_module("--tiny", "--out", str(out), module="benchmarks")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed, out


@pytest.mark.parametrize("name", list(bench.BENCHMARKS))
def test_each_benchmark_writes_json_with_its_command_rows_and_targets(tiny_bench, name):
    _, out = tiny_bench
    with open(os.path.join(str(out), name + ".json")) as stream:
        result = json.load(stream)
    assert result["benchmark"] == name
    assert result["command"] == "python -m benchmarks %s --tiny" % name
    assert result["rows"] and result["targets"]
    assert all(set(t) == {"target", "value", "limit", "met"} for t in result["targets"])


@pytest.mark.parametrize("name", list(bench.BENCHMARKS))
def test_each_benchmark_prints_a_table(tiny_bench, name):
    assert "== %s: %s" % (name, bench.BENCHMARKS[name]) in tiny_bench[0].stdout


def test_an_unknown_benchmark_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["no-such-benchmark"])
    assert exit_info.value.code == 2
    assert "no-such-benchmark" in capsys.readouterr().err


def test_the_demo_trains_both_ways_and_prints_the_comparison(tmp_path):
    chart = tmp_path / "demo.png"
    plot = ["--plot", str(chart)] if _has("matplotlib") else []
    completed = run_module("demo", *TINY_DEMO, "--min-accuracy", "0", *plot)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "stock, padded" in completed.stdout and "per-device" in completed.stdout
    assert "speed-up of per-device over stock" in completed.stdout
    if plot:
        assert chart.stat().st_size > 0


def test_the_demo_fails_when_a_run_does_not_learn():
    completed = run_module("demo", *TINY_DEMO, "--min-accuracy", "1.01",
                           "--progress", "speedometer")
    assert completed.returncode == 1
    assert "FAILED to learn" in completed.stdout


def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True
