"""A small variable-size image task, a Deformable-ConvNets-style loader and a memory probe."""

import ctypes

import mxnet as mx
import numpy as np

from mxpatch_bind.demo.nets import conv_classifier

NUM_CLASSES = 3
CONTEXTS_COUNT = 2


def bar_images(count, seed, sizes=(8, 21)):
    """Noisy images of random size holding a horizontal bar (0), a vertical bar (1) or a dot (2).

    The class is in the shape, not in the size or the brightness, so a net has to learn
    spatial features; sizes vary so every device gets its own shape.
    """
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for _ in range(count):
        height, width = (int(v) for v in rng.integers(*sizes, size=2))
        image = rng.normal(0.0, 0.2, size=(1, height, width)).astype(np.float32)
        label = int(rng.integers(NUM_CLASSES))
        row, col = int(rng.integers(height)), int(rng.integers(width))
        if label == 0:
            image[0, row, max(0, col - 3):col + 4] += 1.0
        elif label == 1:
            image[0, max(0, row - 3):row + 4, col] += 1.0
        else:
            image[0, row, col] += 1.0
        images.append(image)
        labels.append(label)
    return images, labels


def data_pointer(array):
    """Address of an NDArray's storage: equal for arrays that share memory (views)."""
    from mxnet.base import _LIB, check_call
    pointer = ctypes.c_void_p()
    check_call(_LIB.MXNDArrayGetData(array.handle, ctypes.byref(pointer)))
    return pointer.value


def bar_net(num_classes=NUM_CLASSES):
    """Conv -> ReLU -> global max pool -> FC -> softmax: any image size, padding-tolerant."""
    return conv_classifier(num_classes, filters=(8,), pool="max")


def pad_to(images, height, width):
    """Stack images into one zero-padded (N, C, height, width) array, each at the top left."""
    out = np.zeros((len(images), images[0].shape[0], height, width), dtype=np.float32)
    for row, image in enumerate(images):
        out[row, :, :image.shape[1], :image.shape[2]] = image
    return out


class AnchorStyleLoader(mx.io.DataIter):
    """A user's own loader in the Deformable-ConvNets ``AnchorLoader`` form.

    ``provide_data`` / ``provide_label`` are per-device lists of plain ``(name, shape)``
    tuples, and each batch is one ``DataBatch`` whose ``data`` and ``label`` hold one list
    of arrays per device. Each device gets ``per_device`` consecutive images padded to its
    own largest one; a trailing partial batch is dropped, as the fork's loader does.
    """

    def __init__(self, images, labels, num_devices=CONTEXTS_COUNT, per_device=2):
        super().__init__(batch_size=num_devices * per_device)
        self.images, self.labels = images, np.asarray(labels, dtype=np.float32)
        self.num_devices, self.per_device = num_devices, per_device
        self.cursor = 0
        self.data, self.label = self._load(0)

    @property
    def provide_data(self):
        return [[("data", device[0].shape)] for device in self.data]

    @property
    def provide_label(self):
        return [[("softmax_label", device[0].shape)] for device in self.label]

    def reset(self):
        self.cursor = 0

    def iter_next(self):
        return self.cursor + self.batch_size <= len(self.images)

    def next(self):
        if not self.iter_next():
            raise StopIteration
        self.data, self.label = self._load(self.cursor)
        self.cursor += self.batch_size
        return mx.io.DataBatch(data=self.data, label=self.label, pad=0,
                               provide_data=self.provide_data,
                               provide_label=self.provide_label)

    def _load(self, start):
        data, label = [], []
        for device in range(self.num_devices):
            first = start + device * self.per_device
            chunk = self.images[first:first + self.per_device]
            height = max(image.shape[1] for image in chunk)
            width = max(image.shape[2] for image in chunk)
            data.append([mx.nd.array(pad_to(chunk, height, width))])
            label.append([mx.nd.array(self.labels[first:first + self.per_device])])
        return data, label
