"""Benchmark 3: what one change of input shapes costs, per-device reshape vs rebinding.

Strategies, per change of both devices' shapes on 2 CPU contexts (small CNN, training):
per-device ``Module.reshape``; the Deformable-ConvNets forks' strategy (``MutableModule``: a new
``Module`` bound with ``shared_module`` at every change); a full bind of a new ``Module``. Shapes
are either never seen before, or recur (a few aspect-ratio buckets, as detection data does).
Then, for never-seen shapes on N = 1, 2, 4, 8 contexts: the reshape with its devices on
threads (the default), the same one device after another, and the shared-module rebind.
"""

import gc
import itertools
import random
import time

from mxpatch_bind.settings import current as current_settings

from . import common
from .common import per_device_spec

NAME = "reshape"
DEVICE_COUNTS = (1, 2, 4, 8)
LARGEST = (2, 3, 160, 160)
BUCKETS = [(2, 3, 96, 128), (2, 3, 128, 96), (2, 3, 112, 112), (2, 3, 80, 160)]


def run(tiny=False, rounds=None):
    """Measure milliseconds per shape change for every strategy and scenario."""
    import mxnet as mx

    import mxpatch_bind

    rounds = rounds or (2 if tiny else 9)
    changes = 5 if tiny else 60
    symbol = common.small_cnn()
    ctxs = common.contexts(2)
    rng = random.Random(0)
    with mxpatch_bind.patched():
        base = mx.mod.Module(symbol, context=ctxs, logger=common.quiet_logger())
        base.bind(*per_device_spec([LARGEST] * 2))
        base.init_params(mx.init.Xavier())
        base.init_optimizer()
        fresh = _fresh_shapes(rng)
        recurring = _recurring_shapes(rng)
        # Warm up: every bucket pair twice (the cache admits a shape on its second sight),
        # so that the recurring scenario finds them cached.
        for shapes in 2 * list(itertools.product(BUCKETS, repeat=2)):
            base.reshape(*per_device_spec(shapes))
        scenarios = {}
        for scenario, next_shapes in (("never seen", lambda: next(fresh)),
                                      ("recurring", lambda: next(recurring))):
            cases = {
                "per-device reshape": lambda: _time_reshape(base, next_shapes, changes),
                "shared-module rebind": lambda: _time_rebind(base, symbol, ctxs, next_shapes,
                                                             changes, shared=True),
                "full bind": lambda: _time_rebind(base, symbol, ctxs, next_shapes, changes,
                                                  shared=False),
            }
            common.progress("reshape: %s shapes, %d rounds of %d changes"
                            % (scenario, rounds, changes))
            scenarios[scenario] = common.interleaved(cases, rounds)
        common.progress("reshape: time spent in MXNet's C calls, never-seen shapes")
        c_calls = {
            "per-device reshape": _c_call_times(lambda: _time_reshape(base, lambda: next(fresh),
                                                                      changes)),
            "shared-module rebind": _c_call_times(lambda: _time_rebind(
                base, symbol, ctxs, lambda: next(fresh), changes, shared=True)),
        }
        by_devices = {count: _by_devices(symbol, count, rounds, changes)
                      for count in DEVICE_COUNTS}
    result = _result(scenarios, rounds, changes, tiny)
    result["c_calls_us_per_change"] = c_calls
    result["by_devices"] = _devices_rows(by_devices)
    result["targets"].append(_flat_target(result["by_devices"]))
    return result


def _by_devices(symbol, count, rounds, changes):
    """Never-seen shape changes on ``count`` contexts: threaded, serial, shared-module rebind."""
    import mxnet as mx

    import mxpatch_bind

    ctxs = common.contexts(count)
    base = mx.mod.Module(symbol, context=ctxs, logger=common.quiet_logger())
    base.bind(*per_device_spec([LARGEST] * count))
    base.init_params(mx.init.Xavier())
    base.init_optimizer()
    fresh = _fresh_shapes(random.Random(count), count)
    threads = current_settings().reshape_threads

    def reshape(threads):
        previous = mxpatch_bind.configure(reshape_threads=threads)
        try:
            return _time_reshape(base, lambda: next(fresh), changes)
        finally:
            mxpatch_bind.configure(**previous._asdict())

    cases = {"per-device reshape": lambda: reshape(threads),
             "per-device reshape, serial": lambda: reshape(1),
             "shared-module rebind": lambda: _time_rebind(base, symbol, ctxs, lambda: next(fresh),
                                                          changes, shared=True)}
    common.progress("reshape: never-seen shapes on %d contexts (%d reshape threads)"
                    % (count, threads))
    samples = common.interleaved(cases, rounds)
    mx.nd.waitall()  # no queued work may outlive the module (docs/design.rst, Limits)
    return {"threads": threads, "samples": samples}


def _devices_rows(by_devices):
    rows = []
    for count, measured in by_devices.items():
        samples = measured["samples"]
        reshape = common.walls(samples["per-device reshape"])
        for strategy, clocks in samples.items():
            rows.append({"devices": count, "strategy": strategy,
                         "threads": measured["threads"] if strategy == "per-device reshape"
                         else 1,
                         "ms_per_change": 1e3 * common.median(common.walls(clocks)),
                         "spread": common.spread(common.walls(clocks)),
                         "cost_vs_reshape": common.paired_ratio(common.walls(clocks), reshape)})
    return rows


def _flat_target(rows):
    largest = max(row["devices"] for row in rows)
    ratio = next(row["cost_vs_reshape"] for row in rows
                 if row["devices"] == largest and row["strategy"] == "shared-module rebind")
    return common.target("never-seen shapes on %d contexts: shared-module rebind / per-device "
                         "reshape" % largest, ratio, ">= 1.5", ratio >= 1.5)


