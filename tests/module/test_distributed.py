"""Per-device modules on MXNet's distributed kvstore: 2 loopback workers x 2 CPU contexts.

Every job runs through :func:`mxpatch_bind.launch.launch` under a timeout, which stops and
reaps every process it started. The worker command is tests/dist_scripts/per_device_worker.py;
worker 0's devices hold 1 and 2 samples, worker 1's 3 and 1, all of different image sizes.
The jobs run once per module, all at the same time, and the tests read what they wrote.
"""

import functools
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from dist_jobs import assert_params_close, load_script, params_named, run_concurrently
from nets import conv_net, single_device_reference
from processes import alive

from mxpatch_bind.launch import launch
from mxpatch_bind.module import distributed
from paths import TESTS

# Each test runs a loopback dist_sync job: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

WORKER = TESTS / "dist_scripts" / "per_device_worker.py"
# Generous: one 2-worker job takes about 3 s on 2 cores, the five of this file at once
# 11-14 s (pytest tests/module/test_distributed.py --durations=1, on a loaded machine).
JOB_TIMEOUT_S = 60
# Twenty processes share 2 cores; one OpenMP thread each keeps them from crowding each other.
JOB_ENV = {"OMP_NUM_THREADS": "1"}
STEPS = 3
STARTED = re.compile(r"(scheduler|server \d+|worker \d+) \(pid (\d+)\)")


worker = load_script(WORKER)
SHARDS = worker.SHARDS
LOCAL_TOTALS = [sum(shape[0] for shape in shapes) for shapes in SHARDS]
GLOBAL_TOTAL = sum(LOCAL_TOTALS)
GIVEN_RESCALE = 0.25


