"""``python -m mxpatch_bind demo``: per-device shapes on two CPU contexts, checked against stock."""

import argparse
import sys


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m mxpatch_bind demo", description=__doc__)
    parser.add_argument("--devices", type=int, default=2, help="CPU contexts (default 2)")
    return parser


def main(argv=None):
    """Bind a conv net per device with different image sizes; compare with one-device runs.

    Returns 0 when every device's output equals a stock one-context module's exactly.
    """
    args = build_parser().parse_args(argv)
    import mxnet as mx
    import numpy as np

    import mxpatch_bind

    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv")
    net = mx.sym.Pooling(mx.sym.relu(net), global_pool=True, pool_type="avg", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=5, name="fc")
    rng = np.random.RandomState(0)
    shapes = [(1 + i % 3, 3, 24 + 8 * i, 40 - 4 * i) for i in range(args.devices)]
    images = [mx.nd.array(rng.uniform(-1, 1, shape)) for shape in shapes]

    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(i) for i in range(args.devices)])
    with mxpatch_bind.patched():
        mod.bind([[("data", shape)] for shape in shapes], for_training=False)
    mod.init_params(mx.init.Xavier())
    mod.forward(mx.io.DataBatch([[image] for image in images]), is_train=False)
    outputs = mod.get_outputs(merge_multi_context=False)[0]

    all_equal = True
    for device, (shape, image, output) in enumerate(zip(shapes, images, outputs)):
        ref = mx.mod.Module(net, label_names=None, context=mx.cpu(0))
        ref.bind([("data", shape)], for_training=False)
        ref.set_params(*mod.get_params())
        ref.forward(mx.io.DataBatch([image]), is_train=False)
        equal = np.array_equal(output.asnumpy(), ref.get_outputs()[0].asnumpy())
        all_equal &= equal
        print("device %d  input %-18s output %-8s equals one-device run: %s"
              % (device, shape, output.shape, equal))
    print("all devices equal: %s" % all_equal)
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
