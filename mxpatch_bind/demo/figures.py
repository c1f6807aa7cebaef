"""The demo's figures: the speed-up as the median of interleaved pairs with its range, the
table, the chart and the JSON record (private).

One pair is one epoch of each run, trained one after the other (``training.epoch_order``);
its ratio, per-device samples/s over stock's, is one measurement of the speed-up. On a loaded
machine single ratios scatter (2.08x, 3.35x, 1.46x and 0.82x were seen from single runs on
one), so the demo states the median of the pairs with their range, and says so in a plain
line when the pairs cannot tell which run is faster.
"""

import json
import os
import statistics
import time
from typing import Any, Dict, List, NamedTuple, Sequence

# Fewer pairs than this give no spread to judge the median by.
MIN_PAIRS = 3


class SpeedUp(NamedTuple):
    """Per-device samples/s over stock's, pair by pair, and what they allow to conclude.

    Examples
    --------
    >>> figure = speed_up_of([{"epoch_samples_per_s": [100, 110, 90]},
    ...                       {"epoch_samples_per_s": [150, 150, 180]}])
    >>> figure.ratios, figure.median, figure.conclusive
    ((1.5, 1.3636363636363635, 2.0), 1.5, True)
    """

    ratios: tuple  # one per pair (epoch), in the order they were trained

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def low(self) -> float:
        return min(self.ratios)

    @property
    def high(self) -> float:
        return max(self.ratios)

    @property
    def conclusive(self) -> bool:
        """Enough pairs, and every one on the same side of 1.0 (faster in all, or slower)."""
        return len(self.ratios) >= MIN_PAIRS and (self.low > 1 or self.high < 1)

    def summary(self) -> str:
        """``1.47x, the median of 3 pairs (range 1.41-1.52x)``."""
        return (f"{self.median:.2f}x, the median of {_count(len(self.ratios), 'pair')} (range "
                f"{self.low:.2f}-{self.high:.2f}x)")

    def caveat(self) -> str:
        """The plain line when the pairs do not allow a conclusion; empty when they do."""
        if len(self.ratios) < MIN_PAIRS:
            return (f"{_count(len(self.ratios), 'pair')} cannot show the spread of the "
                    f"speed-up: run with --epochs {MIN_PAIRS} or more to measure it")
        if self.conclusive:
            return ""
        return ("too noisy to conclude: some pairs ran faster per device, some slower (the "
                "range straddles 1.0x), so this machine was too busy to measure the "
                "difference; run again when it is quieter, or with more --epochs")


def speed_up_of(results: Sequence[Dict[str, Any]]) -> SpeedUp:
    """The pairs' ratios from :func:`~mxpatch_bind.demo.training.run_both`'s results."""
    stock, per_device = results
    return SpeedUp(tuple(fast / slow for fast, slow in zip(per_device["epoch_samples_per_s"],
                                                           stock["epoch_samples_per_s"])))


def settings(args: Any) -> str:
    """The settings a figure depends on, in words."""
    return (f"{args.devices} devices, {args.per_device} images each, sizes {args.sizes[0]}-"
            f"{args.sizes[1]} px, {_count(args.epochs, 'epoch')}, grouping window "
            f"{args.group_window}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def report(results: List[Dict[str, Any]], args: Any) -> bool:
    """Print the comparison table; whether both runs reached ``--min-accuracy``."""
    lines = ["", f"{'run':<16} {'samples/s':>10} {'padded pixels':>14} {'val accuracy':>14}"]
    for result in results:
        lines.append(f'{result["run"]!s:<16} {result["samples_per_s"]:10.1f} '
                     f'{100 * result["padding"]:13.1f}% {100 * result["accuracy"]:13.1f}%')
    figure = speed_up_of(results)
    lines.append(f"speed-up of per-device over stock: {figure.summary()}  ({settings(args)})")
    if figure.caveat():
        lines.append(figure.caveat())
    failed = [r["run"] for r in results if r["accuracy"] < args.min_accuracy]
    if failed:
        lines.append(f'FAILED to learn (validation accuracy below {100 * args.min_accuracy:.0f}%): '
                     f'{", ".join(failed)}')
    else:
        lines.append(f"both runs learned (validation accuracy >= {(100 * args.min_accuracy):.0f}%)")
    print("\n".join(lines))
    return not failed


def figure_title(results: List[Dict[str, Any]], args: Any) -> str:
    """The ``--plot`` figure's title: the speed-up with its range, and the settings."""
    figure = speed_up_of(results)
    verdict = "" if figure.conclusive else "; too noisy to conclude"
    return (f"per-device shapes: {figure.median:.2f}x the samples/s of stock padding (median of "
            f"{_count(len(figure.ratios), 'pair')}, {figure.low:.2f}-{figure.high:.2f}x"
            f"{verdict})\n({settings(args)})")


def record(results: List[Dict[str, Any]], args: Any, command: str) -> Dict[str, Any]:
    """What ``--json`` writes: the command, the day, the machine's load, the runs, the pairs.

    ``benchmarks/readme_figures.py`` renders the README's demo figure from it.
    """
    figure = speed_up_of(results)
    return {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0],  # the last minute's, as the runs end
        "settings": settings(args),
        "runs": [{key: value for key, value in result.items() if key != "timeline"}
                 for result in results],
        "pair_ratios": list(figure.ratios),
        "median": figure.median, "low": figure.low, "high": figure.high,
        "conclusive": figure.conclusive, "caveat": figure.caveat(),
    }


def write_json(results: List[Dict[str, Any]], args: Any, command: str, path: str) -> None:
    """Write :func:`record` to ``path``."""
    with open(path, "w") as stream:
        json.dump(record(results, args, command), stream, indent=1)
        stream.write("\n")


def plot(results: List[Dict[str, Any]], args: Any, path: str) -> None:
    """Throughput over the run and padded-pixel fraction of both runs, as a PNG.

    The figure's title gives the speed-up, its range and the settings it was measured with.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2),
                                         gridspec_kw={"width_ratios": [2.2, 1]})
    figure.suptitle(figure_title(results, args), fontsize=10)
    for result in results:
        times, done = zip(*result["timeline"])
        window = max(1, len(times) // 25)
        rates = [(done[i] - done[i - window]) / (times[i] - times[i - window])
                 for i in range(window, len(times))]
        left.plot(times[window:], rates, label=f'{result["run"]} ({result["samples_per_s"]:.0f} '
                                               'img/s)')
    left.set_xlabel("seconds of this run's training")
    left.set_ylabel("images / s (moving)")
    left.set_title("Training throughput")
    left.legend(loc="lower right")
    left.set_ylim(bottom=0)
    names = [result["run"] for result in results]
    right.bar(names, [100 * result["padding"] for result in results], color=["C0", "C1"])
    right.set_ylabel("padded pixels, % of processed")
    right.set_title("Padding")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
