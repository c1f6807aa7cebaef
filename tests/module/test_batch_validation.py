"""Every per-device batch is checked before anything is copied, in both device forms.

A bad batch raises ``BatchError`` naming the device, the input, what was given and what was
expected, and the module is exactly as it was (same executors, same inputs, same parameters).
Good batches of every kind give the outputs and gradients of stock one-context modules.
"""

import mxnet as mx
import numpy as np
import pytest
from nets import (
    assert_same_state,
    bound_module,
    conv_net,
    device_batch,
    device_pairs,
    fixed_params,
    module_state,
    random_batch,
    single_device_reference,
)

import mxpatch_bind

SHAPES = [(2, 3, 8, 10), (3, 3, 6, 6)]
SYMBOL = conv_net()
PARAMS = fixed_params(SYMBOL, SHAPES[0])
FORMS = ["device-lists", "batch-list"]


def make_batch(form, data, label=None, provide_data=None, provide_label=None):
    """One batch in either per-device form from per-device lists (``None`` entries allowed)."""
    if form == "device-lists":
        return mx.io.DataBatch(data=data, label=label, provide_data=provide_data,
                               provide_label=provide_label)
    count = len(data)
    return [mx.io.DataBatch(data=data[i], label=None if label is None else label[i],
                            provide_data=None if provide_data is None else provide_data[i],
                            provide_label=None if provide_label is None else provide_label[i])
            for i in range(count)]


def arrays(shapes=SHAPES, seed=0):
    pairs = [random_batch(shape, seed=seed + i) for i, shape in enumerate(shapes)]
    return [[d] for d, _ in pairs], [[label] for _, label in pairs]


@pytest.fixture
def mod():
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(module, [[("data", s)] for s in SHAPES],
                      [[("softmax_label", (s[0],))] for s in SHAPES])
    module.set_params(*PARAMS)
    data, label = arrays(seed=10)
    module.forward(mx.io.DataBatch(data=data, label=label), is_train=True)
    return module


def refuses(mod, batch, *fragments):
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.BatchError) as error:
        mod.forward(batch, is_train=True)
    for fragment in fragments:
        assert fragment in str(error.value), (fragment, str(error.value))
    assert_same_state(before, module_state(mod))
    return error.value


# --------------------------------------------------------------------------- labels
@pytest.mark.parametrize("form", FORMS)
def test_labels_for_one_device_of_two_are_refused_and_nothing_is_copied(mod, form):
    data, label = arrays()
    if form == "device-lists":
        refuses(mod, make_batch(form, data, label[:1]), "label has 1 device entries",
                "its data has 2")
    else:
        refuses(mod, make_batch(form, data, [label[0], None]), "batch device 1 has no labels")


def test_labels_on_device_0_and_none_on_device_1_are_refused(mod):
    data, label = arrays()
    refuses(mod, make_batch("device-lists", data, [label[0], None]),
            "batch device 1 has no labels but device 0 has", "None")


@pytest.mark.parametrize("form", FORMS)
def test_a_device_with_two_label_arrays_for_one_label_input_is_refused(mod, form):
    data, label = arrays()
    label[1] = label[1] * 2
    refuses(mod, make_batch(form, data, label), "batch device 1", "label",
            "expected a list of 1 arrays", "softmax_label")


@pytest.mark.parametrize("form", FORMS)
def test_labels_absent_on_every_device_are_accepted_as_stock_accepts_them(mod, form):
    data, label = arrays()
    mod.forward(make_batch(form, data), is_train=False)
    for device in range(2):
        ref, _ = single_device_reference(SYMBOL, PARAMS, data[device][0], label[device][0],
                                         for_training=False)
        out = mod.get_outputs(merge_multi_context=False)[0][device].asnumpy()
        assert np.array_equal(out, ref[0])


