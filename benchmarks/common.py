"""Helpers the benchmarks share: interleaved timing, small networks, tables, JSON (private).

``per_device_spec`` and ``contexts_from_env`` are the tests' too (``tests/nets.py``): they
live here, beside the checkout's code, not in the wheel.
"""

import json
import logging
import os
import platform
import statistics
import sys
import time
from typing import Any, List, Optional, Sequence, Tuple

from mxpatch_bind.demo.nets import conv_classifier

Shape = Tuple[int, ...]



def per_device_spec(shapes: Sequence[Shape], labels: bool = True
                    ) -> Tuple[List[list], Optional[List[list]]]:
    """Per-device ``data_shapes`` / ``label_shapes`` for image shapes ``(n, c, h, w)``.

    Parameters
    ----------
    shapes : sequence of tuple
        One image-batch shape per device.
    labels : bool
        Whether to give ``softmax_label`` shapes (``(n,)`` per device) or ``None``.

    Examples
    --------
    >>> data, label = per_device_spec([(2, 3, 8, 8), (1, 3, 6, 10)])
    >>> data
    [[('data', (2, 3, 8, 8))], [('data', (1, 3, 6, 10))]]
    >>> label
    [[('softmax_label', (2,))], [('softmax_label', (1,))]]
    """
    data = [[("data", tuple(shape))] for shape in shapes]
    label = [[("softmax_label", (shape[0],))] for shape in shapes] if labels else None
    return data, label


def contexts_from_env(variable: str, count: int = 2) -> List[Any]:
    """``count`` contexts of the kind the environment variable ``variable`` names.

    ``cpu`` (the default, also when unset) gives ``cpu(0) ... cpu(count - 1)``, which MXNet
    treats as separate devices; ``gpu`` gives ``gpu(i % num_gpus)``. The tests read
    ``MXPATCH_TEST_CONTEXTS``, the benchmarks ``MXPATCH_BENCH_CONTEXTS``
    (``benchmarks/gpu_check.sh`` sets both to ``gpu``).

    Raises
    ------
    ValueError
        The variable holds something else, or ``gpu`` where MXNet sees no GPU.

    Examples
    --------
    >>> contexts_from_env("MXPATCH_EXAMPLE_UNSET_VARIABLE", 2)
    [cpu(0), cpu(1)]
    """
    import mxnet as mx
    kind = os.environ.get(variable, "").strip().lower() or "cpu"
    if kind == "cpu":
        return [mx.cpu(i) for i in range(count)]
    if kind != "gpu":
        raise ValueError(f"{variable}={os.environ[variable]!r}; expected 'cpu' (the default) or "
                         "'gpu'")
    num_gpus = mx.context.num_gpus()
    if not num_gpus:
        raise ValueError(f"{variable}=gpu but MXNet sees no GPU (mx.context.num_gpus() is 0)")
    return [mx.gpu(i % num_gpus) for i in range(count)]


def interleaved(cases, rounds):
    """Run every case once per round, in an order rotated each round; samples per case.

    ``cases`` maps a name to a callable that returns what it measured (seconds, or a
    :class:`Clock` reading), so each case decides what it times. Running the cases side by
    side, round after round, exposes them to the same machine noise; rotating the order
    cancels drift within a round.
    """
    names = list(cases)
    samples = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(cases[name]())
    return samples


def median(values):
    """The median of a list of numbers."""
    return statistics.median(values)


def paired_ratio(numerators, denominators):
    """Median over rounds of the per-round ratio: robust to noise that hits a whole round."""
    return statistics.median(n / d for n, d in zip(numerators, denominators))


def spread(values):
    """Relative half-range of the middle half of ``values`` (0.05 means ±5 %)."""
    if len(values) < 4:
        return (max(values) - min(values)) / (2 * statistics.median(values))
    quartiles = statistics.quantiles(values, n=4)
    return (quartiles[2] - quartiles[0]) / (2 * statistics.median(values))


class Clock:
    """Wall and calling-thread CPU seconds of a block, divided by ``count``.

    The thread's CPU time excludes time spent waiting for the CPU, so on a loaded machine it
    shows the cost of work done in the calling thread (bind, reshape, dispatch) more stably;
    MXNet's engine threads are not in it, so compute-bound steps use the wall time.
    """

    def __init__(self, count=1):
        self.count = count
        self.wall = self.cpu = None

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc_info):
        self.wall = (time.perf_counter() - self._wall) / self.count
        self.cpu = (time.thread_time() - self._cpu) / self.count
        return False


def walls(clocks):
    return [clock.wall for clock in clocks]


def cpus(clocks):
    return [clock.cpu for clock in clocks]


def rss_bytes():
    """Resident set size of this process, from /proc/self/statm (Linux)."""
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def quiet_logger():
    """A logger that drops everything: stock ``Module.bind`` warns on a repeated bind."""
    logger = logging.getLogger("mxpatch_bind.bench.quiet")
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    return logger


def contexts(count=2):
    """CPU contexts, or GPUs with ``MXPATCH_BENCH_CONTEXTS=gpu``."""
    return contexts_from_env("MXPATCH_BENCH_CONTEXTS", count)


def mlp(num_classes=10):
    """A two-layer perceptron with a softmax loss."""
    import mxnet as mx
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def small_cnn(num_classes=10, filters=(8, 16)):
    """Conv-ReLU blocks, global max pooling, a classifier: runs on any image size."""
    return conv_classifier(num_classes, filters=filters, pool="max")


def machine():
    """What the figures were measured on."""
    import mxnet as mx
    return {"python": platform.python_version(), "mxnet": mx.__version__,
            "cpus": os.cpu_count(), "platform": platform.platform(),
            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "mkldnn_cache_num": os.environ.get("MXNET_MKLDNN_CACHE_NUM")}


def command(name, tiny):
    return "python -m benchmarks %s%s" % (name, " --tiny" if tiny else "")


def target(name, value, limit, met):
    """One target line of a result: what was measured against what was aimed for."""
    return {"target": name, "value": value, "limit": limit, "met": bool(met)}


def format_table(header, rows):
    """A plain-text table: columns as wide as their widest cell, numbers right-aligned."""
    cells = [[str(cell) for cell in header]] + [[_cell(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                               for i, (cell, width) in enumerate(zip(row, widths))))
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def format_targets(targets):
    return "\n".join("%-4s %s: %s (target %s)" % ("ok" if t["met"] else "MISS", t["target"],
                                                  _cell(t["value"]), t["limit"])
                     for t in targets)


def _cell(value):
    if isinstance(value, float):
        return "%.3g" % value if abs(value) < 1000 else "%.0f" % value
    return str(value)


def write_json(result, out_dir):
    """Write ``result`` to ``out_dir/<benchmark>.json``; returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, result["benchmark"] + ".json")
    with open(path, "w") as stream:
        json.dump(result, stream, indent=2, sort_keys=True)
        stream.write("\n")
    return path


def progress(message):
    """A line on stderr: benchmarks take a while and the table comes at the end."""
    print(message, file=sys.stderr, flush=True)
