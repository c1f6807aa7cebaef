"""Small checks of user values shared by the package's parts (private)."""


def is_flag(value):
    """True for ``True`` and ``False`` (numpy's bool too): nothing merely truthy is a flag.

    ``bool()`` would take the string ``"False"`` as true. Read without importing numpy.
    """
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ == "bool_")
