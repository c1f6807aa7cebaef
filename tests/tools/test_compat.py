"""The drop-in constructors of ``mxpatch_bind.compat``, against stock one-context modules."""

import os
import subprocess
import sys
import types

import mxnet as mx
import numpy as np
import pytest
from fork_oracle import load_states
from nets import fixed_params, single_device_reference
from synthetic import data_pointer

import mxpatch_bind
from mxpatch_bind import ShapeSpecError
from mxpatch_bind.compat import Module, MutableModule, fixed_param_names_from_prefix
from paths import REPO

REPO = str(REPO)
PER_DEVICE_DATA = [[("data", (2, 3, 10, 14))], [("data", (1, 3, 16, 9))]]
PER_DEVICE_LABEL = [[("softmax_label", (2,))], [("softmax_label", (1,))]]
MAX_DATA = [("data", (2, 3, 16, 16))]
MAX_LABEL = [("softmax_label", (2,))]


pytestmark = pytest.mark.usefixtures("give_back_installs")


def detector_net():
    """conv1 -> bn_conv1 -> conv2 -> global pool -> fc -> softmax (any image size)."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=3, kernel=(3, 3), pad=(1, 1),
                             name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, use_global_stats=True, name="bn_conv1")
    net = mx.sym.Convolution(mx.sym.relu(net), num_filter=4, kernel=(3, 3), name="conv2")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="avg", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def batch(seed, data_specs=PER_DEVICE_DATA):
    rng = np.random.RandomState(seed)
    data = [mx.nd.array(rng.uniform(-1, 1, spec[0][1])) for spec in data_specs]
    label = [mx.nd.array(rng.randint(0, 3, spec[0][1][0])) for spec in data_specs]
    return mx.io.DataBatch(data=[[d] for d in data], label=[[lab] for lab in label],
                           provide_data=[[("data", d.shape)] for d in data],
                           provide_label=[[("softmax_label", lab.shape)] for lab in label])


def trained_mutable_module(contexts, steps=3, **kwargs):
    symbol = detector_net()
    mod = MutableModule(symbol, ["data"], ["softmax_label"], context=contexts, **kwargs)
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    mod.set_params(*fixed_params(symbol, (1, 3, 12, 12)))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    for step in range(steps):
        mod.forward_backward(batch(step))
        mod.update()
    return mod


# --------------------------------------------------------------------------- what comes back
def test_mutable_module_returns_a_stock_module_of_no_class_of_ours(contexts):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    assert type(mod) is mx.mod.Module
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    plain = mx.mod.Module(detector_net(), context=contexts)
    mxpatch_bind.bind(plain, PER_DEVICE_DATA, PER_DEVICE_LABEL)
    assert type(mod) is type(plain)
    assert {name for name, value in vars(mod).items()
            if isinstance(value, types.MethodType)} == {"fit", "init_optimizer"}


def test_the_drop_ins_keep_the_forks_signatures_and_defaults():
    import inspect
    assert list(inspect.signature(MutableModule).parameters) == [
        "symbol", "data_names", "label_names", "logger", "context", "work_load_list",
        "max_data_shapes", "max_label_shapes", "fixed_param_prefix", "fixed_param_rule",
        "epoch_end_callback_first"]
    assert inspect.signature(MutableModule).parameters["fixed_param_rule"].default == "substring"
    assert inspect.signature(MutableModule).parameters["epoch_end_callback_first"].default is False
    assert list(inspect.signature(Module).parameters) == [
        "symbol", "data_names", "label_names", "logger", "context", "work_load_list",
        "fixed_param_names", "state_names"]
    defaults = inspect.signature(Module).parameters
    assert defaults["data_names"].default == ("data",)
    assert defaults["label_names"].default == ("softmax_label",)
    assert defaults["context"].default == mx.cpu()


def test_constructing_a_drop_in_installs_the_patch_once_for_the_process():
    # give_back_installs (this file's pytestmark) takes back the process's install after it.
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2)
    assert (mxpatch_bind.is_installed(), mxpatch_bind.status().refcount) == (False, 0)
    MutableModule(net, ["data"], None)
    Module(net, label_names=None)
    MutableModule(net, ["data"], None)
    assert (mxpatch_bind.is_installed(), mxpatch_bind.status().refcount) == (True, 1)


# --------------------------------------------------------------------------- fixed_param_prefix
def test_fixed_param_prefix_freezes_by_the_forks_substring_rule():
    symbol = detector_net()
    prefixes = ["conv1", "gamma"]
    fork_rule = [n for n in symbol.list_arguments() for p in prefixes if p in n]
    assert fixed_param_names_from_prefix(symbol, prefixes) == list(dict.fromkeys(fork_rule))
    assert "bn_conv1_beta" in fork_rule  # a substring match: it does not start with conv1
    assert len(fork_rule) == len(set(fork_rule)) + 1  # bn_conv1_gamma matched twice


def resnet_like_net():
    """Parameters named as the family's ResNet-101 names them (a few of each kind)."""
    net = mx.sym.Variable("data")
    for name in ("conv1", "res2a_branch2a", "res3a_branch2a"):
        net = mx.sym.Convolution(net, num_filter=2, kernel=(1, 1), name=name)
        bn = "bn_" + name if name == "conv1" else "bn" + name[3:]
        net = mx.sym.BatchNorm(net, name=bn)
    return net


