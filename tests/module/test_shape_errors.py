"""Malformed per-device shape specs: a ShapeSpecError naming device and entry; nothing changes."""

import ast
import os

import mxnet as mx
import numpy as np
import pytest
from nets import assert_same_state, conv_net, device_batch, device_pairs, fixed_params, module_state

import mxpatch_bind
from mxpatch_bind import ShapeSpecError
from mxpatch_bind._mxnet_env import max_array_elements
from mxpatch_bind.module import shapes
from paths import REPO

PACKAGE_DIR = os.path.join(str(REPO),
                           "mxpatch_bind")

D0 = ("data", (2, 3, 8, 8))
D1 = ("data", (3, 3, 6, 10))
L0 = ("softmax_label", (2,))
L1 = ("softmax_label", (3,))
DATA_SHAPES = [[D0], [D1]]
LABEL_SHAPES = [[L0], [L1]]
NCHW = mx.io.DataDesc("data", (2, 3, 8, 8), layout="NCHW")
CNHW = mx.io.DataDesc("data", (3, 3, 6, 10), layout="CNHW")


def bad(data_shapes, label_shapes, fragments, id):  # pylint: disable=redefined-builtin
    """One malformed spec and the fragments its message must contain (device index, entry)."""
    return pytest.param(data_shapes, label_shapes, fragments, id=id)


