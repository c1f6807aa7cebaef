"""compat's ``fit(iter_size=)`` and ``fit(allow_extra=)``: the keywords of two modified copies
of the fork's module (3DCE's gradient accumulation, road_obj_detect's ``allow_extra``).

The oracle is stock MXNet on one context: each batch's gradients from a plain
``forward_backward``, added up by hand over the batches the copy updated together (written out
below, per case), then one stock ``update`` per group. No code of those repositories is used:
what their copies did is described in ``mxpatch_bind/_accumulating_fit.py``.
"""

import logging

import mxnet as mx
import numpy as np
import pytest
from nets import fixed_params

from mxpatch_bind.compat import MutableModule

pytestmark = pytest.mark.usefixtures("give_back_installs")

# Momentum and weight decay, so that a batch in the wrong group changes more than a scale.
OPTIMIZER = {"learning_rate": 0.3, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.25}
FROZEN = ["fc1_weight", "fc1_bias"]


def net(batch_norm=False):
    """fc1 -> (BatchNorm, its statistics trained on each device) -> tanh -> fc2 -> softmax."""
    out = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1")
    if batch_norm:
        out = mx.sym.BatchNorm(out, fix_gamma=False, momentum=0.5, name="bn1")
    out = mx.sym.FullyConnected(mx.sym.Activation(out, act_type="tanh"), num_hidden=3,
                                name="fc2")
    return mx.sym.SoftmaxOutput(out, name="softmax")


def start(symbol):
    return fixed_params(symbol, (4, 5))


def pieces(seed, rows):
    """(data, label) per device, ``rows[i]`` samples on device ``i``."""
    rng = np.random.RandomState(seed)
    return [(mx.nd.array(rng.uniform(-1, 1, (n, 5))), mx.nd.array(rng.randint(0, 3, n)))
            for n in rows]


def flat_batch(seed, rows=4):
    [(data, label)] = pieces(seed, [rows])
    return mx.io.DataBatch([data], [label], provide_data=[("data", data.shape)],
                           provide_label=[("softmax_label", label.shape)])


def device_batch(seed, rows):
    """The fork's form: per-device lists of arrays and of shapes."""
    pairs = pieces(seed, rows)
    return mx.io.DataBatch([[d] for d, _ in pairs], [[lab] for _, lab in pairs],
                           provide_data=[[("data", d.shape)] for d, _ in pairs],
                           provide_label=[[("softmax_label", lab.shape)] for _, lab in pairs])


class Batches(mx.io.DataIter):
    """The same batches every epoch, in order; ``reset`` starts over."""

    def __init__(self, batches):
        super().__init__()
        self.batches, self.position = batches, 0

    @property
    def provide_data(self):
        return self.batches[0].provide_data

    @property
    def provide_label(self):
        return self.batches[0].provide_label

    def reset(self):
        self.position = 0

    def next(self):
        if self.position == len(self.batches):
            raise StopIteration
        self.position += 1
        return self.batches[self.position - 1]


def device_pieces(batch):
    """Each device's part of ``batch`` as a stock one-context batch."""
    if isinstance(batch.data[0], mx.nd.NDArray):
        return [batch]
    return [mx.io.DataBatch(data, label) for data, label in zip(batch.data, batch.label)]


def stock_by_hand(symbol, groups, optimizer_params, fixed_param_names=()):
    """Stock MXNet on one context: every batch of a group forward and backward with
    grad_req='write', the gradients added up by hand (each device's over the group, then the
    devices in order, as they meet in the kvstore), then one stock update per group."""
    mod = mx.mod.Module(symbol, context=mx.cpu(0), fixed_param_names=fixed_param_names)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(arg_params=start(symbol)[0], aux_params=start(symbol)[1])
    mod.init_optimizer(optimizer_params=optimizer_params)
    grads = mod._exec_group.grad_arrays
    for group in groups:
        devices = len(device_pieces(group[0]))
        sums = [added([gradients(mod, device_pieces(b)[d]) for b in group])
                for d in range(devices)]
        for device_grads, total in zip(grads, added(sums)):
            if total is not None:
                total.copyto(device_grads[0])
        mod.update()
    return parameters(mod)


