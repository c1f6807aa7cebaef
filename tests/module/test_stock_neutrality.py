"""Stock-form use under the patch is bit-identical to unpatched MXNet.

Every scenario runs twice, once unpatched and once inside ``mxpatch_bind.patched()``, on
fixed parameters and data; the two runs' outputs, gradients, parameters, metric values,
shapes, classes, warnings and errors must be exactly equal (``np.array_equal``, not close).
"""

import contextlib
import inspect
import logging
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet.module.executor_group import DataParallelExecutorGroup
from nets import conv_net, fixed_params, random_batch

import mxpatch_bind

NUM_CONTEXTS = [1, 2, 3]
BATCH = 6  # divisible by 1, 2 and 3 contexts, and by work_load_list [1, 2]
IMAGE = (BATCH, 3, 16, 16)


def cpus(count):
    return [mx.cpu(i) for i in range(count)]


# --------------------------------------------------------------------------- the harness
def run_twice(scenario, *args, **kwargs):
    """``scenario`` run unpatched, then under ``patched()``: two result trees."""
    assert not mxpatch_bind.is_installed()
    unpatched = _run(scenario, args, kwargs)
    with mxpatch_bind.patched():
        patched = _run(scenario, args, kwargs)
    assert not mxpatch_bind.is_installed()
    return unpatched, patched


def _run(scenario, args, kwargs):
    mx.random.seed(42)
    np.random.seed(42)
    return scenario(*args, **kwargs)


def assert_stock_neutral(scenario, *args, **kwargs):
    """Run ``scenario`` both ways and require exactly equal results and stock classes."""
    unpatched, patched = run_twice(scenario, *args, **kwargs)
    assert_identical(patched, unpatched)
    for owner, group in patched.get("classes", []):
        assert owner in (mx.mod.Module, mx.mod.BucketingModule), owner
        assert group is DataParallelExecutorGroup, group
    return patched