def test_new_label_shapes_at_the_same_data_shapes_are_loaded_not_left_stale():
    # A detection-style label whose length changes while the image size does not; the
    # output is the row sums of the labels (the FC layer is all zeros).
    data, target = mx.sym.Variable("data"), mx.sym.Variable("target")
    net = mx.sym.broadcast_add(mx.sym.FullyConnected(data, num_hidden=1, name="fc"),
                               mx.sym.sum(target, axis=1, keepdims=True))
    module = mx.mod.Module(net, label_names=["target"], context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(module, [[("data", (2, 3))], [("data", (2, 3))]],
                      [[("target", (2, 4))], [("target", (2, 4))]])
    module.init_params(initializer=mx.init.Zero())
    ones = mx.nd.ones((2, 3))
    module.forward(mx.io.DataBatch(data=[[ones], [ones]],
                                   label=[[mx.nd.ones((2, 5))], [mx.nd.ones((2, 7))]]))
    outputs = [out.asnumpy() for out in module.get_outputs(merge_multi_context=False)[0]]
    assert np.array_equal(outputs[0], np.full((2, 1), 5.0))
    assert np.array_equal(outputs[1], np.full((2, 1), 7.0))


# --------------------------------------------------------------------------- data
@pytest.mark.parametrize("form", FORMS)
def test_more_devices_than_contexts_are_refused(mod, form):
    data, label = arrays(SHAPES + [SHAPES[0]])
    refuses(mod, make_batch(form, data, label), "3 device entries", "2 contexts")


@pytest.mark.parametrize("form", FORMS)
def test_a_device_with_an_extra_data_array_is_refused(mod, form):
    data, label = arrays()
    data[0] = data[0] * 2
    refuses(mod, make_batch(form, data, label), "batch device 0", "expected a list of 1 arrays",
            "'data'")


@pytest.mark.parametrize("form", FORMS)
def test_a_device_with_no_data_is_refused(mod, form):
    data, label = arrays()
    data[1] = []
    refuses(mod, make_batch(form, data, label), "batch device 1 gives data []")


@pytest.mark.parametrize("shape", [(3, 3, 6), (3, 3, 6, 6, 1), (3,)], ids=["one fewer",
                                                                           "one more", "1-d"])
@pytest.mark.parametrize("form", FORMS)
def test_an_array_of_another_rank_is_refused(mod, form, shape):
    data, label = arrays()
    data[1] = [mx.nd.ones(shape)]
    refuses(mod, make_batch(form, data, label), "batch device 1, data input 'data'",
            repr(shape), "expected 4 axes")


@pytest.mark.parametrize("form", FORMS)
def test_a_device_with_another_channel_count_is_refused_before_anything_is_copied(mod, form):
    data, label = arrays()
    data[1] = [mx.nd.ones((3, 4, 6, 6))]  # the module is bound with 3 channels
    error = refuses(mod, make_batch(form, data, label), "batch device 1", "(3, 4, 6, 6)",
                    "parameter 'conv_weight' from shape (4, 3, 3, 3) to (4, 4, 3, 3)")
    assert isinstance(error.__cause__, mx.base.MXNetError)  # MXNet's refusal, kept as the cause


def test_a_stock_bound_module_fed_a_per_device_batch_of_other_channels_is_refused_as_it_was():
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    module.bind([("data", (4, 3, 6, 6))], [("softmax_label", (4,))])
    module.set_params(*PARAMS)
    data, label = arrays()
    data[0] = [mx.nd.ones((2, 4, 8, 10))]
    with mxpatch_bind.patched():
        refuses(module, make_batch("device-lists", data, label), "batch device 0",
                "parameter 'conv_weight'")


def test_a_wrong_channel_count_is_refused_every_time_and_a_right_one_then_runs(mod):
    data, label = arrays()
    wrong = [data[0], [mx.nd.ones((3, 4, 6, 6))]]
    for _ in range(2):
        refuses(mod, make_batch("device-lists", wrong, label), "'conv_weight'")
    data[1] = [mx.nd.ones((3, 3, 7, 5))]
    mod.forward(make_batch("device-lists", data, label), is_train=True)
    assert mod._exec_group.execs[1].arg_dict["data"].shape == (3, 3, 7, 5)


@pytest.mark.parametrize("shape", [(3, 3), (3, 1)], ids=["one more", "one more, size 1"])
def test_a_label_of_another_rank_is_refused(mod, shape):
    data, label = arrays()
    label[1] = [mx.nd.ones(shape)]
    refuses(mod, make_batch("device-lists", data, label), "batch device 1, label input "
            "'softmax_label'", "expected 1 axes")


@pytest.mark.parametrize("dtype", [np.complex64, np.str_, object, "datetime64[s]", np.bytes_,
                                   "timedelta64[s]"])
def test_numpy_arrays_of_dtypes_mxnet_cannot_hold_are_refused(mod, dtype):
    data, label = arrays()
    data[0] = [np.ones(SHAPES[0]).astype(dtype)]
    refuses(mod, make_batch("device-lists", data, label), "batch device 0, data input 'data'",
            "dtype", "expected a numeric dtype")


def test_something_that_is_not_an_array_is_refused(mod):
    data, label = arrays()
    data[0] = [[[1.0, 2.0]]]
    refuses(mod, make_batch("device-lists", data, label), "batch device 0, data input 'data'",
            "expected an NDArray or a numpy array")


@pytest.mark.parametrize("shape", [(0, 3, 6, 6), (3, 0, 6, 6), (3, 3, 6, 0)])
def test_an_empty_axis_is_refused(mod, shape):
    data, label = arrays()
    data[1] = [np.zeros(shape, dtype=np.float32)]
    refuses(mod, make_batch("device-lists", data, label), "batch device 1", repr(shape),
            "at least one element on every axis")


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float16, np.float64])
def test_numpy_arrays_of_every_dtype_mxnet_holds_are_accepted(mod, dtype):
    data, label = arrays()
    data[0] = [np.ones(SHAPES[0]).astype(dtype)]
    mod.forward(make_batch("device-lists", data, label), is_train=False)
    ref, _ = single_device_reference(SYMBOL, PARAMS, mx.nd.array(np.ones(SHAPES[0])),
                                     label[0][0], for_training=False)
    assert np.array_equal(mod.get_outputs(merge_multi_context=False)[0][0].asnumpy(), ref[0])


