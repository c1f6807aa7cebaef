"""Worker command for tests/tools/test_horovod.py: per-device training on kvstore='horovod'.

    horovodrun -np N -H localhost:N --gloo python horovod_worker.py MODE STEPS OUT_DIR

Every worker calls ``mxpatch_bind.install()``, binds a per-device module on cpu(0) and
cpu(1) with ``SHARDS[rank]`` (unequal counts per worker and per device, every image size its
own), and writes ``OUT_DIR/worker<rank>.npz`` with what the test checks. MODE is one of:

``train``
    ``init_optimizer(kvstore='horovod')`` by name, STEPS momentum-SGD steps on
    ``shard_batch(rank, device, step)``; records the store's type, rank and size, the
    optimizer's ``rescale_grad``, the parameters after step 1 and at the end, and the
    optimizer states (``save_optimizer_states``). Rank 1 starts from other parameters than
    rank 0, so the test sees rank 0's reach every worker.
``given-rescale``
    As ``train`` with ``rescale_grad=0.25`` given: records it and the warning.
``distributed-optimizer``
    Horovod's own ``DistributedOptimizer`` with ``kvstore=None``: records the warning.
``stock``
    A module bound in stock form (one flat shape, split evenly over the two contexts) on
    ``STOCK_BATCHES[rank]`` samples, STEPS plain SGD steps on ``stock_batch(rank, step)``:
    records ``rescale_grad`` and the final parameters.
``bn-store``, ``bn-local``, ``bn-force``
    A net with BatchNorm, every worker's parameters and auxiliary states drawn from its own
    seed; STEPS momentum-SGD steps as ``train``, updating on the store (``bn-store``), on
    the workers with ``MXNET_UPDATE_ON_KVSTORE=0`` (``bn-local``), or on the store after a
    first ``init_optimizer`` and a second with ``force_init=True`` and another learning rate
    (``bn-force``); records ``rescale_grad``, the parameters at the end, and what every
    device holds (``device<d>_<name>``: parameters and auxiliary states) after step 1 and at
    the end.
``fit``
    ``fit(kvstore='horovod')`` for two epochs over a ``PerDeviceIter`` that each worker
    reads its part of (``num_parts``, ``part_index``), with ``horovod.do_checkpoint``:
    records the final parameters (the test lists the checkpoint files each rank wrote).
"""

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    # tests/ for nets, and the checkout, so that the workers run the code under test.
    _HERE = Path(__file__).resolve()
    sys.path[:0] = [str(_HERE.parents[1]), str(_HERE.parents[2])]

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from nets import bound_module, conv_net, device_batch, fixed_params, random_batch  # noqa: E402

import mxpatch_bind  # noqa: E402

# Per worker, per device: (batch, channels, height, width). Three workers at most.
SHARDS = [[(1, 3, 12, 12), (2, 3, 16, 10)],
          [(3, 3, 10, 14), (1, 3, 8, 8)],
          [(2, 3, 14, 8), (1, 3, 12, 10)]]
OPTIMIZER_PARAMS = {"learning_rate": 0.1, "momentum": 0.9}
GIVEN_RESCALE = 0.25
# fit: a 12-batch epoch of 2 devices x 2 images, two image sizes; each worker reads its part.
FIT_SAMPLES = 48
FIT_SIZES = [(12, 12), (10, 14)]


# stock: every worker's flat batch (the two contexts take half each).
STOCK_BATCHES = [2, 4]
STOCK_IMAGE = (3, 10, 12)


def stock_batch(worker, step):
    return random_batch((STOCK_BATCHES[worker],) + STOCK_IMAGE, seed=1000 + 10 * step + worker)


def shards(workers):
    return SHARDS[:workers]


def initial_params(seed=0):
    return fixed_params(conv_net(), SHARDS[0][0], seed=seed)


def shard_batch(worker, device, step):
    """(data, label) of one device of one worker at one step, the same in every process."""
    return random_batch(SHARDS[worker][device], seed=100 * step + 10 * worker + device)


def fit_samples():
    """The images and labels of the fit epoch."""
    rng = np.random.RandomState(7)
    images = [rng.uniform(-1, 1, (3,) + FIT_SIZES[index % 2]).astype(np.float32)
              for index in range(FIT_SAMPLES)]
    return images, rng.randint(0, 3, FIT_SAMPLES).astype(np.float32)


def fit_iter(num_parts=1, part_index=0):
    """The fit epoch, or one worker's part of it."""
    from mxpatch_bind import PerDeviceIter

    images, labels = fit_samples()
    return PerDeviceIter(images, labels, num_devices=2, batch_per_device=2,
                         num_parts=num_parts, part_index=part_index)


def _arrays(prefix, named):
    return {prefix + name: array.asnumpy() for name, array in named.items()}


