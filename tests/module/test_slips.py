"""A newcomer's likely slips with per-device shapes are named in our words, with the fix.

A per-device spec written flat (``[('data', s0), ('data', s1)]``) reaches MXNet as a stock
spec, whose own error says only that the names do not match: under ``install()`` (and through
the free functions) it is a ``ShapeSpecError`` that says "one list per device" and shows the
nested form of the entries given. A module after a per-device bind shows what it is in its
repr instead of the default repr of an internal class.
"""

import re

import mxnet as mx
import pytest
from nets import assert_same_state, conv_net, module_state

import mxpatch_bind

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
S0, S1 = (2, 3, 8, 8), (3, 3, 6, 6)
FLAT_DATA = [("data", S0), ("data", S1)]
NESTED_DATA = "[[('data', (2, 3, 8, 8))], [('data', (3, 3, 6, 6))]]"


def module():
    return mx.mod.Module(conv_net(), context=CONTEXTS)


def bind_patched(mod, *args):
    with mxpatch_bind.patched():
        mod.bind(*args)


def bind_free(mod, *args):
    mxpatch_bind.bind(mod, *args)


def reshape_patched(mod, *args):
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    with mxpatch_bind.patched():
        mod.reshape(*args)


@pytest.mark.parametrize("call", [bind_patched, bind_free, reshape_patched])
def test_a_flat_list_naming_an_input_once_per_device_is_refused_showing_the_nested_form(call):
    mod = module()
    with pytest.raises(mxpatch_bind.ShapeSpecError) as error:
        call(mod, FLAT_DATA)
    message = str(error.value)
    assert "names 'data' 2 times" in message and "one list per device" in message
    assert message.endswith(NESTED_DATA), message
    assert type(mod) is mx.mod.Module


def test_flat_labels_naming_the_label_once_per_device_are_refused_showing_the_nested_form():
    mod = module()
    with pytest.raises(mxpatch_bind.ShapeSpecError, match=re.escape(
            "label_shapes [('softmax_label', (2,)), ('softmax_label', (3,))] names "
            "'softmax_label' 2 times")) as error:
        bind_patched(mod, [("data", (5, 3, 8, 8))],
                     [("softmax_label", (2,)), ("softmax_label", (3,))])
    assert str(error.value).endswith("[[('softmax_label', (2,))], [('softmax_label', (3,))]]")
    assert not mod.binded


def test_the_nested_form_of_several_inputs_gives_each_device_one_entry_of_each():
    mod = module()
    flat = [mx.io.DataDesc("data", S0), ("im_info", (2, 3)), ("data", S1), ("im_info", (3, 3))]
    with pytest.raises(mxpatch_bind.ShapeSpecError) as error:
        bind_free(mod, flat)
    assert str(error.value).endswith(
        "[[('data', (2, 3, 8, 8)), ('im_info', (2, 3))], [('data', (3, 3, 6, 6)), "
        "('im_info', (3, 3))]]")


def test_a_flat_list_is_refused_on_a_bound_module_without_changing_it():
    mod = module()
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    mod.init_params()
    before = module_state(mod)
    with mxpatch_bind.patched(), pytest.raises(mxpatch_bind.ShapeSpecError):
        mod.bind(FLAT_DATA, force_rebind=True)
    assert_same_state(before, module_state(mod))


def test_a_flat_list_naming_each_input_once_still_goes_to_mxnet_untouched():
    mod = module()
    bind_patched(mod, [("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    assert [d.shape for d in mod.data_shapes] == [(4, 3, 8, 8)] and type(mod) is mx.mod.Module


# --------------------------------------------------------------------------- repr
def test_a_module_bound_per_device_shows_its_class_contexts_and_shapes():
    mod = module()
    bind_free(mod, [[("data", S0)], [("data", S1)]], [[("softmax_label", (2,))],
                                                     [("softmax_label", (3,))]])
    assert repr(mod) == (
        "<mxnet.module.module.Module on [cpu(0), cpu(1)], bound per device (mxpatch_bind): "
        f"data {NESTED_DATA}, label [[('softmax_label', (2,))], [('softmax_label', (3,))]]>")


def test_a_per_device_module_reshaped_to_stock_form_says_so():
    mod = module()
    bind_free(mod, [[("data", S0)], [("data", S1)]], [[("softmax_label", (2,))],
                                                     [("softmax_label", (3,))]])
    mxpatch_bind.reshape(mod, [("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    assert repr(mod) == ("<mxnet.module.module.Module on [cpu(0), cpu(1)], bound in stock form "
                         "(mxpatch_bind): data [('data', (4, 3, 8, 8))], label "
                         "[('softmax_label', (4,))]>")


def test_a_subclass_bound_per_device_shows_its_own_class():
    from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule

    mod = SVRGModule(conv_net(), context=CONTEXTS, update_freq=2)
    with mxpatch_bind.patched():
        mod.bind([[("data", S0)], [("data", S1)]])
    assert type(mod).__name__ == "PerDeviceSVRGModule"
    assert repr(mod).startswith("<mxnet.contrib.svrg_optimization.svrg_module.SVRGModule on "
                                "[cpu(0), cpu(1)], bound per device")


def test_a_bucketing_module_bound_per_device_shows_its_default_buckets_shapes():
    mod = mx.mod.BucketingModule(lambda key: (conv_net(), ("data",), ("softmax_label",)),
                                 default_bucket_key=1, context=CONTEXTS)
    with mxpatch_bind.patched():
        mod.bind([[("data", S0)], [("data", S1)]])
    assert repr(mod) == ("<mxnet.module.bucketing_module.BucketingModule on [cpu(0), cpu(1)], "
                         f"bound per device (mxpatch_bind): data {NESTED_DATA}>")


def test_a_module_of_the_per_device_class_not_yet_bound_says_so():
    from mxpatch_bind.module.binding import adopt_module

    mod = adopt_module(mx.mod.Module(conv_net(), context=CONTEXTS))  # a bucket's, before bind
    assert repr(mod) == "<mxnet.module.module.Module on [cpu(0), cpu(1)], not bound>"


def test_a_flat_tuple_naming_an_input_once_per_device_is_refused_as_a_flat_list_is():
    mod = module()
    with pytest.raises(mxpatch_bind.ShapeSpecError, match="names 'data' 2 times"):
        mxpatch_bind.bind(mod, tuple(FLAT_DATA))
    assert not mod.binded


def test_a_sequential_module_bound_per_device_shows_what_it_is():
    chain = mx.mod.SequentialModule()
    chain.add(module())
    with mxpatch_bind.patched():
        chain.bind([[("data", S0)], [("data", S1)]])
    assert repr(chain) == ("<mxnet.module.sequential_module.SequentialModule, bound per device "
                           f"(mxpatch_bind): data {NESTED_DATA}>")
