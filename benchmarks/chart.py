"""One PNG from the benchmarks' JSON results: variable-size speed-ups, reshape costs, memory.

Drawn to be read at the documentation's page width (about 1200 px for this 1700 px image):
every text is FONT_SIZE points, the legends as large as the axis labels, and each legend
sits below its panel, where it cannot cover a bar or a line.
"""

import json
import os

FONT_SIZE = 13  # points; at 110 dpi and 0.7x page scale, about 14 px on the page
DPI = 110


def load(out_dir, name):
    path = os.path.join(out_dir, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as stream:
        return json.load(stream)


def draw(out_dir, path):
    """Draw whichever of the variable, reshape and memory results ``out_dir`` holds."""
    import matplotlib.pyplot as plt
    figure = figure_of(out_dir)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def figure_of(out_dir):
    """The chart's figure (for :func:`draw`, and for tests that measure its layout)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(name, result) for name, result in
              (("variable", load(out_dir, "variable")), ("reshape", load(out_dir, "reshape")),
               ("memory", load(out_dir, "memory"))) if result is not None]
    if not panels:
        raise SystemExit("no variable/reshape/memory results in %s to draw" % out_dir)
    with plt.rc_context({"font.size": FONT_SIZE, "axes.titlesize": FONT_SIZE,
                         "axes.labelsize": FONT_SIZE, "legend.fontsize": FONT_SIZE,
                         "xtick.labelsize": FONT_SIZE, "ytick.labelsize": FONT_SIZE}):
        figure, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 6.2))
        axes = axes if len(panels) > 1 else [axes]
        for axis, (name, result) in zip(axes, panels):
            globals()["_" + name](axis, result)
            _legend_below(axis)
        figure.set_dpi(DPI)
        figure.tight_layout()
    return figure


def _legend_below(axis):
    """The legend under the panel's x labels (and its x title), one entry per row: it
    covers nothing."""
    below = -0.3 if axis.get_xlabel() else -0.2
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, below), ncol=1, frameon=False)


# The variable benchmark's modes (benchmarks/variable.py MODES) by their letter, as bars name them.
MODE_NAMES = {"(a)": "stock,\npadded", "(b)": "per device,\narrival",
              "(c)": "grouped,\nwindow 1", "(d)": "grouped,\nwindow 8"}


def mode_name(mode):
    """A bar's name for a variable-size mode: "(b) per-device, arrival order" -> "per device,
    arrival order" (on two lines); a mode of another form, its own words."""
    letter, _, words = mode.partition(" ")
    return MODE_NAMES.get(letter, words or mode)


def _label_bars(axis, bars, texts, inside=False):
    """Each bar's figure: above it, or inside its top (where markers sit above the bar)."""
    for bar, text in zip(bars, texts):
        axis.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      xytext=(0, -4 if inside else 3), textcoords="offset points",
                      ha="center", va="top" if inside else "bottom",
                      color="white" if inside else "black")


def _variable(axis, result):
    rows = result["rows"]
    positions = range(len(rows))
    bars = axis.bar(positions, [row["vs_stock"] for row in rows], color="C0",
                    label="measured steps/s")
    _label_bars(axis, bars, ["%.2f\u00d7" % row["vs_stock"] for row in rows], inside=True)
    axis.scatter(positions, [row["serial_ideal"] for row in rows], marker="_", s=600,
                 color="C3", label="serial ideal (pixels)", zorder=3)
    axis.scatter(positions, [row["parallel_ideal"] for row in rows], marker="_", s=600,
                 color="C2", label="parallel ideal (busiest device)", zorder=3)
    axis.set_xticks(list(positions))
    axis.set_xticklabels([mode_name(row["mode"]) for row in rows])
    axis.set_ylabel("steps/s, \u00d7 stock padding")
    axis.set_title("Variable-size images, 2 CPU contexts")
    axis.set_ylim(0, max(max(row["serial_ideal"] for row in rows) * 1.25, 1.5))


def _reshape(axis, result):
    scenarios = []
    for row in result["rows"]:
        if row["scenario"] not in scenarios:
            scenarios.append(row["scenario"])
    strategies = []
    for row in result["rows"]:
        if row["strategy"] not in strategies:
            strategies.append(row["strategy"])
    width = 0.8 / len(strategies)
    for index, strategy in enumerate(strategies):
        values = [next(r["ms_per_change"] for r in result["rows"]
                       if r["scenario"] == scenario and r["strategy"] == strategy)
                  for scenario in scenarios]
        bars = axis.bar([i + index * width for i in range(len(scenarios))], values, width,
                        label=strategy)
        _label_bars(axis, bars, ["%.3g" % value for value in values])
    axis.set_xticks([i + width * (len(strategies) - 1) / 2 for i in range(len(scenarios))])
    axis.set_xticklabels(["%s shapes" % scenario for scenario in scenarios])
    axis.set_ylabel("ms per change of\nboth devices' shapes")
    axis.set_title("Cost of a shape change, ms")
    axis.set_ylim(0, axis.get_ylim()[1] * 1.1)  # room for the bars' figures


def _memory(axis, result):
    """The configurations that grow without bound, each its own line; the bounded ones, which
    lie on top of each other, thin grey lines under one legend entry (their table:
    docs/performance.md)."""
    bounded = 0
    for row in result["rows"]:
        steps, rss = zip(*row["trace"])
        megabytes = [value / 2 ** 20 for value in rss]
        if "unbounded" in row["configuration"]:
            axis.plot(steps, megabytes, linewidth=2.5, label=row["configuration"])
        else:
            bounded += 1
            axis.plot(steps, megabytes, color="0.55", linewidth=1,
                      label=None if bounded > 1 else "BOUNDED")
    for line in axis.get_lines():
        if line.get_label() == "BOUNDED":
            line.set_label("%d capped or oneDNN-off configurations" % bounded)
    axis.set_xlabel("random shape changes")
    axis.set_ylabel("resident memory, MB")
    axis.set_title("Memory over random shapes, MB")
    axis.set_ylim(bottom=0)
