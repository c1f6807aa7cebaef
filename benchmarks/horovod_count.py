"""What one sample-count allreduce costs next to one training step, on kvstore='horovod'.

    horovodrun -np 2 -H localhost:2 --gloo --network-interfaces lo \\
        python benchmarks/horovod_count.py

Each worker binds the per-device module of tests/dist_scripts/horovod_worker.py (2 CPU
contexts, unequal counts) and times, interleaved over 5 rounds, 20 training steps and 20
allreduces of a one-element count, as ``init_optimizer`` takes it. Rank 0 prints each round
and the median ratio (docs/distributed.md quotes it). Not part of the test suite: it needs
Horovod.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "dist_scripts"), str(ROOT / "tests"), str(ROOT)]

import horovod_worker as worker  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from nets import bound_module, conv_net, device_batch  # noqa: E402

import mxpatch_bind  # noqa: E402

ROUNDS, REPEATS = 5, 20


def main():
    mxpatch_bind.install()
    rank = int(os.environ["HOROVOD_RANK"])
    mod = bound_module(conv_net(), worker.SHARDS[rank], worker.initial_params())
    mod.init_optimizer(kvstore="horovod", optimizer="sgd",
                       optimizer_params=worker.OPTIMIZER_PARAMS)
    batch = device_batch([worker.shard_batch(rank, device, 0) for device in range(2)])
    count = mx.nd.array([mod._exec_group.batch_size])

    def steps():
        for _ in range(REPEATS):
            mod.forward_backward(batch)
            mod.update()
        mx.nd.waitall()

    def counts():
        for _ in range(REPEATS):
            mod._kvstore.allreduce("__mxpatch_bind_samples__", [count]).asscalar()

    def timed(run):
        started = time.perf_counter()
        run()
        return (time.perf_counter() - started) / REPEATS

    steps(), counts()  # warm-up
    rounds = [(timed(steps), timed(counts)) for _ in range(ROUNDS)]
    if rank == 0:
        for step, reduce in rounds:
            print("step %.2f ms  count allreduce %.2f ms  ratio %.2f"
                  % (step * 1e3, reduce * 1e3, reduce / step))
        print("median ratio %.2f" % np.median([reduce / step for step, reduce in rounds]))


if __name__ == "__main__":
    main()