def test_labels_holding_other_samples_than_the_data_are_refused(mod):
    data, label = arrays([(2, 3, 8, 10), (3, 3, 5, 5)])
    label[1] = [mx.nd.ones((2,))]
    refuses(mod, make_batch("device-lists", data, label), "batch device 1",
            "different numbers of samples", "'data': 3", "'softmax_label': 2")


@pytest.mark.parametrize("form", FORMS)
def test_float64_numpy_arrays_are_accepted_and_match_stock(mod, form):
    shapes = [(1, 3, 5, 7), (2, 3, 9, 4)]
    data, label = arrays(shapes, seed=3)
    data = [[d[0].asnumpy().astype(np.float64)] for d in data]
    mod.forward(make_batch(form, data, label), is_train=True)
    for device in range(2):
        ref, _ = single_device_reference(SYMBOL, PARAMS, mx.nd.array(data[device][0]),
                                         label[device][0])
        out = mod.get_outputs(merge_multi_context=False)[0][device].asnumpy()
        assert np.array_equal(out, ref[0])


# --------------------------------------------------------------------------- provide_*
@pytest.mark.parametrize("form", FORMS)
def test_a_stale_provide_data_names_the_device_and_input_not_incompatible_attr(mod, form):
    data, label = arrays([(2, 3, 8, 10), (3, 3, 7, 7)])
    provide = [[("data", (2, 3, 8, 10))], [("data", SHAPES[1])]]
    error = refuses(mod, make_batch(form, data, label, provide_data=provide),
                    "batch device 1, data input 'data'", "provide_data says shape (3, 3, 6, 6)",
                    "(3, 3, 7, 7)")
    assert "Incompatible attr" not in str(error)


@pytest.mark.parametrize("said", [(4,), (2,), (3, 1), (-3,), (3.0,), ("3",)])
@pytest.mark.parametrize("form", FORMS)
def test_a_provide_label_that_disagrees_with_the_labels_is_refused(mod, form, said):
    data, label = arrays()
    provide = [[("softmax_label", (2,))], [("softmax_label", said)]]
    refuses(mod, make_batch(form, data, label, provide_label=provide),
            "batch device 1, label input 'softmax_label'", repr(said), "(3,)")


def test_a_provide_label_with_numpy_integers_that_agree_is_accepted(mod):
    data, label = arrays()
    provide = [[("softmax_label", (np.int64(2),))], [("softmax_label", (np.int32(3),))]]
    mod.forward(make_batch("device-lists", data, label, provide_label=provide), is_train=True)
    assert [[d.shape for d in device] for device in mod.label_shapes] == [[(2,)], [(3,)]]


def test_a_provide_data_naming_another_input_is_refused(mod):
    data, label = arrays()
    provide = [[("image", SHAPES[0])], [("data", SHAPES[1])]]
    refuses(mod, make_batch("device-lists", data, label, provide_data=provide),
            "batch device 0 gives provide_data 'image' for input 'data'")


def test_a_flat_provide_data_on_per_device_arrays_is_refused(mod):
    data, label = arrays()
    refuses(mod, make_batch("device-lists", data, label, provide_data=[("data", SHAPES[0])]),
            "provide_data", "is flat but its arrays are per device")


