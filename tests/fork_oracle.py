"""The fork's training loop, computed with stock MXNet one executor per device (an oracle).

Run as a script against the synthetic fork tree (``tests/tools/fork_tree/rfcn``)::

    python tests/fork_oracle.py RFCN_DIR --pretrained P.params --prefix OUT/oracle \
        --record losses.json --devices 2 --epochs 2

It trains what the tree's ``train_end2end.py`` trains, the way the fork's ``MutableModule``
did, but without any module: every device binds a fresh stock executor at its own shapes
for every batch (``simple_bind`` on its context), gradients are summed over the devices,
one SGD updater (MXNet's own, with the script's ``optimizer_params``) updates one copy of
the weights, parameters whose names contain a ``FIXED_PARAMS`` string get no gradient,
BatchNorm statistics stay per device, and each epoch ends as ``fit`` ends it (parameters
and statistics averaged over the devices, then checkpointed). The real fork's executor
group cannot be the oracle: on MXNet 1.9.1 it fails as soon as a device's image shrinks.
"""

import argparse
import json
import pickle
import sys

import mxnet as mx

INPUTS = ("data", "label")


def average(block):
    """What ``Module.get_params`` computes for one parameter held on several devices."""
    return sum(w.copyto(mx.cpu()) for w in block) / len(block)


def train(tree, args):
    sys.path.insert(0, tree)
    from config import config
    from core.loader import AnchorLoader, synthetic_roidb
    from core.metric import LogLossMetric
    from symbols import get_symbol

    sym = get_symbol()
    ctx = [mx.cpu(i) for i in range(args.devices)]
    roidb = synthetic_roidb(config["images"], config["seed"], config["SCALES"])
    loader = AnchorLoader(roidb, batch_size=config["BATCH_IMAGES"] * len(ctx), ctx=ctx)
    param_names = [n for n in sym.list_arguments() if n not in INPUTS]
    fixed = {n for n in sym.list_arguments() for p in config["FIXED_PARAMS"] if p in n}
    grad_req = {n: "null" if n in fixed or n in INPUTS else "write"
                for n in sym.list_arguments()}
    saved = mx.nd.load(args.pretrained)
    weights = {n: saved["arg:" + n].copy() for n in param_names}
    device_aux = [{n: saved["aux:" + n].copy() for n in sym.list_auxiliary_states()}
                  for _ in ctx]
    optimizer = mx.optimizer.create(
        "sgd", sym=sym, param_idx2name=dict(enumerate(param_names)),
        momentum=config["momentum"], wd=config["wd"], learning_rate=config["lr"],
        rescale_grad=1.0, clip_gradient=None)
    updater = mx.optimizer.get_updater(optimizer)
    metric = LogLossMetric()
    for epoch in range(args.epochs):
        loader.reset()
        for batch in loader:
            grads = []
            for i, context in enumerate(ctx):
                data, label = batch.data[i][0], batch.label[i][0]
                exe = sym.simple_bind(context, grad_req=grad_req, data=data.shape,
                                      label=label.shape)
                for name in param_names:
                    weights[name].copyto(exe.arg_dict[name])
                for name, value in device_aux[i].items():
                    value.copyto(exe.aux_dict[name])
                data.copyto(exe.arg_dict["data"])
                label.copyto(exe.arg_dict["label"])
                exe.forward(is_train=True)
                exe.backward()
                grads.append({n: exe.grad_dict[n].copyto(mx.cpu())
                              for n in param_names if n not in fixed})
                device_aux[i] = {n: a.copyto(mx.cpu()) for n, a in exe.aux_dict.items()}
                metric.update([label], [exe.outputs[0]])
            for name in param_names:
                if name not in fixed:
                    updater(name, sum(g[name] for g in grads),
                    weights[name])
        aux = {n: average([device[n] for device in device_aux]) for n in device_aux[0]}
        device_aux = [{n: a.copy() for n, a in aux.items()} for _ in ctx]
        checkpoint = {"arg:" + n: average([weights[n]] * len(ctx)) for n in param_names}
        checkpoint.update({"aux:" + n: a for n, a in aux.items()})
        mx.nd.save("%s-%04d.params" % (args.prefix, epoch + 1), checkpoint)
        with open("%s-%04d.states" % (args.prefix, epoch + 1), "wb") as out:
            out.write(updater.get_states())
    return metric.history


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("--pretrained", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    with open(args.record, "w") as out:
        json.dump(train(args.tree, args), out)
    return 0


def load_states(path):
    """Optimizer states saved by a module or by this oracle: ``{key: numpy array}``."""
    with open(path, "rb") as source:
        states = pickle.loads(source.read())
    return {key: value.asnumpy() for key, value in states.items()}


if __name__ == "__main__":
    sys.exit(main())
