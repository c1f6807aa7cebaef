"""Calls made in the wrong order or with the wrong objects: a clear error, nothing changed."""

import re

import mxnet as mx
import pytest
from nets import (
    assert_same_state,
    conv_net,
    device_batch,
    device_pairs,
    module_state,
    per_device_spec,
)
from synthetic import data_pointer

import mxpatch_bind

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
SHAPES = [(1, 3, 8, 8), (2, 3, 6, 6)]


def test_the_free_bind_refuses_what_is_not_a_module_naming_the_patch_for_bucketing():
    bucketing = mx.mod.BucketingModule(lambda key: (conv_net(), ("data",), ("softmax_label",)),
                                       default_bucket_key=1, context=CONTEXTS)
    with pytest.raises(TypeError, match="per-device shapes need a mxnet.module.Module; got "
                                        ".*BucketingModule.*install\\(\\) or patched\\(\\)"):
        mxpatch_bind.bind(bucketing, *per_device_spec(SHAPES))
    assert not bucketing.binded


def test_inputs_need_grad_without_for_training_is_refused_before_binding():
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    with pytest.raises(ValueError, match=re.escape(
            "inputs_need_grad=True needs for_training=True; got for_training=False")):
        mxpatch_bind.bind(mod, *per_device_spec(SHAPES), for_training=False,
                          inputs_need_grad=True)
    assert not mod.binded and type(mod) is mx.mod.Module


def test_an_unbound_shared_module_is_refused_before_binding():
    shared = mx.mod.Module(conv_net(), context=CONTEXTS)
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    with pytest.raises(ValueError, match="shared_module must be a bound Module with initialised "
                                         "parameters; got "):
        mxpatch_bind.bind(mod, *per_device_spec(SHAPES), shared_module=shared)
    assert not mod.binded and type(mod) is mx.mod.Module


def test_a_shared_module_on_fewer_devices_is_refused_before_binding():
    shared = mx.mod.Module(conv_net(), context=CONTEXTS[:1])
    shared.bind([("data", SHAPES[0])], [("softmax_label", (SHAPES[0][0],))])
    shared.init_params()
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    with pytest.raises(ValueError, match="^shared_module runs on 1 devices but this module "
                                         "needs 2$"):
        mxpatch_bind.bind(mod, *per_device_spec(SHAPES), shared_module=shared)
    assert not mod.binded


def test_a_shared_module_on_more_devices_serves_the_first_ones_as_stock_does():
    contexts = [mx.cpu(i) for i in range(3)]
    shared = mx.mod.Module(conv_net(), context=contexts)
    shared.bind([("data", (3,) + SHAPES[0][1:])], [("softmax_label", (3,))])
    shared.init_params()
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES), shared_module=shared)
    assert mod._arg_params is shared._arg_params
    for own, theirs in zip(mod._exec_group.param_arrays, shared._exec_group.param_arrays):
        assert [data_pointer(a) for a in own] == [data_pointer(a) for a in theirs[:2]]


def test_the_free_reshape_of_an_unbound_module_says_to_bind_first():
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    with pytest.raises(RuntimeError, match=re.escape(
            "reshape() needs a bound module; call bind() first")):
        mxpatch_bind.reshape(mod, *per_device_spec(SHAPES))
    assert not mod.binded and type(mod) is mx.mod.Module


def test_a_forward_before_init_params_is_refused_and_changes_nothing():
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES))
    before = module_state(mod)
    with pytest.raises(RuntimeError, match=re.escape(
            "forward() needs a bound module with initialised parameters")):
        mod.forward(device_batch(device_pairs(SHAPES)))
    assert_same_state(before, module_state(mod))


def test_per_device_out_grads_on_a_module_bound_for_inference_are_refused():
    mod = mx.mod.Module(conv_net(), context=CONTEXTS)
    mxpatch_bind.bind(mod, *per_device_spec(SHAPES), for_training=False)
    mod.init_params()
    mod.forward(device_batch(device_pairs(SHAPES)), is_train=False)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    with pytest.raises(RuntimeError, match=re.escape(
            "re-bind with for_training=True to run backward")):
        mod._exec_group.backward([[mx.nd.ones(o.shape)] for o in outputs])
