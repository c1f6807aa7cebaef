"""Python 2's ``/`` on Python 3, for the code ``migrate --to-python3`` ported.

Python 2 divided two integers to an integer (rounding down) and divided anything else truly.
Where ``migrate`` cannot tell from a ``/``'s operands which of the two a line meant, it
writes ``old_div(a, b)`` (and ``a = old_idiv(a, b)`` for ``a /= b``), which decides at run
time exactly as Python 2 did, so the ported code computes what it computed before; every
report run of ``migrate`` lists each such call until a person writes ``//`` or ``/`` there.

"Integer" means what it meant to Python 2's ``/``: Python ints and bools, NumPy integer and
bool scalars, and NumPy arrays of those dtypes (NumPy divided them rounding down too). MXNet
``NDArray`` and ``Symbol`` divided the same way on both Pythons, so they divide as ``/``.
Importing this module does not import MXNet.
"""

import numbers
from typing import Any

import numpy as np

__all__ = ["old_div", "old_idiv"]


def old_div(dividend: Any, divisor: Any) -> Any:
    """``dividend / divisor`` as Python 2 computed it.

    Parameters
    ----------
    dividend, divisor : object
        The operands of a Python 2 ``/``.

    Returns
    -------
    object
        ``dividend // divisor`` when both are integers (Python ints, NumPy integer scalars or
        integer arrays), else ``dividend / divisor``.

    Examples
    --------
    >>> import numpy as np
    >>> from mxpatch_bind.py2 import old_div
    >>> old_div(7, 2), old_div(-7, 2), old_div(7.0, 2)
    (3, -4, 3.5)
    >>> old_div(np.array([7, -7]), 2)
    array([ 3, -4])
    >>> old_div(np.array([7, -7]), 2.0)
    array([ 3.5, -3.5])
    """
    if _integral(dividend) and _integral(divisor):
        return dividend // divisor
    return dividend / divisor


def old_idiv(target: Any, divisor: Any) -> Any:
    """``target /= divisor`` as Python 2 ran it; returns what the statement binds.

    ``migrate`` writes ``x = old_idiv(x, d)`` for ``x /= d``: an array (NumPy, MXNet) is
    divided in place, as ``/=`` did, so other names for it see the change.

    Parameters
    ----------
    target : object
        The left side of a Python 2 ``/=``.
    divisor : object
        Its right side.

    Returns
    -------
    object
        ``target`` itself where its type divides in place, else the quotient.

    Examples
    --------
    >>> import numpy as np
    >>> from mxpatch_bind.py2 import old_idiv
    >>> boxes = np.array([9, 12])
    >>> view = boxes
    >>> boxes = old_idiv(boxes, 2)
    >>> view, view is boxes
    (array([4, 6]), True)
    """
    if _integral(target) and _integral(divisor):
        target //= divisor
    else:
        target /= divisor
    return target


def _integral(value: Any) -> bool:
    """Whether Python 2's ``/`` rounded down with ``value`` as one of two such operands."""
    if isinstance(value, numbers.Integral):  # int, bool and NumPy's integer scalars
        return True
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "biu"
    return False
