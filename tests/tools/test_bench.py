"""The benchmarks and the demo run (at a tiny size): their figures are not checked, their shape is.

``python -m benchmarks --tiny`` (from the checkout) runs every benchmark in a few seconds; the
figures themselves come from full runs and live in docs/performance.md.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

import benchmarks.__main__ as bench
from paths import REPO

# Each test runs a benchmark in a subprocess: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow


def _has(module):
    return importlib.util.find_spec(module) is not None


REPO = str(REPO)
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


def test_the_balanced_benchmark_reports_its_control_network_beside_the_targets(tiny_bench):
    with open(os.path.join(str(tiny_bench[1]), "balanced.json")) as stream:
        result = json.load(stream)
    assert [row["mode"][:4] for row in result["control_rows"]] == ["(a')", "(d')", "(e')"]
    assert result["params"]["control_network"] == "small_cnn(filters=(64, 128, 128))"
    assert "control_balanced_vs_window" in result
    assert "(e') balanced, window 8" in tiny_bench[0].stdout


def test_an_unknown_benchmark_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["no-such-benchmark"])
    assert exit_info.value.code == 2
    assert "no-such-benchmark" in capsys.readouterr().err


def test_the_demo_trains_both_ways_and_prints_the_comparison(tmp_path):
    chart, record = tmp_path / "demo.png", tmp_path / "demo.json"
    plot = ["--plot", str(chart)] if _has("matplotlib") else []
    completed = run_module("demo", *TINY_DEMO, "--epochs", "3", "--min-accuracy", "0",
                           "--json", str(record), *plot)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "stock, padded" in completed.stdout and "per-device" in completed.stdout
    assert "Subgraph backend" not in completed.stdout + completed.stderr
    if plot:
        assert chart.stat().st_size > 0
    # The JSON holds each run's epochs; the printed figure is the median of their pairs.
    result = json.loads(record.read_text())
    stock, per_device = (run["epoch_samples_per_s"] for run in result["runs"])
    ratios = sorted(fast / slow for fast, slow in zip(per_device, stock))
    assert len(ratios) == 3 and result["median"] == ratios[1]
    assert result["command"] == ("python -m mxpatch_bind demo --per-device 2 --sizes 16,32 "
                                 "--samples 64 --min-accuracy 0.0 " + " ".join(plot) +
                                 (" " if plot else "") + f"--json {record}")
    assert (f"speed-up of per-device over stock: {ratios[1]:.2f}x, the median of 3 pairs "
            f"(range {ratios[0]:.2f}-{ratios[2]:.2f}x)") in completed.stdout


def test_the_demo_fails_when_a_run_does_not_learn():
    # Two steps of training: neither run gets every validation image right.
    completed = run_module("demo", *TINY_DEMO[:2], "--samples", "8", "--sizes", "16,32",
                           "--per-device", "2", "--min-accuracy", "1", "--progress", "none")
    assert completed.returncode == 1
    assert "FAILED to learn (validation accuracy below 100%)" in completed.stdout


def table_rates(stdout):
    """samples/s per run, as the demo's final table prints them."""
    rows = [line for line in stdout.splitlines() if line.startswith(("stock, padded ",
                                                                      "per-device "))]
    return {row[:16].strip(): row[16:].split()[0] for row in rows}


def test_each_runs_last_speedometer_line_gives_the_rate_in_the_table():
    completed = run_module("demo", *TINY_DEMO, "--epochs", "2", "--min-accuracy", "0",
                           "--progress", "speedometer")
    assert completed.returncode == 0, completed.stderr[-3000:]
    last = {}
    for line in completed.stderr.splitlines():
        match = re.match(r"(stock, padded|per-device), epoch \d+: ([\d.]+) samples/s so far$",
                         line)
        if match:
            last[match.group(1)] = match.group(2)
    assert last == table_rates(completed.stdout)


def test_each_runs_progress_bar_ends_at_the_rate_in_the_table():  # needs tqdm (test extra)
    completed = run_module("demo", *TINY_DEMO, "--epochs", "2", "--min-accuracy", "0",
                           "--progress", "tqdm")
    assert completed.returncode == 0, completed.stderr[-3000:]
    last = {}
    for match in re.finditer(r"(stock, padded|per-device) +100%\|[^|]*\| (\d+)/\2 img, "
                             r"([\d.]+) img/s", completed.stderr):
        last[match.group(1)] = match.group(3)
    assert last == table_rates(completed.stdout)
