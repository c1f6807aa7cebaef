"""The executor group's lean reshape equals ``Executor.reshape``; its cache admits on second sight."""

from collections import OrderedDict

import mxnet as mx
import numpy as np
import pytest
from nets import conv_net, fixed_params, per_device_spec

import mxpatch_bind
from mxpatch_bind.module import executors

BASE_SHAPE = (2, 3, 24, 32)


def bound_executor(shape=BASE_SHAPE):
    symbol = conv_net(batch_norm=True)
    executor = symbol.simple_bind(mx.cpu(0), data=shape, softmax_label=(shape[0],))
    args, aux = fixed_params(symbol, shape)
    executor.copy_params_from(args, aux)
    return executor


def run(executor, seed=0):
    """Outputs and gradients (as numpy) of one forward/backward on seeded inputs."""
    rng = np.random.RandomState(seed)
    data = executor.arg_dict["data"]
    data[:] = rng.uniform(-1, 1, data.shape)
    executor.arg_dict["softmax_label"][:] = rng.randint(0, 3, data.shape[0])
    executor.forward(is_train=True)
    executor.backward()
    # SoftmaxOutput leaves the label's gradient unwritten: a grown one holds whatever it held.
    grads = [None if name == "softmax_label" else grad.asnumpy()
             for name, grad in executor.grad_dict.items()]
    return [out.asnumpy() for out in executor.outputs], grads


def describe(arrays):
    return [None if a is None else (a.shape, a.dtype, a.stype, a.context) for a in arrays]


@pytest.mark.parametrize("shape", [(1, 3, 16, 20), (2, 3, 24, 32), (3, 3, 40, 48)],
                         ids=["shrink", "same", "grow"])
def test_lean_reshape_gives_the_arrays_and_results_of_executor_reshape(shape):
    base = bound_executor()
    wanted = {"data": shape, "softmax_label": (shape[0],)}
    stock = base.reshape(allow_up_sizing=True, **wanted)
    expected = run(stock)
    lean = executors.reshape_executor(base, wanted)
    for field in ("arg_arrays", "grad_arrays", "aux_arrays", "outputs"):
        assert describe(getattr(lean, field)) == describe(getattr(stock, field)), field
    assert list(lean.arg_dict) == list(stock.arg_dict)
    assert list(lean.aux_dict) == list(stock.aux_dict)
    assert list(lean.grad_dict) == list(stock.grad_dict)
    got = run(lean)
    for got_list, expected_list in zip(got, expected):
        for got_array, expected_array in zip(got_list, expected_list):
            assert (got_array is None) == (expected_array is None)
            if got_array is not None:
                assert np.array_equal(got_array, expected_array)


def test_lean_reshape_shares_the_base_parameters_and_symbol():
    base = bound_executor()
    lean = executors.reshape_executor(base, {"data": (1, 3, 8, 8), "softmax_label": (1,)})
    base.arg_dict["fc_bias"][:] = 7.0
    assert np.all(lean.arg_dict["fc_bias"].asnumpy() == 7.0)
    if mx.__version__.startswith(executors.LEAN_RESHAPE_VERSIONS):
        assert lean._symbol is base._symbol  # other versions take Executor.reshape itself
    assert lean.reshape(data=(1, 3, 8, 8), softmax_label=(1,)).arg_dict["data"].shape == (1, 3, 8, 8)


