"""SequentialModule with per-device shapes: chained per device, or refused with nothing changed."""

import doctest
import inspect

import mxnet as mx
import numpy as np
import pytest
from nets import device_batch, device_pairs

import mxpatch_bind

SHAPES = [(2, 3, 8, 10), (3, 3, 6, 12)]
OTHER_SHAPES = [(1, 3, 9, 7), (2, 3, 5, 5)]
NUM_CLASSES = 3


def features_symbol():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    return mx.sym.Activation(conv, act_type="relu", name="relu")


def classifier_symbol():
    pooled = mx.sym.Pooling(mx.sym.Variable("features"), global_pool=True, pool_type="avg",
                            kernel=(1, 1))
    fc = mx.sym.FullyConnected(mx.sym.flatten(pooled), num_hidden=NUM_CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def chain(context):
    """conv features -> (auto-wired) pooled classifier taking the labels."""
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(features_symbol(), label_names=None, context=context))
    seq.add(mx.mod.Module(classifier_symbol(), data_names=["features"], context=context),
            take_labels=True, auto_wiring=True)
    return seq


def data_spec(shapes):
    return [[("data", shape)] for shape in shapes]


def label_spec(shapes):
    return [[("softmax_label", (shape[0],))] for shape in shapes]


def bound_chain(contexts, shapes=SHAPES, inputs_need_grad=True):
    seq = chain(contexts)
    with mxpatch_bind.patched():
        seq.bind(data_spec(shapes), label_spec(shapes), inputs_need_grad=inputs_need_grad)
    seq.init_params(mx.init.Uniform(0.5))
    return seq


def reference(context, params, data, label, bound_shape=None):
    """Two stock Modules on one context, chained by hand: outputs, parameter and input
    gradients.

    Bound at ``bound_shape`` (default: the data's), so another shape reshapes in forward.
    """
    bound_shape = bound_shape or data.shape
    features = mx.mod.Module(features_symbol(), label_names=None, context=context)
    features.bind([("data", bound_shape)], inputs_need_grad=True)
    features.init_params(arg_params=params[0], aux_params=params[1], allow_extra=True)
    classifier = mx.mod.Module(classifier_symbol(), data_names=["features"], context=context)
    classifier.bind([("features", features.output_shapes[0][1])],
                    [("softmax_label", bound_shape[:1])], inputs_need_grad=True)
    classifier.init_params(arg_params=params[0], aux_params=params[1], allow_extra=True)
    features.forward(mx.io.DataBatch([data]), is_train=True)
    hidden = features.get_outputs()[0]
    classifier.forward(mx.io.DataBatch([hidden], [label]), is_train=True)
    classifier.backward()
    features.backward(classifier.get_input_grads())
    grads = [[g[0].asnumpy() for g in module._exec_group.grad_arrays]
             for module in (features, classifier)]
    input_grad = features.get_input_grads()[0].asnumpy()
    return classifier.get_outputs()[0].asnumpy(), grads, input_grad


def assert_equals_references(seq, contexts, shapes, seed=0, bound_shapes=None):
    pairs = device_pairs(shapes, seed)
    outputs = seq.get_outputs(merge_multi_context=False)[0]
    input_grads = seq.get_input_grads(merge_multi_context=False)[0]
    for device, context in enumerate(contexts):
        output, grads, input_grad = reference(context, seq.get_params(), *pairs[device],
                                              bound_shapes and bound_shapes[device])
        assert outputs[device].shape == output.shape
        np.testing.assert_array_equal(outputs[device].asnumpy(), output)
        for module, module_grads in zip(seq._modules, grads):
            for grad, expected in zip(module._exec_group.grad_arrays, module_grads):
                np.testing.assert_array_equal(grad[device].asnumpy(), expected)
        np.testing.assert_array_equal(input_grads[device].asnumpy(), input_grad)


def state_of(seq):
    """Everything a bind may change: classes and attributes of the chain and its modules."""
    return [(type(obj), dict(vars(obj))) for obj in [seq] + list(seq._modules)]


def assert_unchanged(seq, before):
    after = state_of(seq)
    for (cls_before, attrs_before), (cls_after, attrs_after) in zip(before, after):
        assert cls_after is cls_before
        assert attrs_after.keys() == attrs_before.keys()
        assert all(attrs_after[key] is attrs_before[key] for key in attrs_before)