# MXNet's C functions a shape change calls (some only through one strategy).
C_CALLS = ("MXExecutorReshapeEx", "MXExecutorSimpleBindEx", "MXExecutorFree", "MXNDArrayFree",
           "MXNDArrayGetStorageType", "MXNDArrayGetShapeEx", "MXSymbolListArguments",
           "MXSymbolCopy", "MXExecutorOutputs")


def _c_call_times(measure):
    """Calling-thread CPU microseconds per change inside each of :data:`C_CALLS`."""
    from mxnet.base import _LIB
    spent = dict.fromkeys(C_CALLS, 0.0)
    originals = {name: getattr(_LIB, name) for name in C_CALLS}

    def timed_call(name, function):
        def call(*args):
            start = time.thread_time()
            try:
                return function(*args)
            finally:
                spent[name] += time.thread_time() - start
        return call

    for name, function in originals.items():
        setattr(_LIB, name, timed_call(name, function))
    try:
        clock = measure()
    finally:
        for name, function in originals.items():
            setattr(_LIB, name, function)
    changes = clock.count
    calls = {name: 1e6 * seconds / changes for name, seconds in spent.items() if seconds}
    calls["all C calls"] = sum(calls.values())
    calls["total"] = 1e6 * clock.cpu
    return calls


def _fresh_shapes(rng, count=2):
    """Per-device shape lists, no device shape ever repeated (within the largest shape)."""
    seen = set()
    while True:
        shapes = []
        while len(shapes) < count:
            shape = (2, 3, rng.randint(32, LARGEST[2]), rng.randint(32, LARGEST[3]))
            if shape not in seen and shape not in BUCKETS:
                seen.add(shape)
                shapes.append(shape)
        yield shapes


def _recurring_shapes(rng):
    """Bucket pairs, each different from the one before it."""
    previous = None
    while True:
        pair = [rng.choice(BUCKETS), rng.choice(BUCKETS)]
        if pair != previous:
            previous = pair
            yield pair


def _time_reshape(module, next_shapes, changes):
    specs = [per_device_spec(next_shapes()) for _ in range(changes)]
    gc.collect()
    with common.Clock(changes) as clock:
        for spec in specs:
            module.reshape(*spec)
    return clock


def _time_rebind(base, symbol, ctxs, next_shapes, changes, shared):
    import mxnet as mx
    specs = [per_device_spec(next_shapes()) for _ in range(changes)]
    shared_module = base if shared else None
    logger = common.quiet_logger()
    gc.collect()
    with common.Clock(changes) as clock:
        current = None
        for spec in specs:
            # As MutableModule does: the new module replaces (and frees) the previous one.
            current = mx.mod.Module(symbol, context=ctxs, logger=logger)
            current.bind(*spec, shared_module=shared_module)
        del current
    return clock


def _result(scenarios, rounds, changes, tiny):
    rows, targets = [], []
    limits = {"never seen": 1.5, "recurring": 10.0}
    for scenario, samples in scenarios.items():
        reshape = samples["per-device reshape"]
        for strategy, clocks in samples.items():
            rows.append({"scenario": scenario, "strategy": strategy,
                         "ms_per_change": 1e3 * common.median(common.walls(clocks)),
                         "spread": common.spread(common.walls(clocks)),
                         "cpu_ms_per_change": 1e3 * common.median(common.cpus(clocks)),
                         "cost_vs_reshape": common.paired_ratio(common.walls(clocks),
                                                                common.walls(reshape)),
                         "cpu_cost_vs_reshape": common.paired_ratio(common.cpus(clocks),
                                                                    common.cpus(reshape))})
        ratio = common.paired_ratio(common.walls(samples["shared-module rebind"]),
                                    common.walls(reshape))
        targets.append(common.target(
            "%s shapes: shared-module rebind / per-device reshape" % scenario, ratio,
            ">= %g" % limits[scenario], ratio >= limits[scenario]))
    return {"benchmark": NAME, "command": common.command(NAME, tiny),
            "machine": common.machine(),
            "params": {"rounds": rounds, "changes_per_round": changes, "devices": 2,
                       "largest": LARGEST, "buckets": BUCKETS, "network": "small_cnn"},
            "rows": rows, "targets": targets}


def format_table(result):
    c_calls = result.get("c_calls_us_per_change", {})
    names = [name for name in C_CALLS + ("all C calls", "total")
             if any(name in calls for calls in c_calls.values())]
    c_table = common.format_table(
        ["CPU µs per never-seen change"] + list(c_calls),
        [[name] + [c_calls[strategy].get(name, 0.0) for strategy in c_calls] for name in names])
    return _main_table(result) + "\n\n" + c_table + "\n\n" + _devices_table(result)


def _devices_table(result):
    header = ["never seen, contexts", "strategy", "threads", "ms/change", "±", "× reshape"]
    rows = [[r["devices"], r["strategy"], r["threads"], r["ms_per_change"],
             "%.0f%%" % (100 * r["spread"]), r["cost_vs_reshape"]]
            for r in result.get("by_devices", [])]
    return common.format_table(header, rows)


def _main_table(result):
    header = ["scenario", "strategy", "ms/change", "±", "× reshape", "CPU ms", "CPU × reshape"]
    rows = [[r["scenario"], r["strategy"], r["ms_per_change"], "%.0f%%" % (100 * r["spread"]),
             r["cost_vs_reshape"], r["cpu_ms_per_change"], r["cpu_cost_vs_reshape"]]
            for r in result["rows"]]
    return common.format_table(header, rows) + "\n" + common.format_targets(result["targets"])
