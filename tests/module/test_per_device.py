"""Per-device binding against the oracle: stock MXNet on one context with that device's shape."""

import re

import mxnet as mx
import numpy as np
import pytest
from nets import (
    bound_module,
    conv_features,
    conv_net,
    device_batch,
    device_contexts,
    device_pairs,
    fixed_params,
    per_device_spec,
    random_batch,
    single_device_reference,
)

import mxpatch_bind
from mxpatch_bind.module import binding

SHAPES = [(2, 3, 32, 48), (3, 3, 40, 24), (1, 3, 16, 20), (2, 3, 24, 24)]


def device_grads(mod, device):
    group = mod._exec_group
    return {name: grads[device].asnumpy() for name, grads in zip(group.param_names,
                                                                 group.grad_arrays)}


def assert_each_device_computes_its_reference(mod, symbol, params, pairs):
    """Each device's last inference outputs equal stock on one context, bit for bit."""
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    for device, (data, label) in enumerate(pairs):
        reference, _ = single_device_reference(symbol, params, data, label, for_training=False)
        assert np.array_equal(outputs[device].asnumpy(), reference[0])


@pytest.mark.parametrize("num_devices", [1, 2, 3, 4])
def test_each_device_matches_a_stock_one_context_module_exactly(num_devices):
    shapes = SHAPES[:num_devices]
    symbol = conv_net(batch_norm=True)
    params = fixed_params(symbol, shapes[0])
    mod = bound_module(symbol, shapes, params)
    pairs = device_pairs(shapes)
    batch = device_batch(pairs)
    mod.forward(batch, is_train=True)
    mod.backward()
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    for device, (data, label) in enumerate(pairs):
        ref_outputs, ref_grads = single_device_reference(symbol, params, data, label)
        assert np.array_equal(outputs[device].asnumpy(), ref_outputs[0])
        got = device_grads(mod, device)
        for name, grad in ref_grads.items():
            assert np.array_equal(got[name], grad), name


def test_data_label_and_output_shapes_are_per_device_lists():
    shapes = SHAPES[:2]
    symbol = conv_net()
    mod = bound_module(symbol, shapes, fixed_params(symbol, shapes[0]))
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[s] for s in shapes]
    assert [[d.shape for d in device] for device in mod.label_shapes] == [[(2,)], [(3,)]]
    assert mod.output_shapes == [[("softmax_output", (2, 3))], [("softmax_output", (3, 3))]]
    assert isinstance(mod, mx.mod.Module)


def test_batch_size_is_the_total_so_one_sgd_step_divides_the_summed_gradients_by_it():
    shapes = SHAPES[:2]
    symbol = conv_net()
    params = fixed_params(symbol, shapes[0])
    mod = bound_module(symbol, shapes, params)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    assert mod._exec_group.batch_size == 5
    assert mod._optimizer.rescale_grad == pytest.approx(1.0 / 5)
    pairs = device_pairs(shapes)
    batch = device_batch(pairs)
    mod.forward_backward(batch)
    summed = {name: device_grads(mod, 0)[name] + device_grads(mod, 1)[name]
              for name in params[0]}
    mod.update()
    new_args, _ = mod.get_params()
    for name, weight in params[0].items():
        expected = weight.asnumpy() - np.float32(0.5) * summed[name] * np.float32(1.0 / 5)
        np.testing.assert_allclose(new_args[name].asnumpy(), expected, rtol=1e-6, atol=1e-7)


def test_parameters_are_kept_on_the_cpu_as_stock_keeps_them():
    shapes = SHAPES[:2]
    mod = mx.mod.Module(conv_net(), context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(shapes))
    assert mod._arg_params["conv_weight"].context == mx.cpu()
    assert mod._total_exec_bytes == mod._exec_group._total_exec_bytes  # stock: MB, rounded


def test_forward_reshapes_only_the_devices_whose_shapes_changed():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    untouched = mod._exec_group.execs[0]
    new_shapes = [SHAPES[0], SHAPES[2]]
    pairs = device_pairs(new_shapes, seed=7)
    batch = device_batch(pairs)
    mod.forward(batch, is_train=False)
    assert mod._exec_group.execs[0] is untouched
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[s] for s in new_shapes]
    assert_each_device_computes_its_reference(mod, symbol, params, pairs)


