"""Every transition is all or nothing: a failure inside MXNet leaves the module as it was.

A hypothesis state machine runs random sequences of bind / reshape / forward in stock and
per-device form, through the free functions and the patched methods, with MXNet made to
fail at the k-th executor call (``Symbol.simple_bind``, ``Executor.reshape`` or the lean
``_reshape_executor``, which runs on worker threads when several devices reshape at
once). After a failure the module's class, shapes, executor group,
executors, inputs and parameters are the same objects and values as before, and a forward at
the old shapes gives bit-identical outputs; after a success the module has the asked-for
shapes and its outputs match a numpy reference.
"""

import contextlib
import threading

import mxnet as mx
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from nets import assert_same_state, conv_net, fixed_params, module_state

import mxpatch_bind
from mxpatch_bind.module import executor_group, executors

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
FEATURES = 4
NET = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
RNG = np.random.RandomState(0)
WEIGHT = RNG.uniform(-1, 1, (3, FEATURES)).astype(np.float32)
BIAS = RNG.uniform(-1, 1, (3,)).astype(np.float32)
PARAMS = ({"fc_weight": mx.nd.array(WEIGHT), "fc_bias": mx.nd.array(BIAS)}, {})


@pytest.fixture(autouse=True)
def _two_reshape_threads(monkeypatch):
    """Reshape both devices on threads (as 4 or more devices do on 2 or more CPUs), so that
    failures are injected on worker threads too."""
    monkeypatch.setattr(executors, "MIN_CONCURRENT_RESHAPES", 2)
    previous = mxpatch_bind.configure(reshape_threads=2)
    yield
    mxpatch_bind.configure(**previous._asdict())


class InjectedFailure(mx.base.MXNetError):
    """What the injected MXNet failure raises (an MXNetError, as out-of-memory would be)."""


class InjectedInterrupt(KeyboardInterrupt):
    """Ctrl-C arriving inside the executor call (a KeyboardInterrupt, not an Exception)."""


@contextlib.contextmanager
def mxnet_fails_at(call, fault=InjectedFailure):
    """Make the ``call``-th executor call (1-based) of the block raise ``fault``; ``call``
    ``None``: never. ``call`` may also be a ``(call, fault)`` pair."""
    if isinstance(call, tuple):
        call, fault = call
    originals = {
        (mx.sym.Symbol, "simple_bind"): mx.sym.Symbol.simple_bind,
        (mx.executor.Executor, "reshape"): mx.executor.Executor.reshape,
        (executors, "reshape_executor"): executors.reshape_executor,
    }
    count, lock = [0], threading.Lock()  # reshapes may run on several threads

    def counted(original):
        def call_or_fail(*args, **kwargs):
            with lock:
                count[0] += 1
                fails = count[0] == call
            if fails:
                raise fault("injected at executor call %d" % call)
            return original(*args, **kwargs)
        return call_or_fail

    for (owner, name), original in originals.items():
        setattr(owner, name, counted(original))
    try:
        yield count
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)


def expected_outputs(device_inputs):
    return [x @ WEIGHT.T + BIAS for x in device_inputs]


def flat_spec(rows):
    return [("data", (rows, FEATURES))]


def device_spec(sizes):
    return [[("data", (size, FEATURES))] for size in sizes]


sizes_per_device = st.lists(st.integers(1, 4), min_size=2, max_size=2)
flat_rows = st.sampled_from([2, 4, 6])
forms = st.sampled_from(["stock", "per-device"])
entries = st.sampled_from(["free", "method"])
failures = st.one_of(st.none(), st.tuples(st.integers(1, 3),
                                         st.sampled_from([InjectedFailure, InjectedInterrupt])))


