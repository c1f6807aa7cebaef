"""The fault patterns mutation sample 21 (docs/mutation.rst) found untested, each pinned by
behaviour: MXNet on one context is the oracle where there is one, else the message a slip gets.

* a short batch (a tester's last) on a module with two data inputs completes the idle
  devices' shapes with every input, so it runs as the same arrays run on one context;
* a per-device spec given as a tuple of lists binds per device, as the list does;
* a flat list repeating only a later input names that input, and nests by device;
* under ``install()`` a stock module given a list of arrays instead of a list of batches
  meets stock MXNet's own error, untouched;
* the repr writes a module's contexts and shapes as lists and tuples, however they were given.
"""

import re

import mxnet as mx
import numpy as np
import pytest

import mxpatch_bind

CONTEXTS = [mx.cpu(0), mx.cpu(1)]


# --------------------------------------------------------------------------- short batches
def two_input_net():
    """An image and a small second input (as im_info beside data), read together."""
    data, info = mx.sym.Variable("data"), mx.sym.Variable("im_info")
    joined = mx.sym.Concat(mx.sym.Flatten(data), info, dim=1)
    return mx.sym.FullyConnected(joined, num_hidden=3, name="fc")


def two_input_params(pixels, info_width):
    rng = np.random.RandomState(5)
    return {"fc_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (3, pixels + info_width))),
            "fc_bias": mx.nd.array(rng.uniform(-0.5, 0.5, (3,)))}


def stock_outputs(arrays):
    """Stock MXNet on one context, for inference, on one device's arrays."""
    mod = mx.mod.Module(two_input_net(), data_names=("data", "im_info"), label_names=None,
                        context=mx.cpu(0))
    mod.bind([("data", arrays[0].shape), ("im_info", arrays[1].shape)], for_training=False)
    mod.set_params(two_input_params(int(np.prod(arrays[0].shape[1:])), arrays[1].shape[1]), {})
    mod.forward(mx.io.DataBatch(data=list(arrays)), is_train=False)
    return mod.get_outputs()[0].asnumpy()


def test_a_short_batch_on_a_module_with_two_data_inputs_runs_as_stock_on_one_context():
    rng = np.random.RandomState(3)
    mod = mx.mod.Module(two_input_net(), data_names=("data", "im_info"), label_names=None,
                        context=CONTEXTS)
    with mxpatch_bind.patched():
        mod.bind([[("data", (2, 3, 4, 4)), ("im_info", (2, 2))],
                  [("data", (1, 3, 4, 4)), ("im_info", (1, 2))]], for_training=False)
        mod.set_params(two_input_params(48, 2), {})
        arrays = [mx.nd.array(rng.uniform(-1, 1, (3, 3, 4, 4))),
                  mx.nd.array(rng.uniform(-1, 1, (3, 2)))]
        mod.forward(mx.io.DataBatch(data=[arrays]), is_train=False)  # one device of two
        outputs = mod.get_outputs(merge_multi_context=False)
    assert [len(per_output) for per_output in outputs] == [1]
    assert np.array_equal(outputs[0][0].asnumpy(), stock_outputs(arrays))


# --------------------------------------------------------------------------- spec forms
def conv_module(contexts=CONTEXTS):
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3), name="conv")
    return mx.mod.Module(net, label_names=None, context=contexts)


def test_a_tuple_of_per_device_lists_binds_per_device_as_the_list_does():
    rng = np.random.RandomState(4)
    params = {"conv_weight": mx.nd.array(rng.uniform(-1, 1, (2, 3, 3, 3))),
              "conv_bias": mx.nd.array(rng.uniform(-1, 1, (2,)))}
    shapes = [(2, 3, 8, 8), (1, 3, 6, 10)]
    mod = conv_module()
    mxpatch_bind.bind(mod, tuple([("data", shape)] for shape in shapes))
    mod.set_params(params, {})
    arrays = [mx.nd.array(rng.uniform(-1, 1, shape)) for shape in shapes]
    with mxpatch_bind.patched():
        mod.forward(mx.io.DataBatch(data=[[array] for array in arrays]), is_train=False)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    for array, output in zip(arrays, outputs):
        stock = conv_module(mx.cpu(0))
        stock.bind([("data", array.shape)], for_training=False)
        stock.set_params(params, {})
        stock.forward(mx.io.DataBatch(data=[array]), is_train=False)
        assert np.array_equal(output.asnumpy(), stock.get_outputs()[0].asnumpy())


