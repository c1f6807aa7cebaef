"""Benchmark 5: what installing and removing the patch costs (MXNet already imported)."""

from . import common

NAME = "lifecycle"


def run(tiny=False, rounds=None):
    """Microseconds per install()+uninstall() cycle and per patched() enter+exit."""
    import mxnet  # noqa: F401  (install() patches at once only once MXNet is imported)

    import mxpatch_bind

    rounds = rounds or (2 if tiny else 15)
    count = 20 if tiny else 2000

    def install_cycle():
        mxpatch_bind.install()
        mxpatch_bind.uninstall()

    def patched_block():
        with mxpatch_bind.patched():
            pass

    def nested_install():
        # With the patch already in force (an outer install): only the count changes.
        mxpatch_bind.install()
        mxpatch_bind.uninstall()

    def timed_nested():
        mxpatch_bind.install()
        try:
            return _time(nested_install, count)
        finally:
            mxpatch_bind.uninstall()

    common.progress("lifecycle: %d rounds of %d cycles" % (rounds, count))
    samples = common.interleaved({
        "install() + uninstall()": lambda: _time(install_cycle, count),
        "with patched(): enter + exit": lambda: _time(patched_block, count),
        "install() + uninstall(), already installed": timed_nested,
    }, rounds)
    rows, targets = [], []
    for name, clocks in samples.items():
        micros = 1e6 * common.median(common.walls(clocks))
        rows.append({"operation": name, "us": micros,
                     "spread": common.spread(common.walls(clocks))})
        targets.append(common.target(name, micros, "< 20 us", micros < 20))
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "cycles_per_round": count},
            "rows": rows, "targets": targets}


def _time(function, count):
    with common.Clock(count) as clock:
        for _ in range(count):
            function()
    return clock


def format_table(result):
    table = common.format_table(["operation", "µs", "±"],
                                [[r["operation"], r["us"], "%.0f%%" % (100 * r["spread"])]
                                 for r in result["rows"]])
    return table + "\n" + common.format_targets(result["targets"])
