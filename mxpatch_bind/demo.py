"""``python -m mxpatch_bind demo``: train on variable-size images, stock padding vs per device.

A small CNN learns a synthetic task (which colour channel holds a bright square, in images
of random size) on CPU contexts, twice from the same initial parameters: once the stock way,
every batch padded to its largest image, and once with per-device shapes fed by
``PerDeviceIter``, each device padded only to its own images. A progress bar per run shows
its throughput on its own clock, the figure the final table gives (tqdm if installed, else
MXNet's Speedometer, on stderr; bars only on a terminal, so a log file gets plain lines);
the table compares samples/s, padded pixels and accuracy.
Exit status 1 if either run fails to learn; 2 for a bad option or a missing extra (--plot needs
matplotlib, --progress tqdm needs tqdm: the one line names the pip install).
"""

import argparse
import importlib
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from ._cli_types import (
    Parser,
    UsageError,
    description,
    fraction,
    nonneg_int,
    positive_int,
    run_parsed,
)
from ._demo_progress import Progress
from ._nets import conv_classifier

CLASSES = 3


def build_parser(prog: str = "python -m mxpatch_bind demo") -> Parser:
    """The demo's parser (what ``python -m mxpatch_bind.demo`` parses with).

    Parameters
    ----------
    prog : str
        The program name in usage and errors.

    Returns
    -------
    Parser
        Bad values (``--epochs 0``, ``--devices -1``, ``--min-accuracy nan``) are usage
        errors: one line on stderr, exit status 2.

    Examples
    --------
    >>> build_parser().parse_args(["--epochs", "2"]).epochs
    2
    """
    parser = Parser(prog=prog, description=description(__doc__),
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the demo's options, each with its type and range, to ``parser``.

    Examples
    --------
    >>> parser = Parser(prog="demo")
    >>> add_arguments(parser)
    >>> parser.parse_args(["--devices", "3"]).devices
    3
    """
    parser.add_argument("--epochs", type=positive_int, default=3,
                        help="epochs per run (default 3)")
    parser.add_argument("--devices", type=positive_int, default=2,
                        help="CPU contexts (default 2)")
    parser.add_argument("--per-device", type=positive_int, default=4, metavar="N",
                        help="images per device per batch (default 4)")
    parser.add_argument("--sizes", type=_sizes, default=(32, 128), metavar="MIN,MAX",
                        help="image side lengths in pixels (default 32,128)")
    parser.add_argument("--samples", type=positive_int, default=512,
                        help="training images (default 512; a quarter as many validate)")
    parser.add_argument("--group-window", type=positive_int, default=8, metavar="BATCHES",
                        help="PerDeviceIter's grouping window: batches whose images are "
                             "grouped by size together (default 8; 1 only arranges each "
                             "batch across the devices)")
    parser.add_argument("--seed", type=nonneg_int, default=0,
                        help="data and initialisation seed")
    parser.add_argument("--min-accuracy", type=fraction, default=0.85, metavar="FRACTION",
                        help="validation accuracy each run must reach, 0 to 1 (default 0.85)")
    parser.add_argument("--plot", metavar="PNG", help="draw throughput and padding (matplotlib)")
    parser.add_argument("--progress", choices=["auto", "tqdm", "speedometer", "none"],
                        default="auto", help="progress display on stderr (default auto: a "
                        "tqdm bar on a terminal when tqdm is installed, else Speedometer's "
                        "plain log lines, also to a file or a pipe)")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Parse and cross-check the options: at least one batch of training images.

    Examples
    --------
    >>> parse_args(["--samples", "16", "--devices", "2", "--per-device", "4"]).samples
    16
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check(args)
    except UsageError as error:
        parser.error(str(error))
    return args


# The optional extras the options need: option -> (module, the setup.cfg extra).
EXTRAS = {"--plot": ("matplotlib", "plot"), "--progress tqdm": ("tqdm", "progress")}


def check(args: argparse.Namespace) -> None:
    """Raise :class:`~mxpatch_bind._cli_types.UsageError` unless ``args`` hold one batch and
    the extras the options ask for are installed (before any work, naming the fix).

    Examples
    --------
    >>> check(build_parser().parse_args(["--samples", "8"]))
    """
    if args.samples < args.devices * args.per_device:
        raise UsageError(f"--samples {args.samples} is less than one batch of "
                         f"{args.devices * args.per_device} images (--devices {args.devices} x "
                         f"--per-device {args.per_device})")
    asked = {"--plot": args.plot, "--progress tqdm": args.progress == "tqdm"}
    for option, (module, extra) in EXTRAS.items():
        try:
            if asked[option]:
                importlib.import_module(module)  # not find_spec: a broken install fails too
        except ImportError as error:
            raise UsageError(f"{option} needs {module} ({error}): pip install \".[{extra}]\" in "
                             "the mxpatch_bind checkout") from None


def _sizes(text: str) -> tuple:
    try:
        low, high = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN,MAX in pixels, e.g. 32,128; got {text!r}") from None
    if not 8 <= low <= high:
        raise argparse.ArgumentTypeError(f"expected 8 <= MIN <= MAX; got {text!r}")
    return low, high


# --------------------------------------------------------------------------- the task
def make_images(count, sizes, rng):
    """Images of random size; the label is the channel of the one bright square."""
    images, labels = [], []
    for _ in range(count):
        height, width = rng.randint(sizes[0], sizes[1] + 1, size=2)
        image = rng.uniform(0, 0.5, (3, height, width)).astype("float32")
        side = max(2, int(min(height, width) * rng.uniform(0.2, 0.5)))
        top, left = rng.randint(0, height - side + 1), rng.randint(0, width - side + 1)
        label = rng.randint(CLASSES)
        image[label, top:top + side, left:left + side] += 0.5
        images.append(image)
        labels.append(label)
    return images, labels


def network():
    """Two convolutions, global max pooling, a classifier: any image size."""
    # Wide enough that compute, not per-step overhead, sets the pace (as in detection).
    return conv_classifier(CLASSES, filters=(32, 64), pool="max")


# --------------------------------------------------------------------------- the two feeds
class StockBatches:
    """Stock batches: shuffled each epoch, every image padded to the batch's largest."""

    def __init__(self, images, labels, batch_size, seed):
        self.images, self.labels, self.batch_size, self.seed = images, labels, batch_size, seed
        self.epoch = 0
        self.real_pixels = self.total_pixels = 0

    def __iter__(self):
        import mxnet as mx
        import numpy as np
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.images))
        self.epoch += 1
        usable = len(order) - len(order) % self.batch_size
        for start in range(0, usable, self.batch_size):
            chosen = [self.images[i] for i in order[start:start + self.batch_size]]
            height = max(image.shape[1] for image in chosen)
            width = max(image.shape[2] for image in chosen)
            data = np.zeros((len(chosen), 3, height, width), dtype="float32")
            for row, image in enumerate(chosen):
                data[row, :, :image.shape[1], :image.shape[2]] = image
            self.real_pixels += sum(image.shape[1] * image.shape[2] for image in chosen)
            self.total_pixels += len(chosen) * height * width
            labels = [self.labels[i] for i in order[start:start + self.batch_size]]
            yield mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(labels)])

    def padding_fraction(self):
        return 1 - self.real_pixels / self.total_pixels


