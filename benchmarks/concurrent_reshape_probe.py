"""Probe: can per-device executor reshapes run concurrently from Python threads? (issue 14.6)

``python -m benchmarks.concurrent_reshape_probe [--devices 1 2 4 8] [--rounds 15]``

For N = 1, 2, 4, 8 CPU contexts, each in its own child process (so that an abort or a
segfault is recorded, not fatal): N executors of a small CNN are bound one after another at
the largest shape, then every round gives each device a never-seen shape and reshapes all N
executors, serially on the calling thread and concurrently on N threads (one per device),
interleaved round by round. Both MXNet's ``Executor.reshape`` and mxpatch_bind's lean reshape
(``executors.reshape_executor``, where it exists) are timed. A check pass reshapes to the
same shapes both ways, runs forward on the same inputs and compares the outputs exactly; a
stress pass runs many more threaded reshapes and looks only for crashes. A control child runs
``simple_bind`` from N threads at once, which MXNet's frontend is known not to survive.

Prints a table (milliseconds per change of all N devices' shapes, threaded/serial ratio) and,
with ``--json PATH``, writes the figures. A probe, not part of ``python -m benchmarks``.
"""

import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import time

from . import common

LARGEST = (2, 3, 96, 96)
LABEL = (2,)


# --------------------------------------------------------------------------- child side
def _executors(mx, symbol, count):
    """``count`` executors on cpu(0..count-1), bound serially, with equal parameters."""
    import numpy as np
    executors = []
    for device in range(count):
        exe = symbol.simple_bind(ctx=mx.cpu(device), data=LARGEST, softmax_label=LABEL,
                                 grad_req="write")
        for name, array in exe.arg_dict.items():
            if name not in ("data", "softmax_label"):
                seed = sum(map(ord, name))  # the same values on every device
                array[:] = np.random.RandomState(seed).uniform(-0.1, 0.1, array.shape)
        executors.append(exe)
    return executors


def _never_seen(rng, count, seen):
    """One new data shape per device, never used before in this process (at most LARGEST)."""
    shapes = []
    while len(shapes) < count:
        shape = (LARGEST[0], LARGEST[1], rng.randint(24, LARGEST[2]), rng.randint(24, LARGEST[3]))
        if shape not in seen:
            seen.add(shape)
            shapes.append(shape)
    return shapes


def _reshapers():
    """name -> reshape(base_executor, data_shape): MXNet's, and mxpatch_bind's lean one."""
    reshapers = {"Executor.reshape": lambda base, shape: base.reshape(
        allow_up_sizing=True, data=shape, softmax_label=LABEL)}
    try:
        from mxpatch_bind.module.executors import reshape_executor as _reshape_executor
    except ImportError:  # the lean reshape moved or went: probe MXNet's alone
        return reshapers
    reshapers["lean reshape"] = lambda base, shape: _reshape_executor(
        base, {"data": shape, "softmax_label": LABEL})
    return reshapers


def _serial(reshape, bases, shapes):
    return [reshape(base, shape) for base, shape in zip(bases, shapes)]


def _threaded(pool, reshape, bases, shapes):
    return list(pool.map(reshape, bases, shapes))


def _outputs(executors, shapes, seed):
    import numpy as np
    results = []
    for index, (exe, shape) in enumerate(zip(executors, shapes)):
        rng = np.random.RandomState(seed + index)
        exe.arg_dict["data"][:] = rng.uniform(-1, 1, shape)
        exe.arg_dict["softmax_label"][:] = rng.randint(0, 10, LABEL)
        exe.forward(is_train=True)
        results.append(exe.outputs[0].asnumpy())
    return results


