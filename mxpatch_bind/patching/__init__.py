"""install / uninstall / patched / status: which bind and reshape MXNet's Module runs (private).

The patched methods are declared once, in ``_targets.TARGETS``, which install, uninstall,
the version guard, status and :func:`describe_targets` all read. All patch state lives in
``_applying.state`` behind one lock; ``_applying`` puts our wrappers in and takes them out
(its policies: other patchers, ``fork()``), ``_chains`` reads the wrapper chains. This module
counts the installs and decides when to apply: now, or once MXNet is imported.

Policies decided here:

* **MXNet not installed.** ``install()`` before ``import mxnet`` waits for the import; if no
  ``mxnet`` module can be found at all, it warns once, naming the fix.
* **MXNet broken.** While an ``install()`` waits, ``import mxnet`` runs under the import
  guard (``_import_guard``): numpy 1.24 or later and a native library that does not load
  fail with the error that names the fix, not with numpy's ``AttributeError`` seen through
  wrapt's import hook.
* **Each message once.** A warning is also logged, but only where logging has a handler:
  with none, logging's last-resort handler would print it a second time on stderr.
"""

import contextlib
import importlib
import importlib.util
import logging
import sys
import threading
import warnings
from typing import Any, Literal, NamedTuple, Optional, Tuple

import wrapt

from .. import _import_guard
from .._mxnet_env import not_installed_fix
from .._values import is_flag
from ..errors import UnsupportedMXNetError
from ..settings import current as current_settings
from . import _applying, _reloads
from ._applying import state as _state
from ._targets import TARGETS, current, full_name, imported_mxnet, qualified_name

__all__ = ["install", "uninstall", "patched", "is_installed", "status", "PatchStatus",
           "describe_targets", "TargetInfo", "TARGETS"]

logger = logging.getLogger(__name__)


class PatchStatus(NamedTuple):
    """A snapshot of the patch state, returned by :func:`status`.

    Attributes
    ----------
    installed : bool
        Whether MXNet's methods are patched right now: every target still reaches a live
        wrapper of ours (false if someone replaced one behind our back).
    refcount : int
        Outstanding :func:`install` calls (each needs one :func:`uninstall`).
    pending : bool
        ``install()`` was called before ``import mxnet``; the patch waits for the import.
    mxnet_version : str or None
        ``mxnet.__version__``, or ``None`` when MXNet is not imported.
    targets : tuple of str
        The patched methods, e.g. ``'mxnet.module.module.Module.bind'``.
    foreign_wrappers : tuple of str
        What other patchers did to the targets, one sentence each, as ``'target: what'``:
        wrappers put on top of ours (saying whether :func:`uninstall` can take ours out
        from under them), a target replaced or restored behind our back, and switched-off
        wrappers of ours still held in someone's chain.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.status().targets[0]
    'mxnet.module.module.Module.bind'
    """

    installed: bool
    refcount: int
    pending: bool
    mxnet_version: Optional[str]
    targets: Tuple[str, ...]
    foreign_wrappers: Tuple[str, ...]