def test_a_pre_sliced_list_of_batches_may_have_different_shapes_per_device():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    shapes = [SHAPES[3], SHAPES[1]]
    pairs = device_pairs(shapes, seed=3)
    batches = [mx.io.DataBatch([d], [l]) for d, l in pairs]
    mod.forward(batches, is_train=True)
    mod.backward()
    for device, (data, label) in enumerate(pairs):
        ref_outputs, ref_grads = single_device_reference(symbol, params, data, label)
        assert np.array_equal(mod.get_outputs(False)[0][device].asnumpy(), ref_outputs[0])
        assert np.array_equal(device_grads(mod, device)["conv_weight"], ref_grads["conv_weight"])


def test_a_flat_batch_is_shared_out_by_rows_when_only_batch_sizes_differ():
    symbol = conv_net()
    params = fixed_params(symbol, (1, 3, 20, 20))
    mod = bound_module(symbol, [(1, 3, 20, 20), (3, 3, 20, 20)], params)
    data, label = random_batch((4, 3, 20, 20), seed=5)
    mod.forward(mx.io.DataBatch([data], [label]), is_train=False)
    assert mod._exec_group.per_device
    reference, _ = single_device_reference(symbol, params, data, label, for_training=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), reference[0])


def test_a_flat_batch_of_another_shape_moves_the_module_back_to_stock_form():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    data, label = random_batch((4, 3, 16, 16), seed=6)
    mod.forward(mx.io.DataBatch([data], [label]), is_train=False)
    assert not mod._exec_group.per_device
    assert [d.shape for d in mod.data_shapes] == [(4, 3, 16, 16)]
    reference, _ = single_device_reference(symbol, params, data, label, for_training=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), reference[0], rtol=1e-6)


def test_a_flat_batch_whose_rows_add_up_but_whose_image_sizes_differ_goes_to_stock_form():
    # Device 0's height and width fit the batch, device 1's do not: summing the batch axis
    # alone would share the batch out by rows into an executor of another image size.
    symbol = conv_net()
    params = fixed_params(symbol, (1, 3, 20, 20))
    mod = bound_module(symbol, [(1, 3, 20, 20), (3, 3, 16, 16)], params)
    data, label = random_batch((4, 3, 20, 20), seed=7)
    mod.forward(mx.io.DataBatch([data], [label]), is_train=False)
    assert not mod._exec_group.per_device
    stock = mx.mod.Module(symbol, context=device_contexts(2))
    stock.bind([("data", (4, 3, 20, 20))], [("softmax_label", (4,))], for_training=False)
    stock.set_params(*params)
    stock.forward(mx.io.DataBatch([data], [label]), is_train=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), stock.get_outputs()[0].asnumpy())


def test_reshape_moves_a_module_between_stock_and_per_device_form():
    symbol = conv_net()
    params = fixed_params(symbol, (4, 3, 16, 16))
    mod = mx.mod.Module(symbol, context=device_contexts())
    mod.bind([("data", (4, 3, 16, 16))], [("softmax_label", (4,))])
    mod.set_params(*params)
    mxpatch_bind.reshape(mod, *per_device_spec(SHAPES[:2]))
    pairs = device_pairs(SHAPES[:2])
    batch = device_batch(pairs)
    mod.forward(batch, is_train=False)
    assert_each_device_computes_its_reference(mod, symbol, params, pairs)
    mod.reshape([("data", (2, 3, 16, 16))], [("softmax_label", (2,))])
    assert [d.shape for d in mod.data_shapes] == [(2, 3, 16, 16)]
    assert mod._exec_group.slices == [slice(0, 1), slice(1, 2)]


def test_reshape_returns_early_when_no_shape_changed():
    symbol = conv_net()
    mod = bound_module(symbol, SHAPES[:2], fixed_params(symbol, SHAPES[0]))
    execs = list(mod._exec_group.execs)
    mxpatch_bind.reshape(mod, *per_device_spec(SHAPES[:2]))
    assert all(a is b for a, b in zip(execs, mod._exec_group.execs))


def test_a_larger_shape_grows_the_base_executor_once_and_recurring_shapes_hit_the_cache():
    symbol = conv_net()
    mod = bound_module(symbol, [(1, 3, 16, 16), (1, 3, 16, 16)],
                       fixed_params(symbol, (1, 3, 16, 16)))
    group = mod._exec_group
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (1, 3, 8, 8)]))
    assert group._default_execs[1] is not group.execs[1]  # a view, base kept
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (2, 3, 32, 32)]))
    grown = group.execs[1]
    assert group._default_execs[1] is grown
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (1, 3, 8, 8)]))
    small = group.execs[1]
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (2, 3, 32, 32)]))
    assert group.execs[1] is grown
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (1, 3, 8, 8)]))
    assert group.execs[1] is small


