"""Every batch fault the README promises a ``BatchError`` for, in every per-device batch form.

The faults are read from the README's own sentence ("``BatchError`` for a batch that does not
fit the module (a device's labels missing, ...)"), so a promise added there without a case
here fails :func:`test_every_promise_of_the_readme_has_a_case`. Each fault is tried on each
way a per-device batch reaches a module: the two forms the README names (one ``DataBatch`` of
per-device lists, a list of ``DataBatch``) on a module bound per device, and on a plain
module bound in stock form under ``install()`` (where a list of batches of one shape is
stock's own pre-sliced form, handed to stock ``forward`` once checked). Every refusal is a
``BatchError`` whose message names the fix, raised before anything changes: the module's
class, shapes, executors, inputs and parameters are exactly as they were.
"""

import re

import mxnet as mx
import numpy as np
import pytest
from nets import assert_same_state, conv_net, fixed_params, module_state, random_batch
from paths import REPO

import mxpatch_bind

SYMBOL = conv_net()
SHAPE = (2, 3, 8, 8)  # every device one shape: a list of batches is then stock's pre-sliced form
PARAMS = fixed_params(SYMBOL, SHAPE)
_SENTENCE = re.compile(r"`BatchError` for a batch that does not fit the module \(([^:)]*)")


def readme_promises():
    """The faults of the README's ``BatchError`` sentence, one phrase each."""
    text = " ".join((REPO / "README.md").read_text().split())
    match = _SENTENCE.search(text)
    assert match, "README.md no longer lists what a BatchError is raised for"
    return [phrase.strip() for part in match.group(1).split(",")
            for phrase in part.split(" or ") if phrase.strip()]


# --------------------------------------------------------------------------- the faults
def good_batch():
    """Per-device ``(data, label)`` lists that fit the module: the faults start from these."""
    pairs = [random_batch(SHAPE, seed=seed) for seed in (1, 2)]
    return [[data] for data, _ in pairs], [[label] for _, label in pairs]


def without_labels(data, label):
    return dict(data=data, label=None), "the batch has no labels"


def labels_missing_on_a_device(data, label):
    return dict(data=data, label=[label[0], None]), "batch device 1 has no labels"


def stale_provide_data(data, label):
    stale = [[("data", SHAPE)], [("data", (3,) + SHAPE[1:])]]
    return (dict(data=data, label=label, provide_data=stale),
            "provide_data says shape (3, 3, 8, 8)")


def wrong_rank(data, label):
    flat = [data[0], [data[1][0].reshape((2, -1))]]
    return dict(data=flat, label=label), "expected 4 axes"


def wrong_dtype(data, label):
    complex_ = [data[0], [data[1][0].asnumpy().astype(np.complex64)]]
    return dict(data=complex_, label=label), "expected a numeric dtype"


# (what the README's phrase says, the fault); the first case is the silent slip,
# which the README's list is to name too.
CASES = [("without labels", without_labels), ("labels missing", labels_missing_on_a_device),
         ("stale `provide_data`", stale_provide_data), ("wrong rank", wrong_rank),
         ("dtype", wrong_dtype)]


def case_of(promise):
    found = [fault for words, fault in CASES if words in promise]
    assert len(found) == 1, f"no single case for the README's promise {promise!r}"
    return found[0]


def test_every_promise_of_the_readme_has_a_case():
    promises = readme_promises()
    assert len(promises) >= 4
    assert all(case_of(promise) for promise in promises)


# --------------------------------------------------------------------------- the forms
def per_device_module():
    mod = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, [[("data", SHAPE)]] * 2, [[("softmax_label", SHAPE[:1])]] * 2)
    return mod


def stock_module():
    mod = mx.mod.Module(SYMBOL, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4,) + SHAPE[1:])], [("softmax_label", (4,))])
    return mod


def as_batch(form, fields):
    if form == "device-lists":
        return mx.io.DataBatch(**fields)
    return [mx.io.DataBatch(data=fields["data"][i],
                            label=None if fields.get("label") is None else fields["label"][i],
                            provide_data=(fields["provide_data"][i] if "provide_data" in fields
                                          else None))
            for i in range(2)]


MODULES = {"bound per device": per_device_module, "bound in stock form": stock_module}
FORMS = ["device-lists", "batch-list"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", sorted(MODULES))
@pytest.mark.parametrize("words, fault", CASES, ids=[words for words, _ in CASES])
def test_a_batch_with_a_promised_fault_is_refused_whole_before_anything_changes(kind, form,
                                                                               words, fault):
    mod = MODULES[kind]()
    mod.set_params(*PARAMS)
    data, label = good_batch()
    with mxpatch_bind.patched():
        mod.forward_backward(as_batch(form, dict(data=data, label=label)))  # a good batch runs
        before = module_state(mod)
        fields, fragment = fault(data, label)
        with pytest.raises(mxpatch_bind.BatchError) as error:
            mod.forward_backward(as_batch(form, fields))
    message = str(error.value)
    assert fragment in message and ("expected" in message or "Give the batch" in message)
    assert_same_state(before, module_state(mod))


@pytest.mark.parametrize("form", FORMS)
def test_a_batch_without_labels_runs_for_inference_on_a_module_bound_with_labels(form):
    mod = per_device_module()
    mod.set_params(*PARAMS)
    data, _ = good_batch()
    mod.forward(as_batch(form, dict(data=data)), is_train=False)
    outputs = mod.get_outputs(merge_multi_context=False)[0]
    reference = mx.mod.Module(SYMBOL, context=mx.cpu(0))
    reference.bind([("data", SHAPE)], [("softmax_label", SHAPE[:1])], for_training=False)
    reference.set_params(*PARAMS)
    for device, arrays in enumerate(data):
        reference.forward(mx.io.DataBatch(arrays), is_train=False)
        assert np.array_equal(outputs[device].asnumpy(), reference.get_outputs()[0].asnumpy())


def test_the_missing_labels_message_names_the_fix_for_the_form_given():
    mod = per_device_module()
    mod.set_params(*PARAMS)
    data, _ = good_batch()
    messages = {}
    for form in FORMS:
        with pytest.raises(mxpatch_bind.BatchError) as error:
            mod.forward(as_batch(form, dict(data=data)), is_train=True)
        messages[form] = str(error.value)
    assert "label=[[arrays of device 0], [arrays of device 1], ...]" in messages["device-lists"]
    assert "label=[arrays] on every DataBatch of the list" in messages["batch-list"]
    assert all("['softmax_label']" in m and "is_train=False" in m for m in messages.values())


def test_a_flat_batch_without_labels_for_training_is_refused_on_a_per_device_module():
    mod = per_device_module()
    mod.set_params(*PARAMS)
    before = module_state(mod)
    with pytest.raises(mxpatch_bind.BatchError, match=r"Give the batch its labels \(label="
                                                      r"\[arrays\], as its data\)"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4,) + SHAPE[1:])]), is_train=True)
    assert_same_state(before, module_state(mod))