def gradients(mod, batch):
    mod.forward_backward(batch)
    return [g[0].copy() if g[0] is not None else None for g in mod._exec_group.grad_arrays]


def added(lists):
    """Element-wise sum of lists of arrays, in order (None stays None: a frozen parameter)."""
    total = lists[0]
    for more in lists[1:]:
        total = [None if t is None else t + m for t, m in zip(total, more)]
    return total


def parameters(mod):
    return {name: array.asnumpy() for name, array in mod.get_params()[0].items()}


def assert_bit_equal(got, expected):
    assert got.keys() == expected.keys()
    assert {k for k in got if not np.array_equal(got[k], expected[k])} == set()


def compat_fit(batches, contexts, num_epoch, symbol=None, made=None, **fit):
    symbol = symbol or net()
    mod = MutableModule(symbol, ["data"], ["softmax_label"], context=contexts, **(made or {}))
    arg_params, aux_params = start(symbol)
    mod.fit(Batches(batches), num_epoch=num_epoch, arg_params=arg_params,
            aux_params=aux_params, **fit)
    return mod


# --------------------------------------------------------------------------- the oracle
# (iter_size, batches per epoch, epochs, the batches of each update as the copy grouped them:
# an update after batch 0 of each epoch and then every iter_size batches; what follows an
# epoch's last update goes into the next epoch's first; the run's leftover is never applied)
SCHEDULES = [
    (3, 5, 2, [[0], [1, 2, 3], [4, 0], [1, 2, 3]]),
    (2, 4, 2, [[0], [1, 2], [3, 0], [1, 2]]),
    (4, 3, 3, [[0], [1, 2, 0], [1, 2, 0]]),
    (1, 3, 1, [[0], [1], [2]]),
]


@pytest.mark.parametrize("iter_size, per_epoch, epochs, groups", SCHEDULES)
def test_each_update_applies_the_sum_of_its_batches_gradients_as_stock_mxnet_by_hand(
        iter_size, per_epoch, epochs, groups):
    batches = [flat_batch(seed) for seed in range(per_epoch)]
    mod = compat_fit(batches, [mx.cpu(0)], epochs, iter_size=iter_size,
                     optimizer_params=OPTIMIZER)
    expected = stock_by_hand(net(), [[batches[i] for i in g] for g in groups], OPTIMIZER)
    assert_bit_equal(parameters(mod), expected)


@pytest.mark.parametrize("max_shapes", [{}, {"max_data_shapes": [("data", (3, 5))],
                                          "max_label_shapes": [("softmax_label", (3,))]}])
def test_on_two_devices_with_changing_shapes_the_devices_sums_are_added_and_scaled_once(
        contexts, max_shapes):
    # Per-device batches whose shapes change (a reshape between batches keeps what was
    # added up; with max shapes, as 3DCE's scripts pass them, each batch is a view into the
    # memory taken at the maximum), fc1 frozen (its gradients are None), and the fork's
    # default rescale_grad: 1 / number of devices, applied once to the sum, never divided by
    # iter_size.
    rows = [(3, 2), (2, 3), (1, 2), (3, 1), (2, 2)]
    batches = [device_batch(seed, r) for seed, r in enumerate(rows)]
    params = {"learning_rate": 0.3, "momentum": 0.9}
    mod = compat_fit(batches, contexts, 1, iter_size=2, optimizer_params=params,
                     made=dict(max_shapes, fixed_param_prefix=["fc1"]))
    expected = stock_by_hand(net(), [[batches[0]], batches[1:3], batches[3:5]],
                             dict(params, rescale_grad=0.5), fixed_param_names=FROZEN)
    got = parameters(mod)
    assert_bit_equal(got, expected)
    assert np.array_equal(got["fc1_weight"], start(net())[0]["fc1_weight"].asnumpy())