def test_a_shape_as_large_as_the_base_is_a_view_and_the_base_stays():
    symbol = conv_net()
    mod = bound_module(symbol, [(1, 3, 16, 16), (1, 3, 16, 16)],
                       fixed_params(symbol, (1, 3, 16, 16)))
    group = mod._exec_group
    base = group.execs[1]
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (1, 3, 8, 32)]))
    assert group.execs[1] is not base and group._default_execs[1] is base
    mxpatch_bind.reshape(mod, *per_device_spec([(1, 3, 16, 16), (1, 3, 16, 16)]))
    assert group.execs[1] is base


def test_numpy_arrays_in_a_device_batch_compute_what_ndarrays_compute():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    pairs = device_pairs(SHAPES[:2])
    numpy_pairs = [(data.asnumpy(), label.asnumpy()) for data, label in pairs]
    mod.forward(device_batch(numpy_pairs), is_train=False)
    assert_each_device_computes_its_reference(mod, symbol, params, pairs)


@pytest.mark.parametrize("for_training", [True, False], ids=["training", "inference"])
def test_forward_without_is_train_runs_as_the_module_was_bound(for_training):
    symbol = conv_net(batch_norm=True)  # batch statistics in training, moving ones otherwise
    mod = bound_module(symbol, SHAPES[:2], fixed_params(symbol, SHAPES[0]),
                       for_training=for_training)
    batch = device_batch(device_pairs(SHAPES[:2]))

    def outputs(**is_train):
        mod.forward(batch, **is_train)
        return [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]

    default, bound_mode, other_mode = (outputs(), outputs(is_train=for_training),
                                       outputs(is_train=not for_training))
    assert all(np.array_equal(a, b) for a, b in zip(default, bound_mode))
    assert not any(np.array_equal(a, b) for a, b in zip(default, other_mode))


def test_outputs_that_differ_outside_the_batch_axis_refuse_to_merge_with_a_clear_error():
    symbol = conv_features()
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[:2], labels=False))
    mod.init_params()
    pairs = device_pairs(SHAPES[:2])
    batch = device_batch(pairs)
    mod.forward(mx.io.DataBatch(batch.data), is_train=False)
    with pytest.raises(ValueError, match="conv_output.*merge_multi_context=False"):
        mod.get_outputs()
    assert [o.shape for o in mod.get_outputs(merge_multi_context=False)[0]] == [
        (2, 2, 30, 46), (3, 2, 38, 22)]


def test_outputs_that_differ_only_right_after_the_batch_axis_refuse_to_merge_too():
    # A flattened feature map: its one non-batch axis grows with each device's image size.
    symbol = mx.sym.flatten(conv_features(), name="flat")
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[:2], labels=False), for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch(device_batch(device_pairs(SHAPES[:2])).data), is_train=False)
    per_device = [o.shape for o in mod.get_outputs(merge_multi_context=False)[0]]
    assert per_device == [(2, 2 * 30 * 46), (3, 2 * 38 * 22)]
    with pytest.raises(ValueError, match="cannot merge output 'flat_output'.*%s" %
                       re.escape(repr(per_device))):
        mod.get_outputs()


def test_outputs_merge_along_the_batch_axis_when_other_axes_agree():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    pairs = device_pairs(SHAPES[:2])
    batch = device_batch(pairs)
    mod.forward(batch, is_train=False)
    merged = mod.get_outputs()[0].asnumpy()
    parts = [o.asnumpy() for o in mod.get_outputs(False)[0]]
    assert np.array_equal(merged, np.concatenate(parts))


def test_backward_takes_per_device_out_grads_and_input_grads_match_the_oracle():
    symbol = conv_features()
    shapes = SHAPES[:2]
    params = fixed_params(symbol, shapes[0])
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(shapes, labels=False), inputs_need_grad=True)
    mod.set_params(*params)
    pairs = device_pairs(shapes)
    batch = device_batch(pairs)
    mod.forward(mx.io.DataBatch(batch.data), is_train=True)
    out_grads = [[mx.nd.ones(o.shape) * (i + 1)] for i, o in
                 enumerate(mod.get_outputs(False)[0])]
    mod.backward(out_grads)
    input_grads = mod.get_input_grads(merge_multi_context=False)[0]
    for device, (data, _) in enumerate(pairs):
        ref = mx.mod.Module(symbol, label_names=None, context=device_contexts(1)[0])
        ref.bind([("data", data.shape)], inputs_need_grad=True)
        ref.set_params(*params)
        ref.forward(mx.io.DataBatch([data]), is_train=True)
        ref.backward([out_grads[device][0]])
        assert np.array_equal(input_grads[device].asnumpy(), ref.get_input_grads()[0].asnumpy())
        assert np.array_equal(device_grads(mod, device)["conv_weight"],
                              ref._exec_group.grad_arrays[0][0].asnumpy())


