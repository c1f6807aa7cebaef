"""kvstore='horovod' in one process, on every MXNet the suite runs on (1.6 included).

A stand-in for ``horovod.mxnet`` with one worker (its allreduce and broadcast leave the
arrays as they are, as Horovod's do with one worker) replaces Horovod, so these tests check
the store's plumbing through stock ``Module`` on MXNet 1.6's and 1.7+'s kvstore paths,
against MXNet's own ``'local'`` store. tests/tools/test_horovod.py runs real Horovod workers.
"""

import pickle
import sys
import types
import warnings

import mxnet as mx
import numpy as np
import pytest
from nets import bound_module, conv_net, device_batch, fixed_params, random_batch

import mxpatch_bind
from mxpatch_bind import HorovodError
from mxpatch_bind.horovod import HorovodKVStore, do_checkpoint, is_horovod

# MXNet 1.9.1's mx.nd.array asks isinstance(..., scipy.sparse.csr.csr_matrix) where SciPy is
# installed, a DeprecationWarning on SciPy >= 1.8 on every call; pytest.warns re-emits what it
# did not match as if from here, where the ini filter for MXNet's module no longer applies.
SCIPY_CSR_WARNING = "Please use `csr_matrix` from the `scipy.sparse` namespace"
pytestmark = pytest.mark.filterwarnings(f"ignore:{SCIPY_CSR_WARNING}:DeprecationWarning")

SHAPES = [(2, 3, 12, 12), (3, 3, 10, 8)]
OPTIMIZER_PARAMS = {"learning_rate": 0.1, "momentum": 0.9}


class DistributedOptimizer(mx.optimizer.SGD):
    """Named and placed as Horovod's own optimizer class is."""


DistributedOptimizer.__module__ = "horovod.mxnet"


@pytest.fixture
def one_worker(monkeypatch):
    """``horovod.mxnet`` as Horovod with one worker; returns the calls it received."""
    calls = []
    hvd = types.ModuleType("horovod.mxnet")
    hvd.init = lambda: calls.append("init")
    hvd.rank = hvd.local_rank = lambda: 0
    hvd.size = lambda: 1
    hvd.allreduce_ = lambda tensor, average=None, name=None, priority=0: calls.append(
        ("allreduce", name, average))
    hvd.broadcast_ = lambda tensor, root_rank, name=None: calls.append(("broadcast", name))
    hvd.DistributedOptimizer = DistributedOptimizer
    package = types.ModuleType("horovod")
    package.mxnet = hvd
    monkeypatch.setitem(sys.modules, "horovod", package)
    monkeypatch.setitem(sys.modules, "horovod.mxnet", hvd)
    with mxpatch_bind.patched():
        yield calls


def params():
    return fixed_params(conv_net(), SHAPES[0])


def train(kvstore, steps=3, **init_optimizer):
    mod = bound_module(conv_net(), SHAPES, params())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params=init_optimizer.pop("optimizer_params",
                                                           OPTIMIZER_PARAMS))
    for step in range(steps):
        mod.forward_backward(device_batch([random_batch(shape, seed=10 * step + device)
                                           for device, shape in enumerate(SHAPES)]))
        mod.update()
    return mod


def arg_params(mod):
    return {name: value.asnumpy() for name, value in mod.get_params()[0].items()}


def test_mx_kv_create_horovod_is_ours_only_while_installed(one_worker):
    assert type(mx.kv.create("horovod")) is HorovodKVStore
    assert type(mx.kv.create("Horovod")) is HorovodKVStore
    assert type(mx.kv.create("local")) is not HorovodKVStore
    mxpatch_bind.uninstall()
    try:
        native = mx.kv.create("horovod")
        assert type(native) is not HorovodKVStore and native.num_workers == 1
    finally:
        mxpatch_bind.install()


def test_the_store_says_what_it_is(one_worker):
    store = mx.kv.create("horovod")

    assert (store.type, store.rank, store.num_workers) == ("horovod", 0, 1)
    assert store.is_capable("optimizer") and not store.is_capable("sparse")
    assert is_horovod(store) and is_horovod("HOROVOD") and not is_horovod("dist_sync")
    assert repr(store) == "<mxpatch_bind.horovod.HorovodKVStore rank 0 of 1>"
    assert one_worker == ["init"]


def test_one_worker_trains_exactly_as_mxnet_local_store(one_worker):
    ours = train("horovod")
    local = train("local")

    assert ours._optimizer.rescale_grad == local._optimizer.rescale_grad == 1.0 / 5
    for name, value in arg_params(local).items():
        assert np.array_equal(arg_params(ours)[name], value), name


