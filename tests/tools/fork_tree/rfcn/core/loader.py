"""The fork's ``AnchorLoader`` interface: per-device ``provide_data`` and batches."""

import mxnet as mx
import numpy as np
from mxnet.executor_manager import _split_input_slice


def synthetic_roidb(count, seed, scales):
    """Records of noisy images of random size (at most ``scales``' largest) and a class."""
    rng = np.random.RandomState(seed)
    max_h = max(s[0] for s in scales)
    max_w = max(s[1] for s in scales)
    roidb = []
    for _ in range(count):
        height, width = int(rng.randint(8, max_h + 1)), int(rng.randint(8, max_w + 1))
        image = rng.normal(0.0, 0.3, size=(3, height, width)).astype(np.float32)
        label = int(rng.randint(3))
        image[label, height // 2, :] += 1.0
        roidb.append({"image": image, "label": label})
    return roidb


def tensor_vstack(images):
    height = max(image.shape[1] for image in images)
    width = max(image.shape[2] for image in images)
    out = np.zeros((len(images), images[0].shape[0], height, width), dtype=np.float32)
    for row, image in enumerate(images):
        out[row, :, :image.shape[1], :image.shape[2]] = image
    return out


class AnchorLoader(mx.io.DataIter):
    def __init__(self, roidb, batch_size=1, ctx=None, work_load_list=None):
        super(AnchorLoader, self).__init__()
        self.roidb = roidb
        self.batch_size = batch_size
        self.ctx = ctx or [mx.cpu()]
        self.work_load_list = work_load_list
        self.data_name = ["data"]
        self.label_name = ["label"]
        self.cur = 0
        self.get_batch_individual()

    @property
    def provide_data(self):
        return [[(k, v.shape) for k, v in zip(self.data_name, self.data[i])]
                for i in range(len(self.data))]

    @property
    def provide_label(self):
        return [[(k, v.shape) for k, v in zip(self.label_name, self.label[i])]
                for i in range(len(self.data))]

    @property
    def provide_data_single(self):
        return [(k, v.shape) for k, v in zip(self.data_name, self.data[0])]

    @property
    def provide_label_single(self):
        return [(k, v.shape) for k, v in zip(self.label_name, self.label[0])]

    def reset(self):
        self.cur = 0

    def iter_next(self):
        return self.cur + self.batch_size <= len(self.roidb)

    def next(self):
        if not self.iter_next():
            raise StopIteration
        self.get_batch_individual()
        self.cur += self.batch_size
        return mx.io.DataBatch(data=self.data, label=self.label, pad=0,
                               provide_data=self.provide_data,
                               provide_label=self.provide_label)

    def get_batch_individual(self):
        roidb = self.roidb[self.cur:self.cur + self.batch_size]
        slices = _split_input_slice(self.batch_size, self.work_load_list or [1] * len(self.ctx))
        self.data, self.label = [], []
        for islice in slices:
            iroidb = roidb[islice.start:islice.stop]
            self.data.append([mx.nd.array(tensor_vstack([r["image"] for r in iroidb]))])
            self.label.append([mx.nd.array([r["label"] for r in iroidb])])
