"""What the family's testers hand a module: labels absent per device, and a short last batch.

The Deformable-ConvNets family's ``TestLoader.provide_label`` gives one ``None`` per device,
and its last batch holds fewer device entries than contexts when the image count is not a
multiple of the device count (``docs/family.rst``). For inference such a batch runs the first
devices and every output, merged or not, comes from those devices alone; in training it is
refused, since the idle devices would have no samples. References: stock one-context modules.
"""

import mxnet as mx
import numpy as np
import pytest
from nets import (
    assert_same_state,
    conv_net,
    device_contexts,
    fixed_params,
    module_state,
    random_batch,
    single_device_reference,
)

import mxpatch_bind

SYMBOL = conv_net()
# The family's test symbols have no label inputs: the classifier's probabilities alone.
TEST_SYMBOL = mx.sym.softmax(SYMBOL.get_internals()["fc_output"])
SHAPES = [(2, 3, 8, 10), (1, 3, 6, 6), (3, 3, 7, 5)]
PARAMS = fixed_params(SYMBOL, SHAPES[0])


def module(num_devices, for_training=False):
    """A Predictor-like module (label-free symbol, provide_label one None per device), or a
    labelled training module."""
    spec = [[("data", s)] for s in SHAPES[:num_devices]]
    if for_training:
        mod = mx.mod.Module(SYMBOL, context=device_contexts(num_devices))
        mxpatch_bind.bind(mod, spec, [[("softmax_label", (s[0],))] for s in SHAPES[:num_devices]])
    else:
        mod = mx.mod.Module(TEST_SYMBOL, label_names=None, context=device_contexts(num_devices))
        mxpatch_bind.bind(mod, spec, [None] * num_devices, for_training=False)
    mod.set_params(*PARAMS)
    return mod


def loader_batch(shapes, seed=0, labels=False):
    """A batch as the family's TestLoader builds it: provide_label one None per device."""
    pairs = [random_batch(shape, seed=seed + i) for i, shape in enumerate(shapes)]
    return mx.io.DataBatch(data=[[d] for d, _ in pairs],
                           label=[[lab] for _, lab in pairs] if labels else [None] * len(pairs),
                           pad=0, index=0,
                           provide_data=[[("data", d.shape)] for d, _ in pairs],
                           provide_label=([[("softmax_label", lab.shape)] for _, lab in pairs]
                                          if labels else [None] * len(pairs)))


def reference_outputs(batch):
    return [single_device_reference(TEST_SYMBOL, PARAMS, arrays[0], None,
                                    for_training=False)[0][0]
            for arrays in batch.data]


def labelled_symbol_reference(data):
    """Stock MXNet on one context: SYMBOL (with its label input) bound without labels."""
    mod = mx.mod.Module(SYMBOL, context=device_contexts(1)[0])
    mod.bind([("data", data.shape)], None, for_training=False)
    mod.set_params(*PARAMS)
    mod.forward(mx.io.DataBatch([data], None), is_train=False)
    return mod.get_outputs()[0].asnumpy()


@pytest.mark.parametrize("provide_label", [[None, None], None, []])
def test_a_provide_label_of_none_per_device_runs_as_a_batch_without_labels(provide_label):
    mod = module(2)
    batch = loader_batch(SHAPES[:2], seed=3)
    batch.provide_label = provide_label
    mod.forward(batch)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    for out, ref in zip(outputs, reference_outputs(batch)):
        assert np.array_equal(out.asnumpy(), ref)


def test_labels_of_none_per_device_for_inference_keep_the_label_arrays_of_a_labelled_module():
    mod = module(2, for_training=True)
    before = [e.arg_dict["softmax_label"].asnumpy() for e in mod._exec_group.execs]
    mod.forward(loader_batch(SHAPES[:2], seed=4), is_train=False)
    after = [e.arg_dict["softmax_label"].asnumpy() for e in mod._exec_group.execs]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))


def test_labels_of_none_per_device_in_training_are_refused_naming_the_fix():
    # is_train=None on a module bound for training trains: the devices would train on the
    # labels left in their executors by an earlier batch.
    mod = module(2, for_training=True)
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.BatchError, match="the batch has no labels") as error:
        mod.forward(loader_batch(SHAPES[:2], seed=4))
    assert "is_train=False" in str(error.value) and "label=[[" in str(error.value)
    assert_same_state(before, module_state(mod))