def test_per_device_out_grads_for_too_few_devices_are_refused_by_count():
    symbol = conv_features()
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[:2], labels=False))
    mod.set_params(*fixed_params(symbol, SHAPES[0]))
    mod.forward(mx.io.DataBatch(device_batch(device_pairs(SHAPES[:2])).data), is_train=True)
    first = mod.get_outputs(False)[0][0]
    with pytest.raises(ValueError, match="^out_grads has 1 per-device entries but the module "
                                         "has 2 devices$"):
        mod.backward([[mx.nd.ones(first.shape)]])


@pytest.mark.parametrize("lists_first", [True, False])
def test_out_grads_that_mix_device_lists_and_arrays_are_refused(lists_first):
    symbol = conv_features()
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[:2], labels=False))
    mod.set_params(*fixed_params(symbol, SHAPES[0]))
    mod.forward(mx.io.DataBatch(device_batch(device_pairs(SHAPES[:2])).data), is_train=True)
    outputs = mod.get_outputs(False)[0]
    grads = [[mx.nd.ones(outputs[0].shape)], mx.nd.ones(outputs[1].shape)]
    out_grads, array_at = (grads, 1) if lists_first else ([grads[1], grads[0]], 0)
    with pytest.raises(ValueError, match="^out_grads mixes per-device lists and arrays: entry "
                                         "%d is a NDArray;" % array_at):
        mod.backward(out_grads)


def test_update_metric_takes_per_device_labels_in_both_batch_forms():
    symbol = conv_net()
    mod = bound_module(symbol, SHAPES[:2], fixed_params(symbol, SHAPES[0]))
    pairs = device_pairs(SHAPES[:2])
    batch = device_batch(pairs)
    mod.forward(batch, is_train=False)
    predictions = np.concatenate([o.asnumpy() for o in mod.get_outputs(False)[0]]).argmax(1)
    labels = np.concatenate([l.asnumpy() for _, l in pairs])
    expected = float((predictions == labels).mean())
    for labels_arg, pre_sliced in ((batch.label, False), (batch.label, True)):
        metric = mx.metric.Accuracy()
        mod.update_metric(metric, labels_arg, pre_sliced=pre_sliced)
        assert metric.get()[1] == pytest.approx(expected)


def test_update_metric_takes_merged_labels_when_the_devices_agree_outside_the_batch_axis():
    symbol = conv_net()
    shapes = [(1, 3, 16, 16), (3, 3, 16, 16)]
    mod = bound_module(symbol, shapes, fixed_params(symbol, shapes[0]))
    pairs = device_pairs(shapes)
    mod.forward(device_batch(pairs), is_train=False)
    predictions = np.concatenate([o.asnumpy() for o in mod.get_outputs(False)[0]]).argmax(1)
    labels = np.concatenate([label.asnumpy() for _, label in pairs])
    metric = mx.metric.Accuracy()
    mod.update_metric(metric, [mx.nd.array(labels)])  # one merged label array, sliced by rows
    assert metric.get()[1] == pytest.approx(float((predictions == labels).mean()))
    assert metric.num_inst == len(labels)


def test_shared_module_shares_parameters_across_per_device_modules():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    first = bound_module(symbol, SHAPES[:2], params)
    second = mx.mod.Module(symbol, context=device_contexts())
    mxpatch_bind.bind(second, *per_device_spec([SHAPES[2], SHAPES[3]]), shared_module=first)
    assert second.params_initialized and second._arg_params is first._arg_params
    first.set_params({k: v * 2 for k, v in params[0].items()}, params[1])
    doubled = ({k: v * 2 for k, v in params[0].items()}, params[1])
    pairs = device_pairs([SHAPES[2], SHAPES[3]])
    batch = device_batch(pairs)
    second.forward(batch, is_train=False)
    for device, (data, label) in enumerate(pairs):
        reference, _ = single_device_reference(symbol, doubled, data, label, for_training=False)
        assert np.array_equal(second.get_outputs(False)[0][device].asnumpy(), reference[0])


