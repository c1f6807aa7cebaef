"""A Deformable-ConvNets-style training script on stock MXNet, migrated by one import line.

Run it (4 epochs on two CPU contexts: about 2.5 s of CPU time)::

    python examples/migrate_from_deformable_convnets.py --prefix /tmp/rfcn      # 4 epochs
    python examples/migrate_from_deformable_convnets.py --prefix /tmp/rfcn --begin-epoch 4 \
        --epochs 2

The script keeps the shape of the fork's ``rfcn/train_end2end.py``: a loader in the form of
its ``AnchorLoader`` (``provide_data`` / ``provide_label`` with one list of ``(name, shape)``
per device, batches whose ``data`` / ``label`` hold one list of arrays per device, each
device padded to its own largest image, aspect grouping), the fork's metric classes
(``update(labels, preds)`` per device), ``MutableModule`` with ``max_data_shapes``,
``max_label_shapes`` and ``fixed_param_prefix``, resuming through ``mod._preload_opt_states``,
``module_checkpoint`` with optimizer states, and ``fit`` with ``rescale_grad=1.0``. The task
is synthetic (a bar or a dot in noisy images of random size) so that it runs anywhere.

What changed
------------
One line. The fork's script imported its vendored ``core/module.py`` (which needs
``core/DataParallelExecutorGroup.py``, and fails on MXNet 1.9.1 as soon as a device's image
shrinks)::

    from core.module import MutableModule

and now imports the drop-in, which returns a stock ``mx.mod.Module`` and installs
``mxpatch_bind``'s per-device ``bind`` / ``reshape``::

    from mxpatch_bind.compat import MutableModule

``python -m mxpatch_bind migrate PATH --write --delete-vendored`` makes that change in a
whole codebase and reports what needs a person. Everything else stays: the constructor call
(``fixed_param_prefix`` freezes by the fork's substring rule, the first bind allocates at
``max_data_shapes``), ``_preload_opt_states``, loaders, metrics, callbacks, ``fit``.

What to know
------------
``rescale_grad``
    The drop-in keeps the fork's default, ``1 / number of devices``; stock
    ``mx.mod.Module`` uses ``1 / total samples``. This script passes ``rescale_grad=1.0``
    (summed gradients) as the fork's scripts do, so both agree.
Prefetching
    The fork's own ``utils/PrefetchingIter`` keeps working; ``mx.io.PrefetchingIter`` reads
    ``provide_data`` as one flat list and fails on a per-device loader.
"""

import argparse
import logging
import os
import sys
import tempfile

import mxnet as mx
import numpy as np
from mxnet.executor_manager import _split_input_slice

from mxpatch_bind.compat import MutableModule  # was: from core.module import MutableModule

NUM_CLASSES = 3
FIXED_PARAMS = ["conv1"]  # the fork's config.network.FIXED_PARAMS (frozen by substring)


# --------------------------------------------------------------------------- data (fork style)
def synthetic_roidb(count, seed):
    """A roidb-like list of records: an image of random size and its class.

    Class 0 holds a horizontal bar, class 1 a vertical bar, class 2 a single bright dot.
    """
    rng = np.random.RandomState(seed)
    roidb = []
    for _ in range(count):
        height, width = rng.randint(12, 33, size=2)
        image = rng.normal(0.0, 0.2, size=(3, height, width)).astype(np.float32)
        label = rng.randint(NUM_CLASSES)
        row, col = rng.randint(height), rng.randint(width)
        if label == 0:
            image[:, row, max(0, col - 4):col + 5] += 1.0
        elif label == 1:
            image[:, max(0, row - 4):row + 5, col] += 1.0
        else:
            image[:, row, col] += 1.5
        roidb.append({"image": image, "height": height, "width": width, "label": label})
    return roidb


def tensor_vstack(images):
    """Stack CHW images into one zero-padded NCHW array (the fork's ``utils.image`` helper)."""
    height = max(image.shape[1] for image in images)
    width = max(image.shape[2] for image in images)
    out = np.zeros((len(images), images[0].shape[0], height, width), dtype=np.float32)
    for row, image in enumerate(images):
        out[row, :, :image.shape[1], :image.shape[2]] = image
    return out


