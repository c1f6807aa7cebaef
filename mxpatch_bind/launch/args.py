"""Check the launcher's arguments, from Python and from the command line (private).

Every check runs before any process starts. The API raises ``TypeError`` for a
wrong type and ``ValueError`` for a wrong value; the command line's flags are
parsed by argparse ``type`` functions that apply the same ranges, and a bad one
is a usage error: one line, exit status 2 (``_cli_types.Parser``, as every command).
"""

import argparse
import math
import numbers
from collections.abc import Mapping, Sequence

from .._values import is_integer
from . import env as _launch_env


def count(name, value, minimum):
    """``value`` as an int, when it is an integer (numpy's too) >= ``minimum``."""
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} of type "
                        f"{type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def seconds(name, value, minimum, inclusive, none_means=None):
    """``value`` as a float, when it is a finite real number above ``minimum``."""
    bound = f'{">=" if inclusive else ">"} {minimum:g}'
    accepted = (f'a finite number of seconds {bound}'
               f'{"" if none_means is None else ", or None for " + none_means}')
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {accepted}, got {value!r} of type {type(value).__name__}")
    number = float(value)
    in_range = number >= minimum if inclusive else number > minimum
    if not (math.isfinite(number) and in_range):
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    return number


_COMMAND_FORM = "command must be a non-empty list of str such as ['python', 'train.py'], got {!r}"


def check_command(command):
    """``command`` as a list, when it is a non-empty sequence of str (one str is refused)."""
    if isinstance(command, (str, bytes)) or not isinstance(command, Sequence):
        raise TypeError(_COMMAND_FORM.format(command))
    if not command:
        raise ValueError(_COMMAND_FORM.format(command))
    for position, argument in enumerate(command):
        if not isinstance(argument, str):
            raise TypeError(f"command[{position}] must be a str, got {argument!r} of type "
                            f"{type(argument).__name__}")
        if "\0" in argument:
            raise ValueError(f"command[{position}] must not contain a NUL character, got "
                             f"{argument!r}")
    return list(command)


def check_env(env):
    """``env`` as a dict, when it maps str to str and sets no variable the launcher owns."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a dict of str to str or None, got {env!r}")
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"env must map str to str, got {name!r}: {value!r}")
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(
                "env names must be non-empty without '=' or NUL, and values without NUL, got "
                f"{name!r}: {value!r}")
        if _launch_env.is_owned(name):
            raise ValueError(f"env must not set {name!r}: the launcher owns "
                             f"{_launch_env.OWNED_SUMMARY}")
    return dict(env)


def _flag_type(parse, accepted):
    """An argparse ``type``: ``parse`` the text, or report ``accepted`` as a usage error."""

    def parse_flag(text):
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {accepted}, got {text!r}") from None

    return parse_flag


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _finite_seconds(text):
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(text)
    return value


# The flags' ``type`` functions: the same ranges as the API's checks.
count_flag = _flag_type(_positive_int, "an integer >= 1")
seconds_flag = _flag_type(_finite_seconds, "a finite number of seconds >= 0")
timeout_flag = _flag_type(_finite_seconds, "a finite number of seconds >= 0 (0: no limit)")