# --------------------------------------------------------------------------- public API
def install(*, force: bool = False) -> None:
    """Patch ``Module.bind`` / ``Module.reshape`` to accept per-device shape lists.

    Reference-counted: each call needs one :func:`uninstall`; the patch is applied by the
    first. Thread-safe, and safe across ``fork()``. After ``importlib.reload`` of MXNet's
    module files (``mxnet.module.module``, then ``mxnet.module``), each call patches the new
    classes again and takes the wrappers off the old ones. Before touching anything it checks
    ``mxnet.__version__`` (1.6–1.9.x) and the parameters of the methods it replaces. Called
    before ``import mxnet``, it patches when MXNet is imported; if MXNet is not installed at
    all it says so once (a ``RuntimeWarning``, also logged) and keeps waiting.

    Parameters
    ----------
    force : bool
        Default ``False``. Patch even an unsupported MXNet, with a warning.

    Raises
    ------
    UnsupportedMXNetError
        MXNet's version or a patched method's parameters are not the expected ones, or one of
        MXNet's module files was reloaded without the package that imports from it (the
        message names both); nothing is patched.
    TypeError
        ``force`` is not ``True`` or ``False``.
    SettingsError
        An ``MXPATCH_BIND_*`` environment variable of :func:`mxpatch_bind.configure` is not
        an integer in range; nothing is patched.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.install()
    >>> mxpatch_bind.is_installed()
    True
    >>> mxpatch_bind.uninstall()
    >>> mxpatch_bind.is_installed()
    False
    """
    _check_flag("install", "force", force)
    current_settings()  # a bad environment variable fails here, at start-up, not mid-training
    _wait_for_an_import_in_progress()
    with _state.lock:
        if _state.refcount > 0:
            mx = imported_mxnet()
            if mx is not None and _applying.needs_reapply():
                _applying.reapply(mx, _state.force)  # importlib.reload made new classes
            _state.refcount += 1
            logger.debug("mxpatch_bind already installed; %d install() calls outstanding",
                         _state.refcount)
            return
        mx = imported_mxnet()
        if mx is not None:
            _applying.apply(mx, force)
            _state.refcount = 1
            _state.force = force
            _reloads.watch(_after_reload)
            return
        # Before any state changes: a warnings filter may turn the warning into an error.
        _warn_if_mxnet_is_missing()
        # Count first: the hook may run at once, and must see the pending install.
        _state.refcount = 1
        _state.force = force
        _register_import_hook()


def uninstall(*, force: bool = False) -> None:
    """Undo one :func:`install`; the last one restores MXNet's original methods by identity.

    If another wrapt wrapper was put on top of ours since, ours is spliced out from under
    it and theirs keeps working. If a method was replaced or restored behind our back (ours
    no longer reachable from it), ours is forgotten with a ``RuntimeWarning`` naming what is
    there now, and what is there is kept. Every call that leaves nothing installed also takes
    out the switched-off wrappers of ours that a patcher put back since (``mock.patch`` exiting
    after an uninstall), unless a wrapper that is not wrapt's covers them: once every other
    patcher has exited, MXNet's own functions are back, by identity. Called with nothing
    installed, it logs a warning and does only that, with or without ``force``.

    Parameters
    ----------
    force : bool
        Default ``False``. Let the last uninstall go ahead under a wrapper that is not
        wrapt's: that wrapper stays where it is and ours, inside it, is switched off (it
        calls straight through to what it wrapped) and forgotten.

    Raises
    ------
    PatchError
        Without ``force``: something that is not a wrapt wrapper sits directly on a patched
        method's wrapper; nothing is changed (ours stays in place and the count is kept).
    TypeError
        ``force`` is not ``True`` or ``False``.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.install(); mxpatch_bind.install()
    >>> mxpatch_bind.uninstall(); mxpatch_bind.is_installed()
    True
    >>> mxpatch_bind.uninstall(); mxpatch_bind.is_installed()
    False
    """
    _check_flag("uninstall", "force", force)
    news = []
    with _state.lock:
        if _state.refcount == 0:
            logger.warning("mxpatch_bind.uninstall() called but the patch is not installed")
            _applying.sweep()
            return
        if _state.refcount == 1 and _state.handles:
            news = _applying.remove(force)
        _state.refcount -= 1
        if _state.refcount == 0:
            _reloads.unwatch()
    # Only now: a warnings filter may turn a warning into an error, and the state is whole.
    for message in news:
        _applying.warn(message, stacklevel=2)


class patched(contextlib.ContextDecorator):  # pylint: disable=invalid-name
    """Apply the patch for a ``with`` block or a decorated function; nestable.

    Entering calls :func:`install`, leaving calls :func:`uninstall`, also on an exception,
    so an outer ``install()`` (or an outer block) stays in force.

    Parameters
    ----------
    force : bool
        Passed to :func:`install`.

    Raises
    ------
    TypeError
        ``force`` is not ``True`` or ``False`` (raised here, before anything is patched).

    Examples
    --------
    >>> import mxpatch_bind
    >>> with mxpatch_bind.patched():
    ...     mxpatch_bind.is_installed()
    True
    >>> @mxpatch_bind.patched()
    ... def train():
    ...     return mxpatch_bind.is_installed()
    >>> train(), mxpatch_bind.is_installed()
    (True, False)
    """

    def __init__(self, *, force: bool = False) -> None:
        _check_flag("patched", "force", force)
        self.force = force

    def __enter__(self) -> "patched":
        install(force=self.force)
        return self

    def __exit__(self, *exc_info: Any) -> Literal[False]:
        uninstall()
        return False