def test_init_optimizer_called_through_the_class_is_weighted_too(one_worker, monkeypatch):
    # Two workers holding the same samples: every sum doubles.
    hvd = sys.modules["horovod.mxnet"]
    monkeypatch.setattr(hvd, "size", lambda: 2)
    monkeypatch.setattr(hvd, "allreduce_", lambda tensor, **_: tensor.__imul__(2))
    mod = bound_module(conv_net(), SHAPES, params())
    mx.mod.Module.init_optimizer(mod, "horovod", "sgd", OPTIMIZER_PARAMS)

    assert type(mod._kvstore) is HorovodKVStore and mod._optimizer.rescale_grad == 1.0 / 10


@pytest.mark.parametrize("on_store", ["1", "0"])
def test_every_device_holds_rank_0s_values_after_init_optimizer(one_worker, monkeypatch,
                                                                on_store):
    # Rank 0's values, as a stand-in broadcast hands them: 0.25 everywhere.
    hvd = sys.modules["horovod.mxnet"]
    monkeypatch.setattr(hvd, "broadcast_",
                        lambda tensor, root_rank, name=None: tensor.__setitem__(slice(None), 0.25))
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", on_store)
    symbol = conv_net(batch_norm=True)
    mod = bound_module(symbol, SHAPES, fixed_params(symbol, SHAPES[0]))
    mod.init_optimizer(kvstore="horovod", optimizer="sgd", optimizer_params=OPTIMIZER_PARAMS)

    assert mod._update_on_kvstore is (on_store == "1")
    group = mod._exec_group
    for name, devices in list(zip(group.param_names, group.param_arrays)) + list(
            zip(mod._aux_names, group.aux_arrays)):
        for device in devices:
            assert (device.asnumpy() == 0.25).all(), name


