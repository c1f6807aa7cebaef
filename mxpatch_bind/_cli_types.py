"""argparse value types with ranges, and a parser whose usage errors are one line (private).

Shared by ``python -m mxpatch_bind`` and its subcommands, and by ``python -m benchmarks``:
a bad value (``--epochs 0``, ``--rounds -1``, ``--min-accuracy nan``) is an argparse usage
error, exit status 2, never a traceback from deeper in.
"""

import argparse
import math
from typing import NoReturn

__all__ = ["Parser", "positive_int", "nonneg_int", "fraction", "positive_float",
           "nonneg_float"]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that reports a usage error in one line on stderr, exit status 2.

    Argparse's default repeats the whole usage first, which for a command with many options
    is several lines above the one that matters.

    Examples
    --------
    >>> parser = Parser(prog="demo")
    >>> _ = parser.add_argument("--epochs", type=positive_int)
    >>> parser.parse_args(["--epochs", "2"]).epochs
    2
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, "%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))


def positive_int(text: str) -> int:
    """An integer >= 1.

    Examples
    --------
    >>> positive_int("3")
    3
    """
    return _int_at_least(text, 1)


def nonneg_int(text: str) -> int:
    """An integer >= 0.

    Examples
    --------
    >>> nonneg_int("0")
    0
    """
    return _int_at_least(text, 0)


def positive_float(text: str) -> float:
    """A finite number > 0.

    Examples
    --------
    >>> positive_float("0.5")
    0.5
    """
    value = _finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got %r" % text)
    return value


def nonneg_float(text: str) -> float:
    """A finite number >= 0.

    Examples
    --------
    >>> nonneg_float("0")
    0.0
    """
    value = _finite_float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError("expected a number >= 0, got %r" % text)
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1 inclusive.

    Examples
    --------
    >>> fraction("0.85")
    0.85
    """
    value = _finite_float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("expected a fraction from 0 to 1, got %r" % text)
    return value


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer >= %d, got %r"
                                         % (low, text)) from None
    if value < low:
        raise argparse.ArgumentTypeError("expected an integer >= %d, got %r" % (low, text))
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got %r" % text) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError("expected a finite number, got %r" % text)
    return value