class AnchorLoader(mx.io.DataIter):
    """The fork's ``AnchorLoader`` interface: per-device data and labels, unchanged.

    ``batch_size`` images per batch are split across the contexts (``work_load_list``), and
    each device's images are padded to that device's largest one.
    """

    def __init__(self, roidb, batch_size=1, shuffle=False, ctx=None, work_load_list=None,
                 aspect_grouping=False):
        super(AnchorLoader, self).__init__()
        self.roidb = roidb
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.ctx = ctx or [mx.cpu()]
        self.work_load_list = work_load_list
        self.aspect_grouping = aspect_grouping
        self.size = len(roidb)
        self.index = np.arange(self.size)
        self.data_name = ["data"]
        self.label_name = ["label"]
        self.cur = 0
        self.data = None
        self.label = None
        self.reset()
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
        if self.shuffle:
            if self.aspect_grouping:
                # Landscape images together, portrait images together, batches shuffled.
                widths = np.array([r["width"] for r in self.roidb])
                heights = np.array([r["height"] for r in self.roidb])
                horz = np.where(widths >= heights)[0]
                vert = np.where(widths < heights)[0]
                inds = np.hstack((np.random.permutation(horz), np.random.permutation(vert)))
                whole = inds.shape[0] - inds.shape[0] % self.batch_size
                rows = inds[:whole].reshape(-1, self.batch_size)
                inds[:whole] = rows[np.random.permutation(rows.shape[0])].reshape(-1)
                self.index = inds
            else:
                np.random.shuffle(self.index)

    def iter_next(self):
        return self.cur + self.batch_size <= self.size

    def next(self):
        if self.iter_next():
            self.get_batch_individual()
            self.cur += self.batch_size
            return mx.io.DataBatch(data=self.data, label=self.label,
                                   pad=self.getpad(), index=self.getindex(),
                                   provide_data=self.provide_data,
                                   provide_label=self.provide_label)
        raise StopIteration

    def getindex(self):
        return self.cur // self.batch_size

    def getpad(self):
        return max(0, self.cur + self.batch_size - self.size)

    def get_batch_individual(self):
        roidb = [self.roidb[self.index[i]]
                 for i in range(self.cur, min(self.cur + self.batch_size, self.size))]
        work_load_list = self.work_load_list or [1] * len(self.ctx)
        slices = _split_input_slice(self.batch_size, work_load_list)
        self.data, self.label = [], []
        for islice in slices:
            iroidb = roidb[islice.start:islice.stop]
            self.data.append([mx.nd.array(tensor_vstack([r["image"] for r in iroidb]))])
            self.label.append([mx.nd.array([r["label"] for r in iroidb])])


class ClsAccMetric(mx.metric.EvalMetric):
    """A fork-style metric: ``update`` sees one device's labels and outputs at a time."""

    def __init__(self):
        super(ClsAccMetric, self).__init__("ClsAcc")

    def update(self, labels, preds):
        pred_label = preds[0].asnumpy().argmax(axis=1)
        label = labels[0].asnumpy().astype("int32")
        self.sum_metric += int((pred_label == label).sum())
        self.num_inst += len(label)


def get_symbol():
    """Two conv layers, global max pooling and a classifier: any image size works."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Convolution(net, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="max", kernel=(1, 1), name="pool")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=NUM_CLASSES, name="cls_score")
    return mx.sym.SoftmaxOutput(net, label=mx.sym.Variable("label"), name="cls_prob")


# --------------------------------------------------------------------------- training
def load_param(prefix, epoch):
    """The fork's ``utils.load_model.load_param``: arg and aux dicts of a checkpoint."""
    _, arg_params, aux_params = mx.model.load_checkpoint(prefix, epoch)
    return arg_params, aux_params


