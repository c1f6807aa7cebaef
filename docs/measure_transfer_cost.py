"""What one batch of decoded images costs to decode, pack and move out of a worker process.

Run from a checkout: ``PYTHONPATH=. python docs/measure_transfer_cost.py``. The decode
benchmark's files (``benchmarks/decode.py``: JPEGs of 100-400 px, 2 devices x 4 images), timed
step by step in one process, medians of 9: decoding the 8 images, packing them per device
(float32, and in their own uint8 as workers now do), and copying the packed arrays into new
shared memory (what a worker sends) or ordinary memory (docs/performance.md, section 7).
"""

import shutil
import statistics
import tempfile
import time

import mxnet as mx

from benchmarks import decode
from mxpatch_bind import Input
from mxpatch_bind.data import inputs as _inputs

DECLARED = [Input("data", size_axes=(1, 2))]


def median_ms(step, repeats=9):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def pack(fields, narrow):
    devices = [fields[:4], fields[4:]]
    return [_inputs.pack_device(device, DECLARED,
                                tuple(max(f[0].shape[axis] for f in device) for axis in (1, 2)),
                                narrow=narrow)
            for device in devices]


def to_memory(packed, context):
    return [[mx.nd.array(array, ctx=context, dtype=array.dtype) for array in device]
            for device in packed]


def main():
    directory = tempfile.mkdtemp(prefix="mxpatch_bind_transfer_")
    try:
        paths, extension = decode.write_files(directory, 8, decode.SIZES)
        dataset = decode.ImageFiles(paths)
        fields = [_inputs.as_fields(dataset[i], DECLARED, i) for i in range(8)]
        shared = mx.Context("cpu_shared", 0)
        wide, narrow = pack(fields, False), pack(fields, True)
        print("%s files; one batch of 8 images, ms:" % extension)
        print("decode %.1f" % median_ms(lambda: [dataset[i] for i in range(8)]))
        for name, packed in (("float32", wide), ("uint8", narrow)):
            print("pack as %s %.1f (%.2f MB per device); into new shared memory %.1f, into "
                  "ordinary memory %.1f"
                  % (name, median_ms(lambda: pack(fields, name == "uint8")),
                     packed[0][0].nbytes / 2 ** 20, median_ms(lambda: to_memory(packed, shared)),
                     median_ms(lambda: to_memory(packed, mx.cpu()))))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
