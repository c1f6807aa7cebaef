"""Worker command for tests/module/test_distributed.py: per-device training on a dist kvstore.

    per_device_worker.py KVSTORE STEPS OUT_DIR [die-after-init INDEX] [rescale-grad VALUE]
                         [kvstore-as name|object]

The worker the launcher numbered i binds a per-device module on cpu(0) and cpu(1) with
``SHARDS[i]``, takes STEPS SGD steps on ``shard_batch(i, device, step)`` through the
kvstore named KVSTORE, and writes ``OUT_DIR/worker<i>.npz``: its kvstore rank, the
optimizer's ``rescale_grad``, its devices' gradients of step 1 (``grad<device>_<name>``),
the parameters after step 1 (``after1_<name>``) and at the end (``final_<name>``). On a
``dist_*_sync`` kvstore it then counts its samples once more on the same kvstore, whose
servers now run the optimizer, and records the error that has to give
(``second_count_error``).

With ``die-after-init INDEX``, worker INDEX dies abruptly (``os._exit(3)``, as a crash
would) once its optimizer is on the kvstore, leaving the others waiting for its gradients.
With ``rescale-grad VALUE``, every worker passes ``rescale_grad=VALUE`` to init_optimizer.
With ``kvstore-as object``, init_optimizer gets ``mx.kv.create(KVSTORE)`` instead of the name.

The test process imports this file for ``SHARDS``, ``initial_params`` and ``shard_batch``,
so that its single-process reference sees exactly the workers' data.
"""

import os
import sys
from pathlib import Path

import mxnet as mx
import numpy as np

if __name__ == "__main__":
    # tests/ for nets, and the checkout, so that the workers run the code under test.
    _HERE = Path(__file__).resolve()
    sys.path[:0] = [str(_HERE.parents[1]), str(_HERE.parents[2])]

from nets import bound_module, conv_net, device_batch, fixed_params, random_batch  # noqa: E402

from mxpatch_bind.module import distributed  # noqa: E402

# Per worker, per device: (batch, channels, height, width). The workers hold 3 and 4 samples,
# so stock's batch_size * num_workers would give 6 or 8 instead of the job's 7.
SHARDS = [[(1, 3, 12, 12), (2, 3, 16, 10)],
          [(3, 3, 10, 14), (1, 3, 8, 8)]]
OPTIMIZER_PARAMS = {"learning_rate": 0.1, "momentum": 0.9}
EXIT_DIED = 3


def initial_params():
    return fixed_params(conv_net(), SHARDS[0][0])


def shard_module(shapes):
    """A per-device module on one CPU context per shape, with ``initial_params()``."""
    return bound_module(conv_net(), shapes, initial_params())


def shard_batch(worker, device, step):
    """(data, label) of one device of one worker at one step, the same in every process."""
    return random_batch(SHARDS[worker][device], seed=100 * step + 10 * worker + device)


def _arrays(prefix, named):
    return {prefix + name: array.asnumpy() for name, array in named.items()}


def train(kvstore, steps, out_dir, dying_index=None, rescale_grad=None, kvstore_as="name"):
    index = int(os.environ["MXPATCH_LAUNCH_WORKER_INDEX"])
    mod = shard_module(SHARDS[index])
    optimizer_params = dict(OPTIMIZER_PARAMS)
    if rescale_grad is not None:
        optimizer_params["rescale_grad"] = rescale_grad
    given = mx.kv.create(kvstore) if kvstore_as == "object" else kvstore
    mod.init_optimizer(kvstore=given, optimizer="sgd", optimizer_params=optimizer_params)
    if index == dying_index:
        print("dying after init_optimizer", file=sys.stderr, flush=True)
        os._exit(EXIT_DIED)
    record = {"rank": mod._kvstore.rank, "rescale_grad": mod._optimizer.rescale_grad}
    group = mod._exec_group
    for step in range(steps):
        pairs = [shard_batch(index, device, step) for device in range(len(SHARDS[index]))]
        mod.forward_backward(device_batch(pairs))
        if step == 0:
            for device in range(len(pairs)):
                record.update(_arrays("grad%d_" % device, {
                    name: grads[device] for name, grads in zip(group.param_names,
                                                               group.grad_arrays)}))
        mod.update()
        if step == 0:
            record.update(_arrays("after1_", mod.get_params()[0]))
    record.update(_arrays("final_", mod.get_params()[0]))
    if distributed.is_sync_dist(kvstore):
        try:
            distributed.global_sample_count(mod._kvstore, group.batch_size)
        except RuntimeError as error:
            record["second_count_error"] = str(error)
    np.savez(str(Path(out_dir) / ("worker%d.npz" % index)), **record)
    print("worker %d (rank %d) trained %d steps" % (index, record["rank"], steps))


def main(kvstore, steps, out_dir, *options):
    known = {"die-after-init": ("dying_index", int), "rescale-grad": ("rescale_grad", float),
             "kvstore-as": ("kvstore_as", str)}
    if len(options) % 2 or any(option not in known for option in options[::2]):
        sys.exit("unknown options %r; known: %s VALUE" % (options, ", ".join(known)))
    keywords = {known[option][0]: known[option][1](value)
                for option, value in zip(options[::2], options[1::2])}
    train(kvstore, int(steps), out_dir, **keywords)


if __name__ == "__main__":
    main(*sys.argv[1:])
