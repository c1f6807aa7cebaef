"""The README's benchmark figures, written from the JSON of one benchmark run.

``python -m benchmarks.readme_figures [DIR]`` prints the README's "From one benchmark run"
lines from ``DIR/{variable,reshape,memory}.json`` (default ``docs/_static/bench``, the run the
chart ``docs/_static/bench.png`` is drawn from); ``tests/tools/test_readme_figures.py`` checks
that README.md holds them as printed, so the README, the chart and the JSON cannot drift apart.
"""

import json
import os
import sys

RESULTS = os.path.join("docs", "_static", "bench")


def _load(out_dir, name):
    with open(os.path.join(out_dir, name + ".json")) as stream:
        return json.load(stream)


def lines(out_dir=RESULTS):
    """The README's bullet lines for the variable, reshape and memory results in ``out_dir``."""
    reshape = {(row["scenario"], row["strategy"]): row
               for row in _load(out_dir, "reshape")["rows"]}
    new, new_rebind = reshape["never seen", "per-device reshape"], reshape[
        "never seen", "shared-module rebind"]
    seen, seen_rebind = reshape["recurring", "per-device reshape"], reshape[
        "recurring", "shared-module rebind"]
    modes = {row["mode"][:3]: row for row in _load(out_dir, "variable")["rows"]}
    memory = {row["configuration"]: row for row in _load(out_dir, "memory")["rows"]}
    capped = memory["per-device, bound at largest"]["growth_after_warmup"]
    stock = memory["stock, unbounded"]["growth_after_warmup"]
    return [
        f"- A shape change: {new['ms_per_change']:.2f} ms per-device reshape vs "
        f"{new_rebind['ms_per_change']:.2f} ms for the forks' shared-module rebind "
        f"({new_rebind['cost_vs_reshape']:.2f}×); {seen['ms_per_change']:.3f} ms for a "
        f"recurring shape ({seen_rebind['cost_vs_reshape']:.0f}×).",
        f"- Detection-like sizes (32–160 px, 2 devices × 2 images): "
        f"{modes['(b)']['vs_stock']:.2f}× the steps/s of stock padding in arrival order, "
        f"{modes['(d)']['vs_stock']:.2f}× with `PerDeviceIter` grouping (`group_window=8`).",
        f"- Memory over 1,000 random shapes: {100 * (capped - 1):+.1f} % after warm-up with the "
        f"default oneDNN cache cap (stock MXNet: {stock:.1f}×).",
    ]


def tables(out_dir=RESULTS):
    """The tables under the chart in docs/performance.md, as Markdown lines, from the same run."""
    variable = _load(out_dir, "variable")["rows"]
    reshape = _load(out_dir, "reshape")["rows"]
    memory = _load(out_dir, "memory")["rows"]
    out = ["| variable sizes, 2 contexts | steps/s | × stock | serial ideal | parallel ideal |",
           "|---|---|---|---|---|"]
    out += [f"| {row['mode']} | {row['steps_per_s']:.3g} | {row['vs_stock']:.2f} | "
            f"{row['serial_ideal']:.2f} | {row['parallel_ideal']:.2f} |" for row in variable]
    out += ["", "| shapes | strategy | ms per change | × reshape |", "|---|---|---|---|"]
    out += [f"| {row['scenario']} | {row['strategy']} | {row['ms_per_change']:.3g} | "
            f"{row['cost_vs_reshape']:.3g} |" for row in reshape]
    out += ["", "| memory, 1,000 random shapes | RSS after warm-up | final | growth |",
            "|---|---|---|---|"]
    out += [f"| {row['configuration']} | {row['rss_after_warmup_mb']:.0f} MB | "
            f"{row['rss_final_mb']:.0f} MB | {row['growth_after_warmup']:.3f} |"
            for row in memory]
    return out


if __name__ == "__main__":
    print("\n".join(lines(*sys.argv[1:]) + [""] + tables(*sys.argv[1:])))
