"""A newcomer's fifteen likeliest slips each give one line that names the fix.

Each slip is made as a tired user makes it (the per-device API on ``[cpu(0), cpu(1)]`` with a
small conv net); the error must be typed (ours where the slip reaches mxpatch_bind), fit on
one line, and say what to write instead. The two slips that never reach mxpatch_bind (the
patch not installed) are the troubleshooting page's: ``tests/tools/test_troubleshooting.py``
checks that it quotes their messages word for word.
"""

import re

import mxnet as mx
import pytest
from nets import conv_net

import mxpatch_bind
from mxpatch_bind import BatchError, ShapeSpecError

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
S0, S1 = (2, 3, 8, 8), (3, 3, 6, 6)
DATA = [[("data", S0)], [("data", S1)]]
LABELS = [[("softmax_label", (2,))], [("softmax_label", (3,))]]


def module():
    return mx.mod.Module(conv_net(), context=CONTEXTS)


def bind(data, labels=LABELS):
    return lambda: mxpatch_bind.bind(module(), data, labels)


def trained_on(**fields):
    """A forward-backward of a per-device batch whose fields are replaced by ``fields``."""
    def slip():
        mod = module()
        mxpatch_bind.bind(mod, DATA, LABELS)
        mod.init_params()
        mod.init_optimizer()
        batch = dict(data=[[mx.nd.ones(S0)], [mx.nd.ones(S1)]],
                     label=[[mx.nd.zeros((2,))], [mx.nd.zeros((3,))]])
        batch.update(fields)
        mod.forward_backward(mx.io.DataBatch(**batch))
    return slip


# slip -> (what makes it, the error's type, the words that name the fix)
SLIPS = {
    "a per-device spec written flat": (
        bind([("data", S0), ("data", S1)], [("softmax_label", (5,))]), ShapeSpecError,
        r"give one list per device: \[\[\('data', \(2, 3, 8, 8\)\)\], \[\('data', \(3, 3, 6, 6\)\)\]\]"),
    "one device list too many": (
        bind(DATA + [[("data", S0)]]), ShapeSpecError, r"expected one entry per context"),
    "labels for one device only": (
        bind(DATA, LABELS[:1]), ShapeSpecError, r"or one None per context for no labels"),
    "stock data with per-device labels": (
        bind([("data", S0)]), ShapeSpecError, r"pass both in the same form"),
    "an input name the symbol does not have": (
        bind([[("img", S0)], [("img", S1)]]), ShapeSpecError, r"the module expects \['data'\]"),
    "devices naming different inputs": (
        bind([[("data", S0)], [("img", S1)]]), ShapeSpecError,
        r"every device must name the same inputs in the same order"),
    "a shape that is a number": (
        bind([[("data", 5)], [("data", S1)]]), ShapeSpecError,
        r"expected a non-empty tuple of positive ints"),
    "an empty device (batch size 0)": (
        bind([[("data", (0, 3, 8, 8))], [("data", S1)]]), ShapeSpecError, r"expected positive ints"),
    "a training batch without labels": (
        trained_on(label=None), BatchError, r"Give the batch its labels .* or run forward\(batch, "
                                            r"is_train=False\) for inference"),
    "a batch for more devices than contexts": (
        trained_on(data=[[mx.nd.ones(S0)], [mx.nd.ones(S1)], [mx.nd.ones(S1)]]), BatchError,
        r"expected one list of arrays per device"),
    "an image without its batch axis": (
        trained_on(data=[[mx.nd.ones(S0[1:])], [mx.nd.ones(S1)]]), BatchError,
        r"expected 4 axes, as the module is bound"),
    "labels of another device's size": (
        trained_on(label=[[mx.nd.zeros((3,))], [mx.nd.zeros((3,))]]), BatchError,
        r"expected the same on every input of a device"),
    "reshape before bind": (
        lambda: mxpatch_bind.reshape(module(), DATA, LABELS), RuntimeError, r"call bind\(\) first"),
    "one prefetching iterator per device": (
        lambda: mxpatch_bind.PerDevicePrefetchingIter([mx.io.NDArrayIter(mx.nd.ones(S0))] * 2),
        TypeError, r"combine them into one iterator first"),
    "the free bind given a BucketingModule": (
        lambda: mxpatch_bind.bind(mx.mod.BucketingModule(
            lambda key: (conv_net(), ("data",), ("softmax_label",)), default_bucket_key=1,
            context=CONTEXTS), DATA, LABELS),
        TypeError, r"binds per device through install\(\) or patched\(\)"),
}


def test_there_are_fifteen_slips_each_with_a_distinct_fix():
    assert len(SLIPS) == 15
    assert len({fix for _, _, fix in SLIPS.values()}) == 15


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_the_slip_gives_one_typed_line_naming_the_fix(slip):
    make, error_type, fix = SLIPS[slip]
    with pytest.raises(Exception) as raised:
        make()
    assert type(raised.value) is error_type, f"{slip}: {type(raised.value).__name__}: {raised.value}"
    message = str(raised.value)
    assert "\n" not in message, f"{slip}: more than one line: {message!r}"
    assert re.search(fix, message), f"{slip}: the fix {fix!r} is not named in {message!r}"