@pytest.mark.parametrize("rule, frozen", [
    ("substring", ["conv1_weight", "conv1_bias", "bn_conv1_gamma", "bn_conv1_beta",
                   "res2a_branch2a_weight", "res2a_branch2a_bias", "bn2a_branch2a_gamma",
                   "bn2a_branch2a_beta", "bn3a_branch2a_gamma", "bn3a_branch2a_beta"]),
    ("startswith", ["conv1_weight", "conv1_bias", "bn_conv1_gamma", "bn_conv1_beta",
                    "res2a_branch2a_weight", "res2a_branch2a_bias", "bn2a_branch2a_gamma",
                    "bn2a_branch2a_beta"]),
])
def test_fixed_param_rule_freezes_as_each_copy_of_the_fork_froze(rule, frozen):
    # The shipped configs' prefixes; under startswith, gamma and beta match nothing (FCIS).
    prefixes = ["conv1", "bn_conv1", "res2", "bn2", "gamma", "beta"]
    mod = MutableModule(resnet_like_net(), ["data"], None, fixed_param_prefix=prefixes,
                        fixed_param_rule=rule)
    assert sorted(mod._fixed_param_names) == sorted(frozen)


@pytest.mark.parametrize("rule", ["prefix", "StartsWith", None, str.startswith])
def test_an_unknown_fixed_param_rule_is_refused_before_installing(rule):
    with pytest.raises(ValueError, match="fixed_param_rule must be one of"):
        MutableModule(resnet_like_net(), ["data"], None, fixed_param_prefix=["conv1"],
                      fixed_param_rule=rule)
    assert not mxpatch_bind.is_installed()


def test_frozen_parameters_do_not_move_and_the_others_train(contexts):
    symbol = detector_net()
    initial, _ = fixed_params(symbol, (1, 3, 12, 12))
    mod = trained_mutable_module(contexts, fixed_param_prefix=["conv1"])
    trained, _ = mod.get_params()
    frozen = ["conv1_weight", "conv1_bias", "bn_conv1_gamma", "bn_conv1_beta"]
    assert mod._fixed_param_names == frozen
    for name in initial:
        same = trained[name].asnumpy().tobytes() == initial[name].asnumpy().tobytes()
        assert same == (name in frozen), name


@pytest.mark.parametrize("prefix", ["conv1", [1], 7])
def test_a_fixed_param_prefix_that_is_not_a_list_of_str_is_refused_before_installing(prefix):
    assert not mxpatch_bind.is_installed()
    with pytest.raises(TypeError, match="fixed_param_prefix must be a list of str"):
        MutableModule(detector_net(), ["data"], ["softmax_label"], fixed_param_prefix=prefix)
    assert not mxpatch_bind.is_installed()


# --------------------------------------------------------------------------- max shapes
def bound_at_max(contexts, max_data=MAX_DATA):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=[max_data for _ in contexts],
                        max_label_shapes=[MAX_LABEL for _ in contexts])
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    mod.init_params()
    return mod


def data_addresses(mod):
    return [data_pointer(e.arg_dict["data"]) for e in mod._exec_group.execs]


