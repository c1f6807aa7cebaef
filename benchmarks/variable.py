"""Benchmark 2: a detection-like workload of variable-size images on 2 CPU contexts.

Images of 32-160 px on each side, random aspect ratios; 2 devices, 2 images per device per
step; a small CNN trained (forward, backward, update). Three ways to feed the same images:

(a) stock MXNet: one batch padded to the largest image of the step (a flat ``DataBatch``;
    the module reshapes when the padded shape changes);
(b) per-device shapes in arrival order (``PerDeviceIter(grouping=False)``): each device
    padded to its own two images;
(c) per-device shapes with ``PerDeviceIter``'s grouping (similar sizes on one device);
(d) the same with ``group_window=8``: similar sizes also share a batch.

Ideals from pixel counts, if time were proportional to pixels: *serial* (a step costs all
its pixels, as on two CPU contexts sharing the cores) is the padded pixels of (a) over those
of (b); *parallel* (a step costs its busiest device, as on GPUs) uses the per-step maximum.
Every round uses new images, so no mode meets a shape it has seen before.
"""

import random

from . import common, training

NAME = "variable"
SIZES = (32, 160)
# The training set-up (devices, images per device, network) is training.py's, shared with
# the balanced and rounding benchmarks.
DEVICES, PER_DEVICE = training.DEVICES, training.PER_DEVICE
NETWORK_FILTERS = training.NETWORK_FILTERS
MODES = ("(a) stock, padded to the step's largest", "(b) per-device, arrival order",
         "(c) per-device, grouped", "(d) per-device, grouped, window 8")
GROUP_WINDOWS = {MODES[2]: 1, MODES[3]: 8}


def run(tiny=False, rounds=None):
    """Steps per second of the three modes, interleaved round by round; pixel ideals."""
    import mxnet as mx


    rounds = rounds or (2 if tiny else 7)
    steps = 3 if tiny else 40
    modules = training.bind_modules(mx, MODES, (SIZES[1], SIZES[1]))
    rng = random.Random(0)
    pixels = {mode: {"serial": 0, "parallel": 0} for mode in MODES}
    common.progress("variable: %d rounds of %d steps per mode" % (rounds, steps))
    # Round -1 is the untimed warm-up (oneDNN kernels, memory pools): its pixels don't count.
    clocks = training.run_rounds(
        mx, modules, lambda index: _feeds(mx, rng, steps, pixels if index >= 0 else None), rounds)
    return _result(clocks, pixels, rounds, steps, tiny)


def _images(rng, count):
    import numpy as np
    seed = rng.randrange(2 ** 31)
    np_rng = np.random.RandomState(seed)
    images = [np_rng.uniform(0, 1, (3, rng.randint(*SIZES), rng.randint(*SIZES)))
              .astype("float32") for _ in range(count)]
    labels = [rng.randrange(10) for _ in range(count)]
    return images, labels


def _feeds(mx, rng, steps, pixels):
    """The batches of every mode for ``steps`` steps of new images; adds up their pixels."""
    from mxpatch_bind.data.io import PerDeviceIter
    images, labels = _images(rng, steps * DEVICES * PER_DEVICE)
    feeds = {MODES[0]: _stock_batches(mx, images, labels)}
    iters = {MODES[1]: PerDeviceIter(images, labels, num_devices=DEVICES,
                                     batch_per_device=PER_DEVICE, grouping=False)}
    for mode, window in GROUP_WINDOWS.items():
        iters[mode] = PerDeviceIter(images, labels, num_devices=DEVICES,
                                    batch_per_device=PER_DEVICE, group_window=window)
    for mode, data_iter in iters.items():
        feeds[mode] = list(data_iter)
        if pixels is not None:
            training.add_iter_pixels(pixels[mode], data_iter)
    if pixels is not None:
        training.add_stock_pixels(pixels[MODES[0]], feeds[MODES[0]])
    return feeds


def _stock_batches(mx, images, labels):
    """Stock batches in arrival order, every image padded to the step's largest extent."""
    import numpy as np
    size = DEVICES * PER_DEVICE
    batches = []
    for start in range(0, len(images), size):
        group = images[start:start + size]
        height = max(image.shape[1] for image in group)
        width = max(image.shape[2] for image in group)
        data = np.zeros((size, 3, height, width), dtype="float32")
        for row, image in enumerate(group):
            data[row, :, :image.shape[1], :image.shape[2]] = image
        batches.append(mx.io.DataBatch([mx.nd.array(data)],
                                       [mx.nd.array(labels[start:start + size])]))
    return batches


def _result(clocks, pixels, rounds, steps, tiny):
    rows = training.ideal_rows(clocks, pixels, MODES)
    arrival = rows[1]
    grouped_vs_arrival = common.paired_ratio(common.walls(clocks[MODES[1]]),
                                             common.walls(clocks[MODES[2]]))
    targets = [
        common.target("(b) speed-up over (a) as a fraction of the serial ideal",
                      arrival["of_serial_ideal"], ">= 0.95", arrival["of_serial_ideal"] >= 0.95),
        common.target("(b) speed-up over (a) as a fraction of the parallel ideal",
                      arrival["of_parallel_ideal"], ">= 0.95",
                      arrival["of_parallel_ideal"] >= 0.95),
        common.target("(c) steps/s over (b) steps/s", grouped_vs_arrival, "> 1",
                      grouped_vs_arrival > 1)]
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "steps_per_round": steps, "devices": DEVICES,
                       "images_per_device": PER_DEVICE, "sizes": SIZES,
                       "network": "small_cnn(filters=%r)" % (NETWORK_FILTERS,),
                       "group_windows": list(GROUP_WINDOWS.values())},
            "rows": rows, "grouped_vs_arrival": grouped_vs_arrival, "targets": targets}


def format_table(result):
    header = ["mode", "steps/s", "±", "× (a)", "serial ideal", "of serial", "parallel ideal",
              "of parallel"]
    rows = [[r["mode"], r["steps_per_s"], "%.0f%%" % (100 * r["spread"]), r["vs_stock"],
             r["serial_ideal"], r["of_serial_ideal"], r["parallel_ideal"],
             r["of_parallel_ideal"]] for r in result["rows"]]
    return common.format_table(header, rows) + "\n" + common.format_targets(result["targets"])