def test_rebinding_keeps_initialised_parameters():
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = bound_module(symbol, SHAPES[:2], params)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[2:4]), force_rebind=True)
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[SHAPES[2]], [SHAPES[3]]]
    args, _ = mod.get_params()
    for name, value in params[0].items():
        assert np.array_equal(args[name].asnumpy(), value.asnumpy())
    # The new executors hold them too, not only the module's CPU copies.
    pairs = device_pairs(SHAPES[2:4])
    mod.forward(device_batch(pairs), is_train=False)
    assert_each_device_computes_its_reference(mod, symbol, params, pairs)


def test_binding_an_already_bound_module_warns_and_changes_nothing(caplog):
    symbol = conv_net()
    mod = bound_module(symbol, SHAPES[:2], fixed_params(symbol, SHAPES[0]))
    group = mod._exec_group
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES[2:4]))
    assert mod._exec_group is group
    assert "Already bound" in caplog.text


def test_dtype_and_a_tnc_layout_are_honoured_per_device():
    data = mx.sym.Variable("data")
    symbol = mx.sym.FullyConnected(mx.sym.sum(data, axis=0), num_hidden=3, name="fc")
    descs = [[mx.io.DataDesc("data", (5, n, 4), np.float64, "TNC")] for n in (2, 3)]
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, descs, for_training=False)
    mod.init_params(mx.init.Uniform(0.5))
    assert mod._exec_group.batch_size == 5
    assert mod._exec_group.execs[1].arg_dict["data"].dtype == np.float64
    arrays = [mx.nd.array(np.random.RandomState(n).rand(5, n, 4), dtype=np.float64)
              for n in (2, 3)]
    mod.forward(mx.io.DataBatch([[a] for a in arrays]), is_train=False)
    merged = mod.get_outputs()[0]
    assert merged.shape == (5, 3)
    expected = np.concatenate([o.asnumpy() for o in mod.get_outputs(False)[0]])
    assert np.array_equal(merged.asnumpy(), expected)


def test_name_shape_dtype_layout_tuples_are_read_as_data_desc_fields():
    # Stock specs may be (name, shape, dtype[, layout]) tuples; so may per-device entries.
    data = mx.sym.Variable("data")
    symbol = mx.sym.FullyConnected(mx.sym.sum(data, axis=0), num_hidden=3, name="fc")
    spec = [[("data", (5, 2, 4), np.float64, "TNC")], [("data", (5, 3, 4), np.float64, "TNC")]]
    mod = mx.mod.Module(symbol, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, spec, for_training=False)
    assert [e.arg_dict["data"].dtype for e in mod._exec_group.execs] == [np.float64] * 2
    assert [[(d.dtype, d.layout) for d in device] for device in mod.data_shapes] == [
        [(np.float64, "TNC")]] * 2
    assert mod._exec_group.batch_size == 5  # the batch axis comes from the layout


def test_labels_may_be_absent_for_every_device():
    symbol = conv_net()
    mod = mx.mod.Module(symbol, context=device_contexts())
    mxpatch_bind.bind(mod, per_device_spec(SHAPES[:2])[0], [None, None], for_training=False)
    assert mod.label_shapes is None


def test_stock_form_under_the_patch_is_bit_identical_to_an_unpatched_module():
    symbol = conv_net(batch_norm=True)
    params = fixed_params(symbol, (4, 3, 16, 16))
    data, label = random_batch((4, 3, 16, 16), seed=2)

    def train_one_step():
        mod = mx.mod.Module(symbol, context=device_contexts())
        mod.bind([("data", (4, 3, 16, 16))], [("softmax_label", (4,))])
        mod.set_params(*params)
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
        mod.forward_backward(mx.io.DataBatch([data], [label]))
        mod.update()
        outputs = mod.get_outputs()[0].asnumpy()
        args, aux = mod.get_params()
        return type(mod), type(mod._exec_group), outputs, args, aux

    unpatched = train_one_step()
    with mxpatch_bind.patched():
        patched = train_one_step()
    assert patched[:2] == unpatched[:2] == (mx.mod.Module, unpatched[1])
    assert np.array_equal(patched[2], unpatched[2])
    for got, want in zip(patched[3:], unpatched[3:]):
        for name in want:
            assert np.array_equal(got[name].asnumpy(), want[name].asnumpy()), name


