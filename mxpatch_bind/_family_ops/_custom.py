"""Building a registered ``CustomOp`` as a Symbol or an NDArray call (private module)."""

from __future__ import annotations

import atexit
import threading
from typing import Any, Optional

from .._mxnet_env import import_mxnet
from ._arguments import spell

mx: Any = import_mxnet()

__all__ = ["call", "assign_zero_gradients", "every_array"]

_WAIT_AT_EXIT = threading.Lock()
_waiting_at_exit: list = []


def _wait_for_the_engine_at_exit() -> None:
    """Register, once, ``mx.nd.waitall`` to run at interpreter exit.

    A Python operator still queued when the interpreter finalizes runs in MXNet's worker
    thread against a dying interpreter: a script that binds one ``mx.sym.Custom``, runs
    ``forward`` and exits without reading the outputs hung at exit in 3 of 5 runs on
    MXNet 1.9.1 here, and exited in 5 of 5 with this hook (test_family_ops_exit.py).
    """
    with _WAIT_AT_EXIT:
        if not _waiting_at_exit:
            atexit.register(mx.nd.waitall)
            _waiting_at_exit.append(True)


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
    _wait_for_the_engine_at_exit()
    if kind is mx.sym.Symbol:
        return mx.sym.Custom(op_type=op_type, name=name, **inputs, **spelt)
    return mx.nd.Custom(*values, op_type=op_type, **spelt)


def assign_zero_gradients(operator: Any, req: list, in_grad: list) -> None:
    """The backward of an operator that passes no gradient: zeros, or nothing added."""
    for request, gradient in zip(req, in_grad):
        operator.assign(gradient, request, mx.nd.zeros(gradient.shape, gradient.context,
                                                       dtype=gradient.dtype))


def every_array(out_grad: list, in_data: list, out_data: list) -> list:
    """The backward dependencies of a drop-in: every output gradient, input and output.

    Declared even where the backward reads none of them: MXNet 1.9.1 keeps one registry-wide
    set, the dependencies the last *declared* Python operator gave, and reads every Python
    operator's backward arrays through it, so an array this operator did not declare (never
    allocated) fails there with ``unknown storage type: -1`` as soon as a Python operator
    declared after it (a loss such as mx-maskrcnn's ``MaskOutput``) lists its position.
    """
    return list(out_grad) + list(in_data) + list(out_data)