# --------------------------------------------------------------------------- it works
def test_each_device_runs_its_own_shapes_through_every_module(contexts):
    seq = bound_chain(contexts)
    assert [device[0].shape for device in seq.data_shapes] == SHAPES
    assert [shape for (_, shape), in seq.output_shapes] == [(2, NUM_CLASSES), (3, NUM_CLASSES)]
    assert [shape for (_, shape), in seq._modules[0].output_shapes] == [(2, 4, 8, 10),
                                                                       (3, 4, 6, 12)]


def test_outputs_and_gradients_equal_stock_one_context_chains_exactly(contexts):
    seq = bound_chain(contexts)
    seq.forward(device_batch(device_pairs(SHAPES)), is_train=True)
    seq.backward()
    assert_equals_references(seq, contexts, SHAPES)


@pytest.mark.parametrize("step", ["forward", "backward"])
def test_a_step_before_init_params_is_refused_by_name(contexts, step):
    seq = chain(contexts)
    with mxpatch_bind.patched():
        seq.bind(data_spec(SHAPES), label_spec(SHAPES), inputs_need_grad=True)
    assert seq.binded and not seq.params_initialized

    with pytest.raises(RuntimeError, match=r"%s\(\) needs a bound SequentialModule with "
                                           r"initialised parameters" % step):
        if step == "forward":
            seq.forward(device_batch(device_pairs(SHAPES)), is_train=True)
        else:
            seq.backward()


def test_a_list_of_data_batches_runs_like_the_per_device_form(contexts):
    seq = bound_chain(contexts)
    seq.forward([mx.io.DataBatch([d], [lab]) for d, lab in device_pairs(SHAPES)], is_train=True)
    seq.backward()
    assert_equals_references(seq, contexts, SHAPES)


def test_a_batch_of_new_shapes_reshapes_every_module_per_device(contexts):
    seq = bound_chain(contexts)
    seq.forward(device_batch(device_pairs(OTHER_SHAPES, seed=1)), is_train=True)
    seq.backward()
    assert [device[0].shape for device in seq.data_shapes] == OTHER_SHAPES
    # The oracle reshapes too: a reshaped executor may sum in another order than a bound one.
    assert_equals_references(seq, contexts, OTHER_SHAPES, seed=1, bound_shapes=SHAPES)


def test_the_per_device_behaviour_stays_after_uninstall(contexts):
    seq = bound_chain(contexts)
    assert not mxpatch_bind.is_installed()
    seq.bind(data_spec(OTHER_SHAPES), label_spec(OTHER_SHAPES), inputs_need_grad=True,
             force_rebind=True)
    seq.forward(device_batch(device_pairs(OTHER_SHAPES, seed=2)), is_train=True)
    seq.backward()
    assert_equals_references(seq, contexts, OTHER_SHAPES, seed=2)


def test_the_container_keeps_its_class_and_records_how_it_was_bound(contexts):
    seq = bound_chain(contexts)
    assert isinstance(seq, mx.mod.SequentialModule)
    assert type(seq).__name__ == "PerDeviceSequentialModule"
    assert seq.binded and seq.for_training and seq.inputs_need_grad
    assert seq.label_shapes == label_spec(SHAPES)


def test_a_training_step_updates_every_module(contexts):
    seq = bound_chain(contexts)
    seq.init_optimizer(optimizer_params={"learning_rate": 0.5})
    before = {name: value.asnumpy() for name, value in seq.get_params()[0].items()}
    seq.forward_backward(device_batch(device_pairs(SHAPES)))
    seq.update()
    after = seq.get_params()[0]
    assert sorted(after) == ["conv_bias", "conv_weight", "fc_bias", "fc_weight"]
    assert all(not np.array_equal(after[name].asnumpy(), before[name]) for name in before)


def test_fit_over_a_per_device_iterator_trains_as_a_step_by_step_loop(contexts):
    def images():
        rng = np.random.RandomState(4)
        return ([rng.uniform(-1, 1, (3, h, w)).astype(np.float32)
                 for h, w in rng.randint(4, 12, size=(12, 2))],
                rng.randint(0, NUM_CLASSES, 12))

    def loader():
        return mxpatch_bind.PerDeviceIter(*images(), num_devices=2, batch_per_device=2)

    def trained(train):
        mx.random.seed(3)
        seq = chain(contexts)
        with mxpatch_bind.patched():
            train(seq)
        return seq.get_params()[0]

    def by_fit(seq):
        seq.fit(loader(), num_epoch=2, eval_metric="acc", optimizer_params={"learning_rate": 0.1})

    def by_hand(seq):
        data = loader()
        seq.bind(data.provide_data, data.provide_label)
        seq.init_params(mx.init.Uniform(0.01))  # fit's default initializer
        seq.init_optimizer(optimizer_params={"learning_rate": 0.1})
        for _ in range(2):
            for batch in data:
                seq.forward_backward(batch)
                seq.update()
            data.reset()

    expected, got = trained(by_hand), trained(by_fit)
    for name in expected:
        np.testing.assert_array_equal(got[name].asnumpy(), expected[name].asnumpy())