def test_the_first_bind_allocates_at_the_maximum_and_reports_the_batch_shapes(contexts):
    mod = bound_at_max(contexts)
    at_max = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    at_max.bind([MAX_DATA, MAX_DATA], [MAX_LABEL, MAX_LABEL])
    assert mod._total_exec_bytes == at_max._total_exec_bytes
    assert [[d.shape for d in device] for device in mod.data_shapes] == [
        [(2, 3, 10, 14)], [(1, 3, 16, 9)]]


def allocated_data_shapes(mod):
    """The data shape each device's executor was allocated at (its base, before reshapes);
    ``_total_exec_bytes`` cannot tell, being 0 for CPU executors."""
    return [e.arg_dict["data"].shape for e in mod._exec_group._default_execs]


def test_a_forced_rebind_allocates_at_the_maximum_again(contexts):
    mod = bound_at_max(contexts)
    assert allocated_data_shapes(mod) == [MAX_DATA[0][1]] * 2
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL, force_rebind=True)
    assert allocated_data_shapes(mod) == [MAX_DATA[0][1]] * 2
    assert [[d.shape for d in device] for device in mod.data_shapes] == [
        [(2, 3, 10, 14)], [(1, 3, 16, 9)]]


def test_each_device_is_allocated_at_its_own_maximum(contexts):
    max_data = [[("data", (2, 3, 16, 16))], [("data", (1, 3, 20, 12))]]
    max_label = [[("softmax_label", (2,))], [("softmax_label", (1,))]]
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=max_data, max_label_shapes=max_label)
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    assert allocated_data_shapes(mod) == [(2, 3, 16, 16), (1, 3, 20, 12)]
    assert [[d.shape for d in device] for device in mod.data_shapes] == [
        [(2, 3, 10, 14)], [(1, 3, 16, 9)]]


def test_later_smaller_batches_are_views_into_the_memory_taken_at_the_maximum(contexts):
    mod = bound_at_max(contexts)
    base = [data_pointer(e.arg_dict["data"]) for e in mod._exec_group._default_execs]
    total = mod._total_exec_bytes
    for seed, shapes in enumerate([[("data", (1, 3, 12, 12))], [("data", (2, 3, 16, 16))],
                                   [("data", (2, 3, 9, 15))]]):
        mod.forward(batch(seed, [shapes, PER_DEVICE_DATA[1]]), is_train=False)
        assert data_addresses(mod) == base
    assert mod._total_exec_bytes == total


def test_without_max_shapes_a_larger_batch_allocates_new_memory(contexts):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    mod.init_params()
    before = data_addresses(mod)
    mod.forward(batch(0, [MAX_DATA, MAX_DATA]), is_train=False)
    assert all(a != b for a, b in zip(data_addresses(mod), before))


def test_outputs_and_gradients_equal_modules_bound_at_each_devices_shapes(contexts):
    symbol = detector_net()
    params = fixed_params(symbol, (1, 3, 12, 12))
    mod = bound_at_max(contexts)
    mod.set_params(*params)
    data_batch = batch(5)
    mod.forward_backward(data_batch)
    for device, context in enumerate(contexts):
        outputs, grads = single_device_reference(
            symbol, params, data_batch.data[device][0], data_batch.label[device][0], context)
        assert mod.get_outputs(False)[0][device].asnumpy().tobytes() == outputs[0].tobytes()
        for name, arrays in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays):
            assert arrays[device].asnumpy().tobytes() == grads[name].tobytes(), name


@pytest.mark.parametrize("max_data_shapes, message", [
    ([("data", (2, 3, 0, 16))], "not a \\(name, shape\\) pair"),
    ([("data", "big")], "not a \\(name, shape\\) pair"),
    ([("image", (2, 3, 16, 16))], "'image', which is not one of the module's inputs"),
    ([MAX_DATA, MAX_DATA, MAX_DATA], "3 per-device lists for 2 contexts"),
])
def test_malformed_max_shapes_are_refused_before_installing(contexts, max_data_shapes,
                                                            message):
    with pytest.raises(ShapeSpecError, match=message):
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                      max_data_shapes=max_data_shapes)
    assert not mxpatch_bind.is_installed()


def test_fewer_per_device_lists_than_contexts_are_refused_too():
    # Two lists for three contexts: the boundary on the other side of "3 lists for 2".
    three = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    with pytest.raises(ShapeSpecError, match="2 per-device lists for 3 contexts"):
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=three,
                      max_data_shapes=[MAX_DATA, MAX_DATA])
    assert not mxpatch_bind.is_installed()