def test_iter_size_1_trains_as_fit_without_it(contexts):
    batches = [device_batch(seed, (2, 3)) for seed in range(3)]
    accumulating = compat_fit(batches, contexts, 2, iter_size=1, optimizer_params=OPTIMIZER)
    stock_loop = compat_fit(batches, contexts, 2, optimizer_params=OPTIMIZER)
    assert_bit_equal(parameters(accumulating), parameters(stock_loop))


def grad_reqs(mod):
    group = mod._exec_group
    return {name: group.grad_req[name] for name in group.param_names}


def test_fit_binds_with_grad_req_add_for_the_parameters_it_trains(contexts):
    mod = compat_fit([flat_batch(0)], contexts, 0, iter_size=2,
                     made={"fixed_param_prefix": ["fc1"]})
    assert grad_reqs(mod) == {"fc1_weight": "null", "fc1_bias": "null", "fc2_weight": "add",
                              "fc2_bias": "add"}


def bound_for_writing(contexts):
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params()  # stock refuses to rebind a module whose parameters are not set
    return mod


def test_a_module_bound_to_overwrite_gradients_is_refused_for_iter_size_above_1(contexts):
    mod = bound_for_writing(contexts)
    with pytest.raises(ValueError, match=r"grad_req='write' \(for 'fc1_weight' and others\)"):
        mod.fit(Batches([flat_batch(0)]), num_epoch=1, iter_size=2)
    assert set(grad_reqs(mod).values()) == {"write"} and not mod.optimizer_initialized


@pytest.mark.filterwarnings("ignore:Parameters already initialized")  # set up just above
def test_force_rebind_or_iter_size_1_trains_a_module_bound_to_overwrite(contexts):
    rebound = bound_for_writing(contexts)
    rebound.fit(Batches([flat_batch(0)]), num_epoch=1, iter_size=2, force_rebind=True)
    assert set(grad_reqs(rebound).values()) == {"add"}
    kept = bound_for_writing(contexts)
    kept.fit(Batches([flat_batch(0)]), num_epoch=1, iter_size=1)
    assert set(grad_reqs(kept).values()) == {"write"} and kept.optimizer_initialized


# --------------------------------------------------------------------------- epoch ends
@pytest.mark.parametrize("iter_size", [1, 2])
def test_each_epoch_ends_with_the_first_devices_own_arrays_on_every_device(contexts, iter_size):
    # BatchNorm's statistics train on each device apart, so the devices differ at the end;
    # the copy's get_params handed the first device's arrays on (stock averages them). Its
    # loop did so with iter_size=1 too.
    symbol = net(batch_norm=True)
    batches = [device_batch(seed, (3, 2)) for seed in range(3)]
    last_batch, ends = {}, []

    def at_batch_end(param):
        group = param.locals["self"]._exec_group
        last_batch.update({name: [a.asnumpy() for a in arrays]
                           for name, arrays in zip(group.aux_names, group.aux_arrays)})

    def at_epoch_end(epoch, symbol, arg_params, aux_params):
        group = mod._exec_group
        ends.append(all(arg_params[name] is arrays[0] for name, arrays
                        in zip(group.param_names, group.param_arrays))
                    and all(aux_params[name] is arrays[0] for name, arrays
                            in zip(group.aux_names, group.aux_arrays)))

    mod = MutableModule(symbol, ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches(batches), num_epoch=1, iter_size=iter_size, arg_params=start(symbol)[0],
            aux_params=start(symbol)[1], batch_end_callback=at_batch_end,
            epoch_end_callback=at_epoch_end, optimizer_params=OPTIMIZER)
    assert ends == [True]
    group = mod._exec_group
    for name, arrays in zip(group.aux_names, group.aux_arrays):
        first, second = last_batch[name]
        assert not np.array_equal(first, second)  # the devices did differ
        assert all(np.array_equal(a.asnumpy(), first) for a in arrays), name