def test_a_stock_spec_binds_the_stock_way_under_the_patch(contexts):
    seq = chain(contexts)
    with mxpatch_bind.patched():
        seq.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    assert type(seq) is mx.mod.SequentialModule
    assert seq.output_shapes == [("softmax_output", (4, NUM_CLASSES))]


# --------------------------------------------------------------------------- refused
def refused(seq, error, match, data_shapes=None, **bind_args):
    before = state_of(seq)
    with mxpatch_bind.patched(), pytest.raises(error, match=match):
        seq.bind(data_shapes or data_spec(SHAPES), label_spec(SHAPES), **bind_args)
    assert_unchanged(seq, before)
    assert not seq.binded and not any(module.binded for module in seq._modules)


def test_a_layer_that_is_not_a_module_is_refused_before_anything_binds(contexts):
    seq = chain(contexts)
    inner = mx.mod.SequentialModule().add(mx.mod.Module(classifier_symbol(),
                                                        data_names=["features"],
                                                        context=contexts))
    seq._modules[1], seq._metas[1] = inner, {"auto_wiring": True}
    refused(seq, TypeError, r"layer 1 is <mxnet.module.sequential_module.SequentialModule")


def test_outputs_that_do_not_match_the_next_inputs_are_refused(contexts):
    seq = chain(contexts)
    seq._metas[1] = {"take_labels": True}  # no auto_wiring: 'relu_output' != 'features'
    refused(seq, mxpatch_bind.ShapeSpecError,
            r"layer 1 takes the inputs \['features'\] but layer 0 gives the outputs "
            r"\['relu_output'\]; add it with auto_wiring=True")


def test_an_auto_wired_layer_with_another_input_count_is_refused(contexts):
    seq = chain(contexts)
    two_inputs = mx.sym.Variable("a") + mx.sym.Variable("b")
    seq.add(mx.mod.Module(two_inputs, data_names=["a", "b"], label_names=None,
                          context=contexts), auto_wiring=True)
    refused(seq, mxpatch_bind.ShapeSpecError,
            r"layer 2 \(auto_wiring\) takes 2 inputs \['a', 'b'\] but layer 1 gives 1 outputs")


def test_modules_on_different_numbers_of_contexts_are_refused(contexts):
    seq = chain(contexts)
    seq._modules[1] = mx.mod.Module(classifier_symbol(), data_names=["features"],
                                    context=contexts[:1])
    refused(seq, mxpatch_bind.ShapeSpecError, "layer 0 has 2, layer 1 .* has 1")


def test_a_spec_for_another_number_of_devices_is_refused(contexts):
    refused(chain(contexts), mxpatch_bind.ShapeSpecError, r"one entry per context \(2\), got 3",
            data_shapes=data_spec(SHAPES + SHAPES[:1]))


def test_a_shared_module_is_refused(contexts):
    refused(chain(contexts), ValueError, "cannot bind with a shared_module",
            shared_module=mx.mod.Module(features_symbol(), label_names=None))


def test_a_malformed_device_entry_is_refused_by_the_first_module_with_nothing_bound(contexts):
    refused(chain(contexts), mxpatch_bind.ShapeSpecError, r"\(3, -3, 6, 12\)",
            data_shapes=[[("data", (2, 3, 8, 10))], [("data", (3, -3, 6, 12))]])


def test_mxnet_failing_on_the_second_module_leaves_the_chain_unbound(contexts, monkeypatch):
    seq = chain(contexts)
    calls = []
    original = mx.sym.Symbol.simple_bind

    def fail_on_second_module(symbol, *args, **kwargs):
        calls.append(symbol)
        if "fc_weight" in symbol.list_arguments():
            raise mx.base.MXNetError("injected failure")
        return original(symbol, *args, **kwargs)

    monkeypatch.setattr(mx.sym.Symbol, "simple_bind", fail_on_second_module)
    refused(seq, mx.base.MXNetError, "injected failure")
    assert len(calls) == len(contexts) + 1  # the first module bound on both devices first


