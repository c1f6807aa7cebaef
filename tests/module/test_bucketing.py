"""BucketingModule with per-device shapes: default bucket, switch_bucket, shared parameters, fit."""

import mxnet as mx
import numpy as np
from nets import device_batch, device_pairs, per_device_spec
from synthetic import bar_images, data_pointer

import mxpatch_bind
from mxpatch_bind import PerDeviceIter

SHAPES = [(2, 1, 12, 16), (3, 1, 18, 10)]
OTHER_SHAPES = [(1, 1, 9, 14), (2, 1, 16, 16)]


def scaled_net(scale):
    """The bar net with its class scores multiplied by ``scale``: same weights, other output."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=8, kernel=(3, 3), pad=(1, 1),
                             name="conv")
    net = mx.sym.Pooling(mx.sym.relu(net), global_pool=True, pool_type="max", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")
    if scale != 1:
        net = net * scale
    return mx.sym.SoftmaxOutput(net, name="softmax")


def sym_gen(bucket_key):
    """Bucket key: an int scale of the class scores, or an image size class (a string)."""
    scale = bucket_key if isinstance(bucket_key, int) else 1
    return scaled_net(scale), ("data",), ("softmax_label",)


def bucket_batch(shapes, bucket_key, seed=0):
    """A per-device batch for ``bucket_key``, with its provide_data and provide_label."""
    data, labels = per_device_spec(shapes)
    return device_batch(device_pairs(shapes, seed), bucket_key=bucket_key, provide_data=data,
                        provide_label=labels)


def bucketing_module(contexts, default_key=1, shapes=SHAPES, optimizer=True):
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=default_key, context=contexts)
    with mxpatch_bind.patched():
        mod.bind(*per_device_spec(shapes))
    mod.init_params(mx.init.Xavier(magnitude=2))
    if optimizer:
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod


def device_outputs(mod):
    return [out.asnumpy() for out in mod.get_outputs(merge_multi_context=False)[0]]


def data_shapes(module):
    return [[desc.shape for desc in device] for device in module.data_shapes]


def squared_and_normalised(probabilities):
    """softmax(2 z) from softmax(z): the output a scale-2 bucket gives with the same weights."""
    squared = probabilities.astype(np.float64) ** 2
    return squared / squared.sum(axis=1, keepdims=True)


def test_the_default_bucket_is_bound_per_device(contexts):
    mod = bucketing_module(contexts)

    assert isinstance(mod, mx.mod.BucketingModule)
    assert data_shapes(mod) == [[SHAPES[0]], [SHAPES[1]]]
    assert [[d.shape for d in device] for device in mod.label_shapes] == [[(2,)], [(3,)]]
    assert [e.arg_dict["data"].shape for e in mod._curr_module._exec_group.execs] == SHAPES


def test_switch_bucket_binds_a_new_key_per_device_on_the_shared_parameters(contexts):
    mod = bucketing_module(contexts)
    batch = bucket_batch(OTHER_SHAPES, bucket_key=1)
    mod.forward(batch, is_train=False)
    scale_one = device_outputs(mod)

    with mxpatch_bind.patched():
        mod.switch_bucket(2, *per_device_spec(OTHER_SHAPES))
    mod.forward(mx.io.DataBatch(batch.data, batch.label, bucket_key=2), is_train=False)

    assert sorted(mod._buckets) == [1, 2] and mod._curr_module is mod._buckets[2]
    assert data_shapes(mod) == [[OTHER_SHAPES[0]], [OTHER_SHAPES[1]]]
    assert mod._buckets[2]._arg_params is mod._buckets[1]._arg_params
    for got, one in zip(device_outputs(mod), scale_one):
        np.testing.assert_allclose(got, squared_and_normalised(one), rtol=1e-4, atol=1e-6)


def test_training_one_bucket_updates_the_weights_every_bucket_computes_with(contexts):
    mod = bucketing_module(contexts)
    probe = bucket_batch(SHAPES, bucket_key=1, seed=1)
    mod.forward(bucket_batch(OTHER_SHAPES, bucket_key=2), is_train=False)  # creates bucket 2
    mod.forward(probe, is_train=False)
    before = device_outputs(mod)

    for step in range(3):
        mod.forward_backward(bucket_batch(OTHER_SHAPES, bucket_key=2, seed=10 + step))
        mod.update()
    mod.forward(probe, is_train=False)

    weights = [[data_pointer(array) for array in module._exec_group.param_arrays[0]]
               for module in mod._buckets.values()]
    assert weights[0] == weights[1]  # one weight array per device, shared by the buckets
    assert not np.allclose(device_outputs(mod)[0], before[0])


def test_forward_with_a_new_key_creates_the_bucket_from_the_batchs_per_device_shapes(contexts):
    mod = bucketing_module(contexts)

    with mxpatch_bind.patched():
        mod.forward(bucket_batch(OTHER_SHAPES, bucket_key=3), is_train=True)
    mod.backward()
    mod.update()

    assert data_shapes(mod._buckets[3]) == [[OTHER_SHAPES[0]], [OTHER_SHAPES[1]]]
    assert mod._buckets[3]._exec_group.batch_size == 3


def test_a_monitor_installed_before_a_new_bucket_also_watches_it(contexts):
    mod = bucketing_module(contexts)
    monitor = mx.monitor.Monitor(1, pattern="conv.*")
    mod.install_monitor(monitor)

    with mxpatch_bind.patched():
        mod.switch_bucket(2, *per_device_spec(OTHER_SHAPES))

    assert len(monitor.exes) == 2 * len(contexts)


def test_a_bucketing_module_bound_inside_patched_keeps_working_after_the_block(contexts):
    mod = bucketing_module(contexts)
    mod.forward_backward(bucket_batch(OTHER_SHAPES, bucket_key=2))
    mod.update()
    assert not mxpatch_bind.is_installed()

    mod.forward_backward(bucket_batch(SHAPES, bucket_key=1, seed=3))  # known key, new shapes
    mod.update()
    mod.forward_backward(bucket_batch([(1, 1, 7, 7), (4, 1, 10, 6)], bucket_key=4))  # new key
    mod.update()

    assert sorted(mod._buckets) == [1, 2, 4]
    assert data_shapes(mod._buckets[4]) == [[(1, 1, 7, 7)], [(4, 1, 10, 6)]]
    assert mod._buckets[4]._arg_params is mod._buckets[1]._arg_params
    assert [out.shape for out in mod.get_outputs(merge_multi_context=False)[0]] == [
        (1, 3), (4, 3)]
    assert mod.get_outputs()[0].shape == (5, 3)


class SizeClassIter(PerDeviceIter):
    """PerDeviceIter whose batches carry a bucket key: the batch's image size class."""

    def next(self):
        batch = super().next()
        largest = max(desc.shape[2] * desc.shape[3] for device in batch.provide_data
                      for desc in device)
        batch.bucket_key = "small" if largest <= 14 * 14 else "large"
        return batch


def test_fit_with_image_size_class_buckets_learns_the_task(contexts):
    (images, labels), (test_images, test_labels) = bar_images(160, seed=0), bar_images(96, seed=1)
    train_iter = SizeClassIter(images, labels, num_devices=2, batch_per_device=4, shuffle=True)
    held_out = SizeClassIter(test_images, test_labels, num_devices=2, batch_per_device=4)
    mx.random.seed(0)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key="large", context=contexts)

    with mxpatch_bind.patched():
        mod.fit(train_iter, eval_data=held_out, eval_metric="acc", num_epoch=4,
                initializer=mx.init.Xavier(magnitude=2),
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9})

    assert sorted(mod._buckets) == ["large", "small"]
    assert dict(mod.score(held_out, "acc"))["accuracy"] >= 0.9
    assert all(isinstance(m.data_shapes[0], list) for m in mod._buckets.values())
