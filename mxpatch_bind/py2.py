"""Python 2's numbers and calls on Python 3, for the code ``migrate --to-python3`` ported.

Each function computes exactly what the Python 2 call it replaces computed: ``/``
(:func:`old_div`, :func:`old_idiv`), ``round`` / ``math.floor`` / ``math.ceil``, which
returned floats (:func:`old_round`, :func:`old_floor`, :func:`old_ceil`), ``map`` over several
sequences (:func:`old_map`), ``filter`` of a string or tuple (:func:`old_filter`), ``cmp``
(:func:`old_cmp`), ``inspect.getargspec`` (:func:`getargspec`), and bytes in ``json``
(:func:`json_bytes`).

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

import inspect
import itertools
import math
import numbers
from fractions import Fraction
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

__all__ = ["old_div", "old_idiv", "old_round", "old_floor", "old_ceil", "old_map",
           "old_filter", "old_cmp", "getargspec", "ArgSpec", "json_bytes"]


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
    elif type(target).__module__.startswith("mxnet.symbol"):
        # a Symbol had no in-place '/' (MXNet 1.9.1's raises): Python fell back to '/'
        target = target / divisor
    else:
        target /= divisor
    return target


def old_round(number: Any, ndigits: int = 0) -> float:
    """``round(number, ndigits)`` as Python 2 computed it: a float, with halves rounded away
    from zero (Python 3's ``round`` returns an int without ``ndigits`` and rounds halves to
    even).

    Python 2 turned the argument into a float first, then rounded its exact binary value:
    ``round(2.675, 2)`` is 2.67 on both Pythons (2.675 is stored as 2.67499...), while
    ``round(0.125, 2)`` (stored exactly) is 0.13 on Python 2 and 0.12 on Python 3.

    Parameters
    ----------
    number : object
        Anything ``float()`` takes.
    ndigits : int, optional
        Decimal digits to keep (negative: tens, hundreds, ...).

    Returns
    -------
    float

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_round
    >>> old_round(2.5), old_round(-2.5), old_round(3), old_round(0.125, 2), old_round(15, -1)
    (3.0, -3.0, 3.0, 0.13, 20.0)
    """
    value = float(number)
    if not math.isfinite(value):
        return value
    digits = max(-400, min(400, int(ndigits)))  # beyond these a double is exact or 0
    scale = Fraction(10) ** digits
    scaled = abs(Fraction(value)) * scale
    rounded = math.floor(scaled + Fraction(1, 2))  # half away from zero, on the exact value
    return math.copysign(float(Fraction(rounded) / scale), value)


def old_floor(number: Any) -> float:
    """``math.floor(number)`` as Python 2 computed it: a float (Python 3's is an int, and
    raises for infinities and NaN, which Python 2 returned as they were).

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_floor
    >>> old_floor(2.7), old_floor(-2.5), old_floor(float('inf'))
    (2.0, -3.0, inf)
    """
    value = float(number)
    return _signed(float(math.floor(value)), value) if math.isfinite(value) else value


def old_ceil(number: Any) -> float:
    """``math.ceil(number)`` as Python 2 computed it: a float (see :func:`old_floor`).

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_ceil
    >>> old_ceil(2.1), old_ceil(-2.5), old_ceil(7)
    (3.0, -2.0, 7.0)
    """
    value = float(number)
    return _signed(float(math.ceil(value)), value) if math.isfinite(value) else value


def _signed(result: float, value: float) -> float:
    """C's floor and ceil keep the sign of a zero result (``ceil(-0.5)`` is ``-0.0``)."""
    return math.copysign(0.0, value) if result == 0 else result


def old_map(function: Callable | None, *sequences: Any) -> list:
    """``map(function, *sequences)`` as Python 2 computed it: a list, as long as the longest
    sequence (the shorter ones padded with None; Python 3's ``map`` stops at the shortest),
    and with ``function`` None the tuples themselves (Python 3 raises).

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_map
    >>> old_map(lambda a, b: (a, b), [1, 2, 3], 'xy')
    [(1, 'x'), (2, 'y'), (3, None)]
    >>> old_map(None, [1, 2], [3])
    [(1, 3), (2, None)]
    >>> old_map(None, [1, 2])
    [1, 2]
    """
    if len(sequences) == 1:
        return list(sequences[0]) if function is None else list(map(function, sequences[0]))
    rows = itertools.zip_longest(*sequences)
    return list(rows) if function is None else [function(*row) for row in rows]


def old_filter(function: Callable | None, iterable: Any) -> Any:
    """``filter(function, iterable)`` as Python 2 computed it: a str of a str, a tuple of a
    tuple, a list of anything else (Python 3's is an iterator, always true in an ``if``).
    ``function`` None keeps the true items; bytes are filtered by one-byte strings, as
    Python 2's str was.

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_filter
    >>> old_filter(str.isdigit, 'img_0042.jpg'), old_filter(None, (0, 1, 2)), old_filter(None, [])
    ('0042', (1, 2), [])
    """
    keep = bool if function is None else function
    if isinstance(iterable, str):
        return "".join(c for c in iterable if keep(c))
    if isinstance(iterable, (bytes, bytearray)):
        return bytes(b for b in iterable if keep(bytes([b])))
    if isinstance(iterable, tuple):
        return tuple(x for x in iterable if keep(x))
    return [x for x in iterable if keep(x)]


def old_cmp(a: Any, b: Any) -> int:
    """``cmp(a, b)`` as Python 2 computed it for values Python 3 can order: -1, 0 or 1.
    Values Python 3 cannot order (``None`` and a number) raise ``TypeError``, where Python 2
    ordered them by type.

    Examples
    --------
    >>> from mxpatch_bind.py2 import old_cmp
    >>> old_cmp(1, 2), old_cmp('b', 'a'), old_cmp((1, 2), (1, 2))
    (-1, 1, 0)
    """
    return (a > b) - (a < b)


class ArgSpec(NamedTuple):
    """What Python 2's ``inspect.getargspec`` returned (:func:`getargspec`)."""

    args: list
    varargs: Optional[str]
    keywords: Optional[str]
    defaults: Optional[tuple]


def getargspec(function: Callable) -> ArgSpec:
    """``inspect.getargspec(function)`` as Python 2 computed it (Python 3.11 removed it):
    ``ArgSpec(args, varargs, keywords, defaults)``, from :func:`inspect.getfullargspec`.

    Raises
    ------
    ValueError
        For a function with keyword-only parameters or annotations, as Python 3's
        ``getargspec`` did (Python 2 had neither).

    Examples
    --------
    >>> from mxpatch_bind.py2 import getargspec
    >>> getargspec(lambda a, b=1, *c, **d: None)
    ArgSpec(args=['a', 'b'], varargs='c', keywords='d', defaults=(1,))
    """
    spec = inspect.getfullargspec(function)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError("Function has keyword-only parameters or annotations, use "
                         "inspect.signature() API which can support them")
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


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
