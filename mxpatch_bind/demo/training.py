"""The demo's two trainings: the task, the two feeds, and the epochs run in interleaved pairs
(private)."""

import time
from typing import Any, Dict, List

from .nets import conv_classifier
from .progress import Progress

CLASSES = 3


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
        from ..data.io import PerDeviceIter
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
        self.epoch_rates: List[float] = []  # samples/s of each epoch, on this run's clock

    def train_epoch(self, epoch: int) -> None:
        """One epoch; its time is added to this run's own clock, its rate to ``epoch_rates``."""
        import mxnet as mx
        self.metric.reset()
        mx.nd.waitall()
        start, done_before = time.perf_counter(), self.done
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
        seconds = time.perf_counter() - start
        self.seconds += seconds
        self.epoch_rates.append((self.done - done_before) / seconds)
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


def epoch_order(runs: List[Run], epoch: int) -> List[Run]:
    """The runs in the order they train ``epoch``: stock first in even epochs, per-device
    first in odd ones.

    Each epoch is a pair, one epoch of each run, and each pair's ratio one measurement. On a
    machine whose load drifts (a shared one), the run that always went second would always
    meet the later load; taking turns leaves the drift to the pairs' spread.

    Examples
    --------
    >>> epoch_order(["stock", "per-device"], 1)
    ['per-device', 'stock']
    """
    return list(runs) if epoch % 2 == 0 else list(reversed(runs))


def run_both(args) -> List[Dict[str, Any]]:
    """Train both runs from the same initial parameters, their epochs in interleaved pairs.

    Returns
    -------
    list of dict
        Per run, stock first: ``run`` (its name), ``samples_per_s`` (all epochs),
        ``epoch_samples_per_s`` (each epoch's), ``timeline``, ``padding`` (the padded-pixel
        fraction) and ``accuracy`` (on the validation images).
    """
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
        batches: Any
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
    for epoch in range(args.epochs):
        for run in epoch_order(runs, epoch):
            run.train_epoch(epoch)
    for run in runs:
        run.progress.close()
    return [{"run": run.name, "samples_per_s": run.samples_per_s,
             "epoch_samples_per_s": run.epoch_rates, "timeline": run.timeline,
             "padding": run.batches.padding_fraction(),
             "accuracy": accuracy(symbol, run.mod.get_params(), val_images, val_labels)}
            for run in runs]