def assert_identical(got, want, path="result"):
    """Exact, recursive equality: arrays by dtype, shape and every bit of every element."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), path
        assert got.dtype == want.dtype and got.shape == want.shape, path
        assert np.array_equal(got, want), "%s differs by up to %g" % (
            path, np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), path
        for key in want:
            assert_identical(got[key], want[key], "%s[%r]" % (path, key))
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), path
        for index, (g, w) in enumerate(zip(got, want)):
            assert_identical(g, w, "%s[%d]" % (path, index))
    elif isinstance(want, float) and np.isnan(want):
        assert isinstance(got, float) and np.isnan(got), path
    else:
        assert got == want, "%s: %r != %r" % (path, got, want)


# --------------------------------------------------------------------------- what is recorded
def numpy(arrays):
    return [a.asnumpy() for a in arrays]


def device_grads(mod):
    group = mod._exec_group
    return {name: numpy(grads) for name, grads in zip(group.param_names, group.grad_arrays)}


def params(mod):
    args, aux = mod.get_params()
    return {"args": {k: v.asnumpy() for k, v in args.items()},
            "aux": {k: v.asnumpy() for k, v in aux.items()}}


def shapes(mod):
    as_plain = lambda descs: None if descs is None else [(d.name, tuple(d.shape), d.layout)
                                                           for d in descs]
    return {"data": as_plain(mod.data_shapes), "label": as_plain(mod.label_shapes),
            "output": [(n, tuple(s)) for n, s in mod.output_shapes]}


def classes(mod):
    return (type(mod), type(mod._exec_group))


def metric_values(metric):
    return [(name, float(value)) for name, value in metric.get_name_value()]


def step_record(mod, metric, labels):
    """Outputs (merged and per device), gradients and metric after a forward/backward."""
    mod.update_metric(metric, labels)
    return {"outputs": numpy(mod.get_outputs()),
            "device_outputs": [numpy(o) for o in mod.get_outputs(merge_multi_context=False)],
            "grads": device_grads(mod),
            "metric": metric_values(metric)}


def image_batches(count, shape=IMAGE, seed=0):
    pairs = [random_batch(shape, seed=seed + i) for i in range(count)]
    return [mx.io.DataBatch([d], [l]) for d, l in pairs]


CONV = conv_net(batch_norm=True)
CONV_PARAMS = fixed_params(CONV, IMAGE)
DATA = [("data", IMAGE)]
LABEL = [("softmax_label", (BATCH,))]


# --------------------------------------------------------------------------- scenarios
def train_steps(contexts, work_load_list=None, grad_req="write", inputs_need_grad=False,
                steps=2):
    mod = mx.mod.Module(CONV, context=contexts, work_load_list=work_load_list)
    mod.bind(DATA, LABEL, inputs_need_grad=inputs_need_grad, grad_req=grad_req)
    mod.set_params(*CONV_PARAMS)
    mod.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
    metric = mx.metric.create(["acc", "ce"])
    result = {"shapes": shapes(mod), "classes": [classes(mod)], "steps": [],
              "slices": [(s.start, s.stop) for s in mod._exec_group.slices],
              "total_exec_bytes": mod._total_exec_bytes}
    for batch in image_batches(steps):
        mod.forward(batch, is_train=True)
        mod.backward()
        record = step_record(mod, metric, batch.label)
        if inputs_need_grad:
            record["input_grads"] = numpy(mod.get_input_grads())
            record["device_input_grads"] = [numpy(g) for g in mod.get_input_grads(False)]
        mod.update()
        record["params"] = params(mod)
        result["steps"].append(record)
    result["classes"].append(classes(mod))
    return result


def accumulate_gradients(contexts):
    """grad_req='add': two backward passes add up, and an update uses the sum."""
    mod = mx.mod.Module(CONV, context=contexts)
    mod.bind(DATA, LABEL, grad_req="add")
    mod.set_params(*CONV_PARAMS)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.05})
    for grads in mod._exec_group.grad_arrays:
        for grad in grads:
            grad[:] = 0
    metric = mx.metric.Accuracy()
    records = []
    for batch in image_batches(2, seed=10):
        mod.forward(batch, is_train=True)
        mod.backward()
        records.append(step_record(mod, metric, batch.label))
    mod.backward()  # the same forward's gradients once more
    records.append(device_grads(mod))
    mod.update()
    return {"steps": records, "params": params(mod), "classes": [classes(mod)]}


def tnc_layout(contexts, work_load_list=None):
    """Sequence data whose batch axis is 1 (layout 'TNC')."""
    steps, features = 5, 4
    symbol = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.mean(mx.sym.Variable("data"), axis=0), num_hidden=3,
                              name="fc"), name="softmax")
    data_desc = mx.io.DataDesc("data", (steps, BATCH, features), layout="TNC")
    label_desc = mx.io.DataDesc("softmax_label", (BATCH,), layout="N")
    mod = mx.mod.Module(symbol, context=contexts, work_load_list=work_load_list)
    mod.bind([data_desc], [label_desc], inputs_need_grad=True)
    mod.set_params(*fixed_params(symbol, data_desc.shape))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.2})
    rng = np.random.RandomState(3)
    metric = mx.metric.Accuracy()
    result = {"shapes": shapes(mod), "data_layouts": list(mod._exec_group.data_layouts),
              "classes": [classes(mod)], "steps": []}
    for _ in range(2):
        batch = mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, data_desc.shape))],
                                [mx.nd.array(rng.randint(0, 3, BATCH))],
                                provide_data=[data_desc], provide_label=[label_desc])
        mod.forward_backward(batch)
        record = step_record(mod, metric, batch.label)
        record["input_grads"] = numpy(mod.get_input_grads())
        mod.update()
        record["params"] = params(mod)
        result["steps"].append(record)
    return result


def ctx_groups(contexts):
    """Parts of the graph placed on other devices through ctx_group / group2ctxs."""
    with mx.AttrScope(ctx_group="dev1"):
        left = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        right = mx.sym.Variable("b")
        symbol = mx.sym.FullyConnected(left + right, num_hidden=3, name="fc")
    count = len(contexts)
    group2ctxs = {"dev1": [mx.cpu(count + i) for i in range(count)],
                  "dev2": [mx.cpu(2 * count + i) for i in range(count)]}
    shape = (BATCH, 5)
    mod = mx.mod.Module(symbol, data_names=["a", "b"], label_names=None, context=contexts,
                        group2ctxs=group2ctxs)
    mod.bind([("a", shape), ("b", shape)], inputs_need_grad=True)
    rng = np.random.RandomState(4)
    mod.set_params({"fc_weight": mx.nd.array(rng.uniform(-1, 1, (3, 5))),
                    "fc_bias": mx.nd.array(rng.uniform(-1, 1, (3,)))}, {})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, shape)) for _ in range(2)])
    mod.forward(batch, is_train=True)
    mod.backward([mx.nd.array(rng.uniform(-1, 1, (BATCH, 3)))])
    result = {"outputs": numpy(mod.get_outputs()), "grads": device_grads(mod),
              "input_grads": numpy(mod.get_input_grads()),
              "device_input_grads": [numpy(g) for g in mod.get_input_grads(False)],
              "placement": [[str(a.context) for a in e.arg_arrays]
                            for e in mod._exec_group.execs],
              "classes": [classes(mod)]}
    mod.update()
    result["params"] = params(mod)
    return result


def pre_sliced_batches(contexts):
    """Stock's own pre-sliced form: a list of DataBatch, one per device, all of one shape."""
    mod = mx.mod.Module(CONV, context=contexts)
    per_device = (BATCH // len(contexts),) + IMAGE[1:]
    mod.bind([("data", (per_device[0] * len(contexts),) + IMAGE[1:])],
             [("softmax_label", (per_device[0] * len(contexts),))])
    mod.set_params(*CONV_PARAMS)
    result = {"classes": [classes(mod)], "steps": []}
    for step in range(2):
        batches = image_batches(len(contexts), per_device, seed=30 + 10 * step)
        mod.forward(batches, is_train=True)
        mod.backward()
        result["steps"].append({"outputs": [numpy(o) for o in mod.get_outputs(False)],
                                "grads": device_grads(mod), "shapes": shapes(mod)})
        result["classes"].append(classes(mod))
    return result


def reshape_then_implicit_reshape(contexts):
    """An explicit stock reshape, then forwards whose batches carry other shapes."""
    mod = mx.mod.Module(CONV, context=contexts)
    mod.bind(DATA, LABEL)
    mod.set_params(*CONV_PARAMS)
    metric = mx.metric.Accuracy()
    result = {"classes": [classes(mod)], "steps": []}
    small = (3, 3, 12, 12)
    mod.reshape([("data", small)], [("softmax_label", (small[0],))])
    result["classes"].append(classes(mod))
    (batch,) = image_batches(1, small, seed=20)
    larger = (BATCH, 3, 20, 20)
    data, label = random_batch(larger, seed=21)
    described = mx.io.DataBatch([data], [label], provide_data=[("data", larger)],
                                provide_label=[("softmax_label", (BATCH,))])
    bare_shape = (3, 3, 8, 10)
    bare_data, bare_label = random_batch(bare_shape, seed=22)
    bare = mx.io.DataBatch([bare_data], [bare_label])  # no provide_data: array shapes count
    for batch in (batch, described, bare):
        mod.forward(batch, is_train=True)
        mod.backward()
        record = step_record(mod, metric, batch.label)
        record["shapes"] = shapes(mod)
        result["steps"].append(record)
        result["classes"].append(classes(mod))
    return result


def bucket_symbol(seq_len):
    data = mx.sym.Variable("data")  # (batch, seq_len, 4)
    net = mx.sym.FullyConnected(data, num_hidden=5, flatten=False, name="embed")
    net = mx.sym.FullyConnected(mx.sym.mean(net, axis=1), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), ("data",), ("softmax_label",)


def bucketing(contexts):
    """A BucketingModule switching between two bucket keys, training as it goes."""
    default_key, other_key = 8, 4
    mod = mx.mod.BucketingModule(bucket_symbol, default_bucket_key=default_key, context=contexts)
    mod.bind([("data", (BATCH, default_key, 4))], [("softmax_label", (BATCH,))])
    symbol, _, _ = bucket_symbol(default_key)
    mod.set_params(*fixed_params(symbol, (BATCH, default_key, 4)))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    rng = np.random.RandomState(5)
    metric = mx.metric.Accuracy()
    result = {"steps": []}
    for key in (default_key, other_key, default_key, other_key):
        shape = (BATCH, key, 4)
        batch = mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, shape))],
                                [mx.nd.array(rng.randint(0, 3, BATCH))], bucket_key=key,
                                provide_data=[mx.io.DataDesc("data", shape)],
                                provide_label=[mx.io.DataDesc("softmax_label", (BATCH,))])
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update_metric(metric, batch.label)
        mod.update()
        result["steps"].append({"key": mod._curr_bucket_key, "outputs": numpy(mod.get_outputs()),
                                "metric": metric_values(metric), "params": params(mod)})
    result["buckets"] = sorted(mod._buckets)
    result["classes"] = [(type(m), type(m._exec_group)) for m in mod._buckets.values()]
    result["outer"] = type(mod).__name__
    assert type(mod) is mx.mod.BucketingModule
    return result


