"""Stock workflows (fit, score, predict, iter_predict) on per-device shapes, and the example."""

import logging
import os
import subprocess
import sys
import warnings

import mxnet as mx
import numpy as np
import pytest
from synthetic import AnchorStyleLoader, bar_images, bar_net

import mxpatch_bind
from mxpatch_bind import PerDeviceIter
from paths import REPO

REPO = str(REPO)
SGD = {"learning_rate": 0.1, "momentum": 0.9}


def per_device_module(symbol, contexts, data_iter, for_training=True):
    """A module bound per device to ``data_iter``'s first batch inside ``patched()``."""
    mod = mx.mod.Module(symbol, context=contexts)
    with mxpatch_bind.patched():
        mod.bind(data_iter.provide_data, data_iter.provide_label, for_training=for_training)
    return mod


def accuracy(mod, data_iter):
    return dict(mod.score(data_iter, "acc"))["accuracy"]


def is_per_device(mod):
    return isinstance(mod.data_shapes[0], list)


@pytest.fixture(scope="module")
def bar_task():
    """Training and held-out images of the bar task (sizes 8..20 on each side)."""
    return bar_images(160, seed=0), bar_images(96, seed=1)


def trained_by_fit(contexts, train_iter, held_out, **fit_kwargs):
    """Bind, initialise and score an untrained module, then ``fit`` it for 4 epochs."""
    mx.random.seed(0)
    mod = per_device_module(bar_net(), contexts, train_iter)
    mod.init_params(mx.init.Xavier(magnitude=2))
    before = accuracy(mod, held_out)
    with mxpatch_bind.patched(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Parameters already initialized")  # fit's init_params
        mod.fit(train_iter, eval_metric="acc", num_epoch=4, optimizer_params=SGD, **fit_kwargs)
    return mod, before


def test_fit_with_a_per_device_iter_learns_a_variable_size_task(contexts, bar_task, tmp_path,
                                                                caplog):
    (images, labels), (test_images, test_labels) = bar_task
    train_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=4, shuffle=True)
    held_out = PerDeviceIter(test_images, test_labels, num_devices=2, batch_per_device=4)
    prefix = str(tmp_path / "bars")
    caplog.set_level(logging.INFO)

    mod, before = trained_by_fit(
        contexts, train_iter, held_out, eval_data=held_out,
        epoch_end_callback=mx.callback.do_checkpoint(prefix),
        batch_end_callback=mx.callback.Speedometer(train_iter.batch_size, frequent=5))

    assert before < 0.6
    assert accuracy(mod, held_out) >= 0.9
    assert is_per_device(mod)
    assert sorted(os.listdir(tmp_path)) == ["bars-%04d.params" % epoch for epoch in (1, 2, 3, 4)
                                            ] + ["bars-symbol.json"]
    assert "Speed:" in caplog.text and "Validation-accuracy" in caplog.text


def test_fit_with_a_deformable_convnets_style_loader_learns_the_task(contexts, bar_task):
    (images, labels), (test_images, test_labels) = bar_task
    loader = AnchorStyleLoader(images, labels, per_device=4)
    held_out = PerDeviceIter(test_images, test_labels, num_devices=2, batch_per_device=4)
    assert isinstance(loader.provide_data[0][0], tuple)  # plain tuples, as the fork's loader

    mod, before = trained_by_fit(contexts, loader, held_out, eval_data=held_out)

    assert before < 0.6
    assert accuracy(mod, held_out) >= 0.9


def test_fit_on_a_module_bound_inside_patched_keeps_training_after_the_block(contexts, bar_task):
    (images, labels), (test_images, test_labels) = bar_task
    train_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=4, shuffle=True)
    held_out = PerDeviceIter(test_images, test_labels, num_devices=2, batch_per_device=4)
    mx.random.seed(0)
    mod = per_device_module(bar_net(), contexts, train_iter)
    group = mod._exec_group
    assert not mxpatch_bind.is_installed()

    mod.fit(train_iter, eval_metric="acc", num_epoch=4, initializer=mx.init.Xavier(magnitude=2),
            optimizer_params=SGD)

    assert accuracy(mod, held_out) >= 0.9
    assert mod._exec_group is group and is_per_device(mod)


# ----------------------------------------------------------------------------- inference
@pytest.fixture(scope="module")
def trained_module():
    """A per-device module with trained bar-task parameters (bound for training, as after fit)."""
    images, labels = bar_images(96, seed=2)
    train_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=4, shuffle=True)
    mx.random.seed(0)
    mod = per_device_module(bar_net(), [mx.cpu(0), mx.cpu(1)], train_iter)
    mod.fit(train_iter, num_epoch=2, initializer=mx.init.Xavier(magnitude=2),
            optimizer_params=SGD)
    return mod


def one_context_outputs(symbol, params, arrays):
    """Stock MXNet on cpu(0): the outputs for each array, one forward each, stacked."""
    ref = mx.mod.Module(symbol, context=mx.cpu(0))
    ref.bind([("data", arrays[0].shape)], [("softmax_label", (arrays[0].shape[0],))],
             for_training=False)
    ref.set_params(*params)
    outputs = []
    for array in arrays:
        label = mx.nd.zeros((array.shape[0],))
        ref.forward(mx.io.DataBatch([array], [label]), is_train=False)  # stock forward reshapes
        outputs.append(ref.get_outputs()[0].asnumpy())
    return np.concatenate(outputs)


