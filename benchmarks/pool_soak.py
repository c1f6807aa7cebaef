"""Epochs whose DataLoader workers fail, over and over: does ending their pools ever hang?

    python benchmarks/pool_soak.py [--epochs 100] [--runs 1] [--kinds error,exit,kill,drop]

Each run is a child process doing ``--epochs`` epochs of a ``PerDeviceIter`` with 2 workers
(16 samples, 2 devices): ``error``, a sample raises in a worker; ``exit``, a worker calls
``os._exit(3)``; ``kill``, a worker is killed by ``SIGKILL``; ``drop``, the iterator is dropped
after its first batch, the next ones being read. The failing sample moves through the epoch.
A child that has not finished an epoch in ``--hang-s`` seconds prints every thread's stack
(faulthandler) and is counted as hung. Figures: ``docs/data.rst``, "When loading fails".
"""

import argparse
import gc
import os
import signal
import subprocess
import sys
import time

import numpy as np

KINDS = ("error", "exit", "kill", "drop")
NUM_SAMPLES = 16


class Failing:
    """16 small images; in a worker, sample ``bad`` fails as ``kind`` says."""

    def __init__(self, kind, bad):
        self.kind, self.bad, self.owner = kind, bad, os.getpid()

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, index):
        if index == self.bad and os.getpid() != self.owner:
            if self.kind == "error":
                raise OSError(5, "disk read failed")
            if self.kind == "exit":
                os._exit(3)
            if self.kind == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        return (np.full((1, 3 + index % 4, 4 + index % 3), index + 1, np.float32),)


def epochs(kind, count, hang_s):
    """In this process: ``count`` epochs of ``kind``; exits (status 1) on a hang."""
    import faulthandler

    from mxpatch_bind import DataLoadError, Input, PerDeviceIter

    sizes = np.array([[3 + i % 4, 4 + i % 3] for i in range(NUM_SAMPLES)])
    for epoch in range(count):
        faulthandler.dump_traceback_later(hang_s, exit=True)
        bad = None if kind == "drop" else 1 + epoch % (NUM_SAMPLES - 1)  # 0: read at once
        it = PerDeviceIter(Failing(kind, bad), num_devices=2, batch_per_device=2,
                           inputs=[Input("data", size_axes=(1, 2))], sizes=sizes,
                           num_workers=2)
        if kind == "drop":
            it.next()
        else:
            try:
                list(it)
            except DataLoadError:
                pass
            else:
                raise SystemExit(f"epoch {epoch}: no failure")
        del it
        gc.collect()
    faulthandler.cancel_dump_traceback_later()


def run(kind, count, hang_s):
    """One child doing ``count`` epochs of ``kind``: (hung, seconds)."""
    start = time.monotonic()
    child = subprocess.run([sys.executable, __file__, "--child", kind, "--epochs", str(count),
                            "--hang-s", str(hang_s)], capture_output=True, text=True,
                           timeout=count * hang_s + 120)
    hung = "Timeout (" in child.stderr
    if child.returncode and not hung:
        raise SystemExit(f"{kind}: the child failed\n{child.stderr}")
    return hung, time.monotonic() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100, help="epochs per run")
    parser.add_argument("--runs", type=int, default=1, help="runs (child processes) per kind")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: %(default)s")
    parser.add_argument("--hang-s", type=float, default=60.0, help="an epoch's hang limit")
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        epochs(args.child, args.epochs, args.hang_s)
        return 0
    kinds = args.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds {unknown}; choose from {', '.join(KINDS)}")
    any_hung = False
    for kind in kinds:
        results = [run(kind, args.epochs, args.hang_s) for _ in range(args.runs)]
        hung = sum(h for h, _ in results)
        any_hung |= bool(hung)
        print(f"{kind:6s} {args.runs} runs x {args.epochs} epochs: {hung} hung, "
              f"{sum(s for _, s in results):.0f} s")
    return 1 if any_hung else 0


if __name__ == "__main__":
    sys.exit(main())