@pytest.mark.parametrize("workers", [1, 2])
def test_compats_mutable_module_keeps_the_forks_rule_on_horovod_without_a_warning(
        one_worker, monkeypatch, workers):
    # The fork's rule: 1 / (devices x workers), as on dist_sync; never the store's
    # 1 / (all samples), nor a warning to leave out a rescale_grad the user left out.
    from mxpatch_bind.compat import MutableModule

    hvd = sys.modules["horovod.mxnet"]
    monkeypatch.setattr(hvd, "size", lambda: workers)
    mod = MutableModule(conv_net(), ["data"], ["softmax_label"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([[("data", shape)] for shape in SHAPES],
             [[("softmax_label", (shape[0],))] for shape in SHAPES])
    mod.set_params(*params())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        mod.init_optimizer(kvstore="horovod", optimizer_params=OPTIMIZER_PARAMS)

    assert type(mod._kvstore) is HorovodKVStore
    assert mod._optimizer.rescale_grad == 1.0 / (2 * workers)


def test_compats_mutable_module_with_a_rescale_grad_of_its_own_gets_the_stores_warning(
        one_worker):
    from mxpatch_bind.compat import MutableModule

    mod = MutableModule(conv_net(), ["data"], ["softmax_label"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([[("data", shape)] for shape in SHAPES],
             [[("softmax_label", (shape[0],))] for shape in SHAPES])
    mod.set_params(*params())
    with pytest.warns(RuntimeWarning, match="rescale_grad=0.5 is kept; 1/5"):
        mod.init_optimizer(kvstore="horovod",
                           optimizer_params=dict(OPTIMIZER_PARAMS, rescale_grad=0.5))
    assert mod._optimizer.rescale_grad == 0.5


def test_every_parameter_is_broadcast_once_and_every_gradient_allreduced_as_a_sum(one_worker):
    mod = train("horovod", steps=1)

    names = mod._exec_group.param_names
    broadcasts = [call[1] for call in one_worker if call[0] == "broadcast"]
    allreduces = [call for call in one_worker if call[0] == "allreduce"]
    assert broadcasts == ["mxpatch_bind.init.%s" % name for name in names]
    assert allreduces == [("allreduce", "mxpatch_bind.__mxpatch_bind_samples__", False)] + [
        ("allreduce", "mxpatch_bind.%s" % name, False) for name in names]


def test_optimizer_states_round_trip_through_the_store(one_worker, tmp_path):
    ours = train("horovod")
    path = str(tmp_path / "states")
    ours.save_optimizer_states(path)
    local = train("local")
    local_path = str(tmp_path / "local-states")
    local.save_optimizer_states(local_path)

    fresh = train("horovod", steps=0)
    fresh.load_optimizer_states(path)
    assert fresh._kvstore._updater.get_states() == ours._kvstore._updater.get_states()
    # The same states as MXNet's local store keeps, under the same keys (the files' bytes
    # differ only in where the arrays lived).
    with open(path, "rb") as ours_file, open(local_path, "rb") as local_file:
        ours_states, local_states = (pickle.loads(f.read()) for f in (ours_file, local_file))
    assert list(ours_states) == list(local_states) == ours._exec_group.param_names
    for name, state in local_states.items():
        assert np.array_equal(ours_states[name].asnumpy(), state.asnumpy()), name


def test_a_given_rescale_grad_that_does_not_count_every_sample_is_kept_and_named(one_worker):
    with pytest.warns(RuntimeWarning, match=r"rescale_grad=0.5 is kept; 1/5 = 0.2 weights"):
        mod = train("horovod", steps=0,
                    optimizer_params=dict(OPTIMIZER_PARAMS, rescale_grad=0.5))
    assert mod._optimizer.rescale_grad == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", SCIPY_CSR_WARNING, DeprecationWarning)
        train("horovod", steps=0, optimizer_params=dict(OPTIMIZER_PARAMS, rescale_grad=0.2))


def test_an_optimizer_object_is_kept_without_stocks_wrong_advice(one_worker):
    mod = bound_module(conv_net(), SHAPES, params())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod.init_optimizer(kvstore="horovod", optimizer=mx.optimizer.SGD(rescale_grad=0.2))
    assert [str(w.message) for w in caught] == []
    assert mod._optimizer.rescale_grad == 0.2


@pytest.mark.filterwarnings("ignore:Optimizer created manually")  # the test makes it so
def test_horovods_optimizer_on_several_contexts_is_named(one_worker):
    mod = bound_module(conv_net(), SHAPES, params())
    with pytest.warns(RuntimeWarning, match=r"^Horovod's DistributedOptimizer on a module "
                                            r"with 2 contexts averages each context's"):
        mod.init_optimizer(kvstore=None, optimizer=DistributedOptimizer())
    single = bound_module(conv_net(), SHAPES[:1], params())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (stock's own UserWarning is stock's)
        single.init_optimizer(kvstore=None, optimizer=DistributedOptimizer())


def test_without_horovod_the_store_names_the_build_and_nothing_changes(monkeypatch):
    monkeypatch.setitem(sys.modules, "horovod", None)
    monkeypatch.setitem(sys.modules, "horovod.mxnet", None)
    mod = bound_module(conv_net(), SHAPES, params())
    with mxpatch_bind.patched():
        with pytest.raises(HorovodError, match=r"kvstore='horovod' needs Horovod built with "
                                               r"MXNet support .*HOROVOD_WITH_MXNET=1"):
            mod.init_optimizer(kvstore="horovod")
    assert not mod.optimizer_initialized and mod._kvstore is None


def test_what_the_store_cannot_do_is_refused(one_worker, tmp_path):
    store = mx.kv.create("horovod")
    with pytest.raises(HorovodError, match="does not compress gradients"):
        store.set_gradient_compression({"type": "2bit"})
    with pytest.raises(HorovodError, match="row_sparse_pull of 'w' is not supported"):
        store.row_sparse_pull("w", out=mx.nd.zeros(2), row_ids=mx.nd.array([0]))
    with pytest.raises(HorovodError, match="holds no value for key 'w'"):
        store.pull("w", out=mx.nd.zeros(2))
    with pytest.raises(HorovodError, match="no optimizer yet"):
        store.save_optimizer_states(str(tmp_path / "states"))
    assert list(tmp_path.iterdir()) == []  # refused before a file is made


def test_calls_stock_does_not_take_go_to_stock_unchanged(one_worker):
    mod = bound_module(conv_net(), SHAPES, params())
    with pytest.raises(TypeError):
        mod.init_optimizer(kvstore="horovod", bogus=1)
    assert not mod.optimizer_initialized


def test_do_checkpoint_writes_on_rank_0_only(one_worker, tmp_path, monkeypatch):
    symbol = conv_net()
    args, aux = params()
    do_checkpoint(str(tmp_path / "zero"))(0, symbol, args, aux)
    monkeypatch.setattr(sys.modules["horovod.mxnet"], "rank", lambda: 1)
    do_checkpoint(str(tmp_path / "one"))(0, symbol, args, aux)

    assert sorted(path.name for path in tmp_path.iterdir()) == ["zero-0001.params",
                                                                 "zero-symbol.json"]


# --------------------------------------------------------------------------- stock's warnings
def _stock_form_module():
    symbol = conv_net()
    mod = mx.mod.Module(symbol, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    mod.init_params(arg_params=fixed_params(symbol, (4, 3, 8, 8))[0], allow_missing=True)
    return mod


@pytest.mark.parametrize("form", ["stock", "per device"])
def test_stocks_own_warning_still_names_the_line_that_called_init_optimizer(form):
    mod = _stock_form_module() if form == "stock" else bound_module(conv_net(), SHAPES, params())
    with mxpatch_bind.patched():
        with pytest.warns(UserWarning, match="rescale_grad is not normalized") as caught:
            line = sys._getframe().f_lineno + 1
            mod.init_optimizer(optimizer=mx.optimizer.SGD(rescale_grad=0.5))
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_a_warning_filter_that_raises_still_raises_before_anything_changes():
    mod = _stock_form_module()
    with mxpatch_bind.patched(), warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="rescale_grad is not normalized"):
            mod.init_optimizer(optimizer=mx.optimizer.SGD(rescale_grad=0.5))
    assert not mod.optimizer_initialized
