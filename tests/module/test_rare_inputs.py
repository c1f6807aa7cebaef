"""Inputs the other tests never took: an input without a batch axis, flat batches that bring
their own provide_data / provide_label, labels arriving at a module bound without them, and
malformed batch lists under the patch. Each against stock MXNet on one context."""

import re
from types import SimpleNamespace

import mxnet as mx
import numpy as np
import pytest
from mxnet.io import DataBatch, DataDesc
from nets import (
    conv_net,
    device_batch,
    device_pairs,
    fixed_params,
    per_device_spec,
    single_device_reference,
)

import mxpatch_bind
from mxpatch_bind import BatchError, ShapeSpecError
from mxpatch_bind.module import binding, shapes

CONTEXTS = [mx.cpu(0), mx.cpu(1)]


# --------------------------------------------------------------------------- no batch axis
def scaled_fc():
    """FC outputs times a per-feature ``scale`` input that has no batch axis (layout 'C')."""
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.broadcast_mul(fc, mx.sym.reshape(mx.sym.Variable("scale"), shape=(1, -1)))


FC_PARAMS = ({"fc_weight": mx.nd.array(np.arange(15).reshape(3, 5) / 10.0),
              "fc_bias": mx.nd.array([1.0, -1.0, 0.5])}, {})


def scaled_fc_module(rows=(1, 3), scale=(3,)):
    mod = mx.mod.Module(scaled_fc(), data_names=["data", "scale"], label_names=None,
                        context=CONTEXTS)
    mxpatch_bind.bind(mod, [[DataDesc("data", (n, 5), layout="NC"),
                             DataDesc("scale", scale, layout="C")] for n in rows],
                      for_training=False)
    mod.set_params(*FC_PARAMS)
    return mod


def one_context_outputs(data, scale):
    ref = mx.mod.Module(scaled_fc(), data_names=["data", "scale"], label_names=None,
                        context=mx.cpu(0))
    ref.bind([DataDesc("data", data.shape, layout="NC"),
              DataDesc("scale", scale.shape, layout="C")], for_training=False)
    ref.set_params(*FC_PARAMS)
    ref.forward(DataBatch([data, scale]), is_train=False)
    return ref.get_outputs()[0].asnumpy()


def test_an_input_without_a_batch_axis_leaves_the_batch_size_to_the_next_input():
    spec = shapes.parse_device_shapes(
        [[DataDesc("scale", (3,), layout="C"), DataDesc("data", (n, 5), layout="NC")]
         for n in (2, 4)], None, ["scale", "data"], [], 2)
    assert spec.device_batch_sizes == [2, 4]
    assert spec.slices == [slice(0, 2), slice(2, 6)]


def test_a_device_whose_inputs_have_no_batch_axis_counts_one_sample():
    spec = shapes.parse_device_shapes([[DataDesc("scale", (3,), layout="C")]] * 2, None,
                                      ["scale"], [], 2)
    assert spec.device_batch_sizes == [1, 1] and spec.total_batch_size == 2


def test_a_flat_batch_with_the_same_unbatched_input_is_split_without_a_reshape():
    mod = scaled_fc_module()
    execs = list(mod._exec_group.execs)
    data, scale = mx.nd.array(np.arange(20).reshape(4, 5)), mx.nd.array([1.0, 2.0, 3.0])
    mod.forward(DataBatch([data, scale]), is_train=False)
    assert mod._exec_group.execs == execs and binding.is_per_device(mod)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    assert np.array_equal(outputs[0].asnumpy(), one_context_outputs(data[0:1], scale))
    assert np.array_equal(outputs[1].asnumpy(), one_context_outputs(data[1:4], scale))


def test_a_flat_batch_with_another_unbatched_shape_reshapes_to_stock_form():
    mod = scaled_fc_module()
    data, scale = mx.nd.array(np.arange(20).reshape(4, 5)), mx.nd.array([2.0])
    mod.forward(DataBatch([data, scale]), is_train=False)
    assert not binding.is_per_device(mod)
    assert [(d.name, d.shape) for d in mod.data_shapes] == [("data", (4, 5)), ("scale", (1,))]
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), one_context_outputs(data, scale))


# --------------------------------------------------------------------------- flat batches
SHAPES = [(2, 3, 16, 16), (1, 3, 12, 20)]
NET = conv_net()
PARAMS = fixed_params(NET, SHAPES[0])


def per_device_conv():
    mod = mx.mod.Module(NET, context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES))
    mod.set_params(*PARAMS)
    return mod


def test_a_flat_batch_brings_its_own_descs_and_the_module_takes_them_to_stock_form():
    mod = per_device_conv()
    data = mx.nd.array(np.random.RandomState(1).uniform(size=(3, 3, 20, 20)))
    label = mx.nd.array([0, 2, 1])
    provide_data = [DataDesc("data", (3, 3, 20, 20), layout="NCHW")]
    provide_label = [DataDesc("softmax_label", (3,), layout="N")]
    mod.forward(DataBatch([data], [label], provide_data=provide_data,
                          provide_label=provide_label), is_train=False)
    assert not binding.is_per_device(mod)
    described = [[(d.name, d.shape, d.layout) for d in descs]
                 for descs in (mod.data_shapes, mod.label_shapes)]
    assert described == [[("data", (3, 3, 20, 20), "NCHW")], [("softmax_label", (3,), "N")]]
    reference, _ = single_device_reference(NET, PARAMS, data, label, for_training=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), reference[0])


