"""The fork family's call sequences, repo by repo, on stock MXNet: the contract.

For every repo catalogued in ``docs/family.rst``, the test replays what its code does with a
module: the training script's construction (``MutableModule`` through ``mxpatch_bind.compat``,
or stock ``Module`` with ``install()``), its loader's batch forms, ``fit`` with its optimizer
arguments and ``module_checkpoint``, a resume from that checkpoint, and its tester's
``Predictor`` loop over an image count its device count does not divide (a short last batch
where its TestLoader makes one). Stand-in symbols carry the repo's input and label names
(``family_standins.py``). Everything is compared, to the bit, with stock one-context
executors: the oracle's per-device gradients summed into one SGD step, and the test symbol
run on one image at a time.
"""

import os
import pickle

import mxnet as mx
import numpy as np
import pytest
from family_standins import (
    REPOS,
    ClassAccuracy,
    Oracle,
    TrainLoader,
    eval_batches,
    fixed_names,
    images_of,
    initial_params,
    one_context_outputs,
    predict_symbol,
    train_batches,
    train_symbol,
)
from fork_oracle import load_states

import mxpatch_bind
from mxpatch_bind.compat import MutableModule

MODES = ["install", "compat"]
STEPS = 2          # training batches per epoch
TEST_IMAGES = {2: 5, 3: 7}  # not divisible by the device count
MAX_IMAGE = (1, 3, 10, 10)


pytestmark = pytest.mark.usefixtures("give_back_installs")


def optimizer_params(repo, num_devices):
    params = {"learning_rate": 0.05, "momentum": 0.9, "wd": 0.0005, "clip_gradient": None}
    if repo.rescale_grad == "1/devices":
        params["rescale_grad"] = 1.0 / num_devices
    elif repo.rescale_grad is not None:
        params["rescale_grad"] = repo.rescale_grad
    return params


def oracle_params(repo, num_devices):
    """What the module ends up using: the script's, or the fork's default 1 / devices (one
    image per device, so stock's 1 / samples is the same number)."""
    return dict(optimizer_params(repo, num_devices),
                rescale_grad=optimizer_params(repo, num_devices).get("rescale_grad",
                                                                       1.0 / num_devices))


def training_module(repo, mode, symbol, contexts, loader):
    """The training script's module: compat's MutableModule with the script's arguments, or
    stock Module with the frozen names written out and install() at start-up."""
    if mode == "compat":
        max_data = [(n, s) for n, s in _single(repo, loader.provide_data)]
        max_label = [(n, s) for n, s in _single(repo, loader.provide_label)]
        per_context = repo.per_device
        return MutableModule(
            symbol, repo.data_names, repo.label_names, context=contexts,
            max_data_shapes=[max_data for _ in contexts] if per_context else max_data,
            max_label_shapes=[max_label for _ in contexts] if per_context else max_label,
            fixed_param_prefix=repo.fixed_prefixes, fixed_param_rule=repo.fixed_rule)
    mxpatch_bind.install()
    return mx.mod.Module(symbol, repo.data_names, repo.label_names, context=contexts,
                         fixed_param_names=fixed_names(repo, symbol))


def _single(repo, provided):
    """``provide_*_single``: device 0's entries (or the flat list), at the largest image."""
    entries = provided[0] if repo.per_device else provided
    return [(name, _at_max(shape)) for name, shape in entries]


def _at_max(shape):
    """Images (and the frames beside them) at the largest size, other inputs as they are."""
    if len(shape) == 4 and shape[1] == 3:
        return (shape[0],) + MAX_IMAGE[1:]
    return shape


def fit_epochs(repo, mode, symbol, contexts, batches, params, prefix, begin, end,
               preload=False):
    loader = TrainLoader(repo, batches)
    mod = training_module(repo, mode, symbol, contexts, loader)
    if preload:
        mod._preload_opt_states = "%s-%04d.states" % (prefix, begin)
    metric = ClassAccuracy()
    mod.fit(loader, eval_metric=metric,
            epoch_end_callback=mx.callback.module_checkpoint(mod, prefix, period=1,
                                                             save_optimizer_states=True),
            kvstore="device", optimizer="sgd",
            optimizer_params=optimizer_params(repo, len(contexts)),
            arg_params=params[0], aux_params=params[1], begin_epoch=begin, num_epoch=end)
    return mod, metric


def oracle_epoch(oracle, batches):
    metric = ClassAccuracy()
    for data, label in batches:
        oracle.step(data, label, metric)
    return oracle.end_epoch(), metric


def load_checkpoint(prefix, epoch):
    saved = mx.nd.load("%s-%04d.params" % (prefix, epoch))
    args = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    return args, aux


def assert_same_params(saved, expected):
    for kind, got, want in zip(("arg", "aux"), saved, expected):
        assert sorted(got) == sorted(want), kind
        for name in want:
            assert got[name].asnumpy().tobytes() == want[name].asnumpy().tobytes(), (kind,
                                                                                      name)


