"""Train the RPN alone (the fork's ``function/train_rpn.py``)."""

import logging

import mxnet as mx
from config import config
from core.loader import AnchorLoader, synthetic_roidb
from core.metric import LogLossMetric
from core.module import MutableModule
from symbols import get_symbol


def train_rpn(ctx, prefix, begin_epoch, end_epoch, lr, train_shared=False):
    logger = logging.getLogger()
    sym = get_symbol()
    batch_size = len(ctx)
    input_batch_size = config["BATCH_IMAGES"] * batch_size
    roidb = synthetic_roidb(config["images"], config["seed"], config["SCALES"])
    train_data = AnchorLoader(roidb, batch_size=input_batch_size, ctx=ctx)

    max_data_shape = [("data", (config["BATCH_IMAGES"], 3, 32, 32))]
    max_label_shape = [("label", (config["BATCH_IMAGES"],))]
    if train_shared:
        fixed_param_prefix = config["FIXED_PARAMS_SHARED"]
    else:
        fixed_param_prefix = config["FIXED_PARAMS"]
    mod = MutableModule(sym, data_names=["data"], label_names=["label"],
                        logger=logger, context=ctx,
                        max_data_shapes=[max_data_shape for _ in range(batch_size)],
                        max_label_shapes=[max_label_shape for _ in range(batch_size)],
                        fixed_param_prefix=fixed_param_prefix, work_load_list=[1] * batch_size)

    optimizer_params = {"momentum": config["momentum"],
                        "wd": config["wd"],
                        "learning_rate": lr,
                        "clip_gradient": None}

    train_data = mx.io.PrefetchingIter(train_data)

    mod.fit(train_data, eval_metric=LogLossMetric(),
            epoch_end_callback=mx.callback.module_checkpoint(mod, prefix),
            kvstore=config["kvstore"], optimizer="sgd", optimizer_params=optimizer_params,
            begin_epoch=begin_epoch, num_epoch=end_epoch)
