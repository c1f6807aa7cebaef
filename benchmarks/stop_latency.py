"""How long ``del``, ``sys.exit(0)`` and an unhandled Ctrl-C take while slow reads are in flight.

    python benchmarks/stop_latency.py [--sample-s 1] [--runs 3]

Each run is a child process: a ``PerDeviceIter`` over 32 samples (2 devices x 2), 2 workers,
the default ``prefetch`` (4 batches); every sample past the first batch takes ``--sample-s``
to read in a worker. After the first batch, once both workers are inside a read, the child
stops as the case says: ``del`` (timed in the child, ``gc.collect()`` included), ``exit``
(``sys.exit(0)``) or ``ctrl-c`` (``SIGINT`` to itself while it sleeps, unhandled); the time
is from the stop until the child and its workers have ended (they share its pipes). The
batches in flight would take 8 reads to finish, 4 per worker. Figures: ``docs/data.rst``,
"When loading fails".
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = ("del", "exit", "ctrl-c")
NUM_SAMPLES = 32


class SlowPastTheFirstBatch:
    """Samples 0 to 3 read at once; every other read in a worker takes ``sample_s``."""

    def __init__(self, sample_s):
        self.sample_s, self.owner = sample_s, os.getpid()

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, index):
        if index >= 4 and os.getpid() != self.owner:
            time.sleep(self.sample_s)
        return (np.full((1, 3, 4), index, np.float32),)


def child(case, sample_s):
    """In this process: load the first batch, wait until both workers read, stop as ``case``."""
    import gc

    from mxpatch_bind import Input, PerDeviceIter

    it = PerDeviceIter(SlowPastTheFirstBatch(sample_s), num_devices=2, batch_per_device=2,
                       inputs=[Input("data", size_axes=(1, 2))],
                       sizes=np.full((NUM_SAMPLES, 2), (3, 4)), num_workers=2, grouping=False)
    it.next()
    # Both workers inside a read: each has been reading for a moment (a fifth of one read).
    time.sleep(sample_s / 5)
    print(time.monotonic(), flush=True)
    if case == "del":
        del it
        gc.collect()
        print(time.monotonic(), flush=True)
    elif case == "exit":
        sys.exit(0)
    else:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(3600)


def run(case, sample_s):
    """Seconds from the stop until the child's workers ended (``del``: until ``del`` returned)."""
    process = subprocess.run([sys.executable, __file__, "--child", case, "--sample-s",
                              str(sample_s)], capture_output=True, text=True,
                             timeout=60 + 20 * sample_s)
    ended = time.monotonic()
    times = [float(word) for word in process.stdout.split()]
    if not times:
        raise SystemExit(f"{case}: the child failed\n{process.stderr}")
    return (times[1] if case == "del" else ended) - times[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample-s", type=float, default=1.0, help="one read, in seconds")
    parser.add_argument("--runs", type=int, default=3, help="runs per case")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.sample_s)
        return 0
    for case in CASES:
        seconds = [run(case, args.sample_s) for _ in range(args.runs)]
        print(f"{case:7s} median {statistics.median(seconds):.2f} s (from {min(seconds):.2f} "
              f"to {max(seconds):.2f} s over {args.runs} runs; one read {args.sample_s:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