def test_a_bind_for_another_number_of_devices_is_refused_and_leaves_the_module_unbound(
        contexts):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    with pytest.raises(ShapeSpecError):
        mod.bind(PER_DEVICE_DATA + PER_DEVICE_DATA[:1], PER_DEVICE_LABEL + PER_DEVICE_LABEL[:1])
    assert not mod.binded


@pytest.mark.parametrize("bad_data_shapes, bad_label_shapes", [
    ([[("image", (1, 3, 10, 14))], [("data", (1, 3, 16, 9))]], PER_DEVICE_LABEL),  # misspelt
    ([[("data", (1, 3, 10))], [("data", (1, 3, 16, 9))]], PER_DEVICE_LABEL),      # a rank less
    ([[("data", (1, 3, 10, 14, 1))], [("data", (1, 3, 16, 9))]], PER_DEVICE_LABEL),  # one more
    ([[("data", (0, 3, 10, 14))], [("data", (1, 3, 16, 9))]],
     [[("softmax_label", (0,))], [("softmax_label", (1,))]]),                        # no samples
    ([[("data", (-1, 3, 10, 14))], [("data", (1, 3, 16, 9))]], PER_DEVICE_LABEL),    # negative
])
def test_a_refused_first_bind_leaves_the_module_as_constructed(contexts, bad_data_shapes,
                                                                bad_label_shapes):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    cls, attributes = type(mod), dict(vars(mod))
    with pytest.raises(ShapeSpecError):
        mod.bind(bad_data_shapes, bad_label_shapes)
    assert not mod.binded and type(mod) is cls and mod._exec_group is None
    assert vars(mod) == attributes
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)  # and it still binds
    assert [[d.shape for d in device] for device in mod.data_shapes] == [
        [s for _, s in device] for device in PER_DEVICE_DATA]


@pytest.mark.parametrize("fault", [mx.base.MXNetError("out of memory"), KeyboardInterrupt()])
def test_a_failure_after_the_bind_at_the_maximum_leaves_the_module_as_constructed(
        contexts, fault, monkeypatch):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    cls, attributes = type(mod), dict(vars(mod))

    def failing_reshape(module, spec):
        assert module.binded  # the bind at the maximum has happened: undo it
        raise fault

    from mxpatch_bind.module import binding
    monkeypatch.setattr(binding, "_reshape_per_device", failing_reshape)
    with pytest.raises(type(fault)):
        mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    assert not mod.binded and type(mod) is cls and vars(mod) == attributes


@pytest.mark.parametrize("work_load_list", [
    [1], [1, 0], [1, "x"], [1, float("inf")], [1, float("nan")], [1, -1], [True, 1],
    [1, np.float64("inf")], [1, 1, 1]])
def test_a_work_load_list_without_one_positive_number_per_context_is_refused(contexts,
                                                                             work_load_list):
    with pytest.raises(ValueError, match="one finite positive number per context"):
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                      work_load_list=work_load_list)
    assert not mxpatch_bind.is_installed()


@pytest.mark.parametrize("work_load_list", [[1, 2], [0.5, 1e-3], [np.int64(3), np.float32(1)]])
def test_finite_positive_work_loads_are_accepted(contexts, work_load_list):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        work_load_list=work_load_list)
    assert list(mod._work_load_list) == list(work_load_list)


# --------------------------------------------------------------------------- optimizer, fit
def test_without_rescale_grad_the_drop_ins_keep_the_forks_one_over_devices(contexts):
    mod = trained_mutable_module(contexts, steps=0)
    assert mod._optimizer.rescale_grad == 1.0 / len(contexts)
    plain = Module(detector_net(), context=contexts)
    plain.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    plain.init_params()
    plain.init_optimizer(optimizer_params={"learning_rate": 0.1, "rescale_grad": 1.0})
    assert plain._optimizer.rescale_grad == 1.0


def test_a_forced_init_optimizer_keeps_the_forks_one_over_devices(contexts):
    mod = trained_mutable_module(contexts, steps=0)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1},
                       force_init=True)
    assert mod._optimizer.rescale_grad == 1.0 / len(contexts)
    assert mod._optimizer.lr == 0.1  # the forced init did replace the optimizer