class PerDeviceBatches:
    """``PerDeviceIter`` batches (shuffled, grouped by size), with its padding counted."""

    def __init__(self, images, labels, devices, per_device, seed, group_window):
        from .data.io import PerDeviceIter
        self.iter = PerDeviceIter(images, labels, num_devices=devices,
                                  batch_per_device=per_device, shuffle=True, seed=seed,
                                  group_window=group_window)
        self.padding = self.total = 0
        self.first = True

    def __iter__(self):
        if not self.first:
            self.iter.reset()
        self.first = False
        stats = self.iter.padding_stats()
        self.padding += stats.padding_pixels
        self.total += stats.total_pixels
        return iter(self.iter)

    def padding_fraction(self):
        return self.padding / self.total


# --------------------------------------------------------------------------- training
class Run:
    """One training run: a module, its batches, and the time it has trained so far."""

    def __init__(self, name: str, mod: Any, batches: Any, batch_size: int,
                 progress: Progress) -> None:
        import mxnet as mx
        self.name, self.mod, self.batches, self.batch_size = name, mod, batches, batch_size
        self.progress = progress
        self.metric = mx.metric.Accuracy()
        self.seconds, self.done = 0.0, 0
        self.timeline: List[tuple] = []

    def train_epoch(self, epoch: int) -> None:
        """One epoch; its time is added to this run's own clock."""
        import mxnet as mx
        self.metric.reset()
        mx.nd.waitall()
        start = time.perf_counter()
        for nbatch, batch in enumerate(self.batches):
            self.mod.forward_backward(batch)
            self.mod.update()
            self.mod.update_metric(self.metric, batch.label)
            self.done += self.batch_size
            # The metric reads the outputs, so the step has finished when it returns.
            trained = self.seconds + time.perf_counter() - start
            self.timeline.append((trained, self.done))
            self.progress.update(epoch, nbatch, self.metric, self.batch_size,
                                 self.done / trained)
        mx.nd.waitall()
        self.seconds += time.perf_counter() - start
        self.progress.end_epoch(epoch, self.metric, self.samples_per_s)

    @property
    def samples_per_s(self) -> float:
        return self.done / self.seconds


