"""``importlib.reload`` of MXNet's module files: what it changed, and the core rebuilt (private).

Reloading ``mxnet.module.module`` (then ``mxnet.module``, for ``mx.mod.Module`` to follow)
creates new classes; the old ones stay behind with our wrappers on them, and our module core
(``PerDeviceModule`` derives from ``Module``, the wrappers test ``isinstance(..., Module)``)
was built on the old ones. While the patch is applied, a finder on ``sys.meta_path`` sees
``importlib.reload`` of those files (``find_spec`` with a ``target``) and, once the reload
has run, re-targets: it takes our wrappers off the classes from before the reload, reloads
the core modules that hold MXNet's classes, in dependency order, and wraps the new classes
(``install()`` does the same, for a reload the finder did not see). A reload MXNet cannot
work with itself (a submodule reloaded but not the package: ``mx.mod.Module`` is the old
class, whose ``super(Module, self)`` now names the new one) is refused with the reload
named; the finder waits for the package's reload instead, and meanwhile guards the new class:
:func:`halfway_wrapper` refuses a per-device call on it with that same refusal (a stock call
runs MXNet's own), where MXNet's own error would be a bare ``TypeError`` from ``DataDesc``.
"""

import importlib
import sys
import threading
import types

from ..errors import UnsupportedMXNetError

# The core's modules that take MXNet's classes at import time, each after those it imports.
_CORE = ("executor_group", "transactions", "forward", "binding", "sequential", "wrappers")

# (our module, the name it imports, where MXNet holds the class its own classes use: for
# BaseModule, the one Module derives from, which a reload of base_module alone leaves as it
# was; the core must recognise the modules MXNet's classes make, not the newest class).
_BUILT_ON = (
    ("module.binding", "Module", "mxnet.module.module"),
    ("module.binding", "BucketingModule", "mxnet.module.bucketing_module"),
    ("module.sequential", "SequentialModule", "mxnet.module.sequential_module"),
    ("module.executor_group", "DataParallelExecutorGroup", "mxnet.module.executor_group"),
    ("module.transactions", "BaseModule", "mxnet.module.module"),
)

# (where MXNet re-exports a class, the name, where it is defined): equal unless half reloaded.
_EXPORTS = (
    ("mxnet.module", "Module", "mxnet.module.module"),
    ("mxnet.module", "BucketingModule", "mxnet.module.bucketing_module"),
    ("mxnet.module", "SequentialModule", "mxnet.module.sequential_module"),
    ("mxnet.module", "BaseModule", "mxnet.module.base_module"),
    ("mxnet.module.module", "DataParallelExecutorGroup", "mxnet.module.executor_group"),
)

_PACKAGE = __name__.split(".")[0]  # mxpatch_bind: the core is mxpatch_bind.module


def half_reloaded():
    """Sentences for MXNet classes whose package exports another class than the module that
    defines them: a module reloaded without what imports from it."""
    found = []
    for exporter, name, definer in _EXPORTS:
        exported = getattr(sys.modules.get(exporter), name, None)
        defined = getattr(sys.modules.get(definer), name, None)
        if exported is not None and defined is not None and exported is not defined:
            found.append(f"{exporter}.{name} is {exported!r} but {definer} now defines "
                         f"{defined!r}: {definer} was reloaded (importlib.reload) and "
                         f"{exporter} was not; reload {exporter} after it (stock MXNet "
                         "cannot use the class from before the reload either)")
    return found


def refusal(halves, doing):
    """The refusal of a half reload, as ``install()`` and the guards give it."""
    return (f"mxpatch_bind cannot {doing} on this MXNet: {'; '.join(halves)}. Nothing was "
            "changed.")


def halfway_wrapper(attribute):
    """What the new class of a half-reloaded module file runs for ``attribute`` until the
    package is reloaded too: stock calls go to MXNet, per-device ones are refused by name."""
    is_per_device_call = importlib.import_module(
        f"{_PACKAGE}.module.wrappers").is_per_device_call

    def refuse_per_device(wrapped, instance, args, kwargs):
        if is_per_device_call(attribute, instance, args, kwargs):
            halves = half_reloaded() or ["MXNet's module files were reloaded and mxpatch_bind "
                                         "could not patch the new classes (install() says why)"]
            raise UnsupportedMXNetError(refusal(halves, f"run a per-device {attribute}()"))
        return wrapped(*args, **kwargs)
    refuse_per_device.halfway = True  # what tells a guard from our other wrappers
    return refuse_per_device


def stale_core():
    """The MXNet classes our loaded core modules hold that MXNet no longer defines."""
    found = []
    for ours, name, definer in _BUILT_ON:
        module = sys.modules.get(f"{_PACKAGE}.{ours}")
        defined = getattr(sys.modules.get(definer), name, None)
        if module is not None and defined is not None and getattr(module, name) is not defined:
            found.append(f"{definer}.{name}")
    return found


def rebuild_core():
    """Reload the core modules that are loaded, so that they hold MXNet's classes of now."""
    for name in _CORE:
        module = sys.modules.get(f"{_PACKAGE}.module.{name}")
        if module is not None:
            importlib.reload(module)
    # The package caches what its lazy names gave; the next access takes the rebuilt ones.
    package = sys.modules[_PACKAGE]
    for name in ("bind", "reshape"):
        vars(package).pop(name, None)


def redefined(found, original):
    """Whether ``found`` is ``original`` defined again (its module reloaded), not the same."""
    if type(found) is not types.FunctionType or type(original) is not types.FunctionType:
        return False  # a wrapper proxies the original's __code__ and names: not a reload
    found_code = found.__code__
    original_code = original.__code__
    return (found is not original
            and getattr(found, "__module__", None) == getattr(original, "__module__", None)
            and getattr(found, "__qualname__", None) == getattr(original, "__qualname__", None)
            and found_code.co_filename == original_code.co_filename)


# --------------------------------------------------------------------------- the finder
_WATCHED = frozenset({"mxnet.module", "mxnet.module.module", "mxnet.module.bucketing_module",
                      "mxnet.module.sequential_module", "mxnet.module.executor_group",
                      "mxnet.module.base_module", "mxnet.kvstore", "mxnet.kvstore.base"})


class _Finder:
    """Finds a reloaded MXNet module file as the rest of ``sys.meta_path`` does, with a loader
    that calls ``after`` once the module has run again."""

    def __init__(self):
        self.after = None
        self._searching = threading.local()  # this thread is inside our own find_spec

    def find_spec(self, fullname, path=None, target=None):
        if (target is None or fullname not in _WATCHED or self.after is None
                or getattr(self._searching, "on", False)):
            return None  # an import, not a reload; or not MXNet's module files
        self._searching.on = True
        try:
            spec = next((found for finder in sys.meta_path if finder is not self
                         and hasattr(finder, "find_spec")
                         for found in [finder.find_spec(fullname, path, target)]
                         if found is not None), None)
        finally:
            self._searching.on = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self.after)
        return spec


class _Loader:
    """Runs the loader it was given, then ``after()``; the module names the loader it wraps."""

    def __init__(self, loader, after):
        self.loader = loader
        self.after = after

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        if getattr(module.__spec__, "loader", None) is self:
            module.__spec__.loader = self.loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        self.loader.exec_module(module)
        self.after()


_FINDER = _Finder()


def watch(after):
    """Call ``after()`` whenever one of MXNet's module files has been reloaded."""
    _FINDER.after = after
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def unwatch():
    _FINDER.after = None
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
