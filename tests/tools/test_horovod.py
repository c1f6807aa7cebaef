"""kvstore='horovod' under install(): 2 and 3 Horovod workers x 2 CPU contexts on loopback.

Every job is ``horovodrun --gloo`` on localhost (tests/dist_scripts/horovod_worker.py), under a
timeout, in a session of its own; the test records every process below it while it runs and
checks that none is left. The workers hold unequal numbers of samples (3, 4 and 3), their
devices too, each device its own image size. The jobs run concurrently, once per module.

Horovod is built from source (docs/distributed.md gives the command; .ci/run builds it): where
``horovod.mxnet`` or ``horovodrun`` is missing, the tests skip and say so.
"""

import functools
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from dist_jobs import assert_params_close, load_script, params_named, run_concurrently
from nets import bound_module, conv_net, device_batch
from processes import descendants, identify, kill_running, wait_until_gone
from paths import TESTS

HOROVODRUN = Path(sys.executable).parent / "horovodrun"
_MISSING = [what for what, there in (
    ("the horovod.mxnet module", importlib.util.find_spec("horovod") is not None
     and importlib.util.find_spec("horovod.mxnet") is not None),
    ("horovodrun beside this Python (%s)" % HOROVODRUN, HOROVODRUN.exists()))
    if not there]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_MISSING), reason="Horovod is not installed here: no %s; build it "
                       "as docs/distributed.md says" % " and no ".join(_MISSING)),
]

WORKER = TESTS / "dist_scripts" / "horovod_worker.py"
# A limit on a hang, not a benchmark: several times what the jobs of this file take at once
# on a loaded 2-core machine.
JOB_TIMEOUT_S = 180
STEPS = 3


worker = load_script(WORKER)


class Job:
    """One ``horovodrun`` of the worker command: exit status, output, each worker's record,
    and the processes it started (all gone once it returns)."""

    def __init__(self, mode, workers, out_dir):
        self.mode, self.workers, self.out_dir = mode, workers, out_dir
        command = [str(HOROVODRUN), "-np", str(workers), "-H", "localhost:%d" % workers,
                   "--gloo", "--network-interfaces", "lo", sys.executable, str(WORKER), mode,
                   str(STEPS), str(out_dir)]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)
        self.started = {}
        reader = threading.Thread(target=self._read, args=(process,))
        reader.start()
        while process.poll() is None and time.monotonic() - started < JOB_TIMEOUT_S:
            self.started.update(identify(descendants(process.pid)))
            time.sleep(0.2)
        if process.poll() is None:  # a hang: end the job's session, which we started
            os.killpg(process.pid, signal.SIGKILL)
        self.code = process.wait()
        reader.join()
        self.left = wait_until_gone(self.started, timeout_s=30)
        kill_running(self.started)

    def _read(self, process):
        self.out = process.stdout.read().decode(errors="replace")

    def records(self):
        assert self.code == 0, self.out
        return [dict(np.load(str(self.out_dir / ("worker%d.npz" % rank))))
                for rank in range(self.workers)]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Every job of this file, run concurrently: {name: Job}."""
    plans = {"train2": ("train", 2), "train3": ("train", 3), "fit": ("fit", 2),
             "stock": ("stock", 2),
             "given_rescale": ("given-rescale", 2),
             "distributed_optimizer": ("distributed-optimizer", 2),
             "bn_store": ("bn-store", 2), "bn_local": ("bn-local", 2),
             "bn_force": ("bn-force", 2)}
    # mktemp is not thread-safe: make the folders here, run the jobs in threads.
    out_dirs = {name: tmp_path_factory.mktemp(name) for name in plans}
    return run_concurrently({name: functools.partial(Job, *plans[name], out_dirs[name])
                             for name in plans})


def one_context_per_shard(workers, steps):
    """Parameters after step 1 and after ``steps`` steps of one process holding every
    worker's devices, one context each, on MXNet's 'local' kvstore (stock's reference)."""
    shards = worker.shards(workers)
    mod = bound_module(conv_net(), [shape for shapes in shards for shape in shapes],
                       worker.initial_params())
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params=worker.OPTIMIZER_PARAMS)
    after = []
    for step in range(steps):
        mod.forward_backward(device_batch(
            [worker.shard_batch(index, device, step)
             for index, shapes in enumerate(shards) for device in range(len(shapes))]))
        mod.update()
        after.append({name: value.asnumpy() for name, value in mod.get_params()[0].items()})
    return after[0], after[-1]


