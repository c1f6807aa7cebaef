"""Small checks of user values shared by the package's parts (private)."""

import numbers


def is_flag(value):
    """True for ``True`` and ``False`` (numpy's bool too): nothing merely truthy is a flag.

    ``bool()`` would take the string ``"False"`` as true. Read without importing numpy.
    """
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ == "bool_")


def is_integer(value):
    """True for an integer, numpy's too, but not for ``True`` / ``False``: bool is an
    ``Integral`` in Python, but ``True`` devices or samples is a mistake, not a count."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
