"""save_checkpoint / Module.load / load_optimizer_states round trips on per-device modules."""

import mxnet as mx
import numpy as np
import pytest
from nets import per_device_spec
from synthetic import bar_images, bar_net, pad_to

import mxpatch_bind

SHAPES = [(2, 1, 12, 16), (3, 1, 18, 10)]
MOMENTUM_SGD = {"learning_rate": 0.05, "momentum": 0.9}


def batches(count, seed=0):
    """Per-device batches of bar images whose shapes change from batch to batch."""
    rng = np.random.RandomState(seed)
    images, labels = bar_images(count * 5, seed=seed)
    out = []
    for step in range(count):
        sizes = [int(rng.randint(1, 4)), 5]
        sizes[1] -= sizes[0]
        data, label, start = [], [], step * 5
        for size in sizes:
            chunk = images[start:start + size]
            height, width = (max(image.shape[axis] for image in chunk) for axis in (1, 2))
            data.append([mx.nd.array(pad_to(chunk, height, width))])
            label.append([mx.nd.array(labels[start:start + size])])
            start += size
        out.append(mx.io.DataBatch(data=data, label=label))
    return out


def train(mod, steps):
    for batch in steps:
        mod.forward_backward(batch)
        mod.update()


def new_module(contexts, symbol=None):
    mod = mx.mod.Module(symbol if symbol is not None else bar_net(), context=contexts)
    with mxpatch_bind.patched():
        mod.bind(*per_device_spec(SHAPES))
    return mod


def trained(contexts, kvstore, steps):
    mx.random.seed(0)
    mod = new_module(contexts)
    mod.init_params(mx.init.Xavier(magnitude=2))
    mod.init_optimizer(kvstore=kvstore, optimizer_params=MOMENTUM_SGD)
    train(mod, steps)
    return mod


def assert_same_params(mod, other):
    args, aux = mod.get_params()
    other_args, other_aux = other.get_params()
    for name in args:
        assert np.array_equal(args[name].asnumpy(), other_args[name].asnumpy()), name
    for name in aux:
        assert np.array_equal(aux[name].asnumpy(), other_aux[name].asnumpy()), name


# Updated on the kvstore, or by the module's updater after the kvstore sums the gradients.
# (kvstore=None lets each device step with its own gradient, and a checkpoint stores their
# average, so no round trip can continue it exactly, stock or per device.)
@pytest.mark.parametrize("update_on_kvstore", ["1", "0"], ids=["on_kvstore", "by_updater"])
def test_loading_a_checkpoint_with_optimizer_states_continues_training_exactly(
        contexts, tmp_path, monkeypatch, update_on_kvstore):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", update_on_kvstore)
    kvstore = "local"
    steps = batches(12)
    prefix = str(tmp_path / "bars")
    uninterrupted = trained(contexts, kvstore, steps[:6])
    uninterrupted.save_checkpoint(prefix, 6, save_optimizer_states=True)
    train(uninterrupted, steps[6:])
    assert uninterrupted._update_on_kvstore == (update_on_kvstore == "1")

    resumed = mx.mod.Module.load(prefix, 6, load_optimizer_states=True, context=contexts)
    with mxpatch_bind.patched():
        resumed.bind(*per_device_spec(SHAPES))
    resumed.init_optimizer(kvstore=kvstore, optimizer_params=MOMENTUM_SGD)
    train(resumed, steps[6:])

    assert isinstance(resumed.data_shapes[0], list)
    assert_same_params(resumed, uninterrupted)


def test_load_optimizer_states_after_init_optimizer_continues_training_exactly(contexts,
                                                                                tmp_path):
    steps = batches(10, seed=1)
    prefix = str(tmp_path / "bars")
    uninterrupted = trained(contexts, "local", steps[:5])
    uninterrupted.save_checkpoint(prefix, 5, save_optimizer_states=True)
    train(uninterrupted, steps[5:])

    _, args, aux = mx.model.load_checkpoint(prefix, 5)
    resumed = new_module(contexts)
    resumed.set_params(args, aux)
    resumed.init_optimizer(optimizer_params=MOMENTUM_SGD)
    resumed.load_optimizer_states("%s-%04d.states" % (prefix, 5))
    train(resumed, steps[5:])

    assert_same_params(resumed, uninterrupted)


def test_without_the_optimizer_states_the_momentum_restarts_and_training_differs(contexts,
                                                                                  tmp_path):
    steps = batches(8, seed=2)
    prefix = str(tmp_path / "bars")
    uninterrupted = trained(contexts, "local", steps[:4])
    uninterrupted.save_checkpoint(prefix, 4)
    train(uninterrupted, steps[4:])

    resumed = mx.mod.Module.load(prefix, 4, context=contexts)
    with mxpatch_bind.patched():
        resumed.bind(*per_device_spec(SHAPES))
    resumed.init_optimizer(optimizer_params=MOMENTUM_SGD)
    train(resumed, steps[4:])

    with pytest.raises(AssertionError):
        assert_same_params(resumed, uninterrupted)


def test_a_checkpoint_from_fit_loads_into_a_per_device_module_that_predicts_the_same(
        contexts, tmp_path):
    images, labels = bar_images(40, seed=3)
    train_iter = mxpatch_bind.PerDeviceIter(images, labels, num_devices=2, batch_per_device=3)
    prefix = str(tmp_path / "bars")
    mod = mx.mod.Module(bar_net(), context=contexts)
    with mxpatch_bind.patched():
        mod.fit(train_iter, num_epoch=2, initializer=mx.init.Xavier(magnitude=2),
                optimizer_params=MOMENTUM_SGD,
                epoch_end_callback=mx.callback.do_checkpoint(prefix))
    expected = mod.predict(train_iter).asnumpy()

    loaded = mx.mod.Module.load(prefix, 2, context=contexts)
    with mxpatch_bind.patched():
        loaded.bind(train_iter.provide_data, train_iter.provide_label, for_training=False)

    assert np.array_equal(loaded.predict(train_iter).asnumpy(), expected)