def child(count, rounds, stress_rounds):
    """Measure, check and stress N = ``count`` devices; prints one JSON line."""
    import mxnet as mx
    import numpy as np

    symbol = common.small_cnn()
    bases = _executors(mx, symbol, count)
    rng, seen = random.Random(count), set()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=count)
    result = {"devices": count, "timings_ms": {}, "mismatches": 0, "checked": 0}
    for name, reshape in _reshapers().items():
        def serial(reshape=reshape):
            shapes = _never_seen(rng, count, seen)
            start = time.perf_counter()
            _serial(reshape, bases, shapes)
            return (time.perf_counter() - start) * 1e3

        def threaded(reshape=reshape):
            shapes = _never_seen(rng, count, seen)
            start = time.perf_counter()
            _threaded(pool, reshape, bases, shapes)
            return (time.perf_counter() - start) * 1e3

        common.interleaved({"serial": serial, "threaded": threaded}, 3)  # warm-up
        samples = common.interleaved({"serial": serial, "threaded": threaded}, rounds)
        result["timings_ms"][name] = {
            "serial": common.median(samples["serial"]),
            "threaded": common.median(samples["threaded"]),
            "threaded/serial": common.paired_ratio(samples["threaded"], samples["serial"]),
        }
        for check in range(rounds):
            shapes = _never_seen(rng, count, seen)
            expected = _outputs(_serial(reshape, bases, shapes), shapes, check)
            got = _outputs(_threaded(pool, reshape, bases, shapes), shapes, check)
            result["checked"] += count
            result["mismatches"] += sum(not np.array_equal(a, b) for a, b in zip(got, expected))
        for _ in range(stress_rounds):
            _threaded(pool, reshape, bases, _never_seen(rng, count, seen))
    result["stress_reshapes"] = stress_rounds * count * len(_reshapers())
    pool.shutdown()
    print(json.dumps(result))


def simple_bind_child(count, rounds):
    """Control: ``simple_bind`` from ``count`` threads at once, ``rounds`` times."""
    import mxnet as mx

    symbol = common.small_cnn()
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        for _ in range(rounds):
            list(pool.map(lambda device: symbol.simple_bind(
                ctx=mx.cpu(device), data=LARGEST, softmax_label=LABEL), range(count)))
    print(json.dumps({"devices": count, "simple_binds": rounds * count}))


# --------------------------------------------------------------------------- parent side
def _run_child(args, timeout_s):
    command = [sys.executable, "-m", "benchmarks.concurrent_reshape_probe"] + args
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              env=dict(os.environ, PYTHONUNBUFFERED="1"))
    except subprocess.TimeoutExpired:
        return {"returncode": None, "outcome": "timed out after %d s" % timeout_s}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    outcome = "ok" if done.returncode == 0 else (
        "killed by signal %d" % -done.returncode if done.returncode < 0
        else "exit status %d" % done.returncode)
    record = json.loads(lines[-1]) if lines and done.returncode == 0 else {}
    record.update(returncode=done.returncode, outcome=outcome)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "MKLDNN is activated" not in line]
        record["stderr_tail"] = errors[-8:]
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per mode")
    parser.add_argument("--stress", type=int, default=100, help="threaded rounds, crash check")
    parser.add_argument("--simple-bind-rounds", type=int, default=20,
                        help="control: rounds of threaded simple_bind (0: skip)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per child")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--simple-bind-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.rounds, args.stress)
    if args.simple_bind_child:
        return simple_bind_child(args.simple_bind_child, args.simple_bind_rounds)
    records = []
    for count in args.devices:
        common.progress("concurrent reshape probe: N=%d" % count)
        records.append(_run_child(["--child", str(count), "--rounds", str(args.rounds),
                                   "--stress", str(args.stress)], args.timeout))
    controls = []
    if args.simple_bind_rounds:
        for count in [n for n in args.devices if n > 1]:
            common.progress("control: threaded simple_bind, N=%d" % count)
            controls.append(dict(_run_child(
                ["--simple-bind-child", str(count), "--simple-bind-rounds",
                 str(args.simple_bind_rounds)], args.timeout), devices=count))
    _report(records, controls)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"command": " ".join(["python -m benchmarks.concurrent_reshape_probe"]
                                           + (argv if argv is not None else sys.argv[1:])),
                       "machine": common.machine(), "reshape": records,
                       "simple_bind_control": controls}, out, indent=1)
    return 0


def _report(records, controls):
    rows = []
    for record in records:
        for name, timing in sorted(record.get("timings_ms", {}).items()):
            rows.append([record["devices"], name, "%.2f" % timing["serial"],
                         "%.2f" % timing["threaded"], "%.2f" % timing["threaded/serial"],
                         "%d/%d" % (record["mismatches"], record["checked"]),
                         record["outcome"]])
        if not record.get("timings_ms"):
            rows.append([record.get("devices", "?"), "-", "-", "-", "-", "-", record["outcome"]])
    print(common.format_table(["N", "reshape", "serial ms", "threaded ms", "threaded/serial",
                               "output mismatches", "outcome"], rows))
    for record in records + controls:
        if record.get("stderr_tail"):
            print("N=%s: %s" % (record.get("devices"), " | ".join(record["stderr_tail"])))
    for control in controls:
        print("control, simple_bind from %d threads: %s" % (control["devices"],
                                                            control["outcome"]))


if __name__ == "__main__":
    sys.exit(main())
