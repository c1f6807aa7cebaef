"""The network: conv1 -> bn_conv1 -> conv2 -> bn2 -> global max pool -> fc -> softmax.

BatchNorm uses its global statistics, as in the fork's ResNets (one image per device).
"""

import mxnet as mx

NUM_CLASSES = 3


def get_symbol():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, use_global_stats=True, name="bn_conv1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Convolution(net, num_filter=6, kernel=(3, 3), pad=(1, 1), name="conv2")
    net = mx.sym.BatchNorm(net, fix_gamma=False, use_global_stats=True, name="bn2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="max", kernel=(1, 1), name="pool")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=NUM_CLASSES, name="cls_score")
    return mx.sym.SoftmaxOutput(net, label=mx.sym.Variable("label"), name="cls_prob")
