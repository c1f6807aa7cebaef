"""Training epochs of several feeding modes, side by side (what balanced and rounding share).

Each mode has its own module on 2 CPU contexts; every round draws new images, builds every
mode's batches from them, and times one epoch per mode in rotated order.
"""


from . import common
from .common import per_device_spec

DEVICES = 2
PER_DEVICE = 2
NETWORK_FILTERS = (32, 64, 64)


def bind_modules(mx, modes, first_size, filters=NETWORK_FILTERS):
    """One module per mode: ``"stock"`` modes bound the stock way, the others per device."""
    import mxpatch_bind

    symbol = common.small_cnn(filters=filters)
    first = (PER_DEVICE, 3) + tuple(first_size)
    modules = {}
    with mxpatch_bind.patched():
        for mode in modes:
            mod = mx.mod.Module(symbol, context=common.contexts(DEVICES),
                                logger=common.quiet_logger())
            if "stock" in mode:
                mod.bind([("data", (DEVICES * PER_DEVICE,) + first[1:])],
                         [("softmax_label", (DEVICES * PER_DEVICE,))])
            else:
                mod.bind(*per_device_spec([first] * DEVICES))
            mod.init_params(mx.init.Xavier(rnd_type="uniform", magnitude=2))
            mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
            modules[mode] = mod
    return modules


def time_epoch(mx, mod, batches):
    """Wall time per step of forward, backward and update over ``batches``."""
    mx.nd.waitall()
    with common.Clock(len(batches)) as clock:
        for batch in batches:
            mod.forward_backward(batch)
            mod.update()
        mx.nd.waitall()
    return clock


def run_rounds(mx, modules, make_feeds, rounds):
    """Per mode, one Clock per round; ``make_feeds(round)`` gives each mode's batches.

    A first, untimed round warms oneDNN kernels and memory pools.
    """
    for mode, batches in make_feeds(-1).items():
        time_epoch(mx, modules[mode], batches)
    clocks = {mode: [] for mode in modules}
    names = list(modules)
    for index in range(rounds):
        feeds = make_feeds(index)
        shift = index % len(names)
        for mode in names[shift:] + names[:shift]:
            clocks[mode].append(time_epoch(mx, modules[mode], feeds[mode]))
    return clocks


def images(np_rng, rng, count, size_of):
    """``count`` random float32 images of ``size_of(rng)`` and labels 0..9."""
    out = []
    for _ in range(count):
        height, width = size_of(rng)
        out.append(np_rng.uniform(0, 1, (3, height, width)).astype("float32"))
    return out, [rng.randrange(10) for _ in range(count)]


def distinct_shapes(batches):
    """Distinct per-device data shapes among per-device batches."""
    return len({device[0].shape for batch in batches for device in batch.data})


def ideal_rows(clocks, pixels, modes):
    """One row per mode: steps/s, spread and speed-up over ``modes[0]``, against the pixel
    ideals (``pixels[mode]``: ``serial`` pixels in all, ``parallel`` on the busiest device)."""
    stock = common.walls(clocks[modes[0]])
    rows = []
    for mode in modes:
        walls = common.walls(clocks[mode])
        speedup = common.paired_ratio(stock, walls)
        serial = pixels[modes[0]]["serial"] / pixels[mode]["serial"]
        parallel = pixels[modes[0]]["parallel"] / pixels[mode]["parallel"]
        rows.append({"mode": mode, "steps_per_s": 1 / common.median(walls),
                     "spread": common.spread(walls), "vs_stock": speedup,
                     "serial_ideal": serial, "parallel_ideal": parallel,
                     "of_serial_ideal": speedup / serial, "of_parallel_ideal": speedup / parallel,
                     "padded_pixels": pixels[mode]["serial"]})
    return rows


def add_iter_pixels(pixels, data_iter):
    """Add a per-device iterator's epoch to ``pixels``: all pixels, and the busiest device's."""
    stats = data_iter.padding_stats()
    pixels["serial"] += stats.total_pixels
    pixels["parallel"] += stats.step_pixels


def add_stock_pixels(pixels, batches):
    """Add stock batches (one padded image shape per step) to ``pixels``."""
    for batch in batches:
        height, width = batch.data[0].shape[2:]
        pixels["serial"] += DEVICES * PER_DEVICE * height * width
        pixels["parallel"] += PER_DEVICE * height * width