def test_a_bigger_batch_of_smaller_images_does_not_replace_the_base_back_and_forth():
    symbol = conv_net()
    mod = bound_module(symbol, [(2, 3, 28, 28)] * 2, fixed_params(symbol, (2, 3, 28, 28)))
    group = mod._exec_group
    bases = list(group.execs)
    for step in range(6):
        # Alternate: the label grows (3 > 2) while the data shrinks (3*16*32 < 2*28*28).
        shapes = [(2, 3, 28, 28), (3, 3, 16, 32)] if step % 2 else [(3, 3, 16, 32)] * 2
        mxpatch_bind.reshape(mod, *per_device_spec(shapes))
        assert all(a is b for a, b in zip(group._default_execs, bases))


def test_input_grads_of_a_tnc_input_merge_along_its_batch_axis_1():
    data = mx.sym.Variable("data")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(mx.sym.sum(data, axis=0),
                                                            num_hidden=3, name="fc")))
    descs = [[mx.io.DataDesc("data", (5, n, 4), layout="TNC")] for n in (2, 3)]
    mod = mx.mod.Module(loss, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, descs, inputs_need_grad=True)
    mod.init_params(mx.init.Uniform(0.5))
    mod.forward(mx.io.DataBatch([[mx.nd.ones(d.shape)] for (d,) in descs]), is_train=True)
    mod.backward()
    per_device = [g.asnumpy() for g in mod.get_input_grads(merge_multi_context=False)[0]]
    merged = mod.get_input_grads()[0].asnumpy()
    assert merged.shape == (5, 5, 4)
    assert np.array_equal(merged, np.concatenate(per_device, axis=1))


def test_input_grads_of_a_tnc_input_that_differ_outside_the_batch_axis_refuse_to_merge():
    data = mx.sym.Variable("data")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(mx.sym.sum(data, axis=0),
                                                            num_hidden=3, name="fc")))
    descs = [[mx.io.DataDesc("data", (t, n, 4), layout="TNC")] for t, n in ((5, 2), (6, 3))]
    mod = mx.mod.Module(loss, label_names=None, context=device_contexts())
    mxpatch_bind.bind(mod, descs, inputs_need_grad=True)
    mod.init_params(mx.init.Uniform(0.5))
    mod.forward(mx.io.DataBatch([[mx.nd.ones(d.shape)] for (d,) in descs]), is_train=True)
    mod.backward()
    per_device = mod.get_input_grads(merge_multi_context=False)[0]
    assert [g.shape for g in per_device] == [(5, 2, 4), (6, 3, 4)]
    with pytest.raises(ValueError, match="cannot merge input gradient 'data'.*batch axis 1"):
        mod.get_input_grads()


def test_a_stock_bound_module_fed_pre_sliced_batches_of_other_shapes_goes_per_device():
    # Stock forward asserts a pre-sliced list has one shape; the patched forward reshapes the
    # module to per device instead, and each device computes what a one-context module does.
    symbol = conv_net()
    params = fixed_params(symbol, SHAPES[0])
    mod = mx.mod.Module(symbol, context=device_contexts())
    mod.bind([("data", (4, 3, 16, 16))], [("softmax_label", (4,))], for_training=False)
    mod.set_params(*params)
    pairs = device_pairs(SHAPES[:2], seed=9)
    with mxpatch_bind.patched():
        mod.forward([mx.io.DataBatch([data], [label]) for data, label in pairs], is_train=False)
    assert binding.is_per_device(mod)
    assert_each_device_computes_its_reference(mod, symbol, params, pairs)


def test_a_reshape_back_to_stock_form_reports_stock_shapes_everywhere():
    symbol = conv_net()
    mod = bound_module(symbol, SHAPES[:2], fixed_params(symbol, SHAPES[0]))
    stock = mx.mod.Module(symbol, context=device_contexts())
    stock.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    mod.reshape([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    assert not mxpatch_bind.module.binding.is_per_device(mod)
    assert mod.output_shapes == stock.output_shapes == [("softmax_output", (4, 3))]
    assert mod.data_shapes == stock.data_shapes


def test_a_one_context_group_checks_a_labelled_batch_given_to_it_directly():
    symbol = conv_net()
    mod = bound_module(symbol, SHAPES[:1], fixed_params(symbol, SHAPES[0]))
    pairs = device_pairs(SHAPES[:1])
    mod._exec_group.forward(device_batch(pairs), is_train=False)  # the group checks it itself
    ref, _ = single_device_reference(symbol, fixed_params(symbol, SHAPES[0]), *pairs[0],
                                     for_training=False)
    assert np.array_equal(mod._exec_group.execs[0].outputs[0].asnumpy(), ref[0])