def sequential(contexts):
    """A SequentialModule, which binds each of its modules through Module.bind."""
    features = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), num_filter=4,
                                                    kernel=(3, 3), name="conv"), act_type="relu")
    head = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                      name="fc"), name="softmax")
    mod = mx.mod.SequentialModule()
    mod.add(mx.mod.Module(features, label_names=None, context=contexts))
    mod.add(mx.mod.Module(head, context=contexts), take_labels=True, auto_wiring=True)
    mod.bind(DATA, LABEL)
    rng = np.random.RandomState(7)
    mod.set_params({"conv_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (4, 3, 3, 3))),
                    "conv_bias": mx.nd.array(rng.uniform(-0.5, 0.5, (4,))),
                    "fc_weight": mx.nd.array(rng.uniform(-0.1, 0.1, (3, 4 * 14 * 14))),
                    "fc_bias": mx.nd.array(rng.uniform(-0.1, 0.1, (3,)))}, {})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    metric = mx.metric.Accuracy()
    steps = []
    for batch in image_batches(2, seed=40):
        mod.forward_backward(batch)
        mod.update_metric(metric, batch.label)
        mod.update()
        steps.append({"outputs": numpy(mod.get_outputs()), "metric": metric_values(metric),
                      "params": params(mod)})
    return {"steps": steps, "classes": [classes(m) for m in mod._modules]}