def test_a_provide_data_with_a_desc_per_device_sets_dtype_and_layout():
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(module, [[("data", s)] for s in SHAPES],
                      [[("softmax_label", (s[0],))] for s in SHAPES])
    module.set_params(*PARAMS)
    shapes = [(1, 3, 4, 4), (2, 3, 5, 5)]
    data, label = arrays(shapes)
    provide = [[mx.io.DataDesc("data", s, np.float32, "NCHW")] for s in shapes]
    module.forward(make_batch("device-lists", data, label, provide_data=provide))
    assert [[d.shape for d in device] for device in module.data_shapes] == [[s] for s in shapes]


# --------------------------------------------------------------------------- flat batches
def test_a_flat_batch_with_too_many_arrays_is_refused_on_a_per_device_module(mod):
    batch = mx.io.DataBatch(data=[mx.nd.ones((5, 3, 6, 6)), mx.nd.ones((5, 3, 6, 6))])
    refuses(mod, batch, "the batch gives data", "expected a list of 1 arrays")


def test_a_flat_batch_with_a_stale_provide_data_is_refused_on_a_per_device_module(mod):
    batch = mx.io.DataBatch(data=[mx.nd.ones((5, 3, 6, 6))],
                            provide_data=[("data", (4, 3, 6, 6))])
    refuses(mod, batch, "the batch, data input 'data'", "(4, 3, 6, 6)", "(5, 3, 6, 6)")


# --------------------------------------------------------------------------- stock-bound module
@pytest.mark.parametrize("form", FORMS)
def test_a_stock_bound_module_fed_a_per_device_batch_reshapes_to_per_device(form):
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(module, [[("data", s)] for s in SHAPES],
                      [[("softmax_label", (s[0],))] for s in SHAPES])
    module.reshape([("data", (4, 3, 6, 6))], [("softmax_label", (4,))])
    module.set_params(*PARAMS)
    group = module._exec_group
    data, label = arrays(seed=4)
    module.forward(make_batch(form, data, label), is_train=True)
    assert module._exec_group is group and group.per_device  # reshaped, not rebound
    for device in range(2):
        ref, _ = single_device_reference(SYMBOL, PARAMS, data[device][0], label[device][0])
        out = module.get_outputs(merge_multi_context=False)[0][device].asnumpy()
        assert np.array_equal(out, ref[0])


def test_a_patched_forward_reshapes_a_plain_stock_bound_module_for_a_per_device_batch():
    from mxpatch_bind.module.wrappers import forward_wrapper  # what a Module.forward target runs
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    module.bind([("data", (4, 3, 6, 6))], [("softmax_label", (4,))])
    module.set_params(*PARAMS)
    data, label = arrays(seed=5)
    forward_wrapper(mx.mod.Module.forward, module, (make_batch("device-lists", data, label),),
                    {"is_train": True})
    assert isinstance(module, mx.mod.Module) and type(module) is not mx.mod.Module
    for device in range(2):
        ref, _ = single_device_reference(SYMBOL, PARAMS, data[device][0], label[device][0])
        out = module.get_outputs(merge_multi_context=False)[0][device].asnumpy()
        assert np.array_equal(out, ref[0])


@pytest.mark.parametrize("call", [
    lambda module, batch: module.forward(batch, True),
    lambda module, batch: module.forward(data_batch=batch, is_train=True),
    lambda module, batch: mx.mod.Module.forward(module, batch, True),
], ids=["positional-is_train", "keywords", "through-the-class"])
def test_the_patched_forward_finds_the_batch_however_it_is_passed(call):
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    module.bind([("data", (4, 3, 6, 6))], [("softmax_label", (4,))])
    module.set_params(*PARAMS)
    data, label = arrays(seed=6)
    with mxpatch_bind.patched():
        call(module, make_batch("device-lists", data, label))
    for device in range(2):
        ref, _ = single_device_reference(SYMBOL, PARAMS, data[device][0], label[device][0])
        out = module.get_outputs(merge_multi_context=False)[0][device].asnumpy()
        assert np.array_equal(out, ref[0])


