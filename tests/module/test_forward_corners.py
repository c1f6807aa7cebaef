"""Corners of the per-device forward that sample 16 of docs/mutation.rst found untested.

Each test pins what the code does where a hand-written fault passed the suite: a module bound
without labels trains on an unlabelled batch as stock does; an unlabelled batch for inference
at the bound shapes leaves the module as it is; a device's empty ``provide_data`` entry means
"none", as stock reads an empty field; a 0-d array is refused where no rank is known yet;
tuples of arrays are per-device lists too; stock's pre-sliced list is checked for the forward
it is (training or inference, however ``is_train`` is passed); the forward wrapper held from
the class's ``__dict__``; the executor group's own forward; a patched reshape's keywords.
References: stock one-context modules.
"""

import mxnet as mx
import numpy as np
import pytest
from nets import conv_net, fixed_params, random_batch

import mxpatch_bind

SHAPES = [(2, 3, 8, 8), (3, 3, 6, 6)]
SYMBOL = conv_net()
PARAMS = fixed_params(SYMBOL, SHAPES[0])


def per_device_module(labels=True):
    mod = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, [[("data", s)] for s in SHAPES],
                      [[("softmax_label", (s[0],))] for s in SHAPES] if labels else None)
    mod.set_params(*PARAMS)
    return mod


def arrays(seed=0):
    pairs = [random_batch(shape, seed=seed + i) for i, shape in enumerate(SHAPES)]
    return [[d] for d, _ in pairs], [[label] for _, label in pairs]


def stock_outputs(data, is_train):
    outputs = []
    for arrays_ in data:
        reference = mx.mod.Module(SYMBOL, context=mx.cpu(0))
        reference.bind([("data", arrays_[0].shape)], [("softmax_label", arrays_[0].shape[:1])],
                       for_training=is_train)
        reference.set_params(*PARAMS)
        reference.forward(mx.io.DataBatch(arrays_), is_train=is_train)
        outputs.append(reference.get_outputs()[0].asnumpy())
    return outputs


def test_a_module_bound_without_labels_trains_on_an_unlabelled_batch_as_stock_does():
    # No labels were bound, so none can be stale: what the module was bound for runs.
    mod = per_device_module(labels=False)
    data, _ = arrays()
    mod.forward(mx.io.DataBatch(data=data), is_train=True)
    for out, ref in zip(mod.get_outputs(merge_multi_context=False)[0], stock_outputs(data, True)):
        assert np.array_equal(out.asnumpy(), ref)


def test_an_unlabelled_inference_batch_at_the_bound_shapes_changes_nothing():
    mod = per_device_module()
    executors, labels = list(mod._exec_group.execs), repr(mod.label_shapes)
    data, _ = arrays()
    mod.forward(mx.io.DataBatch(data=data), is_train=False)
    assert all(a is b for a, b in zip(mod._exec_group.execs, executors))
    assert repr(mod.label_shapes) == labels


def test_an_empty_provide_data_entry_of_a_device_means_none_as_stock_reads_an_empty_field():
    mod = per_device_module()
    data, label = arrays()
    mod.forward(mx.io.DataBatch(data=data, label=label,
                                provide_data=[[("data", SHAPES[0])], []]), is_train=True)
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[s] for s in SHAPES]


def test_a_0_d_label_is_refused_where_the_module_knows_no_label_rank_yet():
    mod = per_device_module(labels=False)
    data, _ = arrays()
    with pytest.raises(mxpatch_bind.BatchError, match=r"given shape \(\); expected at least "
                                                      "one element on every axis"):
        mod.forward(mx.io.DataBatch(data=data, label=[[np.array(1.0)], [np.array(2.0)]]),
                    is_train=True)


def test_a_batch_whose_devices_hold_tuples_of_arrays_is_per_device():
    mod = per_device_module()
    data, label = arrays(seed=3)
    mod.forward(mx.io.DataBatch(data=[tuple(d) for d in data], label=[tuple(lab) for lab in label]),
                is_train=False)
    for out, ref in zip(mod.get_outputs(merge_multi_context=False)[0],
                        stock_outputs(data, False)):
        assert np.array_equal(out.asnumpy(), ref)


def stock_bound_for_training():
    mod = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    mod.set_params(*PARAMS)
    return mod


@pytest.mark.parametrize("call", [
    lambda module, batch: module.forward(batch, False),
    lambda module, batch: module.forward(batch, is_train=False),
], ids=["positional", "keyword"])
def test_a_pre_sliced_list_without_labels_runs_for_inference_however_is_train_is_passed(call):
    # Stock's own form on a module bound for training: is_train=False, given either way, is
    # an inference forward, which needs no labels.
    mod = stock_bound_for_training()
    data = [[random_batch((2, 3, 8, 8), seed=seed)[0]] for seed in (4, 5)]
    with mxpatch_bind.patched():
        call(mod, [mx.io.DataBatch(arrays_) for arrays_ in data])
    merged = mod.get_outputs()[0].asnumpy()
    assert np.array_equal(merged, np.concatenate(stock_outputs(data, False)))


def test_the_forward_wrapper_held_from_the_class_finds_the_module_and_the_batch():
    # Called from the class's __dict__ (as someone who saved it does), wrapt hands the
    # wrapper no instance: the module is the first argument.
    mod = stock_bound_for_training()
    data, label = arrays(seed=8)
    with mxpatch_bind.patched():
        held = vars(mx.mod.Module)["forward"]
        held(mod, mx.io.DataBatch(data=data, label=label), False)
    for out, ref in zip(mod.get_outputs(merge_multi_context=False)[0],
                        stock_outputs(data, False)):
        assert np.array_equal(out.asnumpy(), ref)


def test_the_free_bind_refuses_a_class_of_another_package_named_module_as_no_module():
    module = type("Module", (), {})  # a user's own top-level class that shares the name
    assert module.__qualname__ == "Module" and module.__module__ != "mxnet.module.module"
    with pytest.raises(TypeError, match="per-device shapes need a mxnet.module.Module"):
        mxpatch_bind.bind(module(), [[("data", s)] for s in SHAPES])


def test_the_executor_group_given_an_unlabelled_batch_checks_it_as_the_module_does():
    # Called on the group itself: is_train=None on a group bound for training trains, so
    # labels are needed where the group is bound with them, and not where it is not.
    labelled, unlabelled = per_device_module()._exec_group, per_device_module(False)._exec_group
    data, _ = arrays(seed=9)
    with pytest.raises(mxpatch_bind.BatchError, match="the batch has no labels"):
        labelled.forward(mx.io.DataBatch(data=data))
    unlabelled.forward(mx.io.DataBatch(data=data))
    for exec_, arrays_ in zip(unlabelled.execs, data):
        assert np.array_equal(exec_.arg_dict["data"].asnumpy(), arrays_[0].asnumpy())


def test_a_patched_reshape_given_an_unknown_keyword_is_a_type_error_as_stock_gives():
    mod = stock_bound_for_training()
    executors = list(mod._exec_group.execs)
    with mxpatch_bind.patched(), pytest.raises(TypeError, match="batch_size"):
        mod.reshape([[("data", (1, 3, 8, 8))], [("data", (1, 3, 6, 6))]], batch_size=2)
    assert type(mod) is mx.mod.Module
    assert all(a is b for a, b in zip(mod._exec_group.execs, executors))