def test_an_init_optimizer_that_stock_skips_leaves_the_optimizer_as_it_was(contexts):
    mod = trained_mutable_module(contexts, steps=0)
    first = mod._optimizer
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    assert mod._optimizer is first and first.rescale_grad == 1.0 / len(contexts)


def test_preload_opt_states_is_loaded_by_init_optimizer(contexts, tmp_path):
    states = str(tmp_path / "run.states")
    trained_mutable_module(contexts).save_optimizer_states(states)
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    mod.init_params()
    mod._preload_opt_states = states
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    saved = str(tmp_path / "again.states")
    mod.save_optimizer_states(saved)
    assert_same_states(saved, states)
    assert mod._preload_opt_states is None


def assert_same_states(path, expected_path):
    """Equal optimizer states, and not a fresh optimizer's zeros."""
    states, expected = load_states(path), load_states(expected_path)
    assert sorted(states) == sorted(expected)
    assert all(states[k].tobytes() == expected[k].tobytes() for k in states)
    assert any(np.any(v != 0) for v in expected.values())


class OneBatch(mx.io.DataIter):
    """A per-device iterator over the same single batch."""

    def __init__(self):
        super().__init__()
        self.batch, self.done = batch(0), False

    @property
    def provide_data(self):
        return self.batch.provide_data

    @property
    def provide_label(self):
        return self.batch.provide_label

    def reset(self):
        self.done = False

    def next(self):
        if self.done:
            raise StopIteration
        self.done = True
        return self.batch


def test_fit_takes_the_forks_prefix_and_loads_the_state_file(contexts, tmp_path):
    states = str(tmp_path / "run.states")
    trained_mutable_module(contexts).save_optimizer_states(states)
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    loaded = []
    original = mod.load_optimizer_states
    mod.load_optimizer_states = lambda path: (loaded.append(path), original(path))
    mod.fit(OneBatch(), num_epoch=0, prefix=str(tmp_path / "ignored"), state=states,
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    assert loaded == [states]
    saved = str(tmp_path / "again.states")
    mod.save_optimizer_states(saved)
    assert_same_states(saved, states)
    assert not list(tmp_path.glob("ignored*"))


@pytest.mark.filterwarnings("ignore:Parameters already initialized")  # set up just above
def test_fit_loads_the_state_file_into_an_optimizer_already_set_up(contexts, tmp_path):
    states = str(tmp_path / "run.states")
    trained_mutable_module(contexts).save_optimizer_states(states)
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    mod.bind(PER_DEVICE_DATA, PER_DEVICE_LABEL)
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    mod.fit(OneBatch(), num_epoch=0, state=states,
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    saved = str(tmp_path / "again.states")
    mod.save_optimizer_states(saved)
    assert_same_states(saved, states)


def test_fit_with_a_missing_state_file_fails_before_binding(contexts, tmp_path):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    with pytest.raises(FileNotFoundError, match="no such optimizer-states file"):
        mod.fit(OneBatch(), num_epoch=1, state=str(tmp_path / "missing.states"))
    assert not mod.binded


@pytest.mark.parametrize("max_data_shapes", [
    [[("data", (1, 3, 16, 16))]],                              # rfcn/test_rcnn.py, has_rpn
    [[("data", (1, 3, 16, 16))], ("rois", (1, 30, 5))],         # its rois, appended outside
])
def test_the_family_testers_max_data_shapes_count_for_every_context(contexts, max_data_shapes):
    data, rois = mx.sym.Variable("data"), mx.sym.Variable("rois")
    net = mx.sym.broadcast_add(
        mx.sym.FullyConnected(mx.sym.Pooling(data, global_pool=True, kernel=(1, 1),
                                             pool_type="avg"), num_hidden=2, name="fc"),
        mx.sym.mean(mx.sym.flatten(rois), axis=1, keepdims=True))
    mod = MutableModule(net, ["data", "rois"], None, context=contexts,
                        max_data_shapes=max_data_shapes)
    provide = [[("data", (1, 3, 8, 8 + i)), ("rois", (1, 20, 5))] for i in range(len(contexts))]
    mod.bind(provide, [None] * len(contexts), for_training=False)
    for device, exec_ in enumerate(mod._exec_group._default_execs):
        assert exec_.arg_dict["data"].shape == (1, 3, 16, 16), device  # taken at the maximum
        expected_rois = (1, 30, 5) if len(max_data_shapes) == 2 else (1, 20, 5)
        assert exec_.arg_dict["rois"].shape == expected_rois, device
    assert [[d.shape for d in device] for device in mod.data_shapes] == [
        [s for _, s in device] for device in provide]


def test_max_data_shapes_with_one_list_per_context_but_some_missing_is_refused(contexts):
    three = [MAX_DATA] * (len(contexts) + 1)
    with pytest.raises(ShapeSpecError, match="or one list for every context"):
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                      max_data_shapes=three)


@pytest.mark.parametrize("argument, value", [("work_load_list", 5),
                                             ("fixed_param_prefix", 3),
                                             ("max_data_shapes", 7)])
def test_an_argument_that_is_no_list_is_refused_naming_it(contexts, argument, value):
    with pytest.raises((TypeError, ShapeSpecError), match="%s" % argument) as error:
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                      **{argument: value})
    assert repr(value) in str(error.value)
    assert not mxpatch_bind.is_installed()


