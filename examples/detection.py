"""Detection-style training on image files: an image, its im_info and a box list per sample.

Generates small PNG files of random size in a temporary directory, each holding a few bright
rectangles of one of three classes (their brightness in one colour channel), with a box list
``(x1, y1, x2, y2, class)`` per image. ``PerDeviceIter`` reads them lazily: sizes come from
the files' headers (``image_size``), decoding (``mx.image.imread``) runs in gluon DataLoader
worker processes, and each device's batch pads its images with 0 and its box lists with rows
of -1 to its own largest count. A small network learns which classes an image holds; its loss
reads the padded box lists and ignores the -1 rows. Two CPU contexts, stock ``Module`` inside
``mxpatch_bind.patched()``::

    python examples/detection.py                  # 4 epochs of 96 images
    python examples/detection.py --epochs 1 --images 16
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
CONTEXTS = [mx.cpu(0), mx.cpu(1)]


def write_dataset(directory, count, seed=0):
    """PNG files with 1-4 rectangles each; returns the paths and each image's box list."""
    rng = np.random.default_rng(seed)
    paths, boxes = [], []
    for index in range(count):
        height, width = (int(v) for v in rng.integers(24, 49, size=2))
        image = rng.integers(0, 40, size=(height, width, 3))
        rows = []
        for _ in range(int(rng.integers(1, 5))):
            cls = int(rng.integers(NUM_CLASSES))
            x1, y1 = int(rng.integers(0, width - 8)), int(rng.integers(0, height - 8))
            x2, y2 = x1 + int(rng.integers(6, 9)), y1 + int(rng.integers(6, 9))
            image[y1:y2, x1:x2, cls] = 255
            rows.append([x1, y1, x2, y2, cls])
        path = os.path.join(directory, "%03d.png" % index)
        imagefiles.write_png(path, image)
        paths.append(path)
        boxes.append(np.array(rows, dtype=np.float32))
    return paths, boxes


class DetectionFiles(mx.gluon.data.Dataset):
    """``(image (3, H, W), im_info (H, W, scale), gt_boxes (K, 5))``, decoded on access."""

    def __init__(self, paths, boxes):
        self.paths, self.boxes = paths, boxes

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        image = mx.image.imread(self.paths[index]).transpose((2, 0, 1)).astype("float32") / 255
        height, width = image.shape[1:]
        return image, np.array([height, width, 1.0], dtype=np.float32), self.boxes[index]


def network():
    """Conv features, global max pooling, one logit per class; loss from the padded boxes."""
    data, im_info, boxes = (mx.sym.Variable(name) for name in ("data", "im_info", "gt_boxes"))
    net = data
    for index, filters in enumerate((16, 32)):
        net = mx.sym.Convolution(net, num_filter=filters, kernel=(3, 3), pad=(1, 1),
                                 name="conv%d" % index)
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="max", kernel=(1, 1))
    # im_info passes through like in Faster R-CNN: here only its scale, which is 1.
    features = mx.sym.concat(mx.sym.flatten(net), mx.sym.slice_axis(im_info, axis=1, begin=2,
                                                                    end=3))
    logits = mx.sym.FullyConnected(features, num_hidden=NUM_CLASSES, name="cls")
    # Which classes the image holds, from its box list: padding rows have class -1, whose
    # one_hot is all zeros, so they count for nothing.
    classes = mx.sym.slice_axis(boxes, axis=2, begin=4, end=5).reshape((0, -1))
    present = mx.sym.clip(mx.sym.sum(mx.sym.one_hot(classes, depth=NUM_CLASSES), axis=1), 0, 1)
    loss = mx.sym.mean(mx.sym.relu(logits) - logits * present
                       + mx.sym.log1p(mx.sym.exp(-mx.sym.abs(logits))), axis=1)
    return mx.sym.Group([mx.sym.MakeLoss(loss, name="loss"),
                         mx.sym.BlockGrad(logits > 0, name="predicted"),
                         mx.sym.BlockGrad(present, name="present")])


def train(paths, boxes, epochs, workers, log=print):
    """Train on two CPU contexts; returns the per-epoch mean loss and the last accuracy."""
    it = PerDeviceIter(DetectionFiles(paths, boxes), num_devices=len(CONTEXTS),
                       batch_per_device=4, shuffle=True,
                       inputs=[Input("data", size_axes=(1, 2)), Input("im_info")],
                       label_inputs=[Input("gt_boxes", variable_axes=(0,), pad_value=-1)],
                       sizes=lambda i: image_size(paths[i]), num_workers=workers)
    mx.random.seed(0)
    losses, accuracy = [], 0.0
    with mxpatch_bind.patched():
        module = mx.mod.Module(network(), data_names=("data", "im_info"),
                               label_names=("gt_boxes",), context=CONTEXTS)
        module.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        module.init_params(mx.init.Xavier())
        module.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
        for epoch in range(epochs):
            it.reset()
            epoch_losses, correct, total = [], 0, 0
            for batch in it:
                module.forward_backward(batch)
                module.update()
                loss, predicted, present = module.get_outputs()
                epoch_losses.append(float(loss.mean().asscalar()))
                correct += int((predicted == present).sum().asscalar())
                total += present.size
            losses.append(float(np.mean(epoch_losses)))
            accuracy = correct / total
            log("epoch %d: loss %.3f, class-presence accuracy %.2f, shapes of the last batch %s"
                % (epoch, losses[-1], accuracy, [[d.shape for d in device]
                                                 for device in batch.provide_label]))
    return losses, accuracy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--images", type=int, default=96)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix="mxpatch_bind_detection_")
    try:
        paths, boxes = write_dataset(directory, args.images)
        losses, _ = train(paths, boxes, args.epochs, args.workers)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("loss: first epoch %.3f, last epoch %.3f" % (losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
