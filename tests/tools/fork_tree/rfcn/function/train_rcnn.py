"""Train the R-CNN head, already moved to stock MXNet by an earlier guide."""

import mxnet as mx
import mxpatch_bind
from core.loader import AnchorLoader, synthetic_roidb
from symbols import get_symbol


def train_rcnn(ctx, lr, num_epoch):
    mxpatch_bind.install()
    roidb = synthetic_roidb(8, 0, [(16, 16)])
    train_data = AnchorLoader(roidb, batch_size=2 * len(ctx), ctx=ctx)
    mod = mx.mod.Module(get_symbol(), data_names=["data"], label_names=["label"],
                        context=ctx)
    mod.fit(train_data, kvstore="device", optimizer="sgd",
            optimizer_params={"learning_rate": lr, "momentum": 0.9}, num_epoch=num_epoch)