def predictor(repo, mode, symbol, contexts, first_batch, params):
    """The tester's Predictor: built at the largest image, bound for inference with the
    loader's provide_data and provide_label (one None per device, or None), then loaded."""
    if mode == "compat":
        # Per-device testers pass one list for every context ([[('data', ...)]]); mx-rcnn's
        # and mx-maskrcnn's a flat list at their batch's image count.
        max_data = ([[("data", MAX_IMAGE)]] if repo.per_device else
                    [("data", (len(contexts),) + MAX_IMAGE[1:])])
        mod = MutableModule(symbol, repo.test_data_names, repo.test_label_names,
                            context=contexts, max_data_shapes=max_data)
    else:
        mxpatch_bind.install()
        mod = mx.mod.Module(symbol, repo.test_data_names, repo.test_label_names,
                            context=contexts)
    mod.bind(first_batch.provide_data, first_batch.provide_label, for_training=False)
    mod.init_params(arg_params=params[0], aux_params=params[1])
    return mod


def predict(repo, mod, batch):
    """Predictor.predict: forward(batch) (SNIPER passes is_train=False), then one dict of
    outputs per device from get_outputs(merge_multi_context=False)."""
    if repo.tester_is_train:
        mod.forward(batch, is_train=False)
    else:
        mod.forward(batch)
    return [dict(zip(mod.output_names, outputs))
            for outputs in zip(*mod.get_outputs(merge_multi_context=False))]


# SNIPER vendors no module (it runs stock Module): install() alone.
CASES = [(repo, mode) for repo in REPOS for mode in MODES
         if mode == "install" or repo.vendors_module]


@pytest.mark.parametrize("num_devices", [2, 3])
@pytest.mark.parametrize("repo, mode", CASES, ids=["%s-%s" % (r.name, m) for r, m in CASES])
@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
def test_train_checkpoint_evaluate_and_resume_as_the_repos_code_does(repo, mode, num_devices,
                                                                     tmp_path):
    contexts = [mx.cpu(i) for i in range(num_devices)]
    symbol = train_symbol(repo)
    start = initial_params(symbol)
    batches = train_batches(repo, num_devices, STEPS, seed=num_devices)
    prefix = os.path.join(str(tmp_path), "model")

    # Train one epoch; the checkpoint and the metric equal the oracle's.
    _, metric = fit_epochs(repo, mode, symbol, contexts, batches, start, prefix, 0, 1)
    oracle = Oracle(repo, symbol, start, num_devices, oracle_params(repo, num_devices))
    expected, expected_metric = oracle_epoch(oracle, batches)
    trained = load_checkpoint(prefix, 1)
    assert_same_params(trained, expected)
    assert metric.get() == expected_metric.get()
    assert_same_states(load_states(prefix + "-0001.states"), oracle)

    # Evaluate with the repo's tester: every image's outputs, the short last batch's too.
    test_sym = predict_symbol(repo)
    evaluation = eval_batches(repo, num_devices, TEST_IMAGES[num_devices], seed=7)
    mod = predictor(repo, mode, test_sym, contexts, evaluation[0], trained)
    seen = 0
    for batch in evaluation:
        images = images_of(repo, batch)
        per_device = predict(repo, mod, batch)
        if repo.per_device:
            assert len(per_device) == len(images)  # the tester zips them with its images
            rows = [[device[name].asnumpy() for name in mod.output_names]
                    for device in per_device]
        else:
            merged = [out.asnumpy() for out in mod.get_outputs()]
            rows = [[out[i:i + 1] for out in merged] for i in range(len(images))]
        for context, arrays, outputs in zip(contexts, images, rows):
            reference = one_context_outputs(test_sym, repo.test_data_names, arrays, trained,
                                            context)
            assert all(o.tobytes() == r.tobytes() for o, r in zip(outputs, reference))
            seen += 1
    expected_images = TEST_IMAGES[num_devices]
    if not repo.short_last_batch:  # its loader drops the incomplete last batch
        expected_images -= expected_images % num_devices
    assert seen == expected_images

    # Resume from the checkpoint as the script does (optimizer states where it loads them).
    resumed_params = load_checkpoint(prefix, 1)
    fit_epochs(repo, mode, symbol, contexts, batches, resumed_params, prefix, 1, 2,
               preload=repo.resume_states)
    states = oracle.updater.get_states() if repo.resume_states else None
    restarted = Oracle(repo, symbol, resumed_params, num_devices,
                       oracle_params(repo, num_devices), states)
    expected_resumed, _ = oracle_epoch(restarted, batches)
    assert_same_params(load_checkpoint(prefix, 2), expected_resumed)


def assert_same_states(saved, oracle):
    """The optimizer states module_checkpoint saved (keyed by parameter name, as the kvstore
    keys them) equal the oracle's updater's (keyed by index)."""
    expected = {oracle.param_names[index]: value.asnumpy() for index, value in
                pickle.loads(oracle.updater.get_states()).items()}
    assert sorted(saved) == sorted(expected)
    for key in expected:
        assert np.array_equal(saved[key], expected[key]), key