def test_batch_end_callbacks_see_the_loops_locals_as_3dces_speedometer_read_them(contexts):
    seen = []
    epoch_end = [lambda *args: None]

    def record(param):
        seen.append((param.epoch, param.nbatch, param.locals["self"] is mod,
                     param.locals["epoch_end_callback"] is epoch_end))

    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches([flat_batch(s) for s in range(3)]), begin_epoch=1, num_epoch=3,
            iter_size=2, batch_end_callback=[record], epoch_end_callback=epoch_end,
            arg_params=start(net())[0], aux_params={})
    assert seen == [(epoch, n, True, True) for epoch in (1, 2) for n in range(3)]


class Scores:
    def __init__(self):
        self.ends, self.batches = [], 0

    def end(self, param):
        self.ends.append((param.epoch, param.eval_metric.get()[0]))

    def batch(self, param):
        self.batches += 1


@pytest.mark.parametrize("validation_metric, name", [(None, "accuracy"), ("mse", "mse")])
def test_each_epoch_scores_the_eval_data_with_the_validation_metric(contexts, validation_metric,
                                                                      name):
    scores = Scores()
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches([flat_batch(0)]), eval_data=Batches([flat_batch(5), flat_batch(6)]),
            num_epoch=2, iter_size=2, eval_end_callback=scores.end,
            eval_batch_end_callback=scores.batch, validation_metric=validation_metric,
            arg_params=start(net())[0], aux_params={})
    assert scores.ends == [(0, name), (1, name)] and scores.batches == 4


def test_an_empty_eval_data_is_skipped_as_the_copy_tested_it(contexts):
    scores = Scores()
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches([flat_batch(0)]), eval_data=[], num_epoch=1, iter_size=2,
            eval_end_callback=scores.end, arg_params=start(net())[0], aux_params={})
    assert scores.ends == []


def test_each_epoch_logs_its_train_and_validation_metric_and_time(contexts, caplog):
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    with caplog.at_level(logging.INFO):
        mod.fit(Batches([flat_batch(0)]), eval_data=Batches([flat_batch(1)]), num_epoch=2,
                iter_size=2, arg_params=start(net())[0], aux_params={})
    said = [r.getMessage().split("=")[0] for r in caplog.records if "Epoch[" in r.getMessage()]
    assert said == [f"Epoch[{e}] {what}" for e in (0, 1)
                    for what in ("Train-accuracy", "Time cost", "Validation-accuracy")]


class Monitor:
    def __init__(self):
        self.calls = []

    def install(self, executor):
        self.calls.append("install")

    def tic(self):
        self.calls.append("tic")

    def toc_print(self):
        self.calls.append("toc")


def test_a_monitor_is_installed_and_timed_around_every_batch(contexts):
    monitor = Monitor()
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches([flat_batch(0), flat_batch(1)]), num_epoch=2, iter_size=2, monitor=monitor,
            arg_params=start(net())[0], aux_params={})
    assert monitor.calls == ["install"] * len(contexts) + ["tic", "toc"] * 4


def test_epoch_end_callback_first_is_kept_with_iter_size(contexts):
    calls = []
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts,
                        epoch_end_callback_first=True)
    mod.fit(Batches([flat_batch(0)]), num_epoch=2, iter_size=3,
            epoch_end_callback=lambda epoch, *rest: calls.append(epoch),
            arg_params=start(net())[0], aux_params={})
    assert calls == [-1, 0, 1]


def test_arg_params_allow_missing_and_the_initializer_reach_init_params(contexts):
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    mod.fit(Batches([flat_batch(0)]), num_epoch=0, iter_size=2, allow_missing=True,
            arg_params={"fc1_weight": mx.nd.ones((6, 5))}, aux_params={},
            initializer=mx.init.Constant(0.125))
    got = parameters(mod)
    assert (got["fc1_weight"] == 1).all() and (got["fc2_weight"] == 0.125).all()


