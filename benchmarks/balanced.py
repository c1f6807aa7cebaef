"""Benchmark: work-balanced per-device counts against equal counts, on the variable workload.

The images, network and devices of ``benchmarks/variable.py`` (32-160 px per side, 2 CPU
contexts, 2 images per device per step on average, a 32/64/64-filter CNN), fed three ways:

(a) stock MXNet, each step padded to its largest image (the reference of the ideals);
(d) ``PerDeviceIter`` grouped with ``group_window=8``, equal counts per device (today's best);
(e) the same with ``balanced=True``: the same samples per step, re-split so the busiest
    device pads least (counts may differ, e.g. 1 + 3).

The parallel ideal of a mode is stock's summed busiest-device pixels over the mode's; the
target is (e) reaching 0.9 of its own ideal and beating (d).

A control runs the same batches through a network with twice the filters, (a'), (d') and
(e'): 3.8 times the multiply-adds per pixel, the same per-step costs that pixels do not count
(a reshape to never-seen shapes, oneDNN primitives for them, the dispatch of forward, backward
and update), so it shows how much of a mode's distance from its ideal those costs make.
"""

import random

from . import common, training
from .variable import SIZES, _stock_batches

NAME = "balanced"
MODES = ("(a) stock, padded to the step's largest", "(d) per-device, grouped, window 8",
         "(e) per-device, balanced, window 8")
WINDOW = 8
HEAVY_FILTERS = tuple(2 * filters for filters in training.NETWORK_FILTERS)
HEAVY_MODES = ("(a') stock, filters %s" % "/".join(map(str, HEAVY_FILTERS)),
               "(d') grouped, window 8, same", "(e') balanced, window 8, same")
CONTROL_OF = dict(zip(MODES, HEAVY_MODES))  # each mode's control trains on its batches


def run(tiny=False, rounds=None):
    """Steps per second of (a), (d) and (e), interleaved round by round; pixel ideals."""
    import mxnet as mx
    import numpy as np

    rounds = rounds or (2 if tiny else 7)
    steps = 3 if tiny else 40
    modules = training.bind_modules(mx, MODES, (SIZES[1], SIZES[1]))
    modules.update(training.bind_modules(mx, HEAVY_MODES, (SIZES[1], SIZES[1]),
                                         filters=HEAVY_FILTERS))
    rng = random.Random(0)
    np_rng = np.random.RandomState(0)
    pixels = {mode: {"serial": 0, "parallel": 0} for mode in MODES}

    def feeds(index):
        light = _feeds(mx, rng, np_rng, steps, pixels if index >= 0 else None)
        return dict(light, **{CONTROL_OF[mode]: light[mode] for mode in MODES})

    common.progress("balanced: %d rounds of %d steps per mode" % (rounds, steps))
    clocks = training.run_rounds(mx, modules, feeds, rounds)
    return _result(clocks, pixels, rounds, steps, tiny)


def _feeds(mx, rng, np_rng, steps, pixels):
    from mxpatch_bind import PerDeviceIter

    count = steps * training.DEVICES * training.PER_DEVICE
    images, labels = training.images(np_rng, rng, count,
                                     lambda r: (r.randint(*SIZES), r.randint(*SIZES)))
    feeds = {MODES[0]: _stock_batches(mx, images, labels)}
    for mode, balanced in ((MODES[1], False), (MODES[2], True)):
        data_iter = PerDeviceIter(images, labels, num_devices=training.DEVICES,
                                  batch_per_device=training.PER_DEVICE, group_window=WINDOW,
                                  balanced=balanced)
        feeds[mode] = list(data_iter)
        if pixels is not None:
            training.add_iter_pixels(pixels[mode], data_iter)
    if pixels is not None:
        training.add_stock_pixels(pixels[MODES[0]], feeds[MODES[0]])
    return feeds


def _result(clocks, pixels, rounds, steps, tiny):
    rows = training.ideal_rows(clocks, pixels, MODES)
    control = training.ideal_rows(
        clocks, {CONTROL_OF[mode]: pixels[mode] for mode in MODES}, HEAVY_MODES)
    balanced_vs_window = common.paired_ratio(common.walls(clocks[MODES[1]]),
                                             common.walls(clocks[MODES[2]]))
    control_vs_window = common.paired_ratio(common.walls(clocks[HEAVY_MODES[1]]),
                                            common.walls(clocks[HEAVY_MODES[2]]))
    balanced = rows[2]
    targets = [
        common.target("(e) speed-up over (a) as a fraction of its parallel ideal",
                      balanced["of_parallel_ideal"], ">= 0.9",
                      balanced["of_parallel_ideal"] >= 0.9),
        common.target("(e) steps/s over (d) steps/s", balanced_vs_window, "> 1",
                      balanced_vs_window > 1)]
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "steps_per_round": steps, "devices": training.DEVICES,
                       "images_per_device": training.PER_DEVICE, "sizes": SIZES,
                       "group_window": WINDOW,
                       "network": "small_cnn(filters=%r)" % (training.NETWORK_FILTERS,),
                       "control_network": "small_cnn(filters=%r)" % (HEAVY_FILTERS,)},
            "rows": rows, "balanced_vs_window": balanced_vs_window, "control_rows": control,
            "control_balanced_vs_window": control_vs_window, "targets": targets}


def format_table(result):
    header = ["mode", "steps/s", "±", "× (a)", "serial ideal", "parallel ideal", "of parallel"]
    rows = [[r["mode"], r["steps_per_s"], "%.0f%%" % (100 * r["spread"]), r["vs_stock"],
             r["serial_ideal"], r["parallel_ideal"], r["of_parallel_ideal"]]
            for r in result["rows"] + result["control_rows"]]
    control = ("control, (e') steps/s over (d') steps/s: %.3g (not a target)\n"
               % result["control_balanced_vs_window"])
    return (common.format_table(header, rows) + "\n" + control
            + common.format_targets(result["targets"]))
