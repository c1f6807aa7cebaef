"""Small networks, per-device specs and batches, and reference computations for the tests."""

import mxnet as mx
import numpy as np

import mxpatch_bind
from benchmarks.common import contexts_from_env, per_device_spec  # noqa: F401 (shared helpers)
from mxpatch_bind.demo.nets import conv_classifier  # noqa: F401 (shared helper)


def conv_net(num_classes=3, batch_norm=False):
    """Conv -> (BatchNorm) -> ReLU -> global pool -> FC -> softmax: works for any image size."""
    return conv_classifier(num_classes, batch_norm=batch_norm)


def device_contexts(count=2):
    """The contexts the per-device tests run on: CPU contexts, or GPUs with
    ``MXPATCH_TEST_CONTEXTS=gpu`` (``benchmarks/gpu_check.sh``)."""
    return contexts_from_env("MXPATCH_TEST_CONTEXTS", count)


def device_pairs(shapes, seed=0):
    """One random ``(data, label)`` pair per device image shape (seed ``seed + device``)."""
    return [random_batch(shape, seed=seed + device) for device, shape in enumerate(shapes)]


def device_batch(pairs, **fields):
    """One ``DataBatch`` of per-device lists (the Deformable-ConvNets form) from ``pairs``."""
    return mx.io.DataBatch(data=[[data] for data, _ in pairs],
                           label=[[label] for _, label in pairs], **fields)


def bound_module(symbol, shapes, params=None, labels=True, **bind_kwargs):
    """A module on one context per shape, bound per device under ``patched()``."""
    mod = mx.mod.Module(symbol, label_names=("softmax_label",) if labels else None,
                        context=device_contexts(len(shapes)))
    with mxpatch_bind.patched():
        mod.bind(*per_device_spec(shapes, labels), **bind_kwargs)
    if params is not None:
        mod.set_params(*params)
    return mod


def conv_features():
    """A conv net without a loss: outputs keep the spatial size, so they cannot be merged."""
    data = mx.sym.Variable("data")
    return mx.sym.Convolution(data, num_filter=2, kernel=(3, 3), name="conv")


def mlp(num_classes=4):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def fixed_params(symbol, data_shape, seed=0):
    """Deterministic parameters for ``symbol`` (by name), independent of any module."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(data=data_shape)
    rng = np.random.RandomState(seed)
    args = {name: mx.nd.array(rng.uniform(-0.5, 0.5, shape))
            for name, shape in zip(symbol.list_arguments(), arg_shapes)
            if name not in ("data", "softmax_label")}
    aux = {name: mx.nd.array(rng.uniform(0.5, 1.0, shape) if "var" in name else
                             rng.uniform(-0.1, 0.1, shape))
           for name, shape in zip(symbol.list_auxiliary_states(), aux_shapes)}
    return args, aux


def random_batch(shape, num_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    data = mx.nd.array(rng.uniform(-1, 1, shape))
    label = mx.nd.array(rng.randint(0, num_classes, shape[0]))
    return data, label


def single_device_reference(symbol, params, data, label, context=None, for_training=True):
    """Stock MXNet on one context: outputs and parameter gradients for one batch."""
    context = context or device_contexts(1)[0]
    label_names = ("softmax_label",) if label is not None else None
    mod = mx.mod.Module(symbol, label_names=label_names, context=context)
    label_shapes = [("softmax_label", label.shape)] if label is not None else None
    mod.bind([("data", data.shape)], label_shapes, for_training=for_training)
    mod.set_params(*params)
    batch = mx.io.DataBatch([data], [label] if label is not None else None)
    mod.forward(batch, is_train=for_training)
    outputs = [o.asnumpy() for o in mod.get_outputs()]
    grads = {}
    if for_training:
        mod.backward()
        grads = {name: g[0].asnumpy()
                 for name, g in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays)}
    return outputs, grads


def module_state(mod):
    """What a refused or failed call must leave exactly as it was: the module's class, shapes,
    executor group, executors, every executor input and parameter, and the optimizer."""
    group = mod._exec_group
    execs = None if group is None else list(group.execs)
    return {
        "class": type(mod),
        "binded": mod.binded,
        "data_shapes": repr(mod._data_shapes),
        "label_shapes": repr(mod._label_shapes),
        "group": group,
        "group_class": type(group),
        "per_device": getattr(group, "per_device", None),
        "execs": execs,
        "arrays": None if execs is None else [{name: array.asnumpy() for name, array
                                               in exec_.arg_dict.items()} for exec_ in execs],
        "optimizer": mod._optimizer,
        "updater": mod._updater,
    }


def assert_same_state(before, after):
    """Equal values, the same objects, and bit-equal arrays."""
    assert before.keys() == after.keys()
    for key in ("class", "group", "group_class", "optimizer", "updater"):
        assert before[key] is after[key], key
    for key in ("binded", "data_shapes", "label_shapes", "per_device"):
        assert before[key] == after[key], key
    if before["execs"] is None:
        assert after["execs"] is None
        return
    assert len(before["execs"]) == len(after["execs"])
    assert all(a is b for a, b in zip(before["execs"], after["execs"])), "executors replaced"
    for device, (old, new) in enumerate(zip(before["arrays"], after["arrays"])):
        assert old.keys() == new.keys()
        for name in old:
            assert np.array_equal(old[name], new[name]), (device, name)
