"""``python -m mxpatch_bind demo``: train on variable-size images, stock padding vs per device.

A small CNN learns a synthetic task (which colour channel holds a bright square, in images
of random size) on CPU contexts, twice from the same initial parameters: once the stock way,
every batch padded to its largest image, and once with per-device shapes fed by
``PerDeviceIter``, each device padded only to its own images. A progress bar shows live
throughput (tqdm if installed, else MXNet's Speedometer, on stderr); a table compares
samples/s, padded pixels and accuracy. Exit status 1 if either run fails to learn.
"""

import argparse
import logging
import sys
import time

CLASSES = 3


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m mxpatch_bind demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run (default 3)")
    parser.add_argument("--devices", type=int, default=2, help="CPU contexts (default 2)")
    parser.add_argument("--per-device", type=int, default=4, metavar="N",
                        help="images per device per batch (default 4)")
    parser.add_argument("--sizes", type=_sizes, default=(32, 128), metavar="MIN,MAX",
                        help="image side lengths in pixels (default 32,128)")
    parser.add_argument("--samples", type=int, default=512,
                        help="training images (default 512; a quarter as many validate)")
    parser.add_argument("--group-window", type=int, default=8, metavar="BATCHES",
                        help="PerDeviceIter's grouping window: batches whose images are "
                             "grouped by size together (default 8; 1 only arranges each "
                             "batch across the devices)")
    parser.add_argument("--seed", type=int, default=0, help="data and initialisation seed")
    parser.add_argument("--min-accuracy", type=float, default=0.85, metavar="FRACTION",
                        help="validation accuracy each run must reach (default 0.85)")
    parser.add_argument("--plot", metavar="PNG", help="draw throughput and padding (matplotlib)")
    parser.add_argument("--progress", choices=["auto", "tqdm", "speedometer", "none"],
                        default="auto", help="progress display on stderr (default: tqdm if "
                        "installed, else Speedometer)")
    return parser


def _sizes(text):
    try:
        low, high = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected MIN,MAX in pixels, e.g. 32,128; got %r"
                                         % text) from None
    if not 8 <= low <= high:
        raise argparse.ArgumentTypeError("expected 8 <= MIN <= MAX; got %r" % text)
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
    import mxnet as mx
    net = mx.sym.Variable("data")
    # Wide enough that compute, not per-step overhead, sets the pace (as in detection).
    for index, (filters, stride) in enumerate([(32, 1), (64, 2)]):
        net = mx.sym.Convolution(net, num_filter=filters, kernel=(3, 3), pad=(1, 1),
                                 stride=(stride, stride), name="conv%d" % index)
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="max", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


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
        from .io import PerDeviceIter
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
class Progress:
    """A progress bar with live samples/s: tqdm when available, else MXNet's Speedometer."""

    def __init__(self, kind, title, total_batches, batch_size, position=0):
        self.kind = kind
        if kind == "auto":
            try:
                import tqdm as _  # noqa: F401  (an optional extra: is it installed?)
                self.kind = "tqdm"
            except ImportError:
                self.kind = "speedometer"
        self.batch_size = batch_size
        if self.kind == "tqdm":
            from tqdm import tqdm
            self.bar = tqdm(total=total_batches * batch_size, desc="%-14s" % title, unit="img",
                            file=sys.stderr, position=position, leave=True,
                            dynamic_ncols=True)
        elif self.kind == "speedometer":
            import mxnet as mx
            if not logging.getLogger().handlers:
                logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                                    format="%(message)s")
            logging.getLogger().setLevel(logging.INFO)
            self.title = title
            self.speedometer = mx.callback.Speedometer(batch_size, frequent=20)

    def update(self, epoch, nbatch, metric):
        if self.kind == "tqdm":
            self.bar.update(self.batch_size)
            name, value = metric.get()
            self.bar.set_postfix_str("epoch %d %s %.3f" % (epoch, name, value), refresh=False)
        elif self.kind == "speedometer":
            import mxnet as mx
            if nbatch == 0:
                logging.info("%s, epoch %d", self.title, epoch)
            self.speedometer(mx.model.BatchEndParam(epoch, nbatch, metric, None))

    def close(self):
        if self.kind == "tqdm":
            self.bar.close()


class Run:
    """One training run: a module, its batches, and the time it has trained so far."""

    def __init__(self, name, mod, batches, batch_size, progress):
        import mxnet as mx
        self.name, self.mod, self.batches, self.batch_size = name, mod, batches, batch_size
        self.progress = progress
        self.metric = mx.metric.Accuracy()
        self.seconds, self.done, self.timeline = 0.0, 0, []

    def train_epoch(self, epoch):
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
            self.timeline.append((self.seconds + time.perf_counter() - start, self.done))
            self.progress.update(epoch, nbatch, self.metric)
        mx.nd.waitall()
        self.seconds += time.perf_counter() - start

    @property
    def samples_per_s(self):
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
    if num_batches == 0:
        raise SystemExit("--samples %d is less than one batch of %d (devices x per-device)"
                         % (args.samples, batch_size))
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
        progress = Progress(args.progress, name, args.epochs * num_batches, batch_size,
                            position)
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


def report(results, args):
    stock, per_device = results
    lines = ["", "%-16s %10s %14s %14s" % ("run", "samples/s", "padded pixels", "val accuracy")]
    for result in results:
        lines.append("%-16s %10.1f %13.1f%% %13.1f%%" % (
            result["run"], result["samples_per_s"], 100 * result["padding"],
            100 * result["accuracy"]))
    lines.append("speed-up of per-device over stock: %.2fx  (%d devices, %d images each, "
                 "sizes %d-%d px, %d epochs, grouping window %d)"
                 % (per_device["samples_per_s"] / stock["samples_per_s"], args.devices,
                    args.per_device, args.sizes[0], args.sizes[1], args.epochs,
                    args.group_window))
    failed = [r["run"] for r in results if r["accuracy"] < args.min_accuracy]
    if failed:
        lines.append("FAILED to learn (validation accuracy below %.0f%%): %s"
                     % (100 * args.min_accuracy, ", ".join(failed)))
    else:
        lines.append("both runs learned (validation accuracy >= %.0f%%)"
                     % (100 * args.min_accuracy))
    print("\n".join(lines))
    return not failed


def plot(results, path):
    """Throughput over the run and padded-pixel fraction of both runs, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8),
                                         gridspec_kw={"width_ratios": [2.2, 1]})
    for result in results:
        times, done = zip(*result["timeline"])
        window = max(1, len(times) // 25)
        rates = [(done[i] - done[i - window]) / (times[i] - times[i - window])
                 for i in range(window, len(times))]
        left.plot(times[window:], rates, label="%s (%.0f img/s)"
                  % (result["run"], result["samples_per_s"]))
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


def main(argv=None):
    """Run both trainings, print the comparison; 0 if both reach ``--min-accuracy``."""
    args = build_parser().parse_args(argv)
    results = run_both(args)
    learned = report(results, args)
    if args.plot:
        plot(results, args.plot)
        print("chart: %s" % args.plot)
    return 0 if learned else 1


if __name__ == "__main__":
    sys.exit(main())