@pytest.mark.parametrize("context", ["gpu", [], [mx.cpu(0), "cpu(1)"]])
def test_a_context_that_is_no_context_is_refused_naming_it(context):
    with pytest.raises(TypeError, match="context must be a Context or a non-empty list of "
                                        "Context") as error:
        MutableModule(detector_net(), ["data"], ["softmax_label"], context=context)
    assert repr(context) in str(error.value)


def test_max_label_shapes_alone_are_kept_for_every_device():
    from mxpatch_bind.compat import _max_shapes_per_device
    assert _max_shapes_per_device(None, [("softmax_label", (4,))], ["data", "softmax_label"],
                                  2) == [{"softmax_label": (4,)}, {"softmax_label": (4,)}]


def test_fit_hands_stocks_own_keywords_on_to_stock_fit(contexts):
    # sparse_row_id_fn is stock fit's: its prepare() hands it each batch after the first.
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA)
    prepared = []

    class TwoBatches(OneBatch):
        def next(self):
            self.count = getattr(self, "count", 0) + 1
            if self.count > 2:
                raise StopIteration
            return self.batch

    mod.fit(TwoBatches(), num_epoch=1, optimizer_params={"learning_rate": 0.1},
            sparse_row_id_fn=lambda data_batch: prepared.append(data_batch) or {})
    assert len(prepared) == 1


def epoch_end_calls(contexts, tmp_path, first, **fit):
    """(epoch, symbol, arg_params, optimizer set, prefix-NNNN files then) per call."""
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA, epoch_end_callback_first=first)
    calls = []
    checkpoint = mx.callback.module_checkpoint(mod, str(tmp_path / "run"))

    def record(epoch, symbol, arg_params, aux_params):
        calls.append((epoch, symbol, arg_params, mod.optimizer_initialized))
        checkpoint(epoch, symbol, arg_params, aux_params)

    arg_params, aux_params = fixed_params(detector_net(), (1, 3, 12, 12))
    mod.fit(OneBatch(), num_epoch=2, epoch_end_callback=[record], arg_params=arg_params,
            aux_params=aux_params, optimizer_params={"learning_rate": 0.1}, **fit)
    return mod, calls, arg_params


@pytest.mark.parametrize("first", [False, True])
def test_epoch_end_callback_first_calls_each_callback_with_minus_one_once_the_optimizer_is_set(
        contexts, tmp_path, first):
    # Relation Networks' copy: callback(-1, self.symbol, arg_params, aux_params) after
    # init_optimizer, before the first epoch; its do_checkpoint then wrote prefix-0000.
    mod, calls, arg_params = epoch_end_calls(contexts, tmp_path, first)
    assert [c[0] for c in calls] == ([-1, 0, 1] if first else [0, 1])
    if first:
        epoch, symbol, given, optimizer_set = calls[0]
        assert symbol is mod.symbol and given is arg_params and optimizer_set
        saved = mx.nd.load(str(tmp_path / "run-0000.params"))
        assert all(np.array_equal(saved["arg:" + k].asnumpy(), v.asnumpy())
                   for k, v in arg_params.items())
    assert (tmp_path / "run-0000.params").exists() == first
    mod.init_optimizer(force_init=True)  # the epoch -1 call belonged to that fit only
    assert len(calls) == (3 if first else 2)


