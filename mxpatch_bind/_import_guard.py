"""Name the fix when ``import mxnet`` fails while an ``install()`` waits for it (private).

``install()`` before ``import mxnet`` registers wrapt's post-import hook, whose finder loads
``mxnet`` through wrapt's loader. A broken environment (numpy 1.24 or later, a
``libmxnet.so`` that does not load) then ends in numpy's or ctypes' raw error with a
``wrapt/importer.py`` frame in it, as if the patch had broken the import. This finder stands
ahead of wrapt's for ``mxnet`` only, and turns such a failure into the
:class:`~mxpatch_bind._mxnet_env.MXNetEnvironmentError` that names the fix, caused by the
original error with the import machinery's frames taken out
(:func:`~mxpatch_bind._mxnet_env.named_failure`). Any other failure passes unchanged. It
takes itself off ``sys.meta_path`` once MXNet has been imported.
"""

import importlib.abc
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Optional, Sequence

from ._mxnet_env import named_failure

__all__ = ["arm"]

_NAME = "mxnet"


class _Finder:
    """Finds ``mxnet`` as the rest of ``sys.meta_path`` does, with :class:`_Loader` around it."""

    def __init__(self) -> None:
        self._searching = threading.local()  # this thread is inside our own find_spec

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Any:
        if fullname != _NAME or getattr(self._searching, "on", False):
            return None
        self._searching.on = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching.on = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    """Runs the loader it was given; a failure it recognises leaves as the named error."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: Any) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module names the loader we wrapped, as if we had never been there.
        if getattr(module.__spec__, "loader", None) is self:
            module.__spec__.loader = self.loader  # type: ignore[union-attr]
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        try:
            self.loader.exec_module(module)
        except (ImportError, AttributeError, OSError) as failure:
            named = named_failure(failure)
            if named is None:
                raise
            raise named from failure  # import mxnet failed by itself: the message says why
        _disarm()


_FINDER = _Finder()
_lock = threading.Lock()


def arm() -> None:
    """Put the guard first on ``sys.meta_path`` (ahead of wrapt's finder, registered before).

    Examples
    --------
    >>> from mxpatch_bind import _import_guard
    >>> _import_guard.arm()
    >>> _import_guard._FINDER in sys.meta_path
    True
    >>> _import_guard._disarm()
    """
    with _lock:
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
        sys.meta_path.insert(0, _FINDER)


def _disarm() -> None:
    with _lock:
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