def fit_two_epochs(contexts):
    """``Module.fit`` on an NDArrayIter (binds through keyword arguments), then ``score``."""
    rng = np.random.RandomState(6)
    samples = 20  # not a multiple of BATCH: the last batch is padded
    train = mx.io.NDArrayIter(rng.uniform(-1, 1, (samples,) + IMAGE[1:]).astype(np.float32),
                              rng.randint(0, 3, samples).astype(np.float32), batch_size=BATCH)
    val = mx.io.NDArrayIter(rng.uniform(-1, 1, (8,) + IMAGE[1:]).astype(np.float32),
                            rng.randint(0, 3, 8).astype(np.float32), batch_size=4)
    mod = mx.mod.Module(CONV, context=contexts)
    metric = mx.metric.create(["acc", "ce"])
    per_batch = []
    mod.fit(train, eval_data=val, eval_metric=metric, num_epoch=2, kvstore="local",
            arg_params=CONV_PARAMS[0], aux_params=CONV_PARAMS[1], optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            batch_end_callback=lambda p: per_batch.append((p.epoch, p.nbatch,
                                                           metric_values(p.eval_metric))))
    score = mod.score(val, mx.metric.create(["acc", "ce"]))
    return {"params": params(mod), "metric": metric_values(metric), "per_batch": per_batch,
            "score": [(name, float(value)) for name, value in score],
            "shapes": shapes(mod), "classes": [classes(mod)]}


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_bind_forward_backward_update_and_metrics_are_bit_identical(count):
    assert_stock_neutral(train_steps, cpus(count))


@pytest.mark.parametrize("count, work_load_list", [(2, [1, 2]), (3, [1, 2, 3])])
def test_a_work_load_list_splits_the_batch_identically(count, work_load_list):
    result = assert_stock_neutral(train_steps, cpus(count), work_load_list=work_load_list)
    assert len(set(stop - start for start, stop in result["slices"])) > 1


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_input_gradients_are_bit_identical(count):
    assert_stock_neutral(train_steps, cpus(count), inputs_need_grad=True, steps=1)


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_grad_req_add_accumulates_identically(count):
    assert_stock_neutral(accumulate_gradients, cpus(count))


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_a_tnc_layout_splits_along_axis_1_identically(count):
    result = assert_stock_neutral(tnc_layout, cpus(count))
    assert result["data_layouts"] == [1]


def test_a_tnc_layout_with_a_work_load_list_is_identical():
    assert_stock_neutral(tnc_layout, cpus(2), work_load_list=[1, 2])


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_group2ctxs_places_and_computes_identically(count):
    result = assert_stock_neutral(ctx_groups, cpus(count))
    assert "cpu(%d)" % count in result["placement"][0]


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_reshape_and_implicit_reshape_in_forward_are_identical(count):
    result = assert_stock_neutral(reshape_then_implicit_reshape, cpus(count))
    assert [step["shapes"]["data"][0][1] for step in result["steps"]] == [
        (3, 3, 12, 12), (BATCH, 3, 20, 20), (3, 3, 8, 10)]