@pytest.mark.parametrize("num_devices, num_given", [(2, 1), (3, 1), (3, 2)])
def test_a_short_batch_runs_the_first_devices_and_returns_only_their_outputs(num_devices,
                                                                             num_given):
    mod = module(num_devices)
    mod.forward(loader_batch(SHAPES[:num_devices], seed=0))  # a full batch first
    short = loader_batch([(1, 3, 9, 9), (2, 3, 5, 8)][:num_given], seed=20)
    mod.forward(short)
    per_device = mod.get_outputs(merge_multi_context=False)
    references = reference_outputs(short)
    assert len(per_device) == 1 and len(per_device[0]) == num_given
    for out, ref in zip(per_device[0], references):
        assert np.array_equal(out.asnumpy(), ref)
    merged = mod.get_outputs()[0].asnumpy()
    assert np.array_equal(merged, np.concatenate(references))


def test_a_full_batch_after_a_short_one_returns_every_device_again():
    mod = module(3)
    mod.forward(loader_batch([(1, 3, 9, 9)], seed=1))
    full = loader_batch(SHAPES, seed=2)
    mod.forward(full)
    per_device = mod.get_outputs(merge_multi_context=False)[0]
    assert len(per_device) == 3
    for out, ref in zip(per_device, reference_outputs(full)):
        assert np.array_equal(out.asnumpy(), ref)


def test_a_short_batch_leaves_the_idle_devices_executors_as_they_were():
    mod = module(3)
    idle = list(mod._exec_group.execs[1:])
    mod.forward(loader_batch([(2, 3, 5, 5)], seed=1))
    assert all(a is b for a, b in zip(mod._exec_group.execs[1:], idle))
    assert mod._exec_group.execs[0].arg_dict["data"].shape == (2, 3, 5, 5)


def test_a_short_batch_as_a_list_of_batches_runs_the_first_devices():
    mod = module(3)
    full = loader_batch([(1, 3, 9, 9), (2, 3, 5, 8)], seed=5)
    listed = [mx.io.DataBatch(data=arrays, label=None) for arrays in full.data]
    mod.forward(listed)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape for o in outputs] == [(1, 3), (2, 3)]
    for out, ref in zip(outputs, reference_outputs(full)):
        assert np.array_equal(out.asnumpy(), ref)


def test_a_short_batch_on_a_module_bound_in_stock_form_runs_per_device():
    mod = mx.mod.Module(TEST_SYMBOL, label_names=None, context=device_contexts(2))
    mod.bind([("data", (4, 3, 8, 8))], None, for_training=False)
    mod.set_params(*PARAMS)
    short = loader_batch([(1, 3, 6, 7)], seed=6)
    with mxpatch_bind.patched():
        mod.forward(short)
        out = mod.get_outputs()[0].asnumpy()
    assert np.array_equal(out, reference_outputs(short)[0])


def test_score_over_a_short_last_batch_counts_only_the_devices_that_ran():
    mod = module(3, for_training=True)
    short = loader_batch([(2, 3, 6, 6), (3, 3, 5, 5)], seed=7, labels=True)
    metric = mx.metric.Accuracy()
    mod.forward(short, is_train=False)
    mod.update_metric(metric, short.label)
    expected = mx.metric.Accuracy()
    for arrays, labels in zip(short.data, short.label):
        ref = single_device_reference(TEST_SYMBOL, PARAMS, arrays[0], None,
                                      for_training=False)[0]
        expected.update(labels, [mx.nd.array(ref[0])])
    assert metric.num_inst == expected.num_inst == 5
    assert metric.get() == expected.get()


@pytest.mark.parametrize("is_train", [True, None])
def test_a_short_batch_in_training_is_refused_and_leaves_the_module_as_it_was(is_train):
    mod = module(2, for_training=True)
    mod.init_optimizer()
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.BatchError, match="1 device entries but the module has 2 "
                       "contexts; a short batch runs for inference only") as error:
        mod.forward(loader_batch([(1, 3, 5, 5)], labels=True), is_train=is_train)
    assert "Drop the last batch" in str(error.value)
    assert_same_state(before, module_state(mod))


def test_a_short_batch_for_inference_on_a_module_bound_for_training_runs():
    mod = module(2, for_training=True)
    short = loader_batch([(1, 3, 5, 5)], seed=8, labels=True)
    mod.forward(short, is_train=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), reference_outputs(short)[0])


def test_backward_after_a_short_inference_batch_is_refused():
    mod = module(2, for_training=True)
    mod.forward(loader_batch([(1, 3, 5, 5)], labels=True), is_train=False)
    with pytest.raises(RuntimeError, match="backward after a short batch"):
        mod.backward()


def test_a_short_batch_on_the_group_itself_is_refused_for_training():
    mod = module(2, for_training=True)
    with pytest.raises(mxpatch_bind.BatchError, match="inference only"):
        mod._exec_group.forward(loader_batch([(1, 3, 5, 5)]), is_train=True)


