"""Benchmark 1: what the installed patch costs stock-form code.

Training steps (forward, backward, update) of modules bound the stock way on 2 CPU contexts,
timed with the patch installed and not, round after round; and the per-call cost of the
patched ``Module.bind`` / ``Module.reshape`` dispatch for stock-form calls that return early
(``bind`` on a bound module, ``reshape`` to unchanged shapes).
"""

from . import common

NAME = "overhead"


def run(tiny=False, rounds=None):
    """Step times and dispatch costs, patched vs unpatched, interleaved."""
    import mxnet as mx

    rounds = rounds or (2 if tiny else 31)
    steps = _training_steps(mx, rounds, tiny)
    dispatch = _dispatch(mx, rounds, tiny)
    return _result(steps, dispatch, rounds, tiny)


def _stock_module(mx, symbol, data_shape, label_shape):
    mod = mx.mod.Module(symbol, context=common.contexts(2), logger=common.quiet_logger())
    mod.bind([("data", data_shape)], [("softmax_label", label_shape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    return mod


def _networks(mx):
    """(name, module, batch, steps per round) for the MLP and the small CNN."""
    rng = mx.random
    rng.seed(0)
    nets = []
    for name, symbol, shape in (("MLP, 64x256", common.mlp(), (64, 256)),
                                ("small CNN, 16x3x32x32", common.small_cnn(), (16, 3, 32, 32))):
        mod = _stock_module(mx, symbol, shape, (shape[0],))
        batch = mx.io.DataBatch([mx.nd.random.uniform(shape=shape)],
                                [mx.nd.zeros((shape[0],))])
        nets.append((name, mod, batch))
    return nets


def _time_steps(mx, mod, batch, count, patched):
    import mxpatch_bind
    if patched:
        mxpatch_bind.install()
    try:
        mx.nd.waitall()
        with common.Clock(count) as clock:
            for _ in range(count):
                mod.forward_backward(batch)
                mod.update()
            mx.nd.waitall()
    finally:
        if patched:
            mxpatch_bind.uninstall()
    return clock


def _training_steps(mx, rounds, tiny):
    results = {}
    for name, mod, batch in _networks(mx):
        count = 3 if tiny else (400 if name.startswith("MLP") else 100)
        _time_steps(mx, mod, batch, count, False)  # warm up oneDNN and the memory pool
        common.progress("overhead: %s, %d rounds of %d steps" % (name, rounds, count))
        results[name] = common.interleaved({
            "unpatched": lambda: _time_steps(mx, mod, batch, count, False),
            "patched": lambda: _time_steps(mx, mod, batch, count, True),
            # The same unpatched steps again: the spread of this ratio is the noise floor.
            "unpatched, control": lambda: _time_steps(mx, mod, batch, count, False),
        }, rounds)
        results[name]["patch entered per step"] = _patch_calls_per_step(mx, mod, batch)
    return results


def _patch_calls_per_step(mx, mod, batch, count=10):
    """How often the patched bind/reshape/forward run during stock-form training steps."""
    import mxpatch_bind
    from mxpatch_bind.module import wrappers
    calls = []
    originals = {name: getattr(wrappers, name) for name in ("bind_wrapper", "reshape_wrapper",
                                                               "forward_wrapper")}

    def counting(original):
        def wrapper(*args, **kwargs):
            calls.append(original)
            return original(*args, **kwargs)
        return wrapper

    for name, original in originals.items():
        setattr(wrappers, name, counting(original))  # install() looks the wrappers up here
    try:
        with mxpatch_bind.patched():
            for _ in range(count):
                mod.forward_backward(batch)
                mod.update()
            # MXNet 1.9.1 can crash (SIGFPE/SIGSEGV in CommCPU::ReduceSumCPU) when a module
            # whose kvstore still has reduces queued is freed: let them finish first.
            mx.nd.waitall()
    finally:
        for name, original in originals.items():
            setattr(wrappers, name, original)
    return len(calls) / count


def _time_calls(function, count, patched):
    import mxpatch_bind
    if patched:
        mxpatch_bind.install()
    try:
        with common.Clock(count) as clock:
            for _ in range(count):
                function()
    finally:
        if patched:
            mxpatch_bind.uninstall()
    return clock


def _dispatch(mx, rounds, tiny):
    mod = _stock_module(mx, common.small_cnn(), (16, 3, 32, 32), (16,))
    data, label = mod.data_shapes, mod.label_shapes
    calls = {
        "Module.reshape, unchanged shapes": lambda: mod.reshape(data, label),
        "Module.bind, already bound": lambda: mod.bind(data, label),
    }
    count = 20 if tiny else 2000
    results = {}
    for name, function in calls.items():
        common.progress("overhead: %s, %d rounds of %d calls" % (name, rounds, count))
        results[name] = common.interleaved({
            "unpatched": lambda: _time_calls(function, count, False),
            "patched": lambda: _time_calls(function, count, True),
        }, rounds)
    return results


def _result(steps, dispatch, rounds, tiny):
    step_rows, call_rows, targets = [], [], []
    for name, samples in steps.items():
        unpatched, patched = common.walls(samples["unpatched"]), common.walls(samples["patched"])
        control = common.walls(samples["unpatched, control"])
        ratio = common.paired_ratio(patched, unpatched)
        step_rows.append({"network": name, "unpatched_ms": 1e3 * common.median(unpatched),
                          "patched_ms": 1e3 * common.median(patched), "ratio": ratio,
                          "spread": common.spread([p / u for p, u in zip(patched, unpatched)]),
                          "control_ratio": common.paired_ratio(control, unpatched),
                          "control_spread": common.spread(
                              [c / u for c, u in zip(control, unpatched)]),
                          "patch_calls_per_step": samples["patch entered per step"]})
        targets.append(common.target("%s: patched / unpatched step time" % name, ratio,
                                     "<= 1.01", ratio <= 1.01))
    for name, samples in dispatch.items():
        unpatched, patched = common.walls(samples["unpatched"]), common.walls(samples["patched"])
        call_rows.append({"call": name, "unpatched_ns": 1e9 * common.median(unpatched),
                          "patched_ns": 1e9 * common.median(patched),
                          "added_ns": 1e9 * common.median(
                              [p - u for p, u in zip(patched, unpatched)])})
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "devices": 2},
            "rows": step_rows, "dispatch": call_rows, "targets": targets}


def format_table(result):
    steps = common.format_table(
        ["training step (2 CPU contexts)", "unpatched ms", "patched ms", "ratio", "± ratio",
         "A/A control ratio", "± control", "patch calls/step"],
        [[r["network"], r["unpatched_ms"], r["patched_ms"], "%.4f" % r["ratio"],
          "%.1f%%" % (100 * r["spread"]), "%.4f" % r["control_ratio"],
          "%.1f%%" % (100 * r["control_spread"]), r["patch_calls_per_step"]]
         for r in result["rows"]])
    calls = common.format_table(
        ["stock-form call", "unpatched ns", "patched ns", "added ns"],
        [[r["call"], r["unpatched_ns"], r["patched_ns"], r["added_ns"]]
         for r in result["dispatch"]])
    return steps + "\n\n" + calls + "\n" + common.format_targets(result["targets"])