def is_installed() -> bool:
    """Whether MXNet's ``Module.bind`` / ``reshape`` are patched right now.

    True only while every patched method still reaches a live wrapper of ours: if another
    patcher replaced one behind our back this is false, although the install count (see
    :func:`status`) still waits for its :func:`uninstall`.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.is_installed()
    False
    """
    with _state.lock:
        return _applying.in_force()


def status() -> PatchStatus:
    """A :class:`PatchStatus` snapshot: installed, refcount, MXNet version, targets, wrappers.

    Examples
    --------
    >>> import mxpatch_bind
    >>> with mxpatch_bind.patched():
    ...     s = mxpatch_bind.status()
    >>> s.installed, s.refcount, s.foreign_wrappers
    (True, 1, ())
    """
    with _state.lock:
        mx = sys.modules.get("mxnet")
        return PatchStatus(
            installed=_applying.in_force(),
            refcount=_state.refcount,
            pending=_state.refcount > 0 and not _state.handles,
            mxnet_version=getattr(mx, "__version__", None),
            targets=tuple(full_name(t) for t in TARGETS),
            foreign_wrappers=tuple(_applying.foreign_wrappers()),
        )


class TargetInfo(NamedTuple):
    """One method :func:`install` patches, as it stands now; see :func:`describe_targets`.

    Attributes
    ----------
    name : str
        Where MXNet defines it, e.g. ``'mxnet.module.module.Module.bind'``.
    short_name : str
        The name a reader knows it by: ``'Module.bind'``, ``'kvstore.create'``.
    chain : tuple
        What the class (or module) holds for it, then what each wrapt wrapper wraps, to the
        innermost function: ``(MXNet's function,)`` when nothing wraps it; empty while MXNet
        is not imported.
    ours : object or None
        mxpatch_bind's live wrapper in ``chain``, or ``None`` when not installed.
    original : bool
        The innermost function is MXNet's own (defined in its module, with its name).

    Examples
    --------
    >>> import mxnet, mxpatch_bind
    >>> info = mxpatch_bind.describe_targets()[0]
    >>> info.short_name, len(info.chain), info.ours is None, info.original
    ('Module.bind', 1, True, True)
    """

    name: str
    short_name: str
    chain: Tuple[Any, ...]
    ours: Optional[Any]
    original: bool


def describe_targets() -> Tuple[TargetInfo, ...]:
    """Every method :func:`install` patches, with its wrapper chain now: a :class:`TargetInfo`
    each.

    What ``python -m mxpatch_bind doctor`` reads to tell our wrappers from anyone else's.

    Examples
    --------
    >>> import mxnet, mxpatch_bind
    >>> with mxpatch_bind.patched():
    ...     info = mxpatch_bind.describe_targets()[0]
    >>> info.chain[0] is info.ours, info.chain[-1] is mxnet.mod.Module.bind
    (True, True)
    """
    with _state.lock:
        loaded = imported_mxnet() is not None
        return tuple(_target_info(target, loaded) for target in TARGETS)


def _target_info(target, loaded):
    short_name = f"{target.owner or target.module.rpartition('.')[2]}.{target.attribute}"
    if not loaded:
        return TargetInfo(full_name(target), short_name, (), None, False)
    chain = tuple(wrapt.wrapper_chain(current(target)))
    innermost = chain[-1]
    # MXNet 1.7+ defines kvstore.create in mxnet.kvstore.base and exports it from the package.
    defined_in = getattr(innermost, "__module__", None) or ""
    original = ((defined_in == target.module or defined_in.startswith(target.module + "."))
                and getattr(innermost, "__qualname__", None) == qualified_name(target))
    handle = _state.handles.get(target)
    ours = handle if any(entry is handle for entry in chain) else None
    return TargetInfo(full_name(target), short_name, chain, ours, original)