class Transitions(RuleBasedStateMachine):
    """The model: whether bound, in which form, with which rows per device."""

    def __init__(self):
        super().__init__()
        self.mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
        self.rows = None  # per device: rows; None until bound
        self.seed = 0

    # ------------------------------------------------------------------- helpers
    def ours(self):
        """Whether the package takes part in stock-form calls (a module it adopted)."""
        return type(self.mod) is not mx.mod.Module

    def spec_for(self, form, sizes, rows):
        if form == "stock":
            return flat_spec(rows), [rows // 2, rows // 2]
        return device_spec(sizes), list(sizes)

    def call(self, entry, method, *args, **kwargs):
        if entry == "free":
            return getattr(mxpatch_bind, method)(self.mod, *args, **kwargs)
        with mxpatch_bind.patched():
            return getattr(self.mod, method)(*args, **kwargs)

    def inputs_for(self, rows):
        self.seed += 1
        rng = np.random.RandomState(self.seed)
        return [rng.uniform(-1, 1, (count, FEATURES)).astype(np.float32) for count in rows]

    def batch(self, form, device_inputs):
        arrays = [mx.nd.array(x) for x in device_inputs]
        if form == "stock":
            return mx.io.DataBatch(data=[mx.nd.array(np.concatenate(device_inputs))])
        if form == "device-lists":
            return mx.io.DataBatch(data=[[a] for a in arrays])
        return [mx.io.DataBatch(data=[a]) for a in arrays]

    def outputs(self):
        return [o.asnumpy() for o in self.mod.get_outputs(merge_multi_context=False)[0]]

    def attempt(self, failure, change, asked_rows):
        """Run ``change`` with MXNet failing at ``failure``; check all-or-nothing against the
        model and return whether it took effect."""
        probe = self.inputs_for(self.rows) if self.rows else None
        before_outputs = None
        if probe is not None:
            self.mod.forward(self.batch("device-lists" if self.per_device() else "stock", probe),
                             is_train=False)
            before_outputs = self.outputs()
        before = module_state(self.mod)
        try:
            with mxnet_fails_at(failure):
                change()
        except (InjectedFailure, InjectedInterrupt):
            assert_same_state(before, module_state(self.mod))
            if probe is not None:
                self.mod.forward(self.batch("device-lists" if self.per_device() else "stock",
                                            probe), is_train=False)
                after = self.outputs()
                assert all(np.array_equal(a, b) for a, b in zip(before_outputs, after))
            return False
        self.rows = asked_rows
        return True

    def per_device(self):
        return mxpatch_bind.module.binding.is_per_device(self.mod)

    # ------------------------------------------------------------------- rules
    @initialize(form=forms, sizes=sizes_per_device, rows=flat_rows, entry=entries,
                failure=failures)
    def first_bind(self, form, sizes, rows, entry, failure):
        spec, asked = self.spec_for(form, sizes, rows)
        if form == "stock":
            failure = None  # a plain Module's stock bind is MXNet's own, untouched
        if self.attempt(failure, lambda: self.call(entry, "bind", spec), asked):
            self.mod.set_params(*PARAMS)
        else:
            self.mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
            self.call(entry, "bind", device_spec(sizes))
            self.mod.set_params(*PARAMS)
            self.rows = list(sizes)

    @rule(form=forms, sizes=sizes_per_device, rows=flat_rows, entry=entries, failure=failures)
    def rebind(self, form, sizes, rows, entry, failure):
        spec, asked = self.spec_for(form, sizes, rows)
        if form == "stock" and not self.ours():
            failure = None
        self.attempt(failure, lambda: self.call(entry, "bind", spec, force_rebind=True), asked)

    @rule(form=forms, sizes=sizes_per_device, rows=flat_rows, entry=entries, failure=failures)
    def reshape(self, form, sizes, rows, entry, failure):
        spec, asked = self.spec_for(form, sizes, rows)
        if form == "stock" and not self.ours():
            failure = None
        self.attempt(failure, lambda: self.call(entry, "reshape", spec), asked)

    @rule(form=st.sampled_from(["stock", "device-lists", "batch-list"]), sizes=sizes_per_device,
          rows=flat_rows, failure=failures)
    def forward(self, form, sizes, rows, failure):
        if form != "stock" and not self.ours():
            form = "stock"  # a plain Module's forward is MXNet's own (no per-device batches)
        if form == "stock" and not self.ours():
            failure = None
        asked = [rows // 2, rows // 2] if form == "stock" else list(sizes)
        if form == "stock" and self.per_device() and sum(self.rows) == rows:
            asked = list(self.rows)  # a flat batch the devices share out as they are
        inputs = self.inputs_for(asked)
        done = self.attempt(failure, lambda: self.mod.forward(self.batch(form, inputs),
                                                              is_train=False), asked)
        if done:
            expected = expected_outputs(inputs)
            assert all(np.allclose(out, ref, rtol=1e-5, atol=1e-6)
                       for out, ref in zip(self.outputs(), expected))

    # ------------------------------------------------------------------- invariants
    @invariant()
    def module_has_the_models_shapes_and_computes_them(self):
        if self.rows is None:
            return
        assert self.mod.binded
        shapes = self.mod.data_shapes
        if self.per_device():
            assert [device[0].shape[0] for device in shapes] == self.rows
        else:
            assert shapes[0].shape[0] == sum(self.rows) and self.rows[0] == self.rows[1]
        inputs = self.inputs_for(self.rows)
        form = "device-lists" if self.per_device() else "stock"
        self.mod.forward(self.batch(form, inputs), is_train=False)
        assert all(np.allclose(out, ref, rtol=1e-5, atol=1e-6)
                   for out, ref in zip(self.outputs(), expected_outputs(inputs)))


# Three times the profile's count (tests/conftest.py: 60 in the inner loop, 300 on CI) of up to
# 8 steps on a one-layer net.
Transitions.TestCase.settings = settings(
    max_examples=settings.default.max_examples * 3, stateful_step_count=8,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_random_transitions_are_all_or_nothing = Transitions.TestCase


# --------------------------------------------------------------------------- named cases
def conv_module(shapes):
    symbol = conv_net()
    mod = mx.mod.Module(symbol, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[("data", s)] for s in shapes],
                      [[("softmax_label", (s[0],))] for s in shapes])
    mod.set_params(*fixed_params(symbol, shapes[0]))
    return mod


def device_lists_batch(shapes, seed=0):
    rng = np.random.RandomState(seed)
    return mx.io.DataBatch(data=[[mx.nd.array(rng.uniform(-1, 1, s))] for s in shapes],
                           label=[[mx.nd.array(rng.randint(0, 3, s[0]))] for s in shapes])


def test_a_reshape_back_to_stock_failing_on_the_second_device_leaves_the_module_per_device():
    shapes = [(2, 3, 8, 8), (3, 3, 6, 6)]
    mod = conv_module(shapes)
    mod.forward(device_lists_batch(shapes), is_train=False)
    before_outputs = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    before = module_state(mod)
    with mxnet_fails_at(2), pytest.raises(InjectedFailure):
        mod.reshape([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    assert_same_state(before, module_state(mod))
    mod.forward(device_lists_batch(shapes), is_train=False)
    after = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    assert all(np.array_equal(a, b) for a, b in zip(before_outputs, after))


def exec_caches(mod):
    """The group's per-device executor caches and base executors, by identity and order."""
    group = mod._exec_group
    return ([list(cache.items()) for cache in group._exec_cache],
            list(group._default_execs or []))


@pytest.mark.parametrize("fault", [InjectedFailure, InjectedInterrupt])
@pytest.mark.parametrize("step", ["_keep", "_collect_arrays"])
def test_a_fault_after_a_cache_insert_or_the_executor_swap_leaves_the_module_as_it_was(
        step, fault, monkeypatch):
    # Bound large, so that later shapes are views (not new bases); B seen once before, so
    # that reshaping to it again inserts it into the cache (_keep) before the fault.
    big = [(2, 3, 10, 10), (3, 3, 10, 10)]
    shape_b, shape_c = [(2, 3, 8, 8), (3, 3, 6, 6)], [(2, 3, 7, 7), (3, 3, 5, 5)]
    mod = conv_module(big)
    for shapes in (shape_b, shape_c):
        mxpatch_bind.reshape(mod, [[("data", s)] for s in shapes],
                             [[("softmax_label", (s[0],))] for s in shapes])
    mod.forward(device_lists_batch(shape_c), is_train=False)
    before_outputs = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    before, caches = module_state(mod), exec_caches(mod)
    real = getattr(executor_group.PerDeviceExecutorGroup, step)
    reached = []

    def step_then_fault(self, *args, **kwargs):
        result = real(self, *args, **kwargs)  # the step is done: the fault comes after it
        reached.append(step)
        raise fault("after %s" % step)

    monkeypatch.setattr(executor_group.PerDeviceExecutorGroup, step, step_then_fault)
    with pytest.raises(fault):
        mxpatch_bind.reshape(mod, [[("data", s)] for s in shape_b],
                             [[("softmax_label", (s[0],))] for s in shape_b])
    monkeypatch.undo()
    assert reached
    assert_same_state(before, module_state(mod))
    assert exec_caches(mod) == caches
    mod.forward(device_lists_batch(shape_c), is_train=False)
    after = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    assert all(np.array_equal(a, b) for a, b in zip(before_outputs, after))


def test_a_failed_force_rebind_keeps_the_optimizer_and_its_state():
    shapes = [(2, 3, 8, 8), (3, 3, 6, 6)]
    mod = conv_module(shapes)
    mod.init_optimizer(kvstore=None, optimizer="sgd", optimizer_params={"momentum": 0.9})
    mod.forward_backward(device_lists_batch(shapes))
    mod.update()
    states = {k: v.asnumpy() for k, v in mod._updater.states.items() if v is not None}
    before = module_state(mod)
    with mxnet_fails_at(2), pytest.raises(InjectedFailure):
        mxpatch_bind.bind(mod, [[("data", s)] for s in shapes[::-1]],
                          [[("softmax_label", (s[0],))] for s in shapes[::-1]],
                          force_rebind=True)
    assert_same_state(before, module_state(mod))
    assert mod.optimizer_initialized
    assert all(np.array_equal(states[k], mod._updater.states[k].asnumpy()) for k in states)


def test_a_bucket_switch_to_a_new_key_that_fails_leaves_the_buckets_as_they_were():
    def sym_gen(key):
        return conv_net(), ("data",), ("softmax_label",)

    shapes = [(2, 3, 8, 8), (3, 3, 6, 6)]
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10, context=CONTEXTS)
    with mxpatch_bind.patched():
        mod.bind([[("data", s)] for s in shapes], [[("softmax_label", (s[0],))] for s in shapes])
    mod.init_params()
    buckets, current = dict(mod._buckets), mod._curr_module
    new_shapes = [(1, 3, 5, 5), (2, 3, 4, 4)]
    with mxnet_fails_at(2), pytest.raises(InjectedFailure):
        mod.switch_bucket(20, [[("data", s)] for s in new_shapes],
                          [[("softmax_label", (s[0],))] for s in new_shapes])
    assert mod._buckets == buckets and mod._curr_module is current and mod._curr_bucket_key == 10
    mod.switch_bucket(20, [[("data", s)] for s in new_shapes],
                      [[("softmax_label", (s[0],))] for s in new_shapes])
    assert [[d.shape for d in device] for device in mod._buckets[20].data_shapes] == \
        [[s] for s in new_shapes]


def test_a_transaction_nested_anywhere_inside_one_on_the_same_module_records_nothing(
        monkeypatch):
    # Documented: a transition nested in another is covered by the outer one, also below an
    # unrelated inner transaction (a bucket switch inside a module's forward).
    from mxpatch_bind.module import transactions
    first = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    second = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    recorded = []
    real = transactions._snapshot

    def counting(obj, objects, containers):
        if not objects:  # the top of one transaction's record
            recorded.append(obj)
        return real(obj, objects, containers)

    monkeypatch.setattr(transactions, "_snapshot", counting)
    with transactions.all_or_nothing(first):
        with transactions.all_or_nothing(second):
            with transactions.all_or_nothing(first):
                with transactions.all_or_nothing(second):
                    pass
    assert recorded == [first, second]


def test_an_inner_failure_caught_inside_the_outer_transaction_is_left_to_the_outer_one():
    from mxpatch_bind.module import transactions
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    with transactions.all_or_nothing(mod):
        try:
            with transactions.all_or_nothing(mod):
                mod.binded = True
                raise InjectedFailure("inner")
        except InjectedFailure:
            pass
        # covered by the outer one: the inner change stays until the outer block fails
        assert mod.binded
        mod.binded = False