def test_a_flat_labelled_batch_without_descs_gets_label_descs_from_its_arrays():
    mod = per_device_conv()
    data = mx.nd.array(np.random.RandomState(2).uniform(size=(5, 3, 8, 8)))
    label = mx.nd.array([0, 2, 1, 1, 0])
    mod.forward(DataBatch([data], [label]), is_train=True)
    assert [(d.name, d.shape) for d in mod.label_shapes] == [("softmax_label", (5,))]
    mod.backward()
    stock = mx.mod.Module(NET, context=CONTEXTS)  # the oracle of the stock form
    stock.bind([("data", data.shape)], [("softmax_label", label.shape)])
    stock.set_params(*PARAMS)
    stock.forward(DataBatch([data], [label]), is_train=True)
    stock.backward()
    for got, want in zip(mod._exec_group.grad_arrays, stock._exec_group.grad_arrays):
        for device in range(len(CONTEXTS)):
            assert np.array_equal(got[device].asnumpy(), want[device].asnumpy())


# --------------------------------------------------------------------------- late labels
def test_labels_fed_to_a_module_bound_without_them_train_as_on_one_context():
    mod = mx.mod.Module(NET, context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES, labels=False))
    mod.set_params(*PARAMS)
    pairs = device_pairs(SHAPES)
    mod.forward(device_batch(pairs), is_train=True)
    mod.backward()
    assert [[(d.name, d.shape, d.dtype) for d in device] for device in mod.label_shapes] == [
        [("softmax_label", (shape[0],), np.float32)] for shape in SHAPES]
    group = mod._exec_group
    for device, (data, label) in enumerate(pairs):
        _, reference = single_device_reference(NET, PARAMS, data, label)
        assert sorted(reference) == sorted(group.param_names)
        for name, got in zip(group.param_names, group.grad_arrays):
            assert np.array_equal(got[device].asnumpy(), reference[name]), name


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("data", [None, mx.nd.ones((2, 3, 16, 16)), [None]],
                         ids=["no-data", "an-array", "no-shape"])
def test_a_malformed_batch_list_fed_to_a_stock_module_under_the_patch_is_refused(data):
    mod = mx.mod.Module(NET, context=CONTEXTS)
    mod.bind([("data", (4, 3, 16, 16))], [("softmax_label", (4,))])
    mod.init_params()
    # SimpleNamespace: DataBatch itself asserts on some of these in its constructor.
    batch_list = [SimpleNamespace(data=data, label=None),
                  DataBatch(data=[mx.nd.ones((2, 3, 16, 16))])]
    with mxpatch_bind.patched():
        with pytest.raises(BatchError, match=r"device 0"):
            mod.forward(batch_list, is_train=False)
    assert type(mod) is mx.mod.Module and not binding.is_per_device(mod)
    assert [(d.name, d.shape) for d in mod.data_shapes] == [("data", (4, 3, 16, 16))]


def test_labels_beside_a_parsed_spec_are_refused():
    mod = mx.mod.Module(NET, context=CONTEXTS)
    spec = shapes.parse_device_shapes(*per_device_spec(SHAPES), ["data"], ["softmax_label"], 2)
    with pytest.raises(ShapeSpecError, match="label_shapes must be None when data_shapes is "
                                             "a parsed DeviceShapes"):
        mxpatch_bind.bind(mod, spec, [[("softmax_label", (2,))], [("softmax_label", (1,))]])
    assert type(mod) is mx.mod.Module and not mod.binded


@pytest.mark.parametrize("layout", [5, ("N", "C")])
def test_a_layout_that_is_not_a_string_is_refused(layout):
    message = ("data_shapes[1] gives 'data' the layout %r; expected None or a string such as "
               "'NCHW'" % (layout,))
    with pytest.raises(ShapeSpecError, match="^%s$" % re.escape(message)):
        shapes.parse_device_shapes([[("data", (2, 3))], [DataDesc("data", (1, 3), layout=layout)]],
                                   None, ["data"], [], 2)


# --------------------------------------------------------------------------- label-only changes
def box_sum_regression():
    """A loss on a label input whose second axis may change from batch to batch, as a
    detection batch's box count does while its image size stays."""
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc")
    target = mx.sym.sum(mx.sym.Variable("gt"), axis=1, keepdims=True)
    return mx.sym.MakeLoss(mx.sym.square(fc - target), name="loss")


def box_batch(rows, boxes, seed):
    rng = np.random.RandomState(seed)
    return ([mx.nd.array(rng.uniform(size=(n, 4))) for n in rows],
            [mx.nd.array(rng.uniform(size=(n, k))) for n, k in zip(rows, boxes)])


def test_a_batch_whose_labels_alone_change_shape_reshapes_and_trains_as_on_one_context():
    symbol = box_sum_regression()
    params = ({"fc_weight": mx.nd.array([[0.5, -1.0, 0.25, 2.0]]), "fc_bias": mx.nd.array([0.1])},
              {})
    mod = mx.mod.Module(symbol, label_names=["gt"], context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", (n, 4))] for n in (2, 3)],
                      [[("gt", (n, 5))] for n in (2, 3)])
    mod.set_params(*params)
    data, gt = box_batch((2, 3), (7, 2), seed=3)  # the same data shapes, other box counts
    mod.forward(DataBatch([[d] for d in data], [[g] for g in gt]), is_train=True)
    mod.backward()
    assert [[d.shape for d in device] for device in mod.label_shapes] == [[(2, 7)], [(3, 2)]]
    for device in range(2):
        ref = mx.mod.Module(symbol, label_names=["gt"], context=mx.cpu(0))
        ref.bind([("data", data[device].shape)], [("gt", gt[device].shape)])
        ref.set_params(*params)
        ref.forward(DataBatch([data[device]], [gt[device]]), is_train=True)
        ref.backward()
        for got, want in zip(mod._exec_group.grad_arrays, ref._exec_group.grad_arrays):
            assert np.array_equal(got[device].asnumpy(), want[0].asnumpy())