def accuracy(symbol, params, images, labels):
    """Validation accuracy, one unpadded image at a time on cpu(0)."""
    import mxnet as mx
    import numpy as np
    mod = mx.mod.Module(symbol, context=mx.cpu(0))
    mod.bind([("data", (1,) + images[0].shape)], [("softmax_label", (1,))], for_training=False)
    mod.set_params(*params)
    correct = 0
    for image, label in zip(images, labels):
        mod.forward(mx.io.DataBatch([mx.nd.array(image[None])], [mx.nd.array([label])]),
                    is_train=False)
        correct += int(np.argmax(mod.get_outputs()[0].asnumpy()) == label)
    return correct / len(images)


def run_both(args):
    import mxnet as mx
    import numpy as np

    import mxpatch_bind

    rng = np.random.RandomState(args.seed)
    train_images, train_labels = make_images(args.samples, args.sizes, rng)
    val_images, val_labels = make_images(max(32, args.samples // 4), args.sizes, rng)
    symbol = network()
    contexts = [mx.cpu(i) for i in range(args.devices)]
    batch_size = args.devices * args.per_device
    num_batches = args.samples // batch_size
    mx.random.seed(args.seed)
    initial = None
    runs = []
    for position, name in enumerate(("stock, padded", "per-device")):
        mod = mx.mod.Module(symbol, context=contexts)
        if name == "per-device":
            batches = PerDeviceBatches(train_images[:num_batches * batch_size],
                                       train_labels[:num_batches * batch_size],
                                       args.devices, args.per_device, args.seed,
                                       args.group_window)
            with mxpatch_bind.patched():
                mod.bind(batches.iter.provide_data, batches.iter.provide_label)
        else:
            batches = StockBatches(train_images, train_labels, batch_size, args.seed)
            shape = (batch_size, 3, args.sizes[1], args.sizes[1])
            mod.bind([("data", shape)], [("softmax_label", (batch_size,))])
        if initial is None:
            mod.init_params(mx.init.Xavier(rnd_type="gaussian", magnitude=2))
            initial = mod.get_params()
        else:
            mod.init_params(arg_params=initial[0], aux_params=initial[1])
        mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.005})
        progress = Progress(args.progress, name, args.epochs * num_batches * batch_size,
                            batch_size, position)
        runs.append(Run(name, mod, batches, batch_size, progress))
    # Epochs alternate between the runs, so both see the same machine (it may be shared).
    for epoch in range(args.epochs):
        for run in runs:
            run.train_epoch(epoch)
    for run in runs:
        run.progress.close()
    return [{"run": run.name, "samples_per_s": run.samples_per_s, "timeline": run.timeline,
             "padding": run.batches.padding_fraction(),
             "accuracy": accuracy(symbol, run.mod.get_params(), val_images, val_labels)}
            for run in runs]


def speed_up(results: List[Dict[str, Any]]) -> float:
    """Samples/s of the per-device run over the stock run's."""
    stock, per_device = results
    return per_device["samples_per_s"] / stock["samples_per_s"]