def train(mode, steps, out_dir, rank, workers):
    # Rank 1 starts elsewhere: the store's init must hand it rank 0's parameters.
    mod = bound_module(conv_net(), SHARDS[rank], initial_params(seed=rank % 2))
    optimizer_params = dict(OPTIMIZER_PARAMS)
    optimizer, kvstore = "sgd", "horovod"
    if mode == "given-rescale":
        optimizer_params["rescale_grad"] = GIVEN_RESCALE
    if mode == "distributed-optimizer":
        import horovod.mxnet as hvd
        hvd.init()
        optimizer = hvd.DistributedOptimizer(mx.optimizer.create("sgd", **optimizer_params))
        optimizer_params, kvstore = {}, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                           optimizer_params=optimizer_params)
    record = {"warnings": np.array([str(w.message) for w in caught
                                    if issubclass(w.category, RuntimeWarning)] or [""]),
              "rescale_grad": mod._optimizer.rescale_grad}
    if mode == "distributed-optimizer":
        return record
    store = mod._kvstore
    record.update(type=store.type, rank=store.rank, num_workers=store.num_workers,
                  class_name=type(store).__name__)
    for step in range(steps):
        pairs = [shard_batch(rank, device, step) for device in range(len(SHARDS[rank]))]
        mod.forward_backward(device_batch(pairs))
        mod.update()
        if step == 0:
            record.update(_arrays("after1_", mod.get_params()[0]))
    record.update(_arrays("final_", mod.get_params()[0]))
    states = Path(out_dir) / ("states%d" % rank)
    mod.save_optimizer_states(str(states))
    record["states"] = np.frombuffer(states.read_bytes(), dtype=np.uint8)
    return record


BN_LEARNING_RATE = 0.2  # bn-force: the forced init's; the first init uses OPTIMIZER_PARAMS


def bn_initial_params(seed=0):
    return fixed_params(conv_net(batch_norm=True), SHARDS[0][0], seed=seed)


def _device_arrays(prefix, mod):
    """Every device's parameters and auxiliary states, as ``<prefix>device<d>_<name>``."""
    group = mod._exec_group
    named = list(zip(group.param_names, group.param_arrays))
    named += list(zip(mod._aux_names, group.aux_arrays))
    return {f"{prefix}device{device}_{name}": array.asnumpy()
            for name, devices in named for device, array in enumerate(devices)}


def batch_norm(mode, steps, rank):
    # Every rank starts from its own parameters and moving statistics.
    mod = bound_module(conv_net(batch_norm=True), SHARDS[rank], bn_initial_params(seed=rank))
    if mode == "bn-local":
        os.environ["MXNET_UPDATE_ON_KVSTORE"] = "0"
    mod.init_optimizer(kvstore="horovod", optimizer="sgd", optimizer_params=OPTIMIZER_PARAMS)
    if mode == "bn-force":
        mod.init_optimizer(kvstore="horovod", optimizer="sgd", force_init=True,
                           optimizer_params=dict(OPTIMIZER_PARAMS,
                                                 learning_rate=BN_LEARNING_RATE))
    record = {"rescale_grad": mod._optimizer.rescale_grad,
              "learning_rate": mod._optimizer.lr,
              "update_on_kvstore": mod._update_on_kvstore}
    for step in range(steps):
        pairs = [shard_batch(rank, device, step) for device in range(len(SHARDS[rank]))]
        mod.forward_backward(device_batch(pairs))
        mod.update()
        if step == 0:
            record.update(_device_arrays("after1_", mod))
    record.update(_device_arrays("final_", mod))
    record.update(_arrays("params_", mod.get_params()[0]))
    return record


def stock(steps, rank):
    data, label = stock_batch(rank, 0)
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", data.shape)], [("softmax_label", label.shape)])
    args, aux = initial_params()
    mod.init_params(arg_params=args, aux_params=aux)
    mod.init_optimizer(kvstore="horovod", optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1})
    for step in range(steps):
        data, label = stock_batch(rank, step)
        mod.forward_backward(mx.io.DataBatch([data], [label]))
        mod.update()
    record = _arrays("final_", mod.get_params()[0])
    record.update(rescale_grad=mod._optimizer.rescale_grad)
    return record


def fit(out_dir, rank, workers):
    from mxpatch_bind.horovod import do_checkpoint

    train_iter = fit_iter(num_parts=workers, part_index=rank)
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    args, aux = initial_params()
    prefix = str(Path(out_dir) / ("rank%d" % rank))
    mod.fit(train_iter, num_epoch=2, kvstore="horovod", optimizer="sgd",
            optimizer_params=OPTIMIZER_PARAMS, arg_params=args, aux_params=aux,
            epoch_end_callback=do_checkpoint(prefix))
    record = _arrays("final_", mod.get_params()[0])
    record.update(rescale_grad=mod._optimizer.rescale_grad, rank=mod._kvstore.rank,
                  batches=train_iter.num_batches)
    return record


def main(mode, steps, out_dir):
    # MXNet 1.x's own 'horovod', before install(): a native store of one worker.
    native_workers = mx.kv.create("horovod").num_workers
    mxpatch_bind.install()
    rank, workers = int(os.environ["HOROVOD_RANK"]), int(os.environ["HOROVOD_SIZE"])
    if mode == "fit":
        record = fit(out_dir, rank, workers)
    elif mode == "stock":
        record = stock(int(steps), rank)
    elif mode.startswith("bn-"):
        record = batch_norm(mode, int(steps), rank)
    else:
        record = train(mode, int(steps), out_dir, rank, workers)
    record["native_workers"] = native_workers
    np.savez(str(Path(out_dir) / ("worker%d.npz" % rank)), **record)
    print("worker %d of %d: %s done" % (rank, workers, mode), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