def train_net(args, ctx, prefix, begin_epoch, end_epoch, lr):
    logger = logging.getLogger("train_end2end")
    mx.random.seed(args.seed)
    np.random.seed(args.seed)

    batch_size = len(ctx)
    input_batch_size = args.batch_images * batch_size
    roidb = synthetic_roidb(args.images, seed=args.seed)
    train_data = AnchorLoader(roidb, batch_size=input_batch_size, shuffle=True, ctx=ctx,
                              aspect_grouping=True)
    val_data = AnchorLoader(synthetic_roidb(max(args.images // 2, input_batch_size),
                                            seed=args.seed + 1000),
                            batch_size=input_batch_size, ctx=ctx)
    data_names = [k[0] for k in train_data.provide_data_single]
    label_names = [k[0] for k in train_data.provide_label_single]

    # infer max shape: the largest image, padded, on every device
    max_data_shape = [("data", (args.batch_images, 3, 32, 32))]
    max_label_shape = [("label", (args.batch_images,))]
    if begin_epoch > 0:
        arg_params, aux_params = load_param(prefix, begin_epoch)
    else:
        arg_params = aux_params = None
    mod = MutableModule(get_symbol(), data_names=data_names, label_names=label_names,
                        logger=logger, context=ctx,
                        max_data_shapes=[max_data_shape for _ in range(batch_size)],
                        max_label_shapes=[max_label_shape for _ in range(batch_size)],
                        fixed_param_prefix=FIXED_PARAMS)
    if begin_epoch > 0:
        mod._preload_opt_states = "%s-%04d.states" % (prefix, begin_epoch)

    eval_metrics = mx.metric.CompositeEvalMetric()
    eval_metrics.add(ClsAccMetric())
    batch_end_callback = mx.callback.Speedometer(train_data.batch_size, frequent=args.frequent)
    epoch_end_callback = mx.callback.module_checkpoint(mod, prefix, period=1,
                                                      save_optimizer_states=True)
    optimizer_params = {"momentum": 0.9,
                        "wd": 0.0005,
                        "learning_rate": lr,
                        "rescale_grad": 1.0,  # the fork's summed gradients; see the docstring
                        "clip_gradient": None}

    mod.fit(train_data, eval_data=val_data, eval_metric=eval_metrics,
            epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
            kvstore="device", optimizer="sgd", optimizer_params=optimizer_params,
            initializer=mx.init.Xavier(magnitude=2), arg_params=arg_params,
            aux_params=aux_params, begin_epoch=begin_epoch,
            num_epoch=end_epoch)
    return dict(mod.score(val_data, ClsAccMetric()))["ClsAcc"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4, help="epochs to train (default 4)")
    parser.add_argument("--begin-epoch", type=int, default=0,
                        help="resume from the checkpoint of this epoch (default 0: start)")
    parser.add_argument("--images", type=int, default=160, help="training images (default 160)")
    parser.add_argument("--batch-images", type=int, default=2,
                        help="images per device, the fork's BATCH_IMAGES (default 2)")
    parser.add_argument("--devices", type=int, default=2, help="CPU contexts (default 2)")
    parser.add_argument("--gpus", default="", help="comma-separated GPU ids instead of CPUs")
    parser.add_argument("--lr", type=float, default=0.005,
                        help="learning rate for summed gradients (default 0.005)")
    parser.add_argument("--prefix", default=None,
                        help="checkpoint prefix (default: a new temporary directory)")
    parser.add_argument("--frequent", type=int, default=10, help="log every N batches")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.gpus:
        ctx = [mx.gpu(int(i)) for i in args.gpus.split(",")]
    else:
        ctx = [mx.cpu(i) for i in range(args.devices)]
    prefix = args.prefix or os.path.join(tempfile.mkdtemp(prefix="mxpatch_bind_"), "rfcn")
    accuracy = train_net(args, ctx, prefix, args.begin_epoch, args.begin_epoch + args.epochs,
                         args.lr)
    print("held-out accuracy after epoch %d: %.3f (checkpoints: %s-*)"
          % (args.begin_epoch + args.epochs, accuracy, prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
