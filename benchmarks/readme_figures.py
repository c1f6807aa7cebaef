"""The README's benchmark and demo figures, written from the JSON of one run each.

``python -m benchmarks.readme_figures [DIR]`` prints the README's "From one benchmark run"
lines from ``DIR/{variable,reshape,memory}.json`` (default ``docs/_static/bench``, the run the
chart ``docs/_static/bench.png`` is drawn from), then the README's demo line and the table of
docs/performance.md's demo section from ``docs/_static/demo.json`` (written by the demo's
``--json``, in the run that drew ``docs/_static/demo.png``); ``tests/tools/test_readme_figures.py``
checks that README.md and docs/performance.md hold them as printed, so the pages, the charts
and the JSON cannot drift apart.
"""

import json
import os
import sys

RESULTS = os.path.join("docs", "_static", "bench")
DEMO = os.path.join("docs", "_static", "demo.json")
DEMO_COMMAND = ("python -m mxpatch_bind demo --plot docs/_static/demo.png "
                "--json docs/_static/demo.json")


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


def _demo(path):
    with open(path) as stream:
        return json.load(stream)


def demo_line(path=DEMO):
    """The README's line for the demo: the median of its pairs, their range, and the day,
    the load and (when the pairs straddle 1.0) the demo's own plain verdict."""
    result = _demo(path)
    stock, per_device = result["runs"]
    accurate = ("both runs 100 % accurate" if stock["accuracy"] == per_device["accuracy"] == 1
                else f"validation accuracy {100 * stock['accuracy']:.0f} % and "
                     f"{100 * per_device['accuracy']:.0f} %")
    verdict = f" ({result['caveat']})" if result["caveat"] else ""
    return (f"- `python -m mxpatch_bind demo`: {result['median']:.2f}× images/s, the median of "
            f"{len(result['pair_ratios'])} interleaved epoch pairs (range {result['low']:.2f}–"
            f"{result['high']:.2f}×){verdict}; padded pixels {100 * stock['padding']:.0f} % → "
            f"{100 * per_device['padding']:.0f} %, {accurate} ({result['date']}, load average "
            f"{result['load_average']:.1f} on {result['cpus']} cores; `{DEMO_COMMAND}`).")


def demo_table(path=DEMO):
    """docs/performance.md's demo table and the pairs' line, from the same run."""
    result = _demo(path)
    out = [f"The run of {result['date']}, load average {result['load_average']:.1f} on "
           f"{result['cpus']} cores ({result['settings']}):", "",
           "| run | images/s | each epoch | padded pixels | validation accuracy |",
           "|---|---|---|---|---|"]
    for run in result["runs"]:
        epochs = ", ".join(f"{rate:.1f}" for rate in run["epoch_samples_per_s"])
        out.append(f"| {run['run']} | {run['samples_per_s']:.1f} | {epochs} | "
                   f"{100 * run['padding']:.1f} % | {100 * run['accuracy']:.0f} % |")
    ratios = ", ".join(f"{ratio:.2f}×" for ratio in result["pair_ratios"])
    out += ["", f"Pairs (per-device over stock, epoch by epoch): {ratios}; median "
                f"{result['median']:.2f}×, range {result['low']:.2f}–{result['high']:.2f}×."]
    if result["caveat"]:
        out.append(f"The demo's verdict: {result['caveat']}.")
    return out


if __name__ == "__main__":
    print("\n".join(lines(*sys.argv[1:]) + [""] + tables(*sys.argv[1:]) + ["", demo_line()]
                    + [""] + demo_table()))