BAD_SPECS = [
    # How many device entries
    bad([[D0]], None, ["data_shapes has 1 entries", "2 contexts", repr([[D0]])],
        "one_data_entry_for_two_contexts"),
    bad([[D0], [D1], [D1]], None, ["data_shapes has 3 entries", "2 contexts"],
        "three_data_entries_for_two_contexts"),
    bad(DATA_SHAPES, [[L0]], ["label_shapes has 1 entries", "2 contexts", repr([[L0]])],
        "one_label_entry_for_two_contexts"),
    # Flat and per-device forms mixed
    bad([[D0], D1], None, ["data_shapes[1]", repr(D1)], "flat_entry_after_a_device_entry"),
    bad([D0, [D1]], None, ["data_shapes[0]", repr(D0)], "flat_entry_before_a_device_entry"),
    bad([("data", (5, 3, 8, 8))], LABEL_SHAPES, [repr(LABEL_SHAPES), "flat"],
        "flat_data_with_per_device_labels"),
    # Names
    bad([[D0], [("image", (3, 3, 6, 10))]], None, ["data_shapes[1]", "['image']", "['data']"],
        "data_names_differ_between_devices"),
    bad(DATA_SHAPES, [[L0], [("label", (3,))]], ["label_shapes[1]", "['label']"],
        "label_names_differ_between_devices"),
    bad([[("image", (2, 3, 8, 8))], [("image", (3, 3, 6, 10))]], None,
        ["data_shapes names ['image']", "['data']"], "data_names_differ_from_the_module"),
    bad(DATA_SHAPES, [[("label", (2,))], [("label", (3,))]],
        ["label_shapes names ['label']", "['softmax_label']"],
        "label_names_differ_from_the_module"),
    bad([[D0], [D1, D1]], None, ["data_shapes[1]", "['data', 'data']"],
        "duplicate_name_within_a_device"),
    # Labels for only some devices
    bad(DATA_SHAPES, [[L0], None], ["device 1", repr([[L0], None])], "labels_none_on_device_1"),
    bad(DATA_SHAPES, [None, [L1]], ["device 0", repr([None, [L1]])], "labels_none_on_device_0"),
    # Dimensions
    bad([[D0], [("data", (3, -3, 6, 10))]], None, ["data_shapes[1]", "(3, -3, 6, 10)", "-3"],
        "negative_dim"),
    bad([[("data", (0, 3, 8, 8))], [D1]], None, ["data_shapes[0]", "(0, 3, 8, 8)", "dimension 0"],
        "zero_dim"),
    bad([[D0], [("data", (3, 3, 6.0, 10))]], None, ["data_shapes[1]", "(3, 3, 6.0, 10)", "6.0"],
        "float_dim"),
    bad([[D0], [("data", (True, 3, 6, 10))]], None, ["data_shapes[1]", "(True, 3, 6, 10)"],
        "bool_dim"),
    bad(DATA_SHAPES, [[L0], [("softmax_label", (-3,))]], ["label_shapes[1]", "(-3,)"],
        "negative_label_dim"),
    bad([[D0], [("data", ())]], None, ["data_shapes[1]", "()", "expected a non-empty tuple"],
        "empty_shape"),
    bad([[("data", ())], [("data", ())]], None, ["data_shapes[0]", "expected a non-empty tuple"],
        "empty_shape_on_every_device"),
    # Beyond what MXNet can hold: dims are int32 (mx_int), tensors int32-indexed
    bad([[D0], [("data", (3, 3, 2 ** 31, 10))]], None,
        ["data_shapes[1]", str(2 ** 31), "up to 2147483647 (int32)"], "dim_beyond_int32"),
    bad([[D0], [("data", (3, 3, 2 ** 40, 10))]], None,
        ["data_shapes[1]", str(2 ** 40)], "dim_beyond_unsigned_int32"),
    bad([[D0], [("data", (3, 3, 2 ** 16, 2 ** 16))]], None,
        ["data_shapes[1]", "38654705664 elements", "up to 2147483647 elements"],
        "tensor_beyond_int32_elements"),
    # Something else where a shape belongs
    bad([[D0], [("data", {"n": 3})]], None, ["data_shapes[1]", "{'n': 3}"], "dict_as_shape"),
    bad([[D0], [("data", "3x3x6x10")]], None, ["data_shapes[1]", "'3x3x6x10'"],
        "string_as_shape"),
    bad([[D0], [("data", np.array([3, 3, 6, 10]))]], None,
        ["data_shapes[1]", repr(np.array([3, 3, 6, 10]))], "numpy_array_as_shape"),
    bad([[(2, 3, 8, 8)], [(3, 3, 6, 10)]], None, ["data_shapes[0]", "(2, 3, 8, 8)"],
        "shapes_without_names"),
    bad([[D0], [("data", (3, 3, 6, 10), np.float32, "NCHW", "extra")]], None,
        ["data_shapes[1]", "'extra'"], "entry_with_five_fields"),
    # Something else where a device entry belongs
    bad([[D0], {"data": (3, 3, 6, 10)}], None, ["data_shapes[1]", "{'data': (3, 3, 6, 10)}"],
        "dict_as_device_entry"),
    bad([[D0], "data"], None, ["data_shapes[1]", "'data'"], "string_as_device_entry"),
    bad(DATA_SHAPES, [[L0], {"softmax_label": (3,)}], ["label_shapes[1]", "{'softmax_label'"],
        "dict_as_label_device_entry"),
    bad(DATA_SHAPES, {"softmax_label": (2,)}, ["label_shapes", "{'softmax_label': (2,)}"],
        "dict_as_label_shapes"),
    # Batch sizes and layouts
    bad(DATA_SHAPES, [[L0], [("softmax_label", (4,))]],
        ["device 1", "'data': 3", "'softmax_label': 4"], "label_batch_differs_from_data"),
    bad([[NCHW], [CNHW]], None, ["data_shapes[1]", "'CNHW'", "'NCHW'"],
        "batch_axis_differs_between_devices"),
    bad([[D0], [mx.io.DataDesc("data", (3, 3, 6, 10), np.float64)]], None,
        ["data_shapes[1]", "'data'", "float64", "device 0 gives float32"],
        "dtype_differs_between_devices"),
    bad([[D0], [("data", (3, 180))]], None,
        ["data_shapes[1] gives 'data' the shape (3, 180), of rank 2, but device 0 gives "
         "(2, 3, 8, 8), of rank 4; every device must give an input the same number of axes"],
        "rank_differs_between_devices"),
    bad(DATA_SHAPES, [[L0], [("softmax_label", (3, 1))]],
        ["label_shapes[1] gives 'softmax_label' the shape (3, 1), of rank 2, but device 0 "
         "gives (2,), of rank 1;"],
        "label_rank_differs_between_devices"),
    bad(DATA_SHAPES, [[mx.io.DataDesc("softmax_label", (2,), np.int32)], [L1]],
        ["label_shapes[1]", "'softmax_label'", "float32", "device 0 gives int32"],
        "label_dtype_differs_between_devices"),
    bad([[mx.io.DataDesc("data", (2,), layout="TNC")],
         [mx.io.DataDesc("data", (3,), layout="TNC")]], None,
        ["data_shapes[0]", "'TNC'", "(2,)"], "batch_axis_outside_the_shape"),
]


def assert_names_the_problem(error, fragments):
    assert isinstance(error, ValueError)
    message = str(error)
    for fragment in fragments:
        assert fragment in message, "%r missing from %r" % (fragment, message)


# --------------------------------------------------------------------------- bind
def bind_through_patched_method(mod, data_shapes, label_shapes, **kwargs):
    with mxpatch_bind.patched():
        mod.bind(data_shapes, label_shapes, **kwargs)


def bind_through_free_function(mod, data_shapes, label_shapes, **kwargs):
    mxpatch_bind.bind(mod, data_shapes, label_shapes, **kwargs)