def total_samples(workers):
    return sum(shape[0] for shapes in worker.shards(workers) for shape in shapes)


# --------------------------------------------------------------------------- the store
@pytest.mark.parametrize("workers", [2, 3])
def test_mx_kv_create_horovod_is_a_store_over_every_worker_under_install(jobs, workers):
    records = jobs["train%d" % workers].records()

    assert [str(r["class_name"]) for r in records] == ["HorovodKVStore"] * workers
    assert [str(r["type"]) for r in records] == ["horovod"] * workers
    assert sorted(int(r["rank"]) for r in records) == list(range(workers))
    assert [int(r["num_workers"]) for r in records] == [workers] * workers
    # Without install(), MXNet 1.x's own 'horovod' is a native store of one worker.
    assert [int(r["native_workers"]) for r in records] == [1] * workers


@pytest.mark.parametrize("workers", [2, 3])
def test_rescale_grad_counts_the_samples_of_every_device_of_every_worker(jobs, workers):
    records = jobs["train%d" % workers].records()
    counts = [sum(shape[0] for shape in shapes) for shapes in worker.shards(workers)]

    assert len(set(counts)) > 1  # unequal: 1/(this worker's samples * workers) would be wrong
    assert [float(r["rescale_grad"]) for r in records] == [1.0 / sum(counts)] * workers
    assert [str(r["warnings"][0]) for r in records] == [""] * workers


@pytest.mark.parametrize("workers", [2, 3])
def test_every_step_is_the_step_over_all_workers_samples_and_the_workers_agree(jobs, workers):
    records = jobs["train%d" % workers].records()
    after1, final = one_context_per_shard(workers, STEPS)

    for record in records:
        assert_params_close(params_named(record, "after1_"), after1)
        assert_params_close(params_named(record, "final_"), final)
        # Rank 1 started from other parameters: rank 0's reached it, and every step after.
        for prefix in ("after1_", "final_"):
            for name, value in params_named(records[0], prefix).items():
                assert np.array_equal(record[prefix + name], value), prefix + name
        assert np.array_equal(record["states"], records[0]["states"])


def test_a_given_rescale_grad_is_kept_with_a_warning_that_names_the_right_one(jobs):
    records = jobs["given_rescale"].records()
    total = total_samples(2)

    for record in records:
        assert float(record["rescale_grad"]) == worker.GIVEN_RESCALE
        assert str(record["warnings"][0]).startswith(
            "kvstore='horovod': rescale_grad=0.25 is kept; 1/%d = %r weights every sample "
            "of all workers alike" % (total, 1.0 / total))


def test_horovods_own_optimizer_on_several_contexts_is_named_as_the_trap_it_is(jobs):
    for record in jobs["distributed_optimizer"].records():
        message = str(record["warnings"][0])
        assert message.startswith("Horovod's DistributedOptimizer on a module with 2 contexts")
        assert "kvstore='horovod'" in message


def test_a_module_bound_in_stock_form_steps_over_every_workers_samples_too(jobs):
    import mxnet as mx

    records = jobs["stock"].records()
    # One context holding both workers' samples: the reference step.
    batches = [[worker.stock_batch(rank, step) for rank in range(2)] for step in range(STEPS)]
    mod = mx.mod.Module(conv_net(), context=mx.cpu(0))
    total = sum(worker.STOCK_BATCHES)
    mod.bind([("data", (total,) + worker.STOCK_IMAGE)], [("softmax_label", (total,))])
    args, aux = worker.initial_params()
    mod.init_params(arg_params=args, aux_params=aux)
    mod.init_optimizer(kvstore=None, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    for pairs in batches:
        mod.forward_backward(mx.io.DataBatch([mx.nd.concat(*[d for d, _ in pairs], dim=0)],
                                             [mx.nd.concat(*[label for _, label in pairs], dim=0)]))
        mod.update()
    expected = {name: value.asnumpy() for name, value in mod.get_params()[0].items()}

    assert [float(r["rescale_grad"]) for r in records] == [1.0 / total] * 2
    for record in records:
        assert_params_close(params_named(record, "final_"), expected)


# --------------------------------------------------------------------------- BatchNorm, modes
def one_context_per_device_with_batch_norm(learning_rate, on_store, monkeypatch):
    """What every device holds after step 1 and after STEPS steps of one process holding
    both workers' devices, one context each, on MXNet's 'local' kvstore updating where the
    job updates (stock's fix_gamma=True BatchNorm keeps gamma 1 on the devices only when they
    update), from rank 0's parameters and moving statistics: ``[{name: array}]`` per
    device, twice."""
    import mxnet as mx

    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "1" if on_store else "0")

    shards = worker.shards(2)
    mod = bound_module(conv_net(batch_norm=True), [s for shapes in shards for s in shapes],
                       worker.bn_initial_params(seed=0))
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params=dict(worker.OPTIMIZER_PARAMS,
                                             learning_rate=learning_rate))
    snapshots = []
    for step in range(STEPS):
        mod.forward_backward(device_batch(
            [worker.shard_batch(index, device, step)
             for index, shapes in enumerate(shards) for device in range(len(shapes))]))
        mod.update()
        if step in (0, STEPS - 1):
            group = mod._exec_group
            named = list(zip(group.param_names, group.param_arrays))
            named += list(zip(mod._aux_names, group.aux_arrays))
            snapshots.append([{name: devices[index].asnumpy() for name, devices in named}
                              for index in range(len(mod._context))])
    assert isinstance(mod._kvstore, mx.kvstore.KVStore) and mod._update_on_kvstore is on_store
    return snapshots


