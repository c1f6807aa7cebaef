"""Private to ``migrate``: Numeric's type names (``'Int32'``, ``'Float64'``) given as a dtype.

NumPy 1.16, the last release line on Python 2, still read Numeric's capitalised names:
``'Int8'`` to ``'Int64'``, ``'UInt8'`` to ``'UInt64'``, ``'Float16'`` to ``'Float64'``,
``'Bool'``, and ``'Complex32'`` / ``'Complex64'``, which counted one component's bits
(complex64 / complex128). NumPy 1.23 refuses them (``TypeError: data type 'Int32' not
understood``: mx-maskrcnn's ``rcnn/core/metric.py``, ``labels.asnumpy().astype('Int32')``).
In a Python 2 file, such a string literal where NumPy reads a dtype (``x.astype(...)``'s
first argument, a ``dtype=`` keyword, ``np.dtype(...)``) becomes the name NumPy 1.16 read it
as.
"""

from __future__ import annotations

import ast

from .found import Found
from .names import Names
from .textedit import Text

NUMERIC = {f"Int{bits}": f"int{bits}" for bits in (8, 16, 32, 64)} | {
    f"UInt{bits}": f"uint{bits}" for bits in (8, 16, 32, 64)} | {
    f"Float{bits}": f"float{bits}" for bits in (16, 32, 64)} | {
    "Complex32": "complex64", "Complex64": "complex128", "Bool": "bool"}


def found(names: Names, source: Text) -> list[Found]:
    """The edit of each Numeric type name given as a dtype."""
    out = []
    for call in names.calls:
        for node in _dtype_arguments(names, call):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value in NUMERIC:
                quote = source.source(node)[-1]
                out.append(Found(node.lineno, "a Numeric type name NumPy no longer reads",
                                 edits=source.swap(node, quote + NUMERIC[node.value] + quote)))
    return out


def _dtype_arguments(names, call):
    given = [k.value for k in call.keywords if k.arg == "dtype"]
    if call.args and ((isinstance(call.func, ast.Attribute) and call.func.attr == "astype")
                      or names.qualified(call.func) == "numpy.dtype"):
        given.append(call.args[0])
    return given