def test_a_fit_that_fails_before_the_optimizer_makes_no_epoch_minus_one_call(contexts, tmp_path):
    calls = []
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        epoch_end_callback_first=True)
    with pytest.raises(RuntimeError, match="is not presented"):  # init_params: none given
        mod.fit(OneBatch(), num_epoch=1, epoch_end_callback=lambda *a: calls.append(a),
                arg_params={}, aux_params={})
    assert calls == [] and "_after_init_optimizer" not in vars(mod)


def test_the_epoch_minus_one_call_stays_one_shot_when_the_fit_sets_the_optimizer_again(
        contexts, tmp_path):
    # A batch callback that re-initialises the optimizer mid-fit (a learning-rate restart)
    # runs init_optimizer again inside the same fit: the -1 call was that fit's first only.
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA, epoch_end_callback_first=True)
    epochs, restarts = [], []

    def restart(params):
        if not restarts:
            restarts.append(params.epoch)
            mod.init_optimizer(optimizer_params={"learning_rate": 0.05}, force_init=True)

    arg_params, aux_params = fixed_params(detector_net(), (1, 3, 12, 12))
    mod.fit(OneBatch(), num_epoch=2, epoch_end_callback=lambda epoch, *rest: epochs.append(epoch),
            batch_end_callback=restart, arg_params=arg_params, aux_params=aux_params,
            optimizer_params={"learning_rate": 0.1})
    assert restarts == [0] and epochs == [-1, 0, 1]
    assert mod._optimizer.lr == 0.05  # the restart did set the optimizer again


def test_fit_without_an_epoch_end_callback_runs_on_a_module_made_with_epoch_end_callback_first(
        contexts):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts,
                        max_data_shapes=MAX_DATA, epoch_end_callback_first=True)
    arg_params, aux_params = fixed_params(detector_net(), (1, 3, 12, 12))
    mod.fit(OneBatch(), num_epoch=1, arg_params=arg_params, aux_params=aux_params,
            optimizer_params={"learning_rate": 0.1})
    trained, _ = mod.get_params()
    assert mod.optimizer_initialized and "_after_init_optimizer" not in vars(mod)
    assert not np.array_equal(trained["fc_weight"].asnumpy(), arg_params["fc_weight"].asnumpy())


@pytest.mark.parametrize("value", [1, "yes", None])
def test_epoch_end_callback_first_must_be_a_bool(value):
    with pytest.raises(TypeError, match=f"epoch_end_callback_first={value!r}: expected True "
                                        "or False"):
        MutableModule(detector_net(), ["data"], ["softmax_label"],
                      epoch_end_callback_first=value)


# --------------------------------------------------------------------------- the fork's inputs
def mask_net():
    """FCIS's inputs in small: data (1, 3, h, w) beside gt_masks (objects, h, w)."""
    conv = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3), pad=(1, 1),
                              name="conv1")
    masks = mx.sym.Variable("gt_masks")
    return mx.sym.Group([mx.sym.sum(conv, axis=(1, 2, 3)), mx.sym.sum(masks, axis=(1, 2))])


def fcis_like(objects, seed):
    rng = np.random.RandomState(seed)
    return [[mx.nd.array(rng.uniform(-1, 1, (1, 3, h, w))),
             mx.nd.array(rng.randint(0, 2, (k, h, w)))]
            for k, (h, w) in zip(objects, [(8, 12), (10, 6)])]


@pytest.mark.parametrize("objects", [(2, 3), (1, 1), (4, 2)])
def test_the_drop_in_takes_inputs_whose_first_axis_counts_objects_as_the_fork_did(contexts,
                                                                                  objects):
    # FCIS binds gt_masks (objects, h, w) beside data (1, 3, h, w); the fork never sliced an
    # input. Reference: each device's own executor, bound at its shapes by stock simple_bind.
    symbol = mask_net()
    mod = MutableModule(symbol, ["data", "gt_masks"], None, context=contexts)
    arrays = fcis_like(objects, seed=sum(objects))
    provide = [[("data", d.shape), ("gt_masks", m.shape)] for d, m in arrays]
    mod.bind(provide, None, for_training=False)
    args = {"conv1_weight": mx.nd.array(np.full((2, 3, 3, 3), 0.1)),
            "conv1_bias": mx.nd.zeros((2,))}
    mod.set_params(args, {})
    mod.forward(mx.io.DataBatch(data=[list(a) for a in arrays], label=None,
                                provide_data=provide), is_train=False)
    got = mod.get_outputs(merge_multi_context=False)
    for device, (data, masks) in enumerate(arrays):
        executor = symbol.simple_bind(mx.cpu(), grad_req="null", data=data.shape,
                                      gt_masks=masks.shape)
        executor.forward(is_train=False, data=data, gt_masks=masks, **args)
        for output, expected in zip(got, executor.outputs):
            assert np.array_equal(output[device].asnumpy(), expected.asnumpy())