def settings(args: argparse.Namespace) -> str:
    """The settings a figure depends on, in words."""
    return (f"{args.devices} devices, {args.per_device} images each, sizes {args.sizes[0]}-"
            f"{args.sizes[1]} px, {_count(args.epochs, 'epoch')}, grouping window "
            f"{args.group_window}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def report(results: List[Dict[str, Any]], args: argparse.Namespace) -> bool:
    """Print the comparison table; whether both runs reached ``--min-accuracy``."""
    lines = ["", f"{'run':<16} {'samples/s':>10} {'padded pixels':>14} {'val accuracy':>14}"]
    for result in results:
        lines.append(f'{result["run"]!s:<16} {result["samples_per_s"]:10.1f} '
                     f'{100 * result["padding"]:13.1f}% {100 * result["accuracy"]:13.1f}%')
    lines.append(f"speed-up of per-device over stock: {speed_up(results):.2f}x  ({settings(args)})")
    failed = [r["run"] for r in results if r["accuracy"] < args.min_accuracy]
    if failed:
        lines.append(f'FAILED to learn (validation accuracy below {100 * args.min_accuracy:.0f}%): '
                     f'{", ".join(failed)}')
    else:
        lines.append(f"both runs learned (validation accuracy >= {(100 * args.min_accuracy):.0f}%)")
    print("\n".join(lines))
    return not failed


def figure_title(results: List[Dict[str, Any]], args: argparse.Namespace) -> str:
    """The ``--plot`` figure's title: the speed-up, and the settings it was measured with."""
    return (f"per-device shapes: {speed_up(results):.2f}x the samples/s of stock padding\n("
            f"{settings(args)})")


def plot(results: List[Dict[str, Any]], args: argparse.Namespace, path: str) -> None:
    """Throughput over the run and padded-pixel fraction of both runs, as a PNG.

    The figure's title gives the speed-up and the settings it was measured with.
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run both trainings, print the comparison; 0 if both reach ``--min-accuracy``.

    Parameters
    ----------
    argv : sequence of str, optional
        The options after ``demo`` (see ``python -m mxpatch_bind demo --help``).

    Returns
    -------
    int
        0 when both runs learned, 1 when one did not, or when MXNet is missing or numpy too
        new for it (one line on stderr names the fix); a usage error exits with status 2.

    Examples
    --------
    ::

        $ python -m mxpatch_bind demo --epochs 1 > log.txt
    """
    return run_parsed(build_parser(), argv, run)


def run(args: argparse.Namespace) -> int:
    """Run the demo ``args`` describe (from a parser :func:`add_arguments` filled).

    Returns
    -------
    int
        0 when both runs learned, 1 when one did not.

    Raises
    ------
    mxpatch_bind._cli_types.UsageError
        Fewer ``--samples`` than one batch.
    mxpatch_bind._mxnet_env.MXNetEnvironmentError
        MXNet is missing or numpy too new for it.

    Examples
    --------
    >>> run(build_parser().parse_args(["--epochs", "1"]))  # doctest: +SKIP
    0
    """
    check(args)
    from ._mxnet_env import import_mxnet, quiet_subgraph_log
    quiet_subgraph_log()  # its lines would break the progress bars
    import_mxnet()
    # First, before anything the training logs (a broken environment says only its fix).
    print(f"Training a small CNN on {args.samples} images of {args.sizes[0]}-{args.sizes[1]} px "
          f"for {_count(args.epochs, 'epoch')} on {_count(args.devices, 'CPU context')}, twice "
          "from the same start: stock (every batch padded to its largest image), then per "
          "device (PerDeviceIter: each device padded to its own images).", flush=True)
    results = run_both(args)
    learned = report(results, args)
    if args.plot:
        plot(results, args, args.plot)
        print(f"chart: {args.plot}")
    print("Next: docs/quickstart.rst, whose complete script (python examples/quickstart.py) "
          "trains per device in a few seconds; python -m mxpatch_bind doctor checks this "
          "machine; README.md, 'Migrating from the Deformable-ConvNets fork'.")
    return 0 if learned else 1


if __name__ == "__main__":
    from .__main__ import main as cli_main
    sys.exit(cli_main(["demo", *sys.argv[1:]]))
