"""Per-device input shapes for stock MXNet ``Module``, as a reversible wrapt patch.

``install()`` (or ``with patched():``) lets ``Module.bind`` / ``Module.reshape`` take one shape
list per device, so every device runs its own image size and batch size. ``import
mxpatch_bind`` does not import MXNet: the names that need it load on first use.
"""

import importlib
from typing import TYPE_CHECKING

from .errors import (
    BatchError,
    DataLoadError,
    DataSpecError,
    HorovodError,
    PatchError,
    SettingsError,
    ShapeSpecError,
    UnsupportedMXNetError,
    WorkerExitedError,
)
from .version import __version__

if TYPE_CHECKING:
    from .data.inputs import Input
    from .data.io import PerDeviceIter
    from .data.loading import image_size
    from .data.prefetch import PerDevicePrefetchingIter
    from .module.binding import bind, reshape
    from .patching import (
        PatchStatus,
        TargetInfo,
        describe_targets,
        install,
        is_installed,
        patched,
        status,
        uninstall,
    )
    from .settings import Settings, configure

__all__ = [
    "install",
    "uninstall",
    "patched",
    "is_installed",
    "status",
    "PatchStatus",
    "describe_targets",
    "TargetInfo",
    "bind",
    "reshape",
    "PerDeviceIter",
    "Input",
    "DataSpecError",
    "DataLoadError",
    "WorkerExitedError",
    "image_size",
    "PerDevicePrefetchingIter",
    "PatchError",
    "UnsupportedMXNetError",
    "ShapeSpecError",
    "BatchError",
    "SettingsError",
    "HorovodError",
    "configure",
    "Settings",
    "__version__",
]

# Loaded on first access (PEP 562): binding, io, inputs and loading import MXNet or numpy, and
# patching imports wrapt (which imports asyncio): the pytest plugin, imported by every pytest
# run in the environment, and ``python -m mxpatch_bind --help`` must not pay for them.
_LAZY = {"bind": "module.binding", "reshape": "module.binding", "PerDeviceIter": "data.io",
         "Input": "data.inputs", "image_size": "data.loading",
         "PerDevicePrefetchingIter": "data.prefetch",
         "configure": "settings", "Settings": "settings",
         **dict.fromkeys(["install", "uninstall", "patched", "is_installed", "status",
                          "PatchStatus", "describe_targets", "TargetInfo"], "patching")}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module("." + _LAZY[name], __name__)
    except (ImportError, AttributeError, OSError) as error:
        # binding and io import MXNet: a broken environment is named with its fix.
        from ._mxnet_env import named_failure
        named = named_failure(error)
        if named is None:
            raise
        raise named from error
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