def test_a_flat_list_repeating_only_a_later_input_names_that_input():
    flat = [("data", (2, 3, 8, 8)), ("im_info", (2, 3)), ("im_info", (1, 3))]
    with pytest.raises(mxpatch_bind.ShapeSpecError,
                       match=re.escape("names 'im_info' 2 times")) as error:
        mxpatch_bind.bind(conv_module(), flat)
    assert str(error.value).endswith(
        "[[('data', (2, 3, 8, 8)), ('im_info', (2, 3))], [('im_info', (1, 3))]]")


def test_a_flat_list_written_input_by_input_is_nested_device_by_device():
    flat = [("data", (2, 3, 8, 8)), ("data", (1, 3, 6, 6)), ("im_info", (2, 3)),
            ("im_info", (1, 3))]
    with pytest.raises(mxpatch_bind.ShapeSpecError) as error:
        mxpatch_bind.bind(conv_module(), flat)
    assert str(error.value).endswith(
        "[[('data', (2, 3, 8, 8)), ('im_info', (2, 3))], [('data', (1, 3, 6, 6)), "
        "('im_info', (1, 3))]]")


# --------------------------------------------------------------------------- stock neutrality
def stock_forward_error(patched):
    mod = conv_module()
    mod.bind([("data", (4, 3, 8, 8))], for_training=False)
    mod.init_params()
    arrays = [mx.nd.ones((2, 3, 8, 8)), mx.nd.ones((2, 3, 8, 8))]  # arrays, not DataBatches
    with pytest.raises(Exception) as error:
        if patched:
            with mxpatch_bind.patched():
                mod.forward(arrays, is_train=False)
        else:
            mod.forward(arrays, is_train=False)
    return mod, error.value


def test_a_list_of_arrays_given_to_a_stock_module_under_install_meets_mxnets_own_error():
    stock_module, stock_error = stock_forward_error(patched=False)
    mod, error = stock_forward_error(patched=True)
    assert (type(error), str(error)) == (type(stock_error), str(stock_error))
    assert type(mod) is type(stock_module) is mx.mod.Module


# --------------------------------------------------------------------------- repr
def test_the_repr_writes_contexts_given_as_a_tuple_as_a_list():
    mod = mx.mod.Module(mx.sym.Variable("data"), label_names=None, context=tuple(CONTEXTS))
    mxpatch_bind.bind(mod, [[("data", (2, 3))], [("data", (1, 3))]])
    assert repr(mod).startswith("<mxnet.module.module.Module on [cpu(0), cpu(1)], bound per "
                                "device")


def test_the_repr_writes_shapes_given_as_lists_as_tuples():
    mod = mx.mod.Module(mx.sym.Variable("data"), label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", (2, 3))], [("data", (1, 3))]])
    mxpatch_bind.reshape(mod, [("data", [4, 3])])  # stock form, a shape as a list
    assert repr(mod).endswith("bound in stock form (mxpatch_bind): data [('data', (4, 3))]>")


def test_a_module_naming_an_input_twice_refuses_a_spec_naming_it_once_as_stock_does():
    # MXNet lets data_names repeat a name, and then wants the spec to name it as often.
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    stock = mx.mod.Module(net, data_names=("data", "data"), label_names=None)
    with pytest.raises(ValueError, match="don't match names specified by data_names"):
        stock.bind([("data", (2, 5))])
    mod = mx.mod.Module(net, data_names=("data", "data"), label_names=None, context=CONTEXTS)
    with pytest.raises(mxpatch_bind.ShapeSpecError,
                       match=re.escape("names ['data'] but the module expects ['data', 'data']")):
        mxpatch_bind.bind(mod, [[("data", (2, 5))], [("data", (1, 5))]])
    assert not mod.binded


# --------------------------------------------------------------------------- explicit base calls
class BaseCallingModule(mx.mod.Module):
    """A subclass whose forward names its base class, as Python 2 code often wrote it."""

    def forward(self, data_batch, is_train=None):
        return mx.mod.Module.forward(self, data_batch, is_train)


def conv_params():
    rng = np.random.RandomState(6)
    return {"conv_weight": mx.nd.array(rng.uniform(-1, 1, (2, 3, 3, 3))),
            "conv_bias": mx.nd.array(rng.uniform(-1, 1, (2,)))}


def stock_conv_output(array):
    stock = conv_module(mx.cpu(0))
    stock.bind([("data", array.shape)], for_training=False)
    stock.set_params(conv_params(), {})
    stock.forward(mx.io.DataBatch(data=[array]), is_train=False)
    return stock.get_outputs()[0].asnumpy()


@pytest.mark.parametrize("bound", ["per device", "in stock form"])
def test_a_subclass_calling_module_forward_by_name_runs_a_per_device_batch(bound):
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3), name="conv")
    mod = BaseCallingModule(net, label_names=None, context=CONTEXTS)
    rng = np.random.RandomState(7)
    arrays = [mx.nd.array(rng.uniform(-1, 1, shape)) for shape in [(2, 3, 8, 8), (1, 3, 6, 10)]]
    with mxpatch_bind.patched():
        if bound == "per device":
            mod.bind([[("data", array.shape)] for array in arrays], for_training=False)
        else:
            mod.bind([("data", (4, 3, 8, 8))], for_training=False)
        mod.set_params(conv_params(), {})
        mod.forward(mx.io.DataBatch(data=[[array] for array in arrays]), is_train=False)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    assert len(outputs) == 2
    for array, output in zip(arrays, outputs):
        assert np.array_equal(output.asnumpy(), stock_conv_output(array))