def device_arrays(data_iter):
    """Every device's data array of one epoch, in predict's row order, and the pads."""
    data_iter.reset()
    arrays, pads = [], []
    for batch in data_iter:
        arrays.extend(device[0] for device in batch.data)
        pads.append(batch.pad)
    return arrays, pads


def without_filler(rows, pads):
    per_batch = np.split(rows, len(pads))
    return np.concatenate([part[:len(part) - pad] for part, pad in zip(per_batch, pads)])


def test_predict_rows_equal_a_stock_one_context_module_on_the_same_arrays(trained_module):
    images, labels = bar_images(21, seed=3)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=3)

    predicted = trained_module.predict(data_iter).asnumpy()

    arrays, pads = device_arrays(data_iter)
    reference = one_context_outputs(bar_net(), trained_module.get_params(), arrays)
    assert pads[-1] > 0
    assert predicted.shape == (21, 3)
    assert np.array_equal(predicted, without_filler(reference, pads))


def sum_pool_net():
    """Linear 1x1 conv, ReLU, global sum: zero padding adds nothing, so each row depends on
    its own sample only and can be checked against that sample alone."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=4, kernel=(1, 1), no_bias=True,
                             name="conv")
    net = mx.sym.Pooling(mx.sym.relu(net), global_pool=True, pool_type="sum", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_predict_rows_map_back_to_dataset_indices_through_sample_order(contexts):
    images, labels = bar_images(13, seed=4)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=2, shuffle=True)
    mod = per_device_module(sum_pool_net(), contexts, data_iter, for_training=False)
    mod.init_params(mx.init.Xavier())

    predicted = mod.predict(data_iter).asnumpy()

    order = data_iter.sample_order
    assert sorted(order.tolist()) == list(range(13)) and order.tolist() != list(range(13))
    alone = one_context_outputs(sum_pool_net(), mod.get_params(),
                                [mx.nd.array(image[None]) for image in images])
    np.testing.assert_allclose(predicted, alone[order], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predicted[np.argsort(order)], alone, rtol=1e-5, atol=1e-6)


def test_predict_drops_the_filler_rows_of_the_last_batch(trained_module):
    images, labels = bar_images(13, seed=5)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=2)

    predicted = trained_module.predict(data_iter)

    assert data_iter.num_batches == 4 and predicted.shape == (13, 3)


def test_predict_without_merging_gives_each_batchs_outputs_without_filler(trained_module):
    images, labels = bar_images(13, seed=5)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=2)
    merged = trained_module.predict(data_iter).asnumpy()

    per_batch = trained_module.predict(data_iter, merge_batches=False)

    assert [[out.shape for out in outputs] for outputs in per_batch] == [
        [(4, 3)], [(4, 3)], [(4, 3)], [(1, 3)]]
    assert np.array_equal(np.concatenate([outputs[0].asnumpy() for outputs in per_batch]), merged)


def test_iter_predict_yields_each_batch_without_its_filler(trained_module):
    images, labels = bar_images(13, seed=5)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=2)
    merged = trained_module.predict(data_iter).asnumpy()

    seen = [(outputs[0].asnumpy(), nbatch, batch.pad)
            for outputs, nbatch, batch in trained_module.iter_predict(data_iter)]

    assert [(rows.shape[0], nbatch, pad) for rows, nbatch, pad in seen] == [
        (4, 0, 0), (4, 1, 0), (4, 2, 0), (1, 3, 3)]
    assert np.array_equal(np.concatenate([rows for rows, _, _ in seen]), merged)


def test_score_equals_the_accuracy_of_predict_against_the_labels(trained_module):
    images, labels = bar_images(24, seed=6)
    data_iter = PerDeviceIter(images, labels, num_devices=2, batch_per_device=3, shuffle=True)

    predicted = trained_module.predict(data_iter).asnumpy().argmax(axis=1)
    expected = float(np.mean(predicted == np.asarray(labels)[data_iter.sample_order]))

    assert accuracy(trained_module, data_iter) == pytest.approx(expected)
    assert is_per_device(trained_module)


# ----------------------------------------------------------------------------- migration example
def run_example(*args):
    script = os.path.join(REPO, "examples", "migrate_from_deformable_convnets.py")
    return subprocess.run([sys.executable, script] + list(args), capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow  # the example runs as a child Python
def test_the_deformable_convnets_migration_example_trains_and_resumes(tmp_path):
    prefix = str(tmp_path / "rfcn")

    first = run_example("--epochs", "1", "--images", "24", "--prefix", prefix)
    resumed = run_example("--epochs", "1", "--begin-epoch", "1", "--images", "24",
                          "--prefix", prefix)

    assert first.returncode == 0, first.stdout + first.stderr
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Epoch[0] Validation-ClsAcc" in first.stderr
    assert "Epoch[1] Validation-ClsAcc" in resumed.stderr
    assert "held-out accuracy after epoch 2" in resumed.stdout
    assert sorted(os.listdir(str(tmp_path))) == [
        "rfcn-0001.params", "rfcn-0001.states", "rfcn-0002.params", "rfcn-0002.states",
        "rfcn-symbol.json"]
