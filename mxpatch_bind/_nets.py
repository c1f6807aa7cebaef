"""The small image classifier and per-device specs shared by demo, doctor, benchmarks and tests.

Private. One definition, so the demo's figures, the doctor's self-test, the benchmarks and the
tests all run the same network. Importing this module does not import MXNet.
"""

import os
from typing import Any, List, Optional, Sequence, Tuple

__all__ = ["conv_classifier", "per_device_spec", "contexts_from_env"]

Shape = Tuple[int, ...]


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


def per_device_spec(shapes: Sequence[Shape], labels: bool = True
                    ) -> Tuple[List[list], Optional[List[list]]]:
    """Per-device ``data_shapes`` / ``label_shapes`` for image shapes ``(n, c, h, w)``.

    Parameters
    ----------
    shapes : sequence of tuple
        One image-batch shape per device.
    labels : bool
        Whether to give ``softmax_label`` shapes (``(n,)`` per device) or ``None``.

    Examples
    --------
    >>> data, label = per_device_spec([(2, 3, 8, 8), (1, 3, 6, 10)])
    >>> data
    [[('data', (2, 3, 8, 8))], [('data', (1, 3, 6, 10))]]
    >>> label
    [[('softmax_label', (2,))], [('softmax_label', (1,))]]
    """
    data = [[("data", tuple(shape))] for shape in shapes]
    label = [[("softmax_label", (shape[0],))] for shape in shapes] if labels else None
    return data, label


def contexts_from_env(variable: str, count: int = 2) -> List[Any]:
    """``count`` contexts of the kind the environment variable ``variable`` names.

    ``cpu`` (the default, also when unset) gives ``cpu(0) ... cpu(count - 1)``, which MXNet
    treats as separate devices; ``gpu`` gives ``gpu(i % num_gpus)``. The tests read
    ``MXPATCH_TEST_CONTEXTS``, the benchmarks ``MXPATCH_BENCH_CONTEXTS``
    (``benchmarks/gpu_check.sh`` sets both to ``gpu``).

    Raises
    ------
    ValueError
        The variable holds something else, or ``gpu`` where MXNet sees no GPU.

    Examples
    --------
    >>> contexts_from_env("MXPATCH_EXAMPLE_UNSET_VARIABLE", 2)
    [cpu(0), cpu(1)]
    """
    import mxnet as mx
    kind = os.environ.get(variable, "").strip().lower() or "cpu"
    if kind == "cpu":
        return [mx.cpu(i) for i in range(count)]
    if kind != "gpu":
        raise ValueError(f"{variable}={os.environ[variable]!r}; expected 'cpu' (the default) or "
                         "'gpu'")
    num_gpus = mx.context.num_gpus()
    if not num_gpus:
        raise ValueError(f"{variable}=gpu but MXNet sees no GPU (mx.context.num_gpus() is 0)")
    return [mx.gpu(i % num_gpus) for i in range(count)]