@pytest.mark.parametrize("count", [2, 4])
def test_a_pre_sliced_list_of_equal_shapes_stays_stock_and_identical(count):
    # The patched Module.forward takes a list of batches per device only when their shapes
    # differ; stock takes (and asserts) equal shapes itself.
    result = assert_stock_neutral(pre_sliced_batches, cpus(count))
    assert all(owner is mx.mod.Module for owner, _ in result["classes"])


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_bucketing_module_with_two_bucket_keys_is_identical(count):
    result = assert_stock_neutral(bucketing, cpus(count))
    assert result["buckets"] == [4, 8]


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_a_sequential_module_binding_its_modules_is_identical(count):
    assert_stock_neutral(sequential, cpus(count))


@pytest.mark.parametrize("count", NUM_CONTEXTS)
def test_fit_for_two_epochs_ends_with_identical_parameters_and_metric(count):
    assert_stock_neutral(fit_two_epochs, cpus(count))


def test_calling_bind_and_reshape_through_the_class_is_identical():
    def through_the_class(contexts):
        mod = mx.mod.Module(CONV, context=contexts)
        mx.mod.Module.bind(mod, DATA, label_shapes=LABEL, for_training=False)
        mx.mod.Module.reshape(mod, data_shapes=[("data", (2, 3, 8, 8))],
                              label_shapes=[("softmax_label", (2,))])
        return {"shapes": shapes(mod), "classes": [classes(mod)]}
    assert_stock_neutral(through_the_class, cpus(2))


def test_stock_classes_are_kept_for_stock_form_use():
    with mxpatch_bind.patched():
        mod = mx.mod.Module(CONV, context=cpus(2))
        mod.bind(DATA, LABEL)
        mod.set_params(*CONV_PARAMS)
        mod.reshape([("data", (2, 3, 8, 8))], [("softmax_label", (2,))])
        (batch,) = image_batches(1, (4, 3, 10, 10))
        mod.forward(batch)
        assert type(mod) is mx.mod.Module
        assert type(mod._exec_group) is DataParallelExecutorGroup
        assert all(type(e) is mx.executor.Executor for e in mod._exec_group.execs)


def test_a_module_bound_while_patched_trains_identically_after_uninstall():
    def train(bind_context):
        mod = mx.mod.Module(CONV, context=cpus(2))
        with bind_context:
            mod.bind(DATA, LABEL)
        mod.set_params(*CONV_PARAMS)
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
        metric = mx.metric.Accuracy()
        steps = []
        for batch in image_batches(2, seed=30) + image_batches(1, (4, 3, 10, 12), seed=32):
            mod.forward_backward(batch)
            record = step_record(mod, metric, batch.label)
            mod.update()
            record["params"] = params(mod)
            steps.append(record)
        return {"steps": steps, "classes": [classes(mod)]}

    want = _run(train, (contextlib.nullcontext(),), {})
    got = _run(train, (mxpatch_bind.patched(),), {})
    assert not mxpatch_bind.is_installed()
    assert_identical(got, want)


@pytest.mark.parametrize("attribute", ["__doc__", "__name__", "__qualname__", "__module__"])
@pytest.mark.parametrize("owner, method", [("Module", "bind"), ("Module", "reshape"),
                                           ("BucketingModule", "bind")])
def test_signatures_and_docstrings_read_the_same(owner, method, attribute):
    def describe():
        function = getattr(getattr(mx.mod, owner), method)
        return str(inspect.signature(function)), getattr(function, attribute)
    unpatched, patched = run_twice(describe)
    assert patched == unpatched


