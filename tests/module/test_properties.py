"""Property tests over random per-device shape specs.

Valid specs (2-4 contexts, batch 1-3 and spatial size 4-20 per device, labels or not) give
per-device outputs and parameter gradients exactly equal to stock one-context modules;
specs with one random corruption always raise ``ShapeSpecError`` and change nothing.
"""


import mxnet as mx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nets import conv_features, conv_net, fixed_params, single_device_reference

import mxpatch_bind

# 30 % of the profile's count (tests/conftest.py: 6 in the inner loop, 30 on CI) for valid specs,
# 10 % per kind of corruption (at least 3: 10 on CI).
FAST = settings(max_examples=settings.default.max_examples * 3 // 10,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
MALFORMED = settings(FAST, max_examples=max(3, settings.default.max_examples // 10))

LABELLED = conv_net()
UNLABELLED = conv_features()
LABELLED_PARAMS = fixed_params(LABELLED, (1, 3, 8, 8))
UNLABELLED_PARAMS = fixed_params(UNLABELLED, (1, 3, 8, 8))


# --------------------------------------------------------------------------- valid specs
def _entry(name, shape, form):
    if form == "desc":
        return mx.io.DataDesc(name, shape)
    return [name, shape] if form == "list" else (name, shape)


@st.composite
def device_specs(draw, labelled=None):
    """``(shapes, labelled, data_spec, label_spec)`` for 2-4 devices; labels drawn if None."""
    count = draw(st.integers(2, 4))
    shapes = [(draw(st.integers(1, 3)), 3, draw(st.integers(4, 20)), draw(st.integers(4, 20)))
              for _ in range(count)]
    forms = st.sampled_from(["tuple", "list", "desc"])
    data = [[_entry("data", shape, draw(forms))] for shape in shapes]
    if labelled is None:
        labelled = draw(st.booleans())
    if labelled:
        label = [[_entry("softmax_label", (shape[0],), draw(forms))] for shape in shapes]
    else:
        label = draw(st.sampled_from([None, [None] * count]))
    return shapes, labelled, data, label


def device_arrays(shapes, seed):
    rng = np.random.RandomState(seed)
    data = [mx.nd.array(rng.uniform(-1, 1, shape)) for shape in shapes]
    labels = [mx.nd.array(rng.randint(0, 3, shape[0])) for shape in shapes]
    return data, labels


def new_module(count, labelled):
    contexts = [mx.cpu(i) for i in range(count)]
    if labelled:
        return mx.mod.Module(LABELLED, context=contexts)
    return mx.mod.Module(UNLABELLED, label_names=None, context=contexts)


def bind_per_device(mod, data, label, through_method, **kwargs):
    if through_method:
        with mxpatch_bind.patched():
            mod.bind(data, label, **kwargs)
    else:
        mxpatch_bind.bind(mod, data, label, **kwargs)


def unlabelled_reference(data, out_grad):
    """Stock one-context module: outputs, parameter gradients for a given output gradient."""
    mod = mx.mod.Module(UNLABELLED, label_names=None, context=mx.cpu(0))
    mod.bind([("data", data.shape)])
    mod.set_params(*UNLABELLED_PARAMS)
    mod.forward(mx.io.DataBatch([data]), is_train=True)
    mod.backward([out_grad])
    grads = {name: g[0].asnumpy()
             for name, g in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays)}
    return [mod.get_outputs()[0].asnumpy()], grads


@FAST
@given(spec=device_specs(), through_method=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_every_device_equals_a_stock_one_context_module_exactly(spec, through_method, seed):
    shapes, labelled, data_spec, label_spec = spec
    mod = new_module(len(shapes), labelled)
    bind_per_device(mod, data_spec, label_spec, through_method)
    data, labels = device_arrays(shapes, seed)
    if labelled:
        mod.set_params(*LABELLED_PARAMS)
        mod.forward(mx.io.DataBatch([[d] for d in data], [[l] for l in labels]), is_train=True)
        mod.backward()
        references = [single_device_reference(LABELLED, LABELLED_PARAMS, d, l)
                      for d, l in zip(data, labels)]
    else:
        mod.set_params(*UNLABELLED_PARAMS)
        mod.forward(mx.io.DataBatch([[d] for d in data]), is_train=True)
        out_grads = [mx.nd.array(np.random.RandomState(seed + i).uniform(-1, 1, o.shape))
                     for i, o in enumerate(mod.get_outputs(merge_multi_context=False)[0])]
        mod.backward([[g] for g in out_grads])
        references = [unlabelled_reference(d, g) for d, g in zip(data, out_grads)]
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[s] for s in shapes]
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    group = mod._exec_group
    for device, (ref_outputs, ref_grads) in enumerate(references):
        assert np.array_equal(outputs[device].asnumpy(), ref_outputs[0]), device
        for name, grads in zip(group.param_names, group.grad_arrays):
            assert np.array_equal(grads[device].asnumpy(), ref_grads[name]), (device, name)


# --------------------------------------------------------------------------- malformed specs
def _copy(spec):
    return None if spec is None else [None if d is None else list(d) for d in spec]


def _pair(entry):
    return (entry.name, tuple(entry.shape)) if isinstance(entry, mx.io.DataDesc) else (
        entry[0], tuple(entry[1]))


BAD_DIMS = [0, -1, -3, 1.5, 2.0, True, False, None, "3", np.float32(2.0)]
BAD_SHAPES = [{"n": 2}, "2,3,8,8", np.array([2, 3, 8, 8]), None, (), frozenset({2, 3})]
BAD_DEVICE_ENTRIES = [None, "data", {"data": (2, 3, 8, 8)}, 7]


# (corruption, side, labels needed: True, False or None for either)
CORRUPTIONS = (
    [(name, "data", None) for name in ("drop_device", "add_device", "flat_entry", "rename",
                                       "bad_dim", "bad_shape", "duplicate_name", "extra_input",
                                       "bad_device_entry", "layout")]
    + [(name, "label", True) for name in ("drop_device", "add_device", "flat_entry", "rename",
                                          "bad_dim", "bad_shape", "duplicate_name",
                                          "extra_input", "bad_device_entry",
                                          "labels_partly_none", "label_batch_mismatch")]
    + [("labels_for_one_device", "label", False)])


@st.composite
def malformed_specs(draw, name, side, labels_needed):
    """A valid spec with exactly one corruption: ``(shapes, labelled, data, label, what)``."""
    shapes, labelled, data, label = draw(device_specs(labels_needed))
    data, label = _copy(data), _copy(label)
    count = len(shapes)
    device = draw(st.integers(0, count - 1))
    spec = data if side == "data" else label
    input_name = "data" if side == "data" else "softmax_label"
    if name == "drop_device":
        del spec[device]
    elif name == "add_device":
        spec.insert(device, list(spec[draw(st.integers(0, count - 1))]))
    elif name == "flat_entry":
        spec[device] = spec[device][0]
    elif name == "rename":
        spec[device] = [_entry(input_name + "_renamed", _pair(spec[device][0])[1], "tuple")]
    elif name == "bad_dim":
        entry_shape = list(_pair(spec[device][0])[1])
        entry_shape[draw(st.integers(0, len(entry_shape) - 1))] = draw(st.sampled_from(BAD_DIMS))
        spec[device] = [(input_name, tuple(entry_shape))]
    elif name == "bad_shape":
        spec[device] = [(input_name, draw(st.sampled_from(BAD_SHAPES)))]
    elif name == "duplicate_name":
        spec[device] = [spec[device][0], spec[device][0]]
    elif name == "extra_input":
        spec[device] = spec[device] + [("extra", (shapes[device][0], 3))]
    elif name == "bad_device_entry":
        spec[device] = draw(st.sampled_from(BAD_DEVICE_ENTRIES))
    elif name == "layout":
        spec[device] = [mx.io.DataDesc("data", shapes[device], layout="CNHW")]
    elif name == "labels_partly_none":
        missing = draw(st.sets(st.integers(0, count - 1), min_size=1, max_size=count - 1))
        for index in missing:
            spec[index] = None
    elif name == "label_batch_mismatch":
        spec[device] = [("softmax_label", (shapes[device][0] + draw(st.integers(1, 3)),))]
    elif name == "labels_for_one_device":
        label = [None] * count
        label[device] = [("softmax_label", (shapes[device][0],))]
    return shapes, labelled, data, label, "%s on %s[%d]" % (name, side, device)


def bind_malformed(mod, data, label, through_method):
    if through_method:
        with mxpatch_bind.patched():
            mod.bind(data, label)
    else:
        mxpatch_bind.bind(mod, data, label)


@pytest.mark.parametrize("corruption", CORRUPTIONS, ids=lambda c: "%s-%s" % c[:2])
@MALFORMED
@given(draws=st.data(), through_method=st.booleans())
def test_a_malformed_spec_raises_shape_spec_error_and_leaves_the_module_unbound(
        corruption, draws, through_method):
    shapes, _, data, label, what = draws.draw(malformed_specs(*corruption))
    mod = mx.mod.Module(LABELLED, context=[mx.cpu(i) for i in range(len(shapes))])
    with pytest.raises(mxpatch_bind.ShapeSpecError):
        bind_malformed(mod, data, label, through_method)
    assert not mod.binded, what
    assert mod._exec_group is None and mod._data_shapes is None, what
    assert type(mod) is mx.mod.Module, what
    assert not mxpatch_bind.is_installed()


def snapshot(mod):
    group = mod._exec_group
    return {"class": type(mod), "group": group, "group_class": type(group),
            "execs": list(group.execs), "data_shapes": mod.data_shapes,
            "label_shapes": mod.label_shapes, "slices": list(group.slices),
            "batch_size": group.batch_size, "per_device": getattr(group, "per_device", None)}


def assert_same_snapshot(after, before, what):
    for key, value in before.items():
        if key == "execs":
            assert all(a is b for a, b in zip(after[key], value)) and len(after[key]) == len(
                value), what
        elif key == "group":
            assert after[key] is value, what
        else:
            assert after[key] == value, (what, key)


@pytest.mark.parametrize("corruption", CORRUPTIONS, ids=lambda c: "%s-%s" % c[:2])
@MALFORMED
@given(draws=st.data(), bound_per_device=st.booleans(), through_method=st.booleans())
def test_a_malformed_reshape_raises_shape_spec_error_and_keeps_shapes_and_executors(
        corruption, draws, bound_per_device, through_method):
    shapes, _, data, label, what = draws.draw(malformed_specs(*corruption))
    mod = mx.mod.Module(LABELLED, context=[mx.cpu(i) for i in range(len(shapes))])
    if bound_per_device:
        mxpatch_bind.bind(mod, [[("data", s)] for s in shapes],
                          [[("softmax_label", (s[0],))] for s in shapes], for_training=False)
    else:
        total = 2 * len(shapes)  # stock splits evenly; uneven splits can leave one empty
        mod.bind([("data", (total, 3, 8, 8))], [("softmax_label", (total,))], for_training=False)
    mod.set_params(*LABELLED_PARAMS)
    before = snapshot(mod)
    with pytest.raises(mxpatch_bind.ShapeSpecError):
        if through_method:
            with mxpatch_bind.patched():
                mod.reshape(data, label)
        else:
            mxpatch_bind.reshape(mod, data, label)
    assert_same_snapshot(snapshot(mod), before, what)
    # Still usable on its previous shapes.
    if bound_per_device:
        arrays, labels = device_arrays(shapes, 0)
        mod.forward(mx.io.DataBatch([[a] for a in arrays], [[l] for l in labels]),
                    is_train=False)
        outputs = mod.get_outputs(merge_multi_context=False)[0]
        assert [o.shape[0] for o in outputs] == [s[0] for s in shapes]
