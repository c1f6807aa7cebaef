"""Benchmark: detection-like sizes with and without shape rounding (``pad_to_multiple``).

Images whose short side is 64-128 px and long side up to 1.7 times that, either orientation
(what resizing a detection dataset's short side gives); 2 CPU contexts, 2 images per device,
the variable benchmark's CNN; ``PerDeviceIter`` grouped with ``group_window=8`` and shuffled.
Every round draws new images, as a new epoch of a large dataset would. Rounding every device's
size up to a multiple of 32 pads more but makes shapes recur, so that most steps hit the
executor cache instead of reshaping to a never-seen shape (and on GPUs, cuDNN autotuning runs
once per shape). Reported: distinct per-device shapes per epoch, padding, steps/s.
"""

import random

from . import common, training

NAME = "rounding"
SHORT_SIDE = (64, 128)
MAX_ASPECT = 1.7
MULTIPLE = 32
MODES = ("per-device, exact sizes", "per-device, pad_to_multiple=%d" % MULTIPLE)
MULTIPLES = {MODES[0]: 1, MODES[1]: MULTIPLE}
WINDOW = 8


def detection_size(rng):
    """(height, width): short side in SHORT_SIDE, long side up to MAX_ASPECT times it."""
    short = rng.randint(*SHORT_SIDE)
    long = int(short * rng.uniform(1, MAX_ASPECT))
    return (short, long) if rng.random() < 0.5 else (long, short)


def run(tiny=False, rounds=None):
    """Steps per second with and without rounding, interleaved; shapes and padding per epoch."""
    import mxnet as mx
    import numpy as np

    rounds = rounds or (2 if tiny else 5)
    steps = 3 if tiny else 30
    largest = int(SHORT_SIDE[1] * MAX_ASPECT)
    modules = training.bind_modules(mx, MODES, (largest, largest))
    rng = random.Random(0)
    np_rng = np.random.RandomState(0)
    stats = {mode: [] for mode in MODES}

    def feeds(index):
        return _feeds(rng, np_rng, steps, index, stats if index >= 0 else None)

    common.progress("rounding: %d rounds of %d steps per mode" % (rounds, steps))
    clocks = training.run_rounds(mx, modules, feeds, rounds)
    return _result(clocks, stats, rounds, steps, tiny)


def _feeds(rng, np_rng, steps, index, stats):
    from mxpatch_bind import PerDeviceIter

    count = steps * training.DEVICES * training.PER_DEVICE
    images, labels = training.images(np_rng, rng, count, detection_size)
    feeds = {}
    for mode, multiple in MULTIPLES.items():
        data_iter = PerDeviceIter(images, labels, num_devices=training.DEVICES,
                                  batch_per_device=training.PER_DEVICE, shuffle=True,
                                  seed=max(index, 0), group_window=WINDOW,
                                  pad_to_multiple=multiple)
        feeds[mode] = list(data_iter)
        if stats is not None:
            stats[mode].append(data_iter.padding_stats())
    return feeds


def _result(clocks, stats, rounds, steps, tiny):
    exact = common.walls(clocks[MODES[0]])
    rows = []
    for mode in MODES:
        walls = common.walls(clocks[mode])
        epochs = stats[mode]
        padding = sum(s.padding_pixels for s in epochs) / sum(s.total_pixels for s in epochs)
        rows.append({"mode": mode, "steps_per_s": 1 / common.median(walls),
                     "spread": common.spread(walls),
                     "vs_exact": common.paired_ratio(exact, walls),
                     "distinct_shapes_per_epoch": common.median(
                         [s.distinct_shapes for s in epochs]),
                     "device_batches_per_epoch": steps * training.DEVICES,
                     "padding_fraction": padding,
                     "rounding_pixels_fraction": sum(s.rounding_pixels for s in epochs)
                     / sum(s.total_pixels for s in epochs),
                     "step_pixels": sum(s.step_pixels for s in epochs)})
    fewer = rows[0]["distinct_shapes_per_epoch"] / rows[1]["distinct_shapes_per_epoch"]
    targets = [
        common.target("distinct shapes per epoch, exact over rounded", fewer, "> 1", fewer > 1),
        common.target("rounded steps/s over exact steps/s", rows[1]["vs_exact"],
                      "report (> 1 where reshapes outweigh the added padding)",
                      rows[1]["vs_exact"] > 1)]
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "steps_per_round": steps, "devices": training.DEVICES,
                       "images_per_device": training.PER_DEVICE, "short_side": SHORT_SIDE,
                       "max_aspect": MAX_ASPECT, "multiple": MULTIPLE, "group_window": WINDOW,
                       "network": "small_cnn(filters=%r)" % (training.NETWORK_FILTERS,)},
            "rows": rows, "targets": targets}


def format_table(result):
    header = ["mode", "steps/s", "±", "× exact", "shapes/epoch", "device batches", "padding",
              "of it rounding"]
    rows = [[r["mode"], r["steps_per_s"], "%.0f%%" % (100 * r["spread"]), r["vs_exact"],
             r["distinct_shapes_per_epoch"], r["device_batches_per_epoch"],
             "%.1f%%" % (100 * r["padding_fraction"]),
             "%.1f%%" % (100 * r["rounding_pixels_fraction"])] for r in result["rows"]]
    return common.format_table(header, rows) + "\n" + common.format_targets(result["targets"])
