"""Segmentation training on image files: label maps padded with an ignore value (255).

Generates small RGB PNG files of random size in a temporary directory, each holding a few
filled rectangles of two classes (a red one and a green one) on a dark noisy background,
with a grey PNG label map of the same size (0 background, 1 red, 2 green). ``PerDeviceIter``
reads image and map lazily (sizes from the image files' headers, decoding in gluon DataLoader
workers) and pads each device's images with 0 and its maps with 255, which
``SoftmaxOutput(use_ignore=True, ignore_label=255)`` leaves out of the loss: padding teaches
nothing. Optionally ``--balanced`` (devices may take different numbers of images) and
``--pad-to-multiple`` (sizes rounded up so shapes recur). Two CPU contexts, stock ``Module``
inside ``mxpatch_bind.patched()``::

    python examples/segmentation.py               # 4 epochs of 64 images
    python examples/segmentation.py --epochs 1 --images 16 --balanced --pad-to-multiple 8
"""

import argparse
import os
import shutil
import sys
import tempfile

import mxnet as mx
import numpy as np

import mxpatch_bind
from mxpatch_bind import Input, PerDeviceIter, image_size

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imagefiles  # noqa: E402

NUM_CLASSES = 3
IGNORE = 255
CONTEXTS = [mx.cpu(0), mx.cpu(1)]


def write_dataset(directory, count, seed=0):
    """Image and label-map PNG files; returns the pairs of paths."""
    rng = np.random.default_rng(seed)
    pairs = []
    for index in range(count):
        height, width = (int(v) for v in rng.integers(16, 41, size=2))
        image = rng.integers(0, 60, size=(height, width, 3))
        label = np.zeros((height, width), dtype=np.uint8)
        for _ in range(int(rng.integers(1, 4))):
            cls = int(rng.integers(1, NUM_CLASSES))
            x1, y1 = int(rng.integers(0, width - 4)), int(rng.integers(0, height - 4))
            x2, y2 = x1 + int(rng.integers(4, 12)), y1 + int(rng.integers(4, 12))
            image[y1:y2, x1:x2, cls - 1] = 200
            label[y1:y2, x1:x2] = cls
        image_path = os.path.join(directory, "%03d.png" % index)
        label_path = os.path.join(directory, "%03d_label.png" % index)
        imagefiles.write_png(image_path, image)
        imagefiles.write_png(label_path, label)
        pairs.append((image_path, label_path))
    return pairs


class SegmentationFiles(mx.gluon.data.Dataset):
    """``{'data': image (3, H, W), 'seg_label': map (H, W)}``, decoded on access."""

    def __init__(self, pairs):
        self.pairs = pairs

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        image_path, label_path = self.pairs[index]
        image = mx.image.imread(image_path).transpose((2, 0, 1)).astype("float32") / 255
        label = mx.image.imread(label_path, flag=0)[:, :, 0]
        return {"data": image, "seg_label": label}


def network():
    """A fully convolutional net: per-pixel class scores at the input's size."""
    net = mx.sym.Variable("data")
    for index, filters in enumerate((16, 16)):
        net = mx.sym.Convolution(net, num_filter=filters, kernel=(3, 3), pad=(1, 1),
                                 name="conv%d" % index)
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Convolution(net, num_filter=NUM_CLASSES, kernel=(1, 1), name="score")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("seg_label"), multi_output=True,
                                use_ignore=True, ignore_label=IGNORE, normalization="valid",
                                name="softmax")


def pixel_accuracy(scores, labels):
    """Share of the non-ignored pixels whose highest score is their class."""
    predicted = scores.argmax(axis=1)
    valid = labels != IGNORE
    return float((predicted[valid] == labels[valid]).mean())


def train(pairs, epochs, workers, balanced=False, pad_to_multiple=1, log=print):
    """Train on two CPU contexts; returns the per-epoch pixel accuracy."""
    it = PerDeviceIter(SegmentationFiles(pairs), num_devices=len(CONTEXTS), batch_per_device=4,
                       shuffle=True, inputs=[Input("data", size_axes=(1, 2))],
                       label_inputs=[Input("seg_label", size_axes=(0, 1), pad_value=IGNORE)],
                       sizes=lambda i: image_size(pairs[i][0]), num_workers=workers,
                       balanced=balanced, pad_to_multiple=pad_to_multiple)
    mx.random.seed(0)
    accuracies = []
    with mxpatch_bind.patched():
        module = mx.mod.Module(network(), label_names=("seg_label",), context=CONTEXTS)
        module.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        module.init_params(mx.init.Xavier())
        module.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
        for epoch in range(epochs):
            it.reset()
            scores = []
            for batch in it:
                module.forward_backward(batch)
                module.update()
                outputs = module.get_outputs(merge_multi_context=False)[0]
                scores.extend(pixel_accuracy(out.asnumpy(), device[0].asnumpy())
                              for out, device in zip(outputs, batch.label))
            accuracies.append(float(np.mean(scores)))
            log("epoch %d: pixel accuracy %.3f, per-device label shapes of the last batch %s"
                % (epoch, accuracies[-1], [device[0].shape for device in batch.label]))
    return accuracies


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--balanced", action="store_true", help="work-balanced devices")
    parser.add_argument("--pad-to-multiple", type=int, default=1, metavar="M",
                        help="round each device's size up to a multiple of M")
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix="mxpatch_bind_segmentation_")
    try:
        pairs = write_dataset(directory, args.images)
        accuracies = train(pairs, args.epochs, args.workers, args.balanced, args.pad_to_multiple)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("pixel accuracy: first epoch %.3f, last epoch %.3f" % (accuracies[0], accuracies[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
