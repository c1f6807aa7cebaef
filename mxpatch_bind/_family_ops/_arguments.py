"""Checking and passing the operators' parameters (private module).

``mx.sym.Custom`` hands every keyword to the operator as a string; the constructors check the
values first, in the caller's thread (an exception inside a ``CustomOp`` stops the process),
and pass them in one spelling that :func:`parse` reads back.
"""

from __future__ import annotations

import ast
import numbers
from typing import Any

__all__ = ["OperatorArgumentError", "positive_int", "int_at_least", "float_in", "float_tuple",
           "pair", "parse", "spell", "number"]


class OperatorArgumentError(ValueError):
    """A parameter of a family operator's drop-in is one the original operator refuses.

    The message names the operator, the parameter, the value given and the accepted form.
    It is raised when the symbol is built, before any operator runs.

    Examples
    --------
    >>> from mxpatch_bind.compat import OperatorArgumentError
    >>> issubclass(OperatorArgumentError, ValueError)
    True
    """


def _refuse(op: str, name: str, value: Any, form: str) -> OperatorArgumentError:
    return OperatorArgumentError(f"{op}: {name} must be {form}, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def int_at_least(op: str, name: str, value: Any, least: int) -> int:
    """``value`` as an int of at least ``least``, or :class:`OperatorArgumentError`."""
    if not _is_int(value) or value < least:
        raise _refuse(op, name, value, f"an int of at least {least}")
    return int(value)


def positive_int(op: str, name: str, value: Any) -> int:
    """``value`` as a positive int."""
    return int_at_least(op, name, value, 1)


def float_in(op: str, name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float within ``[low, high]``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) \
            or not low <= float(value) <= high:
        raise _refuse(op, name, value, f"a number in [{low}, {high}]")
    return float(value)


def number(op: str, name: str, value: Any) -> float:
    """``value`` as a float (any real number but NaN; not a bool)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or value != value:
        raise _refuse(op, name, value, "a number")
    return float(value)


def float_tuple(op: str, name: str, value: Any) -> tuple:
    """``value`` as a non-empty tuple of finite positive floats (anchor scales and ratios)."""
    items = tuple(value) if isinstance(value, (list, tuple)) else None
    if not items or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                            and 0 < float(v) < float("inf") for v in items):
        raise _refuse(op, name, value, "a non-empty tuple of positive numbers")
    return tuple(float(v) for v in items)


def pair(op: str, name: str, value: Any) -> tuple:
    """``value`` as a pair of positive ints (a pooled size ``(h, w)``)."""
    items = tuple(value) if isinstance(value, (list, tuple)) else None
    if items is None or len(items) != 2 or not all(_is_int(v) and v > 0 for v in items):
        raise _refuse(op, name, value, "a pair of positive ints (h, w)")
    return tuple(int(v) for v in items)


def spell(value: Any) -> str:
    """The one string a parameter travels as through ``mx.sym.Custom``."""
    return repr(value)


def parse(text: str) -> Any:
    """A parameter back from its :func:`spell`-ing."""
    return ast.literal_eval(text)