def device_record(record, prefix, device):
    return params_named(record, "%sdevice%d_" % (prefix, device))


@pytest.mark.parametrize("name, learning_rate, on_store", [
    ("bn_store", worker.OPTIMIZER_PARAMS["learning_rate"], True),
    ("bn_local", worker.OPTIMIZER_PARAMS["learning_rate"], False),
    ("bn_force", worker.BN_LEARNING_RATE, True),
])
def test_workers_started_apart_with_batch_norm_step_as_one_context_per_device(
        jobs, name, learning_rate, on_store, monkeypatch):
    records = jobs[name].records()
    after1, final = one_context_per_device_with_batch_norm(learning_rate, on_store, monkeypatch)

    for rank, record in enumerate(records):
        assert bool(record["update_on_kvstore"]) is on_store
        assert float(record["learning_rate"]) == learning_rate
        assert float(record["rescale_grad"]) == 1.0 / total_samples(2)
        for device in range(2):
            # Rank 1 started from its own values: rank 0's parameters and moving statistics
            # reached its devices, whichever side updates.
            reference = 2 * rank + device
            assert_params_close(device_record(record, "after1_", device), after1[reference])
            assert_params_close(device_record(record, "final_", device), final[reference])
    for key, value in params_named(records[0], "params_").items():
        assert np.array_equal(records[1]["params_" + key], value), (name, key)


# --------------------------------------------------------------------------- fit
def test_fit_on_horovod_reads_disjoint_parts_and_checkpoints_on_rank_0_only(jobs):
    job = jobs["fit"]
    first, second = job.records()

    assert int(first["batches"]) == int(second["batches"]) == 6  # 12 batches in two parts
    assert float(first["rescale_grad"]) == 1.0 / 8  # 2 workers x 2 devices x 2 images
    for name, value in params_named(first, "final_").items():
        assert np.array_equal(second["final_" + name], value), name
    written = sorted(path.name for path in job.out_dir.iterdir() if "-" in path.name)
    assert written == ["rank0-0001.params", "rank0-0002.params", "rank0-symbol.json"]


def test_fit_on_horovod_equals_one_process_training_both_parts_on_four_contexts(jobs):
    import mxnet as mx

    first = jobs["fit"].records()[0]
    parts = [worker.fit_iter(num_parts=2, part_index=k) for k in range(2)]
    mod = None
    for _epoch in range(2):
        for batches in zip(*parts):
            # Worker 0's devices, then worker 1's: one context each.
            merged = {field: [device for batch in batches for device in getattr(batch, field)]
                      for field in ("data", "label", "provide_data", "provide_label")}
            if mod is None:
                mod = bound_module(conv_net(), [device[0].shape for device in merged["data"]],
                                   worker.initial_params())
                mod.init_optimizer(kvstore="local", optimizer="sgd",
                                   optimizer_params=worker.OPTIMIZER_PARAMS)
            mod.forward_backward(mx.io.DataBatch(**merged))
            mod.update()
        for part in parts:
            part.reset()
    expected = {name: value.asnumpy() for name, value in mod.get_params()[0].items()}
    assert_params_close(params_named(first, "final_"), expected)


# --------------------------------------------------------------------------- processes
def test_every_job_ends_with_nothing_left_running(jobs):
    for name, job in jobs.items():
        assert job.code == 0, (name, job.out)
        assert len(job.started) >= job.workers, name  # horovodrun's processes were seen
        assert job.left == [], name
