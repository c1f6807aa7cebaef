"""A generated corpus of malformed specs and batches through every public entry point.

Whatever a caller passes, only this package's typed errors (``PatchError`` subclasses:
``ShapeSpecError``, ``BatchError``) escape, or MXNet's own error for a well-formed request
MXNet cannot carry out, and a call that raises leaves the module exactly as it was: no bare
``AssertionError``, ``AttributeError``, ``KeyError``, ``IndexError``, ``ZeroDivisionError`` or
``TypeError``. Stock-form specs are MXNet's business (passed to it untouched, its errors
included) and are left out of the spec corpus.
"""

from types import SimpleNamespace

import mxnet as mx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from nets import assert_same_state, conv_net, fixed_params, module_state

import mxpatch_bind
from mxpatch_bind import PatchError
from mxpatch_bind.module import shapes

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
SYMBOL = conv_net()
PARAMS = fixed_params(SYMBOL, (1, 3, 6, 6))
GOOD_DATA = [[("data", (2, 3, 6, 6))], [("data", (1, 3, 5, 7))]]
GOOD_LABEL = [[("softmax_label", (2,))], [("softmax_label", (1,))]]
# One and a half times the profile's count (tests/conftest.py): 30 examples in the inner loop,
# 150 on CI.
CORPUS = settings(max_examples=settings.default.max_examples * 3 // 2,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow, HealthCheck.filter_too_much])

# --------------------------------------------------------------------------- spec corpus
names = st.sampled_from(["data", "softmax_label", "image", ""]) | st.integers(-1, 1)
dims = (st.integers(-2, 6) | st.sampled_from([2 ** 31, 2 ** 63]) | st.floats(0, 4)
        | st.booleans() | st.none() | st.text(max_size=2))
shape_values = (st.tuples(*[dims] * 4) | st.lists(dims, max_size=5).map(tuple)
                | st.lists(st.integers(1, 6), min_size=1, max_size=5) | dims
                | st.just(np.array([2, 3, 6, 6])) | st.dictionaries(st.text(max_size=1), dims))
entries = (st.tuples(names, shape_values) | st.tuples(names) | st.tuples(names, shape_values,
                                                                          st.none())
           | st.builds(lambda n, s: mx.io.DataDesc(n, s), st.sampled_from(["data", "image"]),
                       st.tuples(st.integers(1, 4), st.just(3), st.integers(1, 9),
                                 st.integers(1, 9)))
           | shape_values | st.none())
device_entries = st.lists(entries, max_size=3) | entries | st.text(max_size=3)
random_specs = (st.lists(device_entries, max_size=4) | st.none() | st.integers()
                | st.text(max_size=3))


def paths(value, prefix=()):
    """Every position in a nested list/tuple structure, the root first."""
    yield prefix
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


def rebuilt(value, items):
    return items if isinstance(value, list) else tuple(items)


def changed(value, path, operation, new):
    """``value`` with the item at ``path`` replaced, deleted or duplicated."""
    if len(path) == 1 or (not path and operation == "replace"):
        if not path:
            return new
        items = list(value)
        if operation == "replace":
            items[path[0]] = new
        elif operation == "delete":
            del items[path[0]]
        else:
            items.insert(path[0], items[path[0]])
        return rebuilt(value, items)
    if not path:
        return value
    items = list(value)
    items[path[0]] = changed(items[path[0]], path[1:], operation, new)
    return rebuilt(value, items)


def corrupted(good, replacements, count=3):
    """``good`` with one to ``count`` random replacements, deletions or duplications."""
    @st.composite
    def build(draw):
        value = good
        for _ in range(draw(st.integers(1, count))):
            path = draw(st.sampled_from(list(paths(value))))
            operation = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
            value = changed(value, path, operation, draw(replacements))
        return value
    return build()


spec_leaves = names | dims | shape_values | entries | device_entries
specs = corrupted(GOOD_DATA, spec_leaves) | random_specs
label_specs = st.none() | corrupted(GOOD_LABEL, spec_leaves) | st.just(GOOD_LABEL)


def per_device_or_refused(data_shapes, label_shapes):
    """Keep what this package handles: per-device specs and what spec_form refuses."""
    try:
        return shapes.spec_form(data_shapes, label_shapes) == shapes.PER_DEVICE
    except PatchError:
        return True


def unbound():
    return mx.mod.Module(SYMBOL, context=CONTEXTS)


def bound():
    mod = unbound()
    mxpatch_bind.bind(mod, GOOD_DATA, GOOD_LABEL)
    mod.set_params(*PARAMS)
    return mod


def patched_call(method):
    def call(mod, *args, **kwargs):
        with mxpatch_bind.patched():
            return getattr(mod, method)(*args, **kwargs)
    return call


SPEC_ENTRY_POINTS = {
    "mxpatch_bind.bind": (unbound, mxpatch_bind.bind),
    "patched Module.bind": (unbound, patched_call("bind")),
    "mxpatch_bind.bind(force_rebind=True)":
        (bound, lambda mod, d, lab: mxpatch_bind.bind(mod, d, lab, force_rebind=True)),
    "patched Module.bind(force_rebind=True)":
        (bound, lambda mod, d, lab: patched_call("bind")(mod, d, lab, force_rebind=True)),
    "mxpatch_bind.reshape": (bound, mxpatch_bind.reshape),
    "patched Module.reshape": (bound, patched_call("reshape")),
    "the per-device module's own reshape": (bound, lambda mod, d, lab: mod.reshape(d, lab)),
}


REFUSED_SPEC = [[("data", (2, 3, -1, 6))], [("data", (1, 3, 5, 7))]]
OUTCOMES = {}  # how the calls of one test ended, by exception name: the corpus must reach both


def only_typed_errors_and_no_change(mod, call):
    before = module_state(mod)
    try:
        call()
    except (PatchError, mx.base.MXNetError, RuntimeError) as error:
        # simple_bind reports MXNet's own error as a RuntimeError raised while handling it.
        if type(error) is RuntimeError:
            assert isinstance(error.__context__, mx.base.MXNetError), error
        OUTCOMES[type(error).__name__] = OUTCOMES.get(type(error).__name__, 0) + 1
        assert_same_state(before, module_state(mod))
        return False
    OUTCOMES["accepted"] = OUTCOMES.get("accepted", 0) + 1
    return True


@pytest.mark.parametrize("entry_point", sorted(SPEC_ENTRY_POINTS))
def test_malformed_specs_raise_only_typed_errors_and_change_nothing(entry_point):
    make, call = SPEC_ENTRY_POINTS[entry_point]
    state = {"mod": make()}

    # The claim below holds by construction, whatever the draws: one spec every entry point
    # refuses (a negative size) always runs, before the generated ones.
    @CORPUS
    @given(data_shapes=specs, label_shapes=label_specs)
    @example(data_shapes=REFUSED_SPEC, label_shapes=GOOD_LABEL)
    def run(data_shapes, label_shapes):
        assume(per_device_or_refused(data_shapes, label_shapes))
        mod = state["mod"]
        if only_typed_errors_and_no_change(mod, lambda: call(mod, data_shapes, label_shapes)):
            state["mod"] = make()  # a valid spec changed it: start the next one afresh

    OUTCOMES.clear()
    run()
    print(entry_point, OUTCOMES)
    assert OUTCOMES.get("ShapeSpecError", 0) > 0


# --------------------------------------------------------------------------- batch corpus
def nd_arrays(draw_shape):
    return draw_shape.map(lambda shape: mx.nd.ones(shape) if 0 not in shape
                          else np.zeros(shape, np.float32))


array_shapes = st.lists(st.integers(0, 6), min_size=1, max_size=5).map(tuple)
arrays = (nd_arrays(array_shapes)
          | st.builds(lambda s, dtype: np.ones(s).astype(dtype), array_shapes,
                      st.sampled_from([np.float64, np.int32, np.bool_, np.complex64, np.str_,
                                       object]))
          | st.just([[1.0, 2.0]]) | st.none() | st.integers() | st.text(max_size=2)
          | st.just(mx.nd.ones((2, 3, 6, 6))) | st.just(mx.nd.ones((1, 3, 4, 4))))
GOOD_BATCH = [
    [[mx.nd.ones((2, 3, 6, 6))], [mx.nd.ones((1, 3, 5, 7))]],
    [[mx.nd.ones((2,))], [mx.nd.zeros((1,))]],
    GOOD_DATA,
    GOOD_LABEL,
]
batch_leaves = arrays | spec_leaves | st.lists(arrays, max_size=2)


@st.composite
def batches(draw):
    """A good batch with random corruptions, as one batch or as a list of batches."""
    data, label, provide_data, provide_label = (
        draw(corrupted(part, batch_leaves, count=2) | st.just(part) | st.none())
        for part in GOOD_BATCH)
    # Batch objects, not DataBatch: its constructor asserts on what this corpus passes, and
    # Module.forward takes "anything with similar API".
    if draw(st.booleans()) or not isinstance(data, list):
        return SimpleNamespace(data=data, label=label, provide_data=provide_data,
                               provide_label=provide_label, pad=0)

    def part(value, index):
        return value[index] if isinstance(value, list) and index < len(value) else None
    return [SimpleNamespace(data=device, label=part(label, i), provide_data=part(provide_data, i),
                            provide_label=part(provide_label, i), pad=0)
            for i, device in enumerate(data)]


def good_batch():
    return mx.io.DataBatch(data=[[mx.nd.ones((2, 3, 6, 6))], [mx.nd.ones((1, 3, 5, 7))]],
                           label=[[mx.nd.ones((2,))], [mx.nd.zeros((1,))]])


def unlabelled_second_device():
    batch = good_batch()
    return SimpleNamespace(data=batch.data, label=batch.label[:1], provide_data=None,
                           provide_label=None, pad=0)


BATCH_ENTRY_POINTS = {
    "forward": lambda mod, batch: mod.forward(batch, is_train=True),
    "forward_backward": lambda mod, batch: mod.forward_backward(batch),
    "patched forward": lambda mod, batch: patched_call("forward")(mod, batch, is_train=False),
}


@pytest.mark.parametrize("entry_point", sorted(BATCH_ENTRY_POINTS))
def test_malformed_batches_raise_only_typed_errors_and_change_nothing(entry_point):
    call = BATCH_ENTRY_POINTS[entry_point]
    state = {"mod": bound()}
    state["mod"].forward(good_batch())

    # Both outcomes the claim below counts run on every run, whatever the draws: a good batch
    # (accepted) and one whose second device has no labels (a BatchError).
    @CORPUS
    @given(batch=batches())
    @example(batch=good_batch())
    @example(batch=unlabelled_second_device())
    def run(batch):
        mod = state["mod"]
        if only_typed_errors_and_no_change(mod, lambda: call(mod, batch)):
            state["mod"] = bound()
            state["mod"].forward(good_batch())

    OUTCOMES.clear()
    run()
    print(entry_point, OUTCOMES)
    assert OUTCOMES.get("BatchError", 0) > 0 and OUTCOMES.get("accepted", 0) > 0