def test_more_device_entries_than_contexts_are_still_refused():
    mod = module(2)
    with pytest.raises(mxpatch_bind.BatchError, match="3 device entries but the module has 2"):
        mod.forward(loader_batch(SHAPES))


def test_a_provide_data_with_fewer_entries_than_the_arrays_is_refused():
    mod = module(2)
    batch = loader_batch(SHAPES[:2])
    batch.provide_data = batch.provide_data[:1]
    with pytest.raises(mxpatch_bind.BatchError,
                       match="provide_data has 1 device entries but its arrays have 2"):
        mod.forward(batch)


def test_a_flat_provide_label_is_refused_with_a_label_example():
    mod = module(2, for_training=True)
    batch = loader_batch(SHAPES[:2], labels=True)
    batch.provide_label = [("softmax_label", (2,))]
    with pytest.raises(mxpatch_bind.BatchError) as error:
        mod.forward(batch)
    message = str(error.value)
    assert "provide_label" in message and "is flat" in message
    assert "[[('softmax_label', (2, ...))], [('softmax_label', (1, ...))]]" in message
    assert "'data'" not in message and "None for a device without them" in message


@pytest.mark.parametrize("provide_label", ["labels", 3, {"softmax_label": (2,)}])
def test_a_provide_label_that_is_no_list_is_refused_naming_it(provide_label):
    mod = module(2)
    batch = loader_batch(SHAPES[:2])
    batch.provide_label = provide_label
    with pytest.raises(mxpatch_bind.BatchError, match="provide_label is"):
        mod.forward(batch)


def test_labels_on_some_of_a_short_batchs_devices_are_refused():
    mod = module(3, for_training=True)
    batch = loader_batch([(1, 3, 5, 5), (2, 3, 5, 5)], labels=True)
    batch.label = [batch.label[0], None]
    batch.provide_label = [batch.provide_label[0], None]
    with pytest.raises(mxpatch_bind.BatchError, match="batch device 1 has no labels"):
        mod.forward(batch, is_train=False)


@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
def test_a_labelled_test_symbol_bound_without_labels_runs_images_of_every_size():
    # deeplab's tester: label_names ['softmax_label'], provide_label one None per device,
    # label [] and a short last batch; the label's shape follows each device's data.
    mod = mx.mod.Module(SYMBOL, context=device_contexts(3))
    mxpatch_bind.bind(mod, [[("data", s)] for s in SHAPES], [None] * 3, for_training=False)
    mod.set_params(*PARAMS)
    for shapes in ([(1, 3, 9, 7), (2, 3, 6, 6), (1, 3, 5, 8)], [(3, 3, 4, 4)]):
        batch = loader_batch(shapes, seed=len(shapes))
        batch.label = []
        mod.forward(batch)
        outputs = mod.get_outputs(merge_multi_context=False)[0]
        assert len(outputs) == len(shapes)
        for out, arrays in zip(outputs, batch.data):
            assert np.array_equal(out.asnumpy(), labelled_symbol_reference(arrays[0]))


@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
def test_an_unlabelled_batch_of_new_sizes_on_a_module_bound_with_labels_runs():
    mod = module(2, for_training=True)
    batch = loader_batch([(1, 3, 9, 7), (3, 3, 6, 6)], seed=9)
    mod.forward(batch, is_train=False)
    for out, arrays in zip(mod.get_outputs(merge_multi_context=False)[0], batch.data):
        assert np.array_equal(out.asnumpy(), labelled_symbol_reference(arrays[0]))


def test_a_short_batchs_metric_with_labels_for_every_context_is_refused_and_counts_nothing():
    mod = module(2, for_training=True)
    short = loader_batch([(1, 3, 5, 5)], seed=4, labels=True)
    mod.forward(short, is_train=False)
    both = loader_batch([(1, 3, 5, 5), (2, 3, 5, 5)], seed=4, labels=True)
    metric = mx.metric.Accuracy()
    with pytest.raises(ValueError, match="update_metric got labels for 2 devices but the last "
                                         "batch ran on 1"):
        mod.update_metric(metric, both.label)
    assert metric.num_inst == 0


def test_a_short_batchs_metric_from_merged_labels_is_refused_naming_the_form():
    mod = module(3, for_training=True)
    short = loader_batch([(2, 3, 6, 6), (3, 3, 5, 5)], seed=7, labels=True)
    mod.forward(short, is_train=False)
    merged = [mx.nd.concat(*[device[0] for device in short.label], dim=0)]
    with pytest.raises(ValueError, match=r"a short batch's metric needs one list of labels per "
                                         r"device that ran \(2\), not merged labels"):
        mod.update_metric(mx.metric.Accuracy(), merged)