@pytest.fixture
def executor_reshape_calls(monkeypatch):
    """Records the keyword arguments of every ``Executor.reshape`` call."""
    calls = []
    original = mx.executor.Executor.reshape

    def counting_reshape(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(mx.executor.Executor, "reshape", counting_reshape)
    return calls


def test_an_executor_with_a_monitor_callback_takes_executor_reshape(executor_reshape_calls):
    base = bound_executor()
    base.set_monitor_callback(lambda name, array: None)
    executors.reshape_executor(base, {"data": (1, 3, 8, 8), "softmax_label": (1,)})
    assert executor_reshape_calls == [{"allow_up_sizing": True, "data": (1, 3, 8, 8),
                                       "softmax_label": (1,)}]


def test_other_mxnet_versions_take_executor_reshape(executor_reshape_calls, monkeypatch):
    base = bound_executor()
    monkeypatch.setattr(executors, "LEAN_RESHAPE_VERSIONS", ("0.0.",))
    executors.reshape_executor(base, {"data": (1, 3, 8, 8), "softmax_label": (1,)})
    assert executor_reshape_calls == [{"allow_up_sizing": True, "data": (1, 3, 8, 8),
                                       "softmax_label": (1,)}]


def test_a_shape_enters_the_executor_cache_on_its_second_sight():
    symbol = conv_net()
    mod = mx.mod.Module(symbol, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, *per_device_spec([BASE_SHAPE, BASE_SHAPE]))
    group = mod._exec_group
    small, other = (1, 3, 8, 8), (1, 3, 12, 12)
    sequence = [small, other, small, other, small]
    seen_execs = []
    for shape in sequence:
        mxpatch_bind.reshape(mod, *per_device_spec([BASE_SHAPE, shape]))
        seen_execs.append(group.execs[1])
    assert seen_execs[0] is not seen_execs[2]  # first sight: reshaped, not kept
    assert seen_execs[2] is seen_execs[4]  # second sight: kept, then reused
    assert len(group._exec_cache[1]) == 2


def test_lean_reshape_keeps_sparse_gradient_storage_like_executor_reshape():
    data = mx.sym.Variable("data")
    symbol = mx.sym.sum(mx.sym.Embedding(data, input_dim=10, output_dim=4, sparse_grad=True,
                                         name="embed"))
    base = symbol.simple_bind(mx.cpu(0), data=(2, 3))
    stock = base.reshape(allow_up_sizing=True, data=(4, 3))
    lean = executors.reshape_executor(base, {"data": (4, 3)})
    for field in ("arg_arrays", "grad_arrays", "aux_arrays", "outputs"):
        assert describe(getattr(lean, field)) == describe(getattr(stock, field)), field
    assert [type(a) for a in lean.grad_arrays] == [type(a) for a in stock.grad_arrays]


@pytest.mark.parametrize("lean_versions", [executors.LEAN_RESHAPE_VERSIONS, ("0.0.",)],
                         ids=["lean", "executor-reshape"])
def test_input_shapes_of_a_reshaped_executor_are_known_without_asking_mxnet(monkeypatch,
                                                                           lean_versions):
    monkeypatch.setattr(executors, "LEAN_RESHAPE_VERSIONS", lean_versions)
    base = bound_executor()
    lean = executors.reshape_executor(base, {"data": (1, 3, 8, 8), "softmax_label": (1,)})
    monkeypatch.setattr(mx.nd.NDArray, "shape", property(lambda self: pytest.fail("asked")))
    assert executors.input_shapes(lean, {"data": None}) == {"data": (1, 3, 8, 8)}


def test_the_executor_cache_keeps_exactly_its_size_dropping_the_least_recently_used():
    cache, size = OrderedDict(), 8
    for key in range(size + 2):
        executors.put_bounded(cache, key, None, size)
    assert list(cache) == list(range(2, size + 2))
    cache.move_to_end(2)  # a hit makes it the most recently used
    executors.put_bounded(cache, "new", None, size)
    assert 3 not in cache and 2 in cache and len(cache) == size


def test_a_reshape_to_the_current_per_device_shapes_returns_at_once(monkeypatch):
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, *per_device_spec([BASE_SHAPE, (1, 3, 8, 8)]))
    group = mod._exec_group
    commits = []
    monkeypatch.setattr(group, "_commit", lambda spec: commits.append(spec))
    mxpatch_bind.reshape(mod, *per_device_spec([BASE_SHAPE, (1, 3, 8, 8)]))
    assert commits == []  # nothing recomputed, not even the arrays' lists


def test_the_seen_shapes_table_keeps_the_last_256_shapes_of_each_device():
    # Shapes seen once are remembered (keys only) so that a second sight admits them to the
    # executor cache; the table is bounded, dropping the oldest.
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0)])
    mxpatch_bind.bind(mod, [[("data", (300, 2))]], for_training=False)
    for rows in range(1, 300):
        mxpatch_bind.reshape(mod, [[("data", (rows, 2))]])
    seen = [dict(key)["data"][0] for key in mod._exec_group._seen_shapes[0]]
    assert seen == list(range(299 - 256 + 1, 300))


def test_a_reshape_that_would_change_a_parameters_shape_is_refused_and_changes_nothing():
    # flatten + FullyConnected: another image size needs another fc_weight, which a reshape
    # cannot give (partial shaping off, as Executor.reshape has it by default).
    from nets import assert_same_state, module_state
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(mx.sym.flatten(data), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, [[("data", (1, 3, 4, 4))], [("data", (1, 3, 4, 4))]],
                      for_training=False)
    mod.init_params()
    before = module_state(mod)
    with pytest.raises(mx.base.MXNetError):
        mxpatch_bind.reshape(mod, [[("data", (1, 3, 4, 4))], [("data", (1, 3, 3, 3))]])
    assert_same_state(before, module_state(mod))