BIND_ENTRY_POINTS = [
    pytest.param(bind_through_patched_method, id="patched_Module.bind"),
    pytest.param(bind_through_free_function, id="mxpatch_bind.bind"),
]


@pytest.mark.parametrize("bind", BIND_ENTRY_POINTS)
@pytest.mark.parametrize("data_shapes, label_shapes, fragments", BAD_SPECS)
def test_a_malformed_spec_fails_bind_and_leaves_the_module_unbound(contexts, bind, data_shapes,
                                                                   label_shapes, fragments):
    mod = mx.mod.Module(conv_net(), context=contexts)
    with pytest.raises(ShapeSpecError) as raised:
        bind(mod, data_shapes, label_shapes)
    assert_names_the_problem(raised.value, fragments)
    assert mod.binded is False
    assert mod._exec_group is None
    assert mod._data_shapes is None and mod._label_shapes is None
    assert mod._arg_params is None and mod._aux_params is None
    assert mod.params_initialized is False
    assert type(mod) is mx.mod.Module


@pytest.fixture
def inference_module(contexts):
    """A per-device module bound for inference, with fixed parameters and a first forward."""
    mod = mx.mod.Module(conv_net(), context=contexts)
    mxpatch_bind.bind(mod, DATA_SHAPES, LABEL_SHAPES, for_training=False)
    mod.set_params(*fixed_params(conv_net(), (2, 3, 8, 8)))
    return mod


def _outputs(mod):
    mod.forward(device_batch(device_pairs([shape for (_, shape), in DATA_SHAPES])),
                is_train=False)
    return [out.asnumpy() for out in mod.get_outputs(merge_multi_context=False)[0]]


def _described_shapes(mod):
    describe = lambda descs: [(d.name, tuple(d.shape), d.dtype, d.layout) for d in descs]
    return ([describe(device) for device in mod.data_shapes],
            [describe(device) for device in mod.label_shapes])


@pytest.mark.parametrize("data_shapes, label_shapes, fragments", BAD_SPECS)
def test_a_malformed_spec_fails_force_rebind_and_keeps_the_previous_binding(
        inference_module, data_shapes, label_shapes, fragments):
    mod = inference_module
    shapes_before, outputs_before = _described_shapes(mod), _outputs(mod)
    group, arg_params = mod._exec_group, mod._arg_params
    with pytest.raises(ShapeSpecError) as raised:
        mxpatch_bind.bind(mod, data_shapes, label_shapes, force_rebind=True)
    assert_names_the_problem(raised.value, fragments)
    assert mod.binded and mod.params_initialized
    assert mod._exec_group is group and mod._arg_params is arg_params
    assert _described_shapes(mod) == shapes_before
    for after, before in zip(_outputs(mod), outputs_before):
        np.testing.assert_array_equal(after, before)


# --------------------------------------------------------------------------- reshape
def reshape_through_free_function(mod, data_shapes, label_shapes):
    mxpatch_bind.reshape(mod, data_shapes, label_shapes)


def reshape_through_patched_method(mod, data_shapes, label_shapes):
    with mxpatch_bind.patched():
        mod.reshape(data_shapes, label_shapes)


def reshape_through_the_modules_own_method(mod, data_shapes, label_shapes):
    assert not mxpatch_bind.is_installed()
    mod.reshape(data_shapes, label_shapes)


RESHAPE_ENTRY_POINTS = [
    pytest.param(reshape_through_free_function, id="mxpatch_bind.reshape"),
    pytest.param(reshape_through_patched_method, id="patched_Module.reshape"),
    pytest.param(reshape_through_the_modules_own_method, id="unpatched_module.reshape"),
]


@pytest.mark.parametrize("reshape", RESHAPE_ENTRY_POINTS)
@pytest.mark.parametrize("data_shapes, label_shapes, fragments", BAD_SPECS)
def test_a_malformed_spec_fails_reshape_and_the_module_keeps_working(
        inference_module, reshape, data_shapes, label_shapes, fragments):
    mod = inference_module
    shapes_before, outputs_before = _described_shapes(mod), _outputs(mod)
    with pytest.raises(ShapeSpecError) as raised:
        reshape(mod, data_shapes, label_shapes)
    assert_names_the_problem(raised.value, fragments)
    assert _described_shapes(mod) == shapes_before
    for after, before in zip(_outputs(mod), outputs_before):
        np.testing.assert_array_equal(after, before)


def test_the_well_formed_reference_spec_reshapes(inference_module):
    mxpatch_bind.reshape(inference_module, [[D1], [D0]], [[L1], [L0]])
    assert [[d.shape for d in device] for device in inference_module.data_shapes] == [
        [(3, 3, 6, 10)], [(2, 3, 8, 8)]]