def _check_flag(call, name, value):
    """Options that are flags take True or False (numpy's bool too), nothing merely truthy."""
    if not is_flag(value):
        raise TypeError(f"mxpatch_bind.{call}({name}={value!r}): {name} must be True or False")



# --------------------------------------------------------------------------- deferred install
def _warn_if_mxnet_is_missing():
    """Say once that the pending install will wait forever unless MXNet gets installed.

    ``find_spec`` walks ``sys.path``, so a positive answer is remembered: install() stays
    cheap for the usual program that imports mxpatch_bind before MXNet.
    """
    if _state.mxnet_findable or _state.warned_missing or "mxnet" in sys.modules:
        return
    try:
        findable = importlib.util.find_spec("mxnet") is not None
    except (ImportError, ValueError):
        findable = False
    if findable:
        _state.mxnet_findable = True
        return
    _state.warned_missing = True
    message = ("mxpatch_bind.install(): MXNet is not installed (no module named 'mxnet' can "
               "be found), so the patch is pending until `import mxnet` succeeds; "
               "mxpatch_bind.status().pending says whether it still waits, and `python -m "
               "mxpatch_bind doctor` checks the installation. Install MXNet with: "
               f"{not_installed_fix()}")
    _applying.log_if_handled(logging.WARNING, message)
    _applying.warn(message, stacklevel=3)


def _register_import_hook():
    # wrapt's post-import hooks cannot be unregistered, so register once per import and let
    # the hook check whether an install() is still waiting (uninstall() may have cancelled it).
    if not _state.hook_registered:
        _state.hook_registered = True
        wrapt.register_post_import_hook(_on_mxnet_imported, "mxnet")
    _import_guard.arm()  # after: wrapt's finder goes first on sys.meta_path, the guard before it


def _on_mxnet_imported(_module):
    mx = imported_mxnet()
    if mx is None:
        # wrapt runs a hook at once for a module already in sys.modules, even one whose
        # import is still running further up this thread's stack: finish in the background.
        threading.Thread(target=_after_import_finishes, daemon=True).start()
        return
    _apply_pending(mx)


def _after_import_finishes():
    importlib.import_module("mxnet")  # blocks until the import in progress is done
    mx = imported_mxnet()
    if mx is None:
        logger.error("mxpatch_bind: MXNet imported without %s; nothing patched",
                     ", ".join(dict.fromkeys(t.module for t in TARGETS)))  # each file once
        return
    _apply_pending(mx)


def _apply_pending(mx):
    with _state.lock:
        _state.hook_registered = False
        if _state.refcount == 0 or _state.handles:
            return
        try:
            _applying.apply(mx, _state.force)
        except UnsupportedMXNetError as error:
            # Raising here would fail ``import mxnet`` itself; cancel the install and say so.
            _state.refcount = 0
            _applying.log_if_handled(logging.ERROR, str(error))
            warnings.warn(str(error), RuntimeWarning, stacklevel=2)
            return
        _reloads.watch(_after_reload)


def _after_reload():
    """One of MXNet's module files was reloaded: patch the new classes if MXNet can run now.

    Halfway (``mxnet.module.module`` reloaded, ``mxnet.module`` not yet) MXNet itself mixes
    old and new classes; guard the new ones (a per-device call on them is refused by name),
    wait for the package's reload, and never fail the user's reload.
    """
    with _state.lock:
        mx = imported_mxnet()
        if mx is None or _state.refcount == 0 or not _state.handles:
            return
        if _reloads.half_reloaded():
            _applying.guard_halfway()
            return
        if not _applying.needs_reapply():
            return
        try:
            _applying.reapply(mx, _state.force)
        except UnsupportedMXNetError as error:
            _applying.log_if_handled(logging.ERROR, str(error))
            warnings.warn(str(error), RuntimeWarning, stacklevel=2)


def _wait_for_an_import_in_progress():
    """If another thread is importing MXNet now, let it finish before install() decides.

    Outside our lock: the import runs our post-import hook, which takes the lock. When the
    import is this thread's own (further up the stack) this returns at once.
    """
    if "mxnet" in sys.modules and imported_mxnet() is None:
        importlib.import_module("mxnet")