# --------------------------------------------------------------------------- allow_extra
@pytest.mark.parametrize("iter_size", [None, 1])
@pytest.mark.parametrize("allow_extra", [False, True])
def test_names_the_network_lacks_are_ignored_whatever_allow_extra_says(allow_extra, iter_size):
    # road_obj_detect's copy passed allow_extra to init_params, which reads only the
    # network's own names; stock fit (no allow_extra) does the same with the same dict.
    batches = [flat_batch(seed) for seed in range(2)]
    arg_params, aux_params = start(net())
    arg_params = dict(arg_params, not_in_the_net=mx.nd.ones((2,)))
    stock = mx.mod.Module(net(), context=mx.cpu(0))
    stock.fit(Batches(batches), num_epoch=2, arg_params=arg_params, aux_params=aux_params,
              optimizer_params=OPTIMIZER)
    mod = compat_fit(batches, [mx.cpu(0)], 2, allow_extra=allow_extra, iter_size=iter_size,
                     optimizer_params=OPTIMIZER)
    assert_bit_equal(parameters(mod), parameters(stock))


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("fit, error, message", [
    ({"iter_size": 0}, ValueError, r"iter_size=0\): expected 1 or more"),
    ({"iter_size": -2}, ValueError, r"iter_size=-2\): expected 1 or more"),
    ({"iter_size": 2.0}, TypeError, r"iter_size=2.0\): expected a whole number"),
    ({"iter_size": True}, TypeError, r"iter_size=True\): expected a whole number"),
    ({"iter_size": "2"}, TypeError, r"iter_size='2'\): expected a whole number"),
    ({"allow_extra": 1}, TypeError, r"allow_extra=1\): expected True or False"),
    ({"allow_extra": None}, TypeError, r"allow_extra=None\): expected True or False"),
    ({"iter_size": 2, "num_epoch": None}, ValueError, "needs num_epoch"),
])
def test_a_value_the_keywords_cannot_take_is_refused_before_binding(contexts, fit, error,
                                                                    message):
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    with pytest.raises(error, match=message):
        mod.fit(Batches([flat_batch(0)]), **dict({"num_epoch": 1}, **fit))
    assert not mod.binded


def test_stocks_sparse_row_id_fn_is_refused_with_iter_size_whose_loop_had_none(contexts):
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    with pytest.raises(TypeError, match=r"fit\(iter_size=...\) takes no sparse_row_id_fn"):
        mod.fit(Batches([flat_batch(0)]), num_epoch=1, iter_size=2,
                sparse_row_id_fn=lambda batch: {})
    assert not mod.binded


def test_a_call_in_3dces_positional_order_is_refused_naming_iter_size(contexts):
    # 3DCE's copy: fit(train_data, eval_data, eval_metric, epoch_end_callback,
    # batch_end_callback, kvstore, optimizer, optimizer_params, eval_end_callback, iter_size,
    # ...); stock's tenth parameter is eval_batch_end_callback, which a number cannot be.
    mod = MutableModule(net(), ["data"], ["softmax_label"], context=contexts)
    with pytest.raises(TypeError, match=r"eval_batch_end_callback=2\) is a number, not a "
                                        "callback: 3DCE's copy .* took iter_size at this"):
        mod.fit(Batches([flat_batch(0)]), None, "acc", None, None, "local", "sgd",
                OPTIMIZER, None, 2, num_epoch=1)
    assert not mod.binded


def test_iter_size_and_allow_extra_are_keyword_only():
    import inspect

    mod = MutableModule(net(), ["data"], ["softmax_label"])
    kinds = {name: p.kind for name, p in inspect.signature(mod.fit).parameters.items()}
    assert kinds["iter_size"] == kinds["allow_extra"] == inspect.Parameter.KEYWORD_ONLY
