"""Per-device input shapes for stock MXNet ``Module``, as a reversible wrapt patch.

``install()`` (or ``with patched():``) lets ``Module.bind`` / ``Module.reshape`` take one shape
list per device, so every device runs its own image size and batch size. ``import
mxpatch_bind`` does not import MXNet: the names that need it load on first use.
"""

import importlib

from .errors import BatchError, PatchError, ShapeSpecError, UnsupportedMXNetError
from .patching import PatchStatus, install, is_installed, patched, status, uninstall
from .version import __version__

__all__ = [
    "install",
    "uninstall",
    "patched",
    "is_installed",
    "status",
    "PatchStatus",
    "bind",
    "reshape",
    "PerDeviceIter",
    "PatchError",
    "UnsupportedMXNetError",
    "ShapeSpecError",
    "BatchError",
    "__version__",
]

# Names whose modules import MXNet: loaded on first access (PEP 562).
_LAZY = {"bind": "binding", "reshape": "binding", "PerDeviceIter": "io"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
