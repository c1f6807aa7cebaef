"""The demo from a user's first minutes: what it needs is checked first, what it does is
said first, and it ends with what to read or run next (the training itself: test_bench.py)."""

import json
import os
import sys
import time

import pytest

from mxpatch_bind import __main__ as cli
from mxpatch_bind import demo
from mxpatch_bind.demo import training

TINY = ["--epochs", "1", "--samples", "16", "--sizes", "16,24", "--progress", "none",
        "--min-accuracy", "0"]


@pytest.mark.parametrize("options, named, module, extra", [
    (["--plot", "chart.png"], "--plot", "matplotlib", "plot"),
    (["--progress", "tqdm"], "--progress tqdm", "tqdm", "progress"),
])
def test_a_missing_extra_is_a_one_line_usage_error_naming_the_fix_before_any_work(
        monkeypatch, capsys, options, named, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import fails, as when not installed

    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", *TINY, *options])

    out, err = capsys.readouterr()
    assert exited.value.code == 2  # as every other usage error of the command line
    assert out == ""  # nothing trained, nothing announced
    assert err.count("\n") == 1
    assert err.startswith(f"python -m mxpatch_bind demo: error: {named} needs {module} (")
    assert f'pip install ".[{extra}]"' in err


def test_the_demo_says_first_what_it_does_and_ends_with_what_to_read_next(capsys):
    assert cli.main(["demo", *TINY]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Training a small CNN on 16 images of 16-24 px for 1 epoch on "
                               "2 CPU contexts, twice from the same start, epoch by epoch in "
                               "turn: stock")
    figure = next(index for index, line in enumerate(lines) if line.startswith("speed-up"))
    assert "1 epoch," in lines[figure]
    assert lines[figure + 1].startswith("1 pair cannot show the spread of the speed-up")
    assert lines[-1].startswith("Next: docs/quickstart.rst")
    assert "python examples/quickstart.py" in lines[-1]


# --------------------------------------------------------------------------- the figure
def args_of(**options):
    """The demo's settings, as its parser gives them, with ``options`` changed."""
    argv = []
    for name, value in options.items():
        argv += ["--" + name.replace("_", "-"), str(value)]
    return demo.parse_args(argv)


def results_of(stock_rates, per_device_rates, accuracy=1.0):
    """Two runs' results as run_both returns them, with these samples/s per epoch."""
    return [{"run": name, "samples_per_s": sum(rates) / len(rates), "padding": 0.5,
             "accuracy": accuracy, "epoch_samples_per_s": list(rates)}
            for name, rates in (("stock, padded", stock_rates),
                                ("per-device", per_device_rates))]


def speed_up_line(capsys, results, **options):
    demo.report(results, args_of(**options))
    out = capsys.readouterr().out.splitlines()
    index = next(i for i, line in enumerate(out) if line.startswith("speed-up"))
    return out[index], out[index + 1]


def test_the_speed_up_is_the_median_of_the_epoch_pairs_with_their_range(capsys):
    # Pairs 150/100, 150/110, 180/90 = 1.5, 1.36, 2.0: the median is the first pair's.
    line, after = speed_up_line(capsys, results_of([100, 110, 90], [150, 150, 180]))
    assert line == ("speed-up of per-device over stock: 1.50x, the median of 3 pairs (range "
                    "1.36-2.00x)  (2 devices, 4 images each, sizes 32-128 px, 3 epochs, "
                    "grouping window 8)")
    assert after.startswith("both runs learned")  # every pair faster: nothing to add


def test_pairs_on_both_sides_of_one_are_too_noisy_to_conclude_in_a_plain_line(capsys):
    # The figures a loaded machine gave in single runs: 2.08, 3.35, 1.46 and 0.82.
    line, after = speed_up_line(capsys, results_of([100] * 4, [208, 335, 146, 82]), epochs=4)
    assert "1.77x, the median of 4 pairs (range 0.82-3.35x)" in line
    assert after.startswith("too noisy to conclude: some pairs ran faster per device, some "
                            "slower (the range straddles 1.0x)")


def test_pairs_all_slower_conclude_slower(capsys):
    line, after = speed_up_line(capsys, results_of([100] * 3, [90, 95, 80]))
    assert "0.90x, the median of 3 pairs (range 0.80-0.95x)" in line
    assert after.startswith("both runs learned")


@pytest.mark.parametrize("epochs", [1, 2])
def test_fewer_than_three_pairs_say_they_cannot_show_the_spread(capsys, epochs):
    line, after = speed_up_line(capsys, results_of([100] * epochs, [150] * epochs),
                                epochs=epochs)
    assert after == (f"{epochs} pair{'s' * (epochs > 1)} cannot show the spread of the "
                     "speed-up: run with --epochs 3 or more to measure it")


def test_the_figure_title_gives_the_median_its_range_and_the_settings():
    args = demo.parse_args(["--devices", "3", "--per-device", "2", "--sizes", "16,48",
                            "--epochs", "3", "--group-window", "4"])
    assert demo.figure_title(results_of([100, 100, 100], [151, 140, 160]), args) == (
        "per-device shapes: 1.51x the samples/s of stock padding (median of 3 pairs, "
        "1.40-1.60x)\n(3 devices, 2 images each, sizes 16-48 px, 3 epochs, grouping window 4)")
    assert demo.figure_title(results_of([100, 100, 100], [151, 90, 160]), args).startswith(
        "per-device shapes: 1.51x the samples/s of stock padding (median of 3 pairs, "
        "0.90-1.60x; too noisy to conclude)\n")


def test_the_demo_table_right_aligns_each_column_under_its_heading(capsys):
    results = results_of([148.3], [213.25])
    results[1].update(padding=0.219, accuracy=0.875)
    demo.report(results, args_of(min_accuracy=0.5))
    header, stock, per_device = capsys.readouterr().out.splitlines()[1:4]
    assert header.split("  ")[0] == "run" and stock.startswith("stock, padded   ")
    # Every line ends each column at the same place: the heading over its figures.
    for line in (header, stock, per_device):
        assert len(line) == 57 and all(line[end] != " " for end in (26, 41, 56)), line
    assert per_device.split() == ["per-device", "213.2", "21.9%", "87.5%"]
    assert header.split() == ["run", "samples/s", "padded", "pixels", "val", "accuracy"]


def test_the_runs_take_turns_first_so_that_a_drifting_load_meets_both(monkeypatch):
    trained = []
    monkeypatch.setattr(training.Run, "train_epoch",
                        lambda run, epoch: trained.append((epoch, run.name)))
    monkeypatch.setattr(training, "accuracy", lambda *args: 1.0)
    monkeypatch.setattr(training.Run, "samples_per_s", 1.0)
    monkeypatch.setattr(training.PerDeviceBatches, "padding_fraction", lambda self: 0.0)
    monkeypatch.setattr(training.StockBatches, "padding_fraction", lambda self: 0.0)
    training.run_both(args_of(epochs=4, samples=16, sizes="16,24", progress="none"))
    assert trained == [(0, "stock, padded"), (0, "per-device"), (1, "per-device"),
                       (1, "stock, padded"), (2, "stock, padded"), (2, "per-device"),
                       (3, "per-device"), (3, "stock, padded")]


def test_the_json_record_names_the_command_the_day_the_load_and_every_pair(tmp_path):
    args = args_of(seed=2, epochs=3, json=tmp_path / "demo.json")
    demo.figures.write_json(results_of([100, 110, 90], [150, 150, 180]), args,
                            demo.command_line(args), str(tmp_path / "demo.json"))
    record = json.loads((tmp_path / "demo.json").read_text())
    assert record["command"] == f"python -m mxpatch_bind demo --seed 2 --json {tmp_path}/demo.json"
    assert record["date"] == time.strftime("%Y-%m-%d")
    assert record["cpus"] == os.cpu_count() and record["load_average"] >= 0
    assert record["pair_ratios"] == [1.5, 150 / 110, 2.0]
    assert (record["median"], record["low"], record["high"]) == (1.5, 150 / 110, 2.0)
    assert record["conclusive"] is True and record["caveat"] == ""
    assert [run["epoch_samples_per_s"] for run in record["runs"]] == [[100, 110, 90],
                                                                       [150, 150, 180]]


def test_the_command_line_gives_the_options_that_differ_from_the_defaults():
    assert demo.command_line(args_of()) == "python -m mxpatch_bind demo"
    assert demo.command_line(args_of(sizes="16,64", devices=3)) == (
        "python -m mxpatch_bind demo --devices 3 --sizes 16,64")