class Job:
    """One launch of the worker command: exit status, output, and each worker's records."""

    def __init__(self, kvstore, out_dir, *options):
        self.out_dir = out_dir
        out, err = io.StringIO(), io.StringIO()
        command = [sys.executable, str(WORKER), kvstore, str(STEPS), str(out_dir), *options]
        self.code = launch(command, 2, timeout=JOB_TIMEOUT_S, env=JOB_ENV, stdout=out,
                           stderr=err)
        self.out, self.err = out.getvalue(), err.getvalue()
        self.pids = [int(pid) for _, pid in STARTED.findall(self.err)]

    def records(self):
        assert self.code == 0, self.err
        return [dict(np.load(str(self.out_dir / ("worker%d.npz" % index))))
                for index in range(len(SHARDS))]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Every job of this file, run concurrently: {name: Job}."""
    plans = {
        "dist_sync": ("dist_sync",),
        "dist_device_sync": ("dist_device_sync", "kvstore-as", "object"),
        "dist_async": ("dist_async",),
        "given_rescale": ("dist_sync", "rescale-grad", str(GIVEN_RESCALE)),
        "dying": ("dist_sync", "die-after-init", "1"),
    }
    # mktemp is not thread-safe: make the folders here, run the jobs in threads.
    out_dirs = {name: tmp_path_factory.mktemp(name) for name in plans}
    return run_concurrently({
        name: functools.partial(Job, args[0], out_dirs[name], *args[1:])
        for name, args in plans.items()})


def one_step_reference(rescale_grad=1.0 / GLOBAL_TOTAL):
    """Parameters after one SGD step from stock one-context modules, one per shard."""
    symbol = conv_net()
    args, aux = worker.initial_params()
    summed = {}
    for index, shapes in enumerate(SHARDS):
        for device in range(len(shapes)):
            data, label = worker.shard_batch(index, device, 0)
            _, grads = single_device_reference(symbol, (args, aux), data, label)
            for name, grad in grads.items():
                summed[name] = summed.get(name, 0) + grad.astype(np.float64)
    rate = worker.OPTIMIZER_PARAMS["learning_rate"]
    # The first momentum step is a plain SGD step: the momentum starts at zero.
    return {name: args[name].asnumpy() - rate * rescale_grad * grad
            for name, grad in summed.items()}


@pytest.fixture(scope="module")
def all_shards_on_four_contexts():
    """Final parameters of one process holding all four shards, one per context."""
    mod = worker.shard_module([shape for shapes in SHARDS for shape in shapes])
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params=worker.OPTIMIZER_PARAMS)
    for step in range(STEPS):
        mod.forward_backward(worker.device_batch(
            [worker.shard_batch(index, device, step)
             for index, shapes in enumerate(SHARDS) for device in range(len(shapes))]))
        mod.update()
    return {name: value.asnumpy() for name, value in mod.get_params()[0].items()}


# --------------------------------------------------------------------------- dist_sync
def test_dist_sync_rescales_by_the_samples_of_all_workers(jobs):
    records = jobs["dist_sync"].records()

    # Stock's batch_size * num_workers would be 2 * 3 on one worker and 2 * 4 on the other.
    assert GLOBAL_TOTAL not in [total * len(SHARDS) for total in LOCAL_TOTALS]
    assert [float(r["rescale_grad"]) for r in records] == [1.0 / GLOBAL_TOTAL] * len(SHARDS)
    assert sorted(int(r["rank"]) for r in records) == [0, 1]


def test_dist_sync_leaves_every_worker_with_the_same_parameters(jobs):
    first, second = jobs["dist_sync"].records()

    for prefix in ("after1_", "final_"):
        theirs = params_named(second, prefix)
        for name, value in params_named(first, prefix).items():
            assert np.array_equal(value, theirs[name]), prefix + name


def test_each_workers_devices_compute_the_gradients_of_stock_one_context_modules(jobs):
    symbol = conv_net()
    params = worker.initial_params()
    for index, record in enumerate(jobs["dist_sync"].records()):
        for device in range(len(SHARDS[index])):
            data, label = worker.shard_batch(index, device, 0)
            _, expected = single_device_reference(symbol, params, data, label)
            assert_params_close(params_named(record, "grad%d_" % device), expected)


def test_one_dist_sync_step_divides_the_gradients_of_all_workers_by_their_samples(jobs):
    expected = one_step_reference()

    for record in jobs["dist_sync"].records():
        assert_params_close(params_named(record, "after1_"), expected)


def test_dist_sync_steps_equal_one_process_holding_every_shard_on_its_own_context(
        jobs, all_shards_on_four_contexts):
    for record in jobs["dist_sync"].records():
        assert_params_close(params_named(record, "final_"), all_shards_on_four_contexts)


def test_counting_again_on_a_kvstore_whose_servers_run_the_optimizer_is_refused(jobs):
    for index, record in enumerate(jobs["dist_sync"].records()):
        message = str(record["second_count_error"])
        assert message.startswith(
            "cannot count the samples of all workers on kvstore 'dist_sync': pushing "
            "[%.1f, 1.0, 0.5] from each of 2 workers gave back [" % LOCAL_TOTALS[index])
        assert "'rescale_grad': 1.0 / <samples of all workers>" in message


def test_a_rescale_grad_given_on_dist_sync_is_kept(jobs):
    expected = one_step_reference(GIVEN_RESCALE)

    for record in jobs["given_rescale"].records():
        assert float(record["rescale_grad"]) == GIVEN_RESCALE
        assert_params_close(params_named(record, "after1_"), expected)


# --------------------------------------------------------------------------- other kvstores
def test_dist_device_sync_given_as_a_kvstore_object_trains_like_dist_sync(
        jobs, all_shards_on_four_contexts):
    records = jobs["dist_device_sync"].records()

    assert [float(r["rescale_grad"]) for r in records] == [1.0 / GLOBAL_TOTAL] * len(SHARDS)
    for record in records:
        assert_params_close(params_named(record, "final_"), all_shards_on_four_contexts)


def test_dist_async_keeps_stock_rescale_by_each_workers_own_samples(jobs):
    records = jobs["dist_async"].records()
    initial = {name: value.asnumpy() for name, value in worker.initial_params()[0].items()}

    assert [float(r["rescale_grad"]) for r in records] == [1.0 / n for n in LOCAL_TOTALS]
    for record in records:
        final = params_named(record, "final_")
        assert all(np.isfinite(value).all() for value in final.values())
        assert any(not np.array_equal(final[name], initial[name]) for name in initial)


def test_a_worker_that_dies_stops_the_distributed_job_fast(jobs):
    job = jobs["dying"]

    # The worker's own exit code, not the timeout's 124: the launcher did not wait it out.
    assert job.code == worker.EXIT_DIED
    assert ("mxpatch_bind.launch: worker 1 exited with code %d; stopping 3 other processes"
            % worker.EXIT_DIED) in job.err
    assert "[worker 1] dying after init_optimizer" in job.err
    assert len(job.pids) == 4 and alive(job.pids) == []


# --------------------------------------------------------------------------- in one process
@pytest.mark.parametrize("kvstore, expected", [
    ("dist_sync", True), ("dist_device_sync", True), ("dist_sync_device", True),
    ("dist_async", False), ("local", False), ("device", False), (None, False),
])
def test_sync_dist_kvstores_are_recognised_by_stocks_rule(kvstore, expected):
    assert distributed.is_sync_dist(kvstore) is expected


def test_a_local_kvstore_keeps_the_rescale_of_this_process_samples():
    mod = worker.shard_module(SHARDS[1])
    mod.init_optimizer(kvstore="local", optimizer="sgd")

    assert mod._optimizer.rescale_grad == pytest.approx(1.0 / LOCAL_TOTALS[1])