def test_the_free_bind_on_a_bound_stock_module_warns_and_changes_nothing(contexts, caplog):
    mod = mx.mod.Module(conv_net(), context=contexts)
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    before = module_state(mod)
    mxpatch_bind.bind(mod, DATA_SHAPES, LABEL_SHAPES)
    assert "Already bound" in caplog.text
    assert_same_state(before, module_state(mod))
    assert type(mod) is mx.mod.Module


def test_the_largest_tensor_mxnet_holds_is_what_the_parser_accepts():
    assert max_array_elements() == 2 ** 31 - 1  # this wheel is built without INT64_TENSOR_SIZE
    spec = shapes.parse_device_shapes([[("data", (2 ** 31 - 1,))], [("data", (1,))]], None,
                                      ["data"], [], 2)
    assert spec.data[0][0].shape == (2 ** 31 - 1,)


@pytest.mark.parametrize("data_shapes", [{"data": (2, 3)}, "data", None])
def test_the_parser_refuses_data_shapes_that_are_no_list_of_devices(data_shapes):
    # bind and reshape send such specs to stock MXNet; the parser itself still says what it is.
    with pytest.raises(ShapeSpecError) as raised:
        shapes.parse_device_shapes(data_shapes, None, ["data"], [], 2)
    assert str(raised.value) == "data_shapes must be %s; got %r" % (shapes._SPEC_FORM,
                                                                     data_shapes)


def test_shape_spec_error_is_a_value_error_and_a_patch_error():
    assert issubclass(ShapeSpecError, ValueError)
    assert issubclass(ShapeSpecError, mxpatch_bind.PatchError)


# --------------------------------------------------------------------------- no asserts
def _assert_statements():
    found = []
    for directory, _, files in os.walk(PACKAGE_DIR):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read(), filename=path)
            found.extend("%s:%d" % (os.path.relpath(path, PACKAGE_DIR), node.lineno)
                         for node in ast.walk(tree) if isinstance(node, ast.Assert))
    return found


def test_the_package_source_has_no_assert_statements():
    # Input checks must survive ``python -O``, which strips assert statements.
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "module", "shapes.py"))
    assert _assert_statements() == []


def test_an_mxnet_built_with_int64_tensor_size_holds_what_numpy_s_int64_bytes_allow(monkeypatch):
    from mxnet import runtime

    class Features:
        def is_enabled(self, name):
            return name == "INT64_TENSOR_SIZE"

    monkeypatch.setattr(runtime, "Features", Features)
    max_array_elements.cache_clear()
    try:
        assert max_array_elements() == (2 ** 63 - 1) // 8
        big = (2 ** 16, 2 ** 16, 2)  # 2**33 elements: beyond int32 indexing, within int64
        spec = shapes.parse_device_shapes([[("data", big)], [("data", big)]], None,
                                          ["data"], [], 2)
        assert spec.data[1][0].shape == big
    finally:
        max_array_elements.cache_clear()


@pytest.mark.parametrize("layout, shape", [("TNC", (4,)), ("TCN", (4,)), ("TCN", (4, 3))])
def test_a_layout_whose_batch_axis_is_past_the_shape_is_refused(layout, shape):
    spec = [[mx.io.DataDesc("data", shape, layout=layout)]] * 2
    with pytest.raises(ShapeSpecError, match="outside the shape"):
        shapes.parse_device_shapes(spec, None, ["data"], [], 2)


@pytest.mark.parametrize("label_shapes", [
    [[("softmax_label", (2,))], ("softmax_label", (3,))],   # a flat entry mixed in
    [[("softmax_label", (2,))], [7]],                        # no (name, shape) pair
    [[("softmax_label", (2,))]],                             # one device short
    "softmax_label",                                         # no list
])
def test_a_label_spec_error_gives_a_label_example(label_shapes):
    with pytest.raises(ShapeSpecError) as error:
        shapes.parse_device_shapes([[("data", (2, 3))], [("data", (3, 3))]], label_shapes,
                                   ["data"], ["softmax_label"], 2)
    message = str(error.value)
    assert "e.g. [('softmax_label', (2,))]" in message or (
        "e.g. [[('softmax_label', (2,))], [('softmax_label', (3,))]]" in message)
    assert "('data'" not in message.split("got")[0]


def test_a_data_spec_error_keeps_the_data_example():
    with pytest.raises(ShapeSpecError, match=r"e\.g\. \[\('data', \(2, 3, 32, 48\)\)\]"):
        shapes.parse_device_shapes([[("data", (2, 3))], ("data", (3, 3))], None, ["data"], [], 2)
