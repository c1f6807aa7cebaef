"""The fault patterns mutation sample 22 (docs/mutation.rst) found untested, each pinned by
behaviour against stock MXNet on one context where it has an answer."""

import mxnet as mx
import numpy as np

import mxpatch_bind

CONTEXTS = [mx.cpu(0), mx.cpu(1)]


def conv_net():
    return mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3), name="conv")


def conv_params():
    rng = np.random.RandomState(8)
    return {"conv_weight": mx.nd.array(rng.uniform(-1, 1, (2, 3, 3, 3))),
            "conv_bias": mx.nd.array(rng.uniform(-1, 1, (2,)))}


def stock_output(batch):
    """Stock MXNet on one context, a module without labels, for inference."""
    mod = mx.mod.Module(conv_net(), label_names=None, context=mx.cpu(0))
    mod.bind([("data", batch.data[0].shape)], for_training=False)
    mod.set_params(conv_params(), {})
    mod.forward(batch, is_train=False)
    return mod.get_outputs()[0].asnumpy()


def test_a_flat_labelled_batch_on_a_per_device_module_without_labels_runs_as_stock():
    # A module bound without labels ignores a batch's labels, as stock does.
    mod = mx.mod.Module(conv_net(), label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", (2, 3, 8, 8))], [("data", (1, 3, 8, 8))]],
                      for_training=False)
    mod.set_params(conv_params(), {})
    rng = np.random.RandomState(9)
    batch = mx.io.DataBatch(data=[mx.nd.array(rng.uniform(-1, 1, (4, 3, 6, 6)))],
                            label=[mx.nd.zeros((4,))])
    mod.forward(batch, is_train=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), stock_output(batch))


def test_a_short_batch_whose_provide_data_names_more_devices_than_its_arrays_is_refused():
    # One provide_data entry per device given, as the arrays are: a stale provide_data from a
    # full batch would otherwise describe devices the batch does not feed.
    mod = mx.mod.Module(conv_net(), label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", (2, 3, 8, 8))], [("data", (1, 3, 8, 8))]],
                      for_training=False)
    mod.set_params(conv_params(), {})
    batch = mx.io.DataBatch(data=[[mx.nd.ones((2, 3, 8, 8))]],
                            provide_data=[[("data", (2, 3, 8, 8))], [("data", (1, 3, 8, 8))]])
    shapes_before = [[d.shape for d in device] for device in mod.data_shapes]
    try:
        mod.forward(batch, is_train=False)
    except mxpatch_bind.BatchError as error:
        message = str(error)
    else:
        message = "no error"
    assert message.startswith("the batch's provide_data has 2 device entries but its arrays "
                              "have 1"), message
    assert [[d.shape for d in device] for device in mod.data_shapes] == shapes_before


def test_a_shape_used_again_stays_in_the_executor_cache_over_one_used_less(monkeypatch):
    from mxpatch_bind.module import executors

    mod = mx.mod.Module(conv_net(), label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", (4, 3, 8, 8))]] * 2, for_training=False)
    reshapes = []
    lean = executors.reshape_executor
    monkeypatch.setattr(executors, "reshape_executor",
                        lambda base, wanted: reshapes.append(wanted["data"]) or lean(base, wanted))
    previous = mxpatch_bind.configure(exec_cache_size=2)
    try:
        # Each shape is cached from its second reshape on (A = 1, B = 2, C = 3); A is used
        # again before C enters, so C evicts B (the least recently used), not A.
        for size in (1, 2, 1, 2, 1, 3, 1, 3):
            mxpatch_bind.reshape(mod, [[("data", (size, 3, 8, 8))]] * 2)
        del reshapes[:]
        mxpatch_bind.reshape(mod, [[("data", (1, 3, 8, 8))]] * 2)
        assert reshapes == []
        mxpatch_bind.reshape(mod, [[("data", (2, 3, 8, 8))]] * 2)
        assert reshapes == [(2, 3, 8, 8)] * 2
    finally:
        mxpatch_bind.configure(**previous._asdict())


def test_an_auto_wired_first_layer_keeps_the_dtype_of_the_datadesc_it_is_given():
    # Layer 0 added with auto_wiring takes the spec's entries by position, under its own
    # names, and binds as a Module given that DataDesc binds (stock Module on one context
    # keeps its dtype; stock SequentialModule's auto-wiring re-makes (name, shape) pairs and
    # drops it, which the per-device chain does not copy).
    net = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3, name="fc")
    stock = mx.mod.Module(net, data_names=["x"], label_names=None, context=mx.cpu(0))
    stock.bind([mx.io.DataDesc("x", (2, 5), np.float64)], for_training=False)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(net, data_names=["x"], label_names=None, context=CONTEXTS),
            auto_wiring=True)
    with mxpatch_bind.patched():
        seq.bind([[mx.io.DataDesc("data", (2, 5), np.float64)],
                  [mx.io.DataDesc("data", (1, 5), np.float64)]], for_training=False)
    wanted = stock._exec_group.execs[0].arg_dict["x"].dtype
    assert wanted == np.float64
    execs = seq._modules[0]._exec_group.execs
    assert [e.arg_dict["x"].dtype for e in execs] == [wanted, wanted]