def test_the_drop_in_reshapes_to_a_batch_whose_object_counts_and_sizes_differ(contexts):
    # The reshape path: bound at one batch's shapes, fed another whose gt_masks hold other
    # object counts than data holds samples (the fork's inputs), at other image sizes too.
    symbol = mask_net()
    mod = MutableModule(symbol, ["data", "gt_masks"], None, context=contexts)
    bound = fcis_like((2, 3), seed=1)
    mod.bind([[("data", d.shape), ("gt_masks", m.shape)] for d, m in bound], None,
             for_training=False)
    args = {"conv1_weight": mx.nd.array(np.full((2, 3, 3, 3), 0.1)),
            "conv1_bias": mx.nd.zeros((2,))}
    mod.set_params(args, {})
    rng = np.random.RandomState(7)
    arrays = [[mx.nd.array(rng.uniform(-1, 1, (1, 3, h, w))),
               mx.nd.array(rng.randint(0, 2, (k, h, w)))]
              for k, (h, w) in zip((5, 1), [(6, 7), (9, 11)])]
    mod.forward(mx.io.DataBatch(data=[list(a) for a in arrays], label=None), is_train=False)
    assert [[d.shape for d in device] for device in mod.data_shapes] == \
        [[d.shape, m.shape] for d, m in arrays]
    got = mod.get_outputs(merge_multi_context=False)
    for device, (data, masks) in enumerate(arrays):
        executor = symbol.simple_bind(mx.cpu(), grad_req="null", data=data.shape,
                                      gt_masks=masks.shape)
        executor.forward(is_train=False, data=data, gt_masks=masks, **args)
        for output, expected in zip(got, executor.outputs):
            assert np.array_equal(output[device].asnumpy(), expected.asnumpy())


def test_a_stock_module_still_refuses_inputs_of_another_sample_count(contexts):
    import mxpatch_bind as mpb
    mod = mx.mod.Module(mask_net(), ["data", "gt_masks"], None, context=contexts)
    provide = [[("data", d.shape), ("gt_masks", m.shape)] for d, m in fcis_like((2, 3), 0)]
    with mpb.patched(), pytest.raises(ShapeSpecError, match="holds different numbers of "
                                                            "samples per input"):
        mod.bind(provide, None, for_training=False)
    assert not mod.binded


def test_fit_with_a_state_path_that_is_a_folder_fails_before_binding(contexts, tmp_path):
    mod = MutableModule(detector_net(), ["data"], ["softmax_label"], context=contexts)
    with pytest.raises(FileNotFoundError, match="no such optimizer-states file"):
        mod.fit(OneBatch(), num_epoch=1, state=str(tmp_path))
    assert not mod.binded


def test_a_one_context_drop_in_keeps_stocks_local_training_without_a_kvstore():
    # Stock Module makes no kvstore for 'local' on one device; the fork's rescale_grad rule
    # must not make one either.
    shapes = [[("data", (2, 3, 10, 14))]], [[("softmax_label", (2,))]]
    mods = [MutableModule(detector_net(), ["data"], ["softmax_label"], context=mx.cpu(0)),
            mx.mod.Module(detector_net(), context=mx.cpu(0))]
    for mod in mods:
        if mod is mods[0]:
            mod.bind(*shapes)
        else:
            mod.bind(shapes[0][0], shapes[1][0])
        mod.set_params(*fixed_params(detector_net(), (1, 3, 12, 12)))
        mod.init_optimizer(kvstore="local")
    assert mods[0]._kvstore is None and mods[1]._kvstore is None
    assert mods[0]._optimizer.rescale_grad == 1.0  # the fork's 1 / number of devices