def test_a_patched_forward_refusing_a_batch_leaves_a_plain_module_plain():
    from mxpatch_bind.module.wrappers import forward_wrapper
    module = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    module.bind([("data", (4, 3, 6, 6))], [("softmax_label", (4,))])
    module.set_params(*PARAMS)
    data, label = arrays()
    before = module_state(module)
    with pytest.raises(mxpatch_bind.BatchError):
        forward_wrapper(mx.mod.Module.forward, module,
                        (make_batch("device-lists", data, label[:1]),), {})
    assert_same_state(before, module_state(module))
    assert type(module) is mx.mod.Module


def test_a_provide_data_whose_layouts_put_the_batch_axis_apart_is_refused(mod):
    shapes = [(2, 3, 7, 7), (3, 3, 5, 5)]  # new shapes: the batch's descs are used
    data, label = arrays(shapes)
    provide = [[mx.io.DataDesc("data", shapes[0], layout="NCHW")],
               [mx.io.DataDesc("data", shapes[1], layout="CNHW")]]
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.ShapeSpecError, match="'CNHW' but device 0 gives 'NCHW'"):
        mod.forward(make_batch("device-lists", data, label, provide_data=provide))
    assert_same_state(before, module_state(mod))


def test_the_executor_group_checks_a_per_device_batch_given_to_it_directly():
    # Modules hand the group batches they checked; a direct caller gets the same checks.
    mod = bound_module(SYMBOL, SHAPES, PARAMS)
    group = mod._exec_group
    pairs = device_pairs(SHAPES, seed=4)
    group.forward(device_batch(pairs), is_train=False)
    for exec_, (data, label) in zip(group.execs, pairs):
        assert np.array_equal(exec_.arg_dict["data"].asnumpy(), data.asnumpy())
        assert np.array_equal(exec_.arg_dict["softmax_label"].asnumpy(), label.asnumpy())
    before = module_state(mod)
    one_device_labelled = mx.io.DataBatch(data=[[d] for d, _ in pairs],
                                          label=[[pairs[0][1]], None])
    with pytest.raises(mxpatch_bind.BatchError, match="batch device 1 has no labels"):
        group.forward(one_device_labelled, is_train=False)
    assert_same_state(module_state(mod), before)


def test_a_batch_whose_provide_data_gives_the_devices_different_dtypes_is_refused(mod):
    # A device computing in float64 beside float32 ones would train silently differently.
    new_shapes = [(2, 3, 6, 6), (1, 3, 8, 8)]
    data, label = arrays(new_shapes, seed=3)
    provide = [[mx.io.DataDesc("data", s, np.float32 if i == 0 else np.float64)]
               for i, s in enumerate(new_shapes)]
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.ShapeSpecError,
                       match="data_shapes\\[1\\] gives 'data' the dtype float64 but device 0 "
                             "gives float32"):
        mod.forward(make_batch("device-lists", data, label, provide_data=provide),
                    is_train=True)
    assert_same_state(before, module_state(mod))


@pytest.mark.parametrize("label", [mx.nd.ones((2,)), "labels", 3])
def test_a_label_that_is_no_list_of_devices_is_refused_naming_it(mod, label):
    data, _ = arrays()
    batch = make_batch("device-lists", data)
    batch.label = label  # DataBatch asserts a list; a loader's own batch class may not
    refuses(mod, batch, "the batch's label is", "expected None or one list of arrays per device")


def test_a_device_provide_data_with_an_entry_more_is_refused(mod):
    data, label = arrays()
    provide = [[("data", SHAPES[0])], [("data", SHAPES[1]), ("data", SHAPES[1])]]
    refuses(mod, make_batch("device-lists", data, label, provide_data=provide),
            "batch device 1 gives provide_data", "expected 1 (name, shape) entries for ['data']")


@pytest.mark.parametrize("entry", [5, ("data",), "data"])
def test_a_provide_data_entry_that_is_no_name_and_shape_is_refused_naming_it(mod, entry):
    data, label = arrays()
    provide = [[("data", SHAPES[0])], [entry]]
    refuses(mod, make_batch("device-lists", data, label, provide_data=provide),
            "batch device 1 gives provide_data entry", "expected (name, shape) or DataDesc")


@pytest.mark.parametrize("item", [{"data": None}, ("data",), None], ids=["dict", "tuple", "None"])
@pytest.mark.parametrize("device", [0, 1])
def test_a_list_of_batches_holding_something_that_is_not_a_batch_is_refused(mod, item, device):
    data, label = arrays()
    batches = [mx.io.DataBatch(data=data[i], label=label[i]) for i in range(2)]
    batches[device] = item
    refuses(mod, batches, f"device {device}'s entry of the list of batches is",
            "expected a DataBatch")
