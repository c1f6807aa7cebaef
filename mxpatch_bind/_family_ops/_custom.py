"""Building a registered ``CustomOp`` as a Symbol or an NDArray call (private module)."""

from __future__ import annotations

from typing import Any, Optional

from .._mxnet_env import import_mxnet
from ._arguments import spell

mx = import_mxnet()

__all__ = ["call", "assign_zero_gradients"]


def call(op: str, op_type: str, inputs: dict, params: dict, name: Optional[str]) -> Any:
    """``mx.sym.Custom`` when the inputs are Symbols, ``mx.nd.Custom`` when they are NDArrays
    (``mx.autograd`` records it), with ``params`` spelt as :func:`~._arguments.spell` does.

    Raises ``TypeError`` naming ``op`` and the input for a missing input or a mix of kinds.
    """
    values = list(inputs.values())
    kind = mx.sym.Symbol if isinstance(values[0], mx.sym.Symbol) else mx.nd.NDArray
    for input_name, value in inputs.items():
        if not isinstance(value, kind):
            raise TypeError(f"{op}: {input_name} must be an mx.sym.Symbol or an mx.nd.NDArray, "
                            f"the same kind as the other inputs, got {type(value).__name__}")
    spelt = {key: spell(value) for key, value in params.items()}
    if kind is mx.sym.Symbol:
        return mx.sym.Custom(op_type=op_type, name=name, **inputs, **spelt)
    return mx.nd.Custom(*values, op_type=op_type, **spelt)


def assign_zero_gradients(operator: Any, req: list, in_grad: list) -> None:
    """The backward of an operator that passes no gradient: zeros, or nothing added."""
    for request, gradient in zip(req, in_grad):
        operator.assign(gradient, request, mx.nd.zeros(gradient.shape, gradient.context,
                                                       dtype=gradient.dtype))