def test_a_rebind_failing_on_the_second_module_leaves_the_chain_as_before(contexts,
                                                                         monkeypatch):
    seq = bound_chain(contexts)
    seq.forward(device_batch(device_pairs(SHAPES)), is_train=False)
    expected = [o.asnumpy() for o in seq.get_outputs(merge_multi_context=False)[0]]
    before = state_of(seq)
    original = mx.sym.Symbol.simple_bind
    rebound_first_module = []

    def fail_on_second_module(symbol, *args, **kwargs):
        if "fc_weight" in symbol.list_arguments():
            raise mx.base.MXNetError("injected failure")
        rebound_first_module.append(symbol)
        return original(symbol, *args, **kwargs)

    monkeypatch.setattr(mx.sym.Symbol, "simple_bind", fail_on_second_module)
    with pytest.raises(mx.base.MXNetError, match="injected failure"):
        seq.bind(data_spec(OTHER_SHAPES), label_spec(OTHER_SHAPES), force_rebind=True)
    monkeypatch.undo()
    assert len(rebound_first_module) == len(contexts)
    assert_unchanged(seq, before)
    seq.forward(device_batch(device_pairs(SHAPES)), is_train=False)
    for output, wanted in zip(seq.get_outputs(merge_multi_context=False)[0], expected):
        np.testing.assert_array_equal(output.asnumpy(), wanted)


def test_the_module_s_examples_run():
    from mxpatch_bind.module import sequential
    result = doctest.testmod(sequential)
    assert result.attempted > 0 and result.failed == 0


def test_the_patch_wraps_sequential_bind_and_uninstall_restores_it_by_identity():
    original = vars(mx.mod.SequentialModule)["bind"]
    with mxpatch_bind.patched():
        assert vars(mx.mod.SequentialModule)["bind"] is not original
        assert inspect.signature(mx.mod.SequentialModule.bind) == inspect.signature(original)
        assert "mxnet.module.sequential_module.SequentialModule.bind" in mxpatch_bind.status(
        ).targets
    assert vars(mx.mod.SequentialModule)["bind"] is original


def three_layers(context):
    """conv features -> a second conv (auto-wired) -> the classifier (auto-wired, labels)."""
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(features_symbol(), label_names=None, context=context))
    second = mx.sym.Convolution(mx.sym.Variable("x"), num_filter=4, kernel=(1, 1), name="conv2")
    seq.add(mx.mod.Module(second, data_names=["x"], label_names=None, context=context),
            auto_wiring=True)
    seq.add(mx.mod.Module(classifier_symbol(), data_names=["features"], context=context),
            take_labels=True, auto_wiring=True)
    return seq


def test_a_third_layer_takes_the_second_layers_outputs_on_every_device(contexts):
    seq = three_layers(contexts)
    with mxpatch_bind.patched():
        seq.bind(data_spec(SHAPES), label_spec(SHAPES), for_training=False)
    seq.init_params(mx.init.Uniform(0.5))
    params = seq.get_params()
    pairs = device_pairs(SHAPES, seed=4)
    seq.forward(device_batch(pairs), is_train=False)
    outputs = seq.get_outputs(merge_multi_context=False)[0]
    for device, (context, (data, label)) in enumerate(zip(contexts, pairs)):
        stock = three_layers(context)  # one context, stock form: the reference
        stock.bind([("data", data.shape)], [("softmax_label", label.shape)], for_training=False)
        stock.init_params(arg_params=params[0], aux_params=params[1])
        stock.forward(mx.io.DataBatch([data], [label]), is_train=False)
        assert np.array_equal(outputs[device].asnumpy(), stock.get_outputs()[0].asnumpy())


@pytest.mark.parametrize("entries", [1, 3], ids=["one fewer", "one more"])
def test_an_auto_wired_first_layer_given_another_input_count_is_refused(contexts, entries):
    seq = mx.mod.SequentialModule()
    two_inputs = mx.sym.Variable("a") + mx.sym.Variable("b")
    seq.add(mx.mod.Module(two_inputs, data_names=["a", "b"], label_names=None,
                          context=contexts), auto_wiring=True)
    spec = [[(name, (1, 4)) for name in ["a", "b", "c"][:entries]] for _ in contexts]
    with mxpatch_bind.patched(), pytest.raises(mxpatch_bind.ShapeSpecError,
                                               match=r"layer 0 \(auto_wiring\) takes 2 inputs "
                                                     r"\['a', 'b'\] but device 0's data_shapes "
                                                     r"has %d" % entries):
        seq.bind(spec, for_training=False)
    assert not seq.binded
