"""The package's two tunable settings (private module; use ``mxpatch_bind.configure``)."""

import os
import threading
from typing import NamedTuple, Optional

from ._values import is_integer
from .errors import SettingsError

__all__ = ["Settings", "configure", "current"]

# Environment variables that set the defaults, for training scripts one cannot edit.
EXEC_CACHE_SIZE_VARIABLE = "MXPATCH_BIND_EXEC_CACHE_SIZE"
RESHAPE_THREADS_VARIABLE = "MXPATCH_BIND_RESHAPE_THREADS"
DEFAULT_EXEC_CACHE_SIZE = 8
# More threads than cores only adds switching: each reshape is one C call that needs a core.
MAX_DEFAULT_RESHAPE_THREADS = 8


class Settings(NamedTuple):
    """The settings in force (see :func:`mxpatch_bind.configure`).

    Attributes
    ----------
    exec_cache_size : int
        Reshaped executors kept per device for recurring shapes (0: none).
    reshape_threads : int
        Threads that reshape the devices of one shape change at once (1: one after another).
    """

    exec_cache_size: int
    reshape_threads: int


_LOCK = threading.Lock()
_current: Optional[Settings] = None


def configure(*, exec_cache_size: Optional[int] = None,
              reshape_threads: Optional[int] = None) -> "Settings":
    """Set how many executors each device caches and how many threads reshape devices.

    Parameters
    ----------
    exec_cache_size : int >= 0, optional
        Executors kept per device for shapes that recur, least recently used dropped first.
        A cached shape costs no reshape (about 30x cheaper than a never-seen one on a small
        CNN); each cached executor shares its device's largest executor's memory and costs
        only its own bookkeeping (measured in ``docs/performance.md``, section 3). Default
        8, or the ``MXPATCH_BIND_EXEC_CACHE_SIZE`` environment variable. Takes effect at each
        group's next insertion; a smaller size drops the oldest entries then.
    reshape_threads : int >= 1, optional
        Threads that run the per-device reshapes of one never-seen shape change at the same
        time, where MXNet allows it safely (MXNet 1.9 on CPU contexts; elsewhere they run one
        after another). 1 turns it off. Default: the CPUs this process may use, at most 8, or
        the ``MXPATCH_BIND_RESHAPE_THREADS`` environment variable.

    Returns
    -------
    Settings
        The settings before this call, so that ``configure(**previous._asdict())`` restores
        them.

    Raises
    ------
    SettingsError
        A value is not an integer in range; nothing is changed.

    Examples
    --------
    >>> import mxpatch_bind
    >>> previous = mxpatch_bind.configure(exec_cache_size=16)
    >>> mxpatch_bind.configure(**previous._asdict()).exec_cache_size
    16
    """
    with _LOCK:
        previous = _settings()
        wanted = previous._replace(**{
            name: _checked(name, value, minimum)
            for name, value, minimum in (("exec_cache_size", exec_cache_size, 0),
                                         ("reshape_threads", reshape_threads, 1))
            if value is not None})
        global _current
        _current = wanted
    return previous


def current():
    """The settings in force.

    Examples
    --------
    >>> from mxpatch_bind.settings import current
    >>> current().reshape_threads >= 1
    True
    """
    with _LOCK:
        return _settings()


def _settings():
    global _current
    if _current is None:
        _current = Settings(
            exec_cache_size=_from_environment(EXEC_CACHE_SIZE_VARIABLE, "exec_cache_size",
                                              DEFAULT_EXEC_CACHE_SIZE, 0),
            reshape_threads=_from_environment(RESHAPE_THREADS_VARIABLE, "reshape_threads",
                                              _default_threads(), 1))
    return _current


def _from_environment(variable, name, default, minimum):
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise SettingsError(f"the environment variable {variable}={text!r} sets {name}; expected "
                            f"an integer >= {minimum}")
    return value


def _checked(name, value, minimum):
    # bool is an int in Python, but configure(reshape_threads=True) is a mistake.
    if not is_integer(value) or value < minimum:
        raise SettingsError(f"{name} must be an integer >= {minimum}, got {value!r} of type "
                            f"{type(value).__name__}")
    return int(value)


def _default_threads():
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_RESHAPE_THREADS))


def _after_fork_in_child():
    # The lock may have been held by a parent thread that does not exist in the child.
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
