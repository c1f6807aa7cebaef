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

from mxpatch_bind._nets import per_device_spec

from . import common

NAME = "variable"
SIZES = (32, 160)
DEVICES = 2
PER_DEVICE = 2
MODES = ("(a) stock, padded to the step's largest", "(b) per-device, arrival order",
         "(c) per-device, grouped", "(d) per-device, grouped, window 8")
GROUP_WINDOWS = {MODES[2]: 1, MODES[3]: 8}
NETWORK_FILTERS = (32, 64, 64)


def run(tiny=False, rounds=None):
    """Steps per second of the three modes, interleaved round by round; pixel ideals."""
    import mxnet as mx

    import mxpatch_bind

    rounds = rounds or (2 if tiny else 7)
    steps = 3 if tiny else 40
    symbol = _network()
    with mxpatch_bind.patched():
        modules = _modules(mx, symbol)
    rng = random.Random(0)
    clocks = {mode: [] for mode in MODES}
    pixels = {mode: {"serial": 0, "parallel": 0} for mode in MODES}
    # A warm-up epoch: oneDNN kernels, memory pools.
    _epoch(mx, modules, _feeds(mx, rng, steps, pixels=None))
    common.progress("variable: %d rounds of %d steps per mode" % (rounds, steps))
    for index in range(rounds):
        feeds = _feeds(mx, rng, steps, pixels)
        shift = index % len(MODES)
        order = MODES[shift:] + MODES[:shift]
        for mode in order:
            clocks[mode].append(_time_epoch(mx, modules[mode], feeds[mode]))
    return _result(clocks, pixels, rounds, steps, tiny)


def _network():
    """A CNN heavy enough per pixel that compute, not per-step overhead, dominates a step."""
    return common.small_cnn(filters=NETWORK_FILTERS)


def _modules(mx, symbol):
    """One module per mode, bound to an arbitrary first shape (each reshapes as it goes)."""
    first = (PER_DEVICE, 3, SIZES[1], SIZES[1])
    modules = {}
    for mode in MODES:
        mod = mx.mod.Module(symbol, context=common.contexts(DEVICES),
                            logger=common.quiet_logger())
        if mode.startswith("(a)"):
            mod.bind([("data", (DEVICES * PER_DEVICE,) + first[1:])],
                     [("softmax_label", (DEVICES * PER_DEVICE,))])
        else:
            mod.bind(*per_device_spec([first] * DEVICES))
        mod.init_params(mx.init.Xavier(rnd_type="uniform", magnitude=2))
        mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
        modules[mode] = mod
    return modules


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
    from mxpatch_bind.io import PerDeviceIter
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
            stats = data_iter.padding_stats()
            pixels[mode]["serial"] += stats.total_pixels
            pixels[mode]["parallel"] += stats.step_pixels
    if pixels is not None:
        for batch in feeds[MODES[0]]:
            height, width = batch.data[0].shape[2:]
            pixels[MODES[0]]["serial"] += DEVICES * PER_DEVICE * height * width
            pixels[MODES[0]]["parallel"] += PER_DEVICE * height * width
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


def _epoch(mx, modules, feeds):
    for mode, batches in feeds.items():
        _time_epoch(mx, modules[mode], batches)


def _time_epoch(mx, mod, batches):
    mx.nd.waitall()
    with common.Clock(len(batches)) as clock:
        for batch in batches:
            mod.forward_backward(batch)
            mod.update()
        mx.nd.waitall()
    return clock


def _result(clocks, pixels, rounds, steps, tiny):
    stock = common.walls(clocks[MODES[0]])
    rows = []
    for mode in MODES:
        walls = common.walls(clocks[mode])
        speedup = common.paired_ratio(stock, walls)
        serial = pixels[MODES[0]]["serial"] / pixels[mode]["serial"]
        parallel = pixels[MODES[0]]["parallel"] / pixels[mode]["parallel"]
        rows.append({"mode": mode, "steps_per_s": 1 / common.median(walls),
                     "spread": common.spread(walls), "vs_stock": speedup,
                     "serial_ideal": serial, "parallel_ideal": parallel,
                     "of_serial_ideal": speedup / serial, "of_parallel_ideal": speedup / parallel,
                     "padded_pixels": pixels[mode]["serial"]})
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