# --------------------------------------------------------------------------- stock misuse
def outcome(call):
    """What a call did: its result or its exception, with warnings and log records."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append((record.levelname, record.getMessage()))
    logger = logging.getLogger("mxpatch_bind.tests.neutrality")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = call(logger)
                error = None
            except Exception as exc:  # pylint: disable=broad-except
                value, error = None, (type(exc), str(exc))
    finally:
        logger.removeHandler(handler)
    return {"value": value, "error": error, "logged": records,
            "warned": [(w.category, str(w.message)) for w in caught
                       if not issubclass(w.category, DeprecationWarning)]}


def misuse_case(name):
    def wrong_data_names(logger):
        mod = mx.mod.Module(CONV, context=cpus(2), logger=logger)
        try:
            mod.bind([("images", IMAGE)], LABEL)
        finally:
            assert not mod.binded
        return None

    def wrong_label_names(logger):
        mod = mx.mod.Module(CONV, context=cpus(2), logger=logger)
        mod.bind(DATA, [("labels", (BATCH,))], for_training=False)
        return shapes(mod)

    def already_bound(logger):
        mod = mx.mod.Module(CONV, context=cpus(2), logger=logger)
        mod.bind(DATA, LABEL)
        group = mod._exec_group
        mod.bind([("data", (2, 3, 8, 8))], [("softmax_label", (2,))])
        return [mod._exec_group is group, shapes(mod)]

    def force_rebind(logger):
        mod = mx.mod.Module(CONV, context=cpus(2), logger=logger)
        mod.bind(DATA, LABEL)
        mod.set_params(*CONV_PARAMS)
        mod.bind([("data", (2, 3, 8, 8))], [("softmax_label", (2,))], force_rebind=True)
        return [shapes(mod), classes(mod), params(mod)]

    def force_rebind_before_init(logger):
        mod = mx.mod.Module(CONV, context=cpus(2), logger=logger)
        mod.bind(DATA, LABEL)
        mod.bind([("data", (2, 3, 8, 8))], [("softmax_label", (2,))], force_rebind=True)

    def reshape_before_bind(logger):
        mx.mod.Module(CONV, context=cpus(2), logger=logger).reshape(DATA, LABEL)

    def forward_before_bind(logger):
        mx.mod.Module(CONV, context=cpus(2), logger=logger).forward(image_batches(1)[0])

    def missing_data_shapes(logger):
        mx.mod.Module(CONV, context=cpus(2), logger=logger).bind()

    def data_shapes_none(logger):
        mx.mod.Module(CONV, context=cpus(2), logger=logger).bind(None)

    def inputs_need_grad_without_training(logger):
        mx.mod.Module(CONV, context=cpus(2), logger=logger).bind(
            DATA, LABEL, for_training=False, inputs_need_grad=True)

    def batch_smaller_than_contexts(logger):
        mx.mod.Module(CONV, context=cpus(3), logger=logger).bind(
            [("data", (2, 3, 8, 8))], [("softmax_label", (2,))])

    def bucketing_wrong_names(logger):
        mod = mx.mod.BucketingModule(bucket_symbol, default_bucket_key=4, context=cpus(2),
                                     logger=logger)
        mod.bind([("x", (BATCH, 4, 4))], LABEL)

    return locals()[name]


MISUSES = ["wrong_data_names", "wrong_label_names", "already_bound", "force_rebind",
           "force_rebind_before_init",
           "reshape_before_bind", "forward_before_bind", "missing_data_shapes",
           "data_shapes_none", "inputs_need_grad_without_training",
           "batch_smaller_than_contexts", "bucketing_wrong_names"]


@pytest.mark.parametrize("name", MISUSES)
def test_stock_misuse_fails_and_warns_exactly_as_unpatched(name):
    unpatched, patched = run_twice(outcome, misuse_case(name))
    assert_identical(patched, unpatched)


def test_the_stock_errors_and_warnings_compared_are_the_expected_ones():
    assert outcome(misuse_case("wrong_data_names"))["error"][0] is ValueError
    assert "don't match names" in outcome(misuse_case("wrong_data_names"))["error"][1]
    assert ("WARNING", "Already bound, ignoring bind()") in outcome(
        misuse_case("already_bound"))["logged"]
    assert any("label_shapes don't match" in message for _, message in
               outcome(misuse_case("wrong_label_names"))["warned"])


def test_a_stock_form_training_step_under_the_patch_runs_only_the_forward_dispatch():
    # What the installed patch adds to every stock-form step, by name and count (the cost of
    # these calls, against the step time: python -m benchmarks stock_path). Anything more on
    # this path would be paid by every stock user on every batch.
    import collections
    import sys

    mod = mx.mod.Module(CONV, context=cpus(2))
    mod.bind(DATA, LABEL)
    mod.set_params(*CONV_PARAMS)
    mod.init_optimizer()
    (batch,) = image_batches(1, IMAGE, seed=3)
    calls = collections.Counter()

    def profile(frame, event, arg):
        name = frame.f_globals.get("__name__", "")
        if event == "call" and name.startswith("mxpatch_bind."):
            calls[f"{name}.{frame.f_code.co_qualname}"] += 1

    with mxpatch_bind.patched():
        sys.setprofile(profile)
        try:
            for _ in range(3):
                mod.forward_backward(batch)
                mod.update()
        finally:
            sys.setprofile(None)
    assert dict(calls) == {"mxpatch_bind.module.wrappers.forward_wrapper": 3,
                           "mxpatch_bind.module.wrappers._batch_of": 3,
                           "mxpatch_bind.module.shapes.batch_form": 3,
                           "mxpatch_bind.patching._chains.Switch.__call__": 3}
