"""Python 2's ``/`` (and its bytes in ``json``) on Python 3, for the code ``migrate
--to-python3`` ported.

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

__all__ = ["old_div", "old_idiv", "json_bytes"]


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


def json_bytes(value: Any) -> str:
    """The ``default=`` of ``json.dump`` / ``json.dumps`` that writes bytes as Python 2 did.

    Python 2's ``str`` was bytes, and ``json`` wrote it as text decoded as UTF-8; on Python 3
    ``json`` refuses bytes (pycocotools' RLE ``counts`` in FCIS's segmentation results).
    ``migrate --to-python3`` passes this to the calls of a Python 2 code base that give no
    ``default`` or ``cls`` of their own.

    Parameters
    ----------
    value : object
        What ``json`` could not serialize.

    Returns
    -------
    str
        ``value`` decoded as UTF-8 when it is bytes.

    Raises
    ------
    TypeError
        For anything else, as ``json`` raises without a ``default``.
    UnicodeDecodeError
        For bytes that are not UTF-8 (Python 2 raised it too).

    Examples
    --------
    >>> import json
    >>> from mxpatch_bind.py2 import json_bytes
    >>> json.dumps({'counts': b'Ue02'}, default=json_bytes)
    '{"counts": "Ue02"}'
    """
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _integral(value: Any) -> bool:
    """Whether Python 2's ``/`` rounded down with ``value`` as one of two such operands."""
    if isinstance(value, numbers.Integral):  # int, bool and NumPy's integer scalars
        return True
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "biu"
    return False