# --------------------------------------------------------------------------- free functions
def test_the_free_reshape_of_a_per_device_module_patches_nothing_for_the_call(caplog):
    # Only a subclass that overrides the method (SVRGModule's bind) runs under a temporary
    # patch; a module already of the per-device class takes its own method as it is.
    mod = conv_module()
    mxpatch_bind.bind(mod, [[("data", (2, 3, 8, 8))], [("data", (1, 3, 8, 8))]])
    with caplog.at_level("DEBUG", logger="mxpatch_bind.patching"):
        mxpatch_bind.reshape(mod, [[("data", (1, 3, 6, 6))], [("data", (2, 3, 6, 6))]])
    assert [d.shape for d in mod._exec_group.data_shapes[1]] == [(2, 3, 6, 6)]
    assert not [r for r in caplog.records if "patched" in r.getMessage()]
    assert not mxpatch_bind.is_installed()


# --------------------------------------------------------------------------- loaded modules
def loaded_module_forward_error(prefix, patched):
    """Module.load's module has parameters but is not bound: forward fails as stock says."""
    mod = mx.mod.Module.load(prefix, 1, label_names=None, context=CONTEXTS)
    batches = [mx.io.DataBatch(data=[mx.nd.ones((2, 3, 8, 8))])] * 2  # stock's pre-sliced list
    with pytest.raises(Exception) as error:
        if patched:
            with mxpatch_bind.patched():
                mod.forward(batches, is_train=False)
        else:
            mod.forward(batches, is_train=False)
    return mod, error.value


def test_a_pre_sliced_list_fed_to_a_loaded_module_not_yet_bound_meets_mxnets_own_error(tmp_path):
    saved = conv_module()
    saved.bind([("data", (4, 3, 8, 8))], for_training=False)
    saved.set_params(conv_params(), {})
    saved.save_checkpoint(str(tmp_path / "net"), 1)
    stock_module, stock_error = loaded_module_forward_error(str(tmp_path / "net"), False)
    mod, error = loaded_module_forward_error(str(tmp_path / "net"), True)
    assert stock_module.params_initialized and not stock_module.binded
    assert (type(error), str(error)) == (type(stock_error), str(stock_error))
    assert type(mod) is mx.mod.Module and not mod.binded


# --------------------------------------------------------------------------- sequential lists
def test_a_sequential_module_refuses_a_list_of_batches_with_labels_on_some_only_as_a_module_does():
    # Dropping every batch's labels would train a later step on none, with a message saying
    # the batch has none; a Module names the device without them.
    def labelled_list(with_labels):
        return [mx.io.DataBatch(data=[mx.nd.ones((2, 3, 8, 8))],
                                label=[mx.nd.zeros((2,))] if labelled else None)
                for labelled in with_labels]

    classifier = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.flatten(mx.sym.Variable("features")), num_hidden=3, name="fc"), name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2,
                                             kernel=(3, 3), name="conv"),
                          label_names=None, context=CONTEXTS))
    seq.add(mx.mod.Module(classifier, data_names=["features"], context=CONTEXTS),
            take_labels=True, auto_wiring=True)
    plain = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.flatten(mx.sym.Variable("data")), num_hidden=3, name="fc"), name="softmax"),
        context=CONTEXTS)
    with mxpatch_bind.patched():
        for module in (seq, plain):
            module.bind([[("data", (2, 3, 8, 8))]] * 2, [[("softmax_label", (2,))]] * 2)
            module.init_params()
        messages = []
        for module in (seq, plain):
            with pytest.raises(mxpatch_bind.BatchError) as error:
                module.forward(labelled_list([True, False]), is_train=True)
            messages.append(str(error.value))
        seq.forward(labelled_list([True, True]), is_train=True)  # every device labelled: runs
    assert messages[0] == messages[1]
    assert messages[0].startswith("batch device 1 has no labels but device 0 has")
