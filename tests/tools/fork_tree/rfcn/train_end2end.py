"""Train end to end on several devices (the fork's ``rfcn/train_end2end.py``).

    python train_end2end.py --devices 2 --epochs 2 --pretrained P.params --prefix OUT/rfcn
"""

import argparse
import json
import logging
import sys

import mxnet as mx
from config import config
from core.loader import AnchorLoader, synthetic_roidb
from core.metric import LogLossMetric
from core.module import MutableModule
from symbols import get_symbol


def load_param(path):
    """The fork's ``utils.load_model.load_param``: arg and aux dicts from a .params file."""
    saved = mx.nd.load(path)
    arg_params = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux_params = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    return arg_params, aux_params


def train_net(args, ctx, prefix, begin_epoch, end_epoch, lr):
    logger = logging.getLogger("train_end2end")
    sym = get_symbol()
    batch_size = len(ctx)
    input_batch_size = config["BATCH_IMAGES"] * batch_size
    roidb = synthetic_roidb(config["images"], config["seed"], config["SCALES"])
    train_data = AnchorLoader(roidb, batch_size=input_batch_size, ctx=ctx)

    # infer max shape
    max_h = max(v[0] for v in config["SCALES"])
    max_w = max(v[1] for v in config["SCALES"])
    max_data_shape = [("data", (config["BATCH_IMAGES"], 3, max_h, max_w))]
    max_label_shape = [("label", (config["BATCH_IMAGES"],))]

    if begin_epoch > 0:
        arg_params, aux_params = load_param("%s-%04d.params" % (prefix, begin_epoch))
    else:
        arg_params, aux_params = load_param(args.pretrained)

    fixed_param_prefix = config["FIXED_PARAMS"]
    data_names = [k[0] for k in train_data.provide_data_single]
    label_names = [k[0] for k in train_data.provide_label_single]
    mod = MutableModule(sym, data_names=data_names, label_names=label_names,
                        logger=logger, context=ctx,
                        max_data_shapes=[max_data_shape for _ in range(batch_size)],
                        max_label_shapes=[max_label_shape for _ in range(batch_size)],
                        fixed_param_prefix=fixed_param_prefix)
    if begin_epoch > 0:
        mod._preload_opt_states = "%s-%04d.states" % (prefix, begin_epoch)

    eval_metric = LogLossMetric()
    epoch_end_callback = mx.callback.module_checkpoint(mod, prefix, period=1,
                                                      save_optimizer_states=True)
    optimizer_params = {"momentum": config["momentum"],
                        "wd": config["wd"],
                        "learning_rate": lr,
                        "rescale_grad": 1.0,
                        "clip_gradient": None}
    mod.fit(train_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
            kvstore=config["kvstore"], optimizer="sgd", optimizer_params=optimizer_params,
            arg_params=arg_params, aux_params=aux_params, begin_epoch=begin_epoch,
            num_epoch=end_epoch)
    return eval_metric.history


def main():
    parser = argparse.ArgumentParser(description="Train end to end")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--begin-epoch", type=int, default=0)
    parser.add_argument("--pretrained", default=None)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--record", default=None, help="write the per-device losses (JSON)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    ctx = [mx.cpu(i) for i in range(args.devices)]
    losses = train_net(args, ctx, args.prefix, args.begin_epoch,
                       args.begin_epoch + args.epochs, config["lr"])
    if args.record:
        with open(args.record, "w") as out:
            json.dump(losses, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
