"""Benchmark: decoding image files in gluon DataLoader workers (``num_workers=2``) against none.

400 JPEG files of 100-400 px per side, written at run time into a temporary directory, read
by ``PerDeviceIter`` lazily (sizes from the files' headers with ``image_size``, so planning
decodes nothing) and decoded with ``mx.image.imread`` in the dataset's ``__getitem__``: in the
calling thread with ``num_workers=0``, in two worker processes with ``num_workers=2``. An epoch
is iterated without training, so the figure is the loader's own samples/s. Without Pillow
(the JPEG encoder used to make the files) the files are PNGs; the result says which.
"""

import os
import random
import shutil
import sys
import tempfile

from . import common

NAME = "decode"
COUNT = 400
SIZES = (100, 400)
WORKERS = (0, 2)
MODES = tuple("num_workers=%d" % workers for workers in WORKERS)
# A control without this package: gluon's DataLoader stacking fixed-size crops of the same
# files, to tell this machine's gain from worker processes apart from PerDeviceIter's.
CROP = 32  # the least side of the tiny run's files
CONTROLS = tuple("control: gluon DataLoader, %dx%d crops, num_workers=%d" % (CROP, CROP, workers)
                 for workers in WORKERS)
DEVICES = 2
PER_DEVICE = 4


def _imagefiles():
    """The examples' image writers (examples/imagefiles.py, next to this package)."""
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import imagefiles
    return imagefiles


class ImageFiles:
    """A dataset of image files: each item decoded on access, as ``(C, H, W)`` uint8."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        import mxnet as mx
        # Decoded by MXNet (OpenCV), then one copy out: the packer casts and pads in numpy.
        image = mx.image.imread(self.paths[index]).asnumpy()
        return (image.transpose(2, 0, 1),)


def write_files(directory, count, sizes, seed=0):
    """``count`` random images of ``sizes`` px per side; returns the paths and the format."""
    import numpy as np

    files = _imagefiles()
    extension = "jpg" if files.can_write_jpeg() else "png"
    writer = files.write_jpeg if extension == "jpg" else files.write_png
    rng = random.Random(seed)
    np_rng = np.random.RandomState(seed)
    paths = []
    for index in range(count):
        height, width = rng.randint(*sizes), rng.randint(*sizes)
        # Smooth content compresses like photographs do, unlike white noise.
        coarse = np_rng.randint(0, 256, (height // 8 + 1, width // 8 + 1, 3))
        image = np.kron(coarse, np.ones((8, 8, 1)))[:height, :width]
        path = os.path.join(directory, "%04d.%s" % (index, extension))
        writer(path, image)
        paths.append(path)
    return paths, extension


def run(tiny=False, rounds=None):
    """Samples per second of one epoch's loading per mode, interleaved round by round."""
    from mxpatch_bind import Input, PerDeviceIter, image_size

    rounds = rounds or (2 if tiny else 5)
    count, sizes = (16, (32, 64)) if tiny else (COUNT, SIZES)
    directory = tempfile.mkdtemp(prefix="mxpatch_bind_decode_")
    try:
        paths, extension = write_files(directory, count, sizes)
        iters = {mode: PerDeviceIter(ImageFiles(paths), num_devices=DEVICES,
                                     batch_per_device=PER_DEVICE,
                                     inputs=[Input("data", size_axes=(1, 2))],
                                     sizes=lambda i: image_size(paths[i]), shuffle=True,
                                     num_workers=workers)
                 for mode, workers in zip(MODES, WORKERS)}
        common.progress("decode: %d rounds of %d %s files per mode" % (rounds, count, extension))
        cases = {mode: _epoch_case(data_iter, count) for mode, data_iter in iters.items()}
        for mode, workers in zip(CONTROLS, WORKERS):
            cases[mode] = _control_case(paths, workers, count)
        clocks = common.interleaved(cases, rounds)
        batches = {mode: data_iter.num_batches for mode, data_iter in iters.items()}
        del iters, cases
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return _result(clocks, batches, rounds, count, sizes, extension, tiny)


def _epoch_case(data_iter, count):
    def case():
        data_iter.reset()
        with common.Clock(count) as clock:
            for batch in data_iter:
                batch.data[0][0].wait_to_read()
        return clock
    return case


class Crops(ImageFiles):
    """The same files decoded the same way, cropped to CROP x CROP so that gluon can stack them."""

    def __getitem__(self, index):
        return super().__getitem__(index)[0][:, :CROP, :CROP]


def _control_case(paths, workers, count):
    import mxnet as mx
    loader = mx.gluon.data.DataLoader(Crops(paths), batch_size=DEVICES * PER_DEVICE,
                                      num_workers=workers)

    def case():
        with common.Clock(count) as clock:
            for batch in loader:
                batch.wait_to_read()
        return clock
    return case


def _result(clocks, batches, rounds, count, sizes, extension, tiny):
    rows = []
    for modes in (MODES, CONTROLS):
        serial = common.walls(clocks[modes[0]])
        rows.extend({"mode": mode, "samples_per_s": 1 / common.median(common.walls(clocks[mode])),
                     "spread": common.spread(common.walls(clocks[mode])),
                     "vs_num_workers_0": common.paired_ratio(serial, common.walls(clocks[mode])),
                     "batches_per_epoch": batches.get(mode, -(-count // (DEVICES * PER_DEVICE)))}
                    for mode in modes)
    speedup = rows[1]["vs_num_workers_0"]
    targets = [common.target("num_workers=2 samples/s over num_workers=0", speedup, "> 1",
                             speedup > 1)]
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "files": count, "sizes": sizes, "format": extension,
                       "devices": DEVICES, "images_per_device": PER_DEVICE},
            "rows": rows, "targets": targets}


def format_table(result):
    header = ["mode", "samples/s", "±", "× num_workers=0"]
    rows = [[r["mode"], r["samples_per_s"], "%.0f%%" % (100 * r["spread"]),
             r["vs_num_workers_0"]] for r in result["rows"]]
    return ("%s files\n" % result["params"]["format"] + common.format_table(header, rows)
            + "\n" + common.format_targets(result["targets"]))
