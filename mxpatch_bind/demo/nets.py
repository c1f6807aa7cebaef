"""The small image classifier shared by the demo, doctor, benchmarks and tests (private).

One definition, so the demo's figures, the doctor's self-test, the benchmarks and the tests
all run the same network. Importing this module does not import MXNet.
"""

from typing import Any, Sequence

__all__ = ["conv_classifier"]


def conv_classifier(num_classes: int, filters: Sequence[int] = (4,), pool: str = "avg",
                    batch_norm: bool = False) -> Any:
    """Conv-ReLU blocks, global pooling, a classifier: one parameter set fits any image size.

    Parameters
    ----------
    num_classes : int
        Outputs of the classifier (``fc``), followed by ``SoftmaxOutput`` named ``softmax``.
    filters : sequence of int
        Filters of each 3x3 convolution; every block after the first has stride 2. One block
        is named ``conv``, several ``conv0``, ``conv1``, ...
    pool : str
        ``'avg'`` or ``'max'``: the global pooling before the classifier.
    batch_norm : bool
        A ``BatchNorm`` named ``bn`` after the first convolution.

    Returns
    -------
    mxnet.symbol.Symbol

    Examples
    --------
    >>> net = conv_classifier(3)
    >>> net.list_arguments()
    ['data', 'conv_weight', 'conv_bias', 'fc_weight', 'fc_bias', 'softmax_label']
    """
    import mxnet as mx
    net = mx.sym.Variable("data")
    for index, num_filter in enumerate(filters):
        stride = (2, 2) if index else (1, 1)
        name = f"conv{index}" if len(filters) > 1 else "conv"
        net = mx.sym.Convolution(net, num_filter=num_filter, kernel=(3, 3), pad=(1, 1),
                                 stride=stride, name=name)
        if batch_norm and index == 0:
            net = mx.sym.BatchNorm(net, name="bn")
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, pool_type=pool, kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=num_classes, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")
