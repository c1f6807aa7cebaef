"""install / uninstall / patched / status: which bind and reshape MXNet's Module runs (private).

All patch state lives in one :class:`_State` behind one lock. The patched targets are declared
once, in :data:`TARGETS`, which install, uninstall, the version guard and status all read.

Policies, each decided here:

* **Other patchers.** ``uninstall()`` puts back what our wrapper wrapped when ours is
  outermost, and splices ours out from under wrapt wrappers put on top of it
  (``wrapt.unwrap_object``). A target that no longer reaches our wrapper through
  ``__wrapped__`` (replaced, or restored to MXNet's original, behind our back) is forgotten
  with a ``RuntimeWarning`` naming what is there now. A wrapper that is not wrapt's sitting
  directly on ours cannot be spliced, so ``uninstall()`` refuses with :class:`PatchError`
  and changes nothing; ``uninstall(force=True)`` leaves it in place instead. Every wrapper
  we remove or forget is switched off (``FunctionWrapper(enabled=...)``), so anything still
  holding one, such as that foreign wrapper, calls straight through to what ours wrapped;
  once uncovered, ``uninstall(force=True)`` with nothing installed takes such wrappers out.
  ``is_installed()`` is true only while every target still reaches a live wrapper of ours.
* **fork().** The child gets a fresh lock (the parent's may be held by a thread the child
  does not have) and classes that match the install count: a child forked in the middle of
  another thread's install or uninstall has every wrapper of ours taken out of its classes,
  then, if the count says installed, the patch applied again.
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
import inspect
import itertools
import logging
import os
import re
import sys
import threading
import warnings
from collections import namedtuple
from typing import Any, Literal, NamedTuple, Optional, Tuple

import wrapt

from . import _import_guard
from ._mxnet_env import not_installed_fix
from .errors import PatchError, UnsupportedMXNetError
from .settings import current as current_settings

__all__ = ["install", "uninstall", "patched", "is_installed", "status", "PatchStatus", "TARGETS"]

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS = ((1, 6), (1, 9))  # inclusive range of (major, minor)

_BIND_PARAMETERS = ("self", "data_shapes", "label_shapes", "for_training", "inputs_need_grad",
                    "force_rebind", "shared_module", "grad_req")

Target = namedtuple("Target", ["module", "owner", "attribute", "wrapper", "parameters"])
Target.__doc__ = ("One patched method: where it lives (owner None: a function of the module), "
                  "our wrapper (its module, relative to the package, and name), its parameters.")

# Patch the classes in the modules that define them: MXNet looks the methods up on the class
# (``module.bind(...)``, ``Module.bind(self, ...)`` through super()), so every caller sees it.
# Module.forward is patched so that a per-device batch fed to a module bound in stock form
# reshapes it to per device instead of failing inside MXNet; stock batches go straight through.
# BucketingModule.bind is patched only to keep its buckets binding per device after uninstall();
# SequentialModule.bind to bind its modules per device and chain their per-device outputs.
# mx.kv.create and Module.init_optimizer give kvstore='horovod' a store that reduces across
# workers (MXNet 1.x falls through to a native one-worker store) and weight its steps by the
# samples of all workers (horovod.py).
TARGETS = (
    Target("mxnet.module.module", "Module", "bind", "module.wrappers.bind_wrapper",
           _BIND_PARAMETERS),
    Target("mxnet.module.module", "Module", "reshape", "module.wrappers.reshape_wrapper",
           ("self", "data_shapes", "label_shapes")),
    Target("mxnet.module.module", "Module", "forward", "module.wrappers.forward_wrapper",
           ("self", "data_batch", "is_train")),
    Target("mxnet.module.bucketing_module", "BucketingModule", "bind",
           "module.wrappers.bucketing_bind_wrapper", _BIND_PARAMETERS),
    Target("mxnet.module.sequential_module", "SequentialModule", "bind",
           "module.wrappers.sequential_bind_wrapper", _BIND_PARAMETERS),
    Target("mxnet.module.module", "Module", "init_optimizer", "horovod.init_optimizer_wrapper",
           ("self", "kvstore", "optimizer", "optimizer_params", "force_init")),
    Target("mxnet.kvstore", None, "create", "horovod.create_wrapper", ("name",)),
)


def _target_name(target):
    return "%s.%s" % (target.module, qualified_name(target))


def qualified_name(target):
    """The target's ``__qualname__``: ``'Module.bind'``, or ``'create'`` for a function."""
    if target.owner is None:
        return target.attribute
    return "%s.%s" % (target.owner, target.attribute)


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


class _Wrapper(wrapt.FunctionWrapper):
    """The type of every wrapper we install: ours are told apart by type, even without a
    handle (a child forked in the middle of an install has wrappers it never recorded)."""


class _Switch:
    """The ``enabled`` of one install's wrappers: off once they are removed or forgotten."""

    __slots__ = ("on",)

    def __init__(self):
        self.on = True

    def __call__(self):
        return self.on


class _State:
    """Everything install/uninstall change, guarded by ``lock``."""

    def __init__(self):
        self.lock = threading.RLock()
        self.refcount = 0
        self.handles = {}  # Target -> the _Wrapper we installed, while applied
        self.switch = _Switch()  # enables the wrappers in ``handles``
        self.force = False  # the force of the install() that applied (or will apply) the patch
        self.hook_registered = False
        # The last check_mxnet: (version, the methods checked, problems), reused while MXNet
        # has the same version and the same method objects (inspect.signature is most of
        # an install/uninstall cycle otherwise).
        self.checked = None
        # find_spec('mxnet') found MXNet once (it is not asked again), or we warned it is missing.
        self.mxnet_findable = False
        self.warned_missing = False


_state = _State()


# --------------------------------------------------------------------------- public API
def install(*, force: bool = False) -> None:
    """Patch ``Module.bind`` / ``Module.reshape`` to accept per-device shape lists.

    Reference-counted: each call needs one :func:`uninstall`; the patch is applied by the
    first. Thread-safe, and safe across ``fork()``. Before touching anything it checks
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
        MXNet's version or a patched method's parameters are not the expected ones;
        nothing is patched.
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
            _state.refcount += 1
            logger.debug("mxpatch_bind already installed; %d install() calls outstanding",
                         _state.refcount)
            return
        mx = _imported_mxnet()
        if mx is not None:
            _apply(mx, force)
            _state.refcount = 1
            _state.force = force
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
    there now, and what is there is kept. Called with nothing installed, it logs a warning.

    Parameters
    ----------
    force : bool
        Default ``False``. Let the last uninstall go ahead under a wrapper that is not
        wrapt's: that wrapper stays where it is and ours, inside it, is switched off (it
        calls straight through to what it wrapped) and forgotten. With nothing installed,
        take out every switched-off wrapper of ours still found in a method's chain.

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
            if not (force and _take_out_switched_off()):
                logger.warning("mxpatch_bind.uninstall() called but the patch is not installed")
            return
        if _state.refcount == 1 and _state.handles:
            news = _remove(force)
        _state.refcount -= 1
    # Only now: a warnings filter may turn a warning into an error, and the state is whole.
    for message in news:
        _warn(message, stacklevel=2)


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
        return _in_force()


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
            installed=_in_force(),
            refcount=_state.refcount,
            pending=_state.refcount > 0 and not _state.handles,
            mxnet_version=getattr(mx, "__version__", None),
            targets=tuple(_target_name(t) for t in TARGETS),
            foreign_wrappers=tuple(_foreign_wrappers()),
        )


def _check_flag(call, name, value):
    """Options that are flags take True or False (numpy's bool too), nothing merely truthy."""
    if isinstance(value, bool) or type(value).__module__ == "numpy" and type(
            value).__name__ == "bool_":
        return
    raise TypeError("mxpatch_bind.%s(%s=%r): %s must be True or False"
                    % (call, name, value, name))


# --------------------------------------------------------------------------- applying
def _imported_mxnet():
    """MXNet, if it has finished importing (``mxnet/__init__`` imports ``mxnet.module``)."""
    mx = sys.modules.get("mxnet")
    if mx is None or not hasattr(mx, "__version__") or any(
            t.module not in sys.modules for t in TARGETS):
        return None
    return mx


def _owner(target):
    module = sys.modules[target.module]
    return module if target.owner is None else getattr(module, target.owner)


def _current(target):
    """What the class's own ``__dict__`` holds for the target (``None`` if it was deleted)."""
    return vars(_owner(target)).get(target.attribute)


def check_mxnet(mx):
    """Problems that make this MXNet unsupported, as a list of sentences (empty when fine)."""
    version = getattr(mx, "__version__", "")
    methods = tuple(getattr(_owner(target), target.attribute) for target in TARGETS)
    checked = _state.checked
    if (checked is not None and checked[0] == version
            and all(a is b for a, b in zip(checked[1], methods))):
        return list(checked[2])
    problems = _problems(version, methods)
    _state.checked = (version, methods, tuple(problems))
    return problems


def _problems(version, methods):
    problems = []
    match = re.match(r"(\d+)\.(\d+)", version)
    low, high = SUPPORTED_VERSIONS
    if not match or not low <= (int(match.group(1)), int(match.group(2))) <= high:
        problems.append("mxnet.__version__ is %r; supported: %d.%d to %d.%d.x"
                        % ((version,) + low + high))
    for target, method in zip(TARGETS, methods):
        parameters = tuple(inspect.signature(method).parameters)
        if parameters != target.parameters:
            problems.append("%s takes %r; expected %r"
                            % (_target_name(target), parameters, target.parameters))
    return problems


def _apply(mx, force):
    problems = check_mxnet(mx)
    if problems and not force:
        raise UnsupportedMXNetError("mxpatch_bind cannot patch this MXNet: %s. Nothing was "
                                    "patched; install(force=True) patches anyway."
                                    % "; ".join(problems))
    if problems:
        warnings.warn("mxpatch_bind patching an unsupported MXNet (force=True): %s"
                      % "; ".join(problems), RuntimeWarning, stacklevel=3)
    try:
        for target in TARGETS:
            _state.handles[target] = wrapt.wrap_object(
                _owner(target), target.attribute, _Wrapper,
                (_wrapper_function(target),), {"enabled": _state.switch})
    except BaseException:
        _remove(force=True)  # all or nothing: undo the targets already wrapped
        raise
    logger.debug("mxpatch_bind patched %s", ", ".join(_target_name(t) for t in TARGETS))


def _wrapper_function(target):
    """Our wrapper function for ``target``, importing its module (module/binding.py imports
    MXNet)."""
    module_name, _, name = target.wrapper.rpartition(".")
    module = importlib.import_module("." + module_name, __package__)
    return getattr(module, name)


def _in_force():
    """Every target still reaches the wrapper we installed on it."""
    return bool(_state.handles) and all(
        _current(target) is handle or wrapt.find_wrapper(_current(target), handle) is not None
        for target, handle in _state.handles.items())


# --------------------------------------------------------------------------- removing
class _Place(NamedTuple):
    """Where our wrapper stands in one target's chain, as uninstall and status see it."""

    current: Any  # what the class's own __dict__ holds
    reachable: bool  # ours is in the chain that starts there
    above: Tuple[Any, ...]  # the chain entries above ours, outermost first

    @property
    def blocker(self):
        """The wrapper directly on ours if it is not wrapt's (ours cannot be spliced out)."""
        if self.above and not issubclass(type(self.above[-1]), wrapt.BaseObjectProxy):
            return self.above[-1]
        return None


def _place(target, handle):
    current = _current(target)
    if current is handle:  # the usual case, without walking the chain
        return _Place(current, True, ())
    if wrapt.find_wrapper(current, handle) is None:
        return _Place(current, False, ())
    above = itertools.takewhile(lambda entry: entry is not handle, wrapt.wrapper_chain(current))
    return _Place(current, True, tuple(above))


def _remove(force):
    """Take every handle out of its chain, or forget it where that is impossible.

    Checks every target first, so that a refusal changes nothing. Returns the warnings to
    give, one per target forgotten rather than taken out, for the caller to give once the
    state is whole again.
    """
    places = {target: _place(target, handle) for target, handle in _state.handles.items()}
    blocked = {target: place for target, place in places.items()
               if place.reachable and place.blocker is not None}
    if blocked and not force:
        target, place = next(iter(blocked.items()))
        raise PatchError(_refusal(target, place, _state.handles[target]))
    news = []
    for target, handle in list(_state.handles.items()):
        place = places[target]
        if target in blocked:
            news.append(_left_inside(target, place, handle))
        elif not place.reachable:
            news.append("mxpatch_bind.uninstall(): %s; left it as it is and forgot "
                        "mxpatch_bind's wrapper, now switched off (anything still holding it "
                        "calls straight through to %r)"
                        % (_replacement(target, place, handle), handle.__wrapped__))
        elif place.above:
            wrapt.unwrap_object(_owner(target), target.attribute, handle)  # splice out
        else:
            # Outermost, in the class's own __dict__ where wrap_object put it: put back what
            # it wrapped (unwrap_object would resolve the owner again, at twice the cost).
            setattr(_owner(target), target.attribute, handle.__wrapped__)
        del _state.handles[target]
    # Whatever still holds one of these wrappers (a foreign wrapper, a saved reference put
    # back later) now runs what it wrapped, never our per-device bind.
    _state.switch.on = False
    _state.switch = _Switch()
    for message in news:
        _log_if_handled(logging.WARNING, message)
    logger.debug("mxpatch_bind restored the original methods")
    return news


def _refusal(target, place, handle):
    return ("cannot uninstall: %s is wrapped by %r, which is not a wrapt wrapper, so "
            "mxpatch_bind's wrapper cannot be taken out from under it. Nothing was changed. "
            "Remove that wrapper first (put back what it wraps) and call uninstall() again, "
            "or call mxpatch_bind.uninstall(force=True) to keep it: mxpatch_bind's wrapper "
            "inside it is then switched off and calls straight through to %r"
            % (_target_name(target), place.blocker, handle.__wrapped__))


def _left_inside(target, place, handle):
    return ("mxpatch_bind.uninstall(force=True): %s stays wrapped by %r, which is not a wrapt "
            "wrapper; mxpatch_bind's wrapper inside it is switched off (it calls straight "
            "through to %r) and forgotten" % (_target_name(target), place.blocker,
                                              handle.__wrapped__))


def _replacement(target, place, handle):
    """What happened to a target whose chain no longer reaches our wrapper, as a clause."""
    if place.current is wrapt.unwrapped(handle):
        return ("%s was restored to MXNet's original %r behind mxpatch_bind's back"
                % (_target_name(target), place.current))
    return ("%s was replaced behind mxpatch_bind's back by %r, which does not reach "
            "mxpatch_bind's wrapper through __wrapped__" % (_target_name(target), place.current))


def _warn(message, stacklevel):
    """A RuntimeWarning; ``stacklevel`` as ``warnings.warn`` would count it in our caller."""
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


def _log_if_handled(level, message):
    """Log what is also warned, only where a handler takes it: else it prints twice."""
    if logger.hasHandlers():
        logger.log(level, "%s", message)


def _ours(target):
    """Every wrapper of ours in the target's chain, outermost first."""
    return [entry for entry in wrapt.wrapper_chain(_current(target))
            if issubclass(type(entry), _Wrapper)]


def _take_out(target, entry):
    """Remove one wrapper of ours from the target's chain; False if a foreign one covers it."""
    try:
        wrapt.unwrap_object(_owner(target), target.attribute, entry)
    except wrapt.WrapperNotOutermostError:
        return False
    return True


def _take_out_switched_off():
    """With nothing installed: take out the switched-off wrappers of ours still in chains."""
    if _imported_mxnet() is None:
        return False
    taken = [(target, entry) for target in TARGETS for entry in _ours(target)
             if _take_out(target, entry)]
    for target, entry in taken:
        logger.info("mxpatch_bind.uninstall(force=True): took a switched-off wrapper %s out "
                    "of %s", _describe(entry), _target_name(target))
    return bool(taken)


# --------------------------------------------------------------------------- status
def _foreign_wrappers():
    found = []
    for target, handle in _state.handles.items():
        place = _place(target, handle)
        if not place.reachable:
            found.append("%s; uninstall() will forget mxpatch_bind's wrapper"
                         % _replacement(target, place, handle))
        for entry in place.above:
            note = ""
            if entry is place.blocker:
                note = (" (not a wrapt wrapper: uninstall() refuses to take mxpatch_bind's "
                        "wrapper out from under it; uninstall(force=True) leaves it in place "
                        "with ours switched off)")
            found.append("%s: %s%s" % (_target_name(target), _describe(entry), note))
    if _imported_mxnet() is not None:
        found.extend("%s: %s, switched off (calls straight through; uninstall(force=True) "
                     "with nothing installed takes it out)" % (_target_name(target),
                                                              _describe(entry))
                     for target in TARGETS for entry in _ours(target)
                     if entry is not _state.handles.get(target))
    return found


def _describe(entry):
    """A wrapt wrapper by the function it runs (its repr shows only an address)."""
    wrapper = getattr(entry, "_self_wrapper", None)
    if wrapper is None:
        return repr(entry)
    owner = "an mxpatch_bind " if issubclass(type(entry), _Wrapper) else ""
    return "%s%s at 0x%x running %s.%s" % (owner, type(entry).__name__, id(entry),
                                           getattr(wrapper, "__module__", "?"),
                                           getattr(wrapper, "__qualname__", repr(wrapper)))


# --------------------------------------------------------------------------- fork
def _after_fork_in_child():
    """The child of ``fork()`` has only the forking thread: a fresh lock, consistent classes."""
    _state.lock = threading.RLock()
    try:
        _reconcile_with_classes()
    except Exception:  # pylint: disable=broad-except
        # An exception here is only printed by CPython; say what it means for the patch.
        logger.exception("mxpatch_bind: could not make the patch state match the classes "
                         "after fork(); status() and the classes may disagree")


def _reconcile_with_classes():
    """After fork: keep a complete patch that matches the count, else take ours out and redo.

    Another thread may have been anywhere inside install() or uninstall() when the parent
    forked: wrappers in classes but not yet in ``handles``, or some already removed. The
    count is changed only after that work, so it says what the last finished call left.
    """
    mx = _imported_mxnet()
    if mx is None:
        return  # nothing can be patched yet; a pending install still waits for the import
    live = {target: [entry for entry in _ours(target) if entry._self_enabled is _state.switch]
            for target in TARGETS}
    if _state.refcount > 0 and all(len(entries) == 1 and entries[0] is _state.handles.get(target)
                                   for target, entries in live.items()):
        return
    for target, entries in live.items():
        for entry in entries:
            _take_out(target, entry)
    _state.handles.clear()
    _state.switch.on = False
    _state.switch = _Switch()
    if _state.refcount > 0:
        try:
            _apply(mx, _state.force)
        except UnsupportedMXNetError as error:
            _state.refcount = 0
            logger.error("mxpatch_bind: the patch could not be applied again after fork(): %s",
                         error)
    logger.info("mxpatch_bind: forked during another thread's install/uninstall; the child's "
                "patch now matches its count (%d)", _state.refcount)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
               "mxpatch_bind doctor` checks the installation. Install MXNet with: %s"
               % not_installed_fix())
    _log_if_handled(logging.WARNING, message)
    _warn(message, stacklevel=3)


def _register_import_hook():
    # wrapt's post-import hooks cannot be unregistered, so register once per import and let
    # the hook check whether an install() is still waiting (uninstall() may have cancelled it).
    if not _state.hook_registered:
        _state.hook_registered = True
        wrapt.register_post_import_hook(_on_mxnet_imported, "mxnet")
    _import_guard.arm()  # after: wrapt's finder goes first on sys.meta_path, the guard before it


def _on_mxnet_imported(_module):
    mx = _imported_mxnet()
    if mx is None:
        # wrapt runs a hook at once for a module already in sys.modules, even one whose
        # import is still running further up this thread's stack: finish in the background.
        threading.Thread(target=_after_import_finishes, daemon=True).start()
        return
    _apply_pending(mx)


def _after_import_finishes():
    importlib.import_module("mxnet")  # blocks until the import in progress is done
    mx = _imported_mxnet()
    if mx is None:
        logger.error("mxpatch_bind: MXNet imported without %s; nothing patched",
                     ", ".join(t.module for t in TARGETS))
        return
    _apply_pending(mx)


def _apply_pending(mx):
    with _state.lock:
        _state.hook_registered = False
        if _state.refcount == 0 or _state.handles:
            return
        try:
            _apply(mx, _state.force)
        except UnsupportedMXNetError as error:
            # Raising here would fail ``import mxnet`` itself; cancel the install and say so.
            _state.refcount = 0
            _log_if_handled(logging.ERROR, str(error))
            warnings.warn(str(error), RuntimeWarning, stacklevel=2)


def _wait_for_an_import_in_progress():
    """If another thread is importing MXNet now, let it finish before install() decides.

    Outside our lock: the import runs our post-import hook, which takes the lock. When the
    import is this thread's own (further up the stack) this returns at once.
    """
    if "mxnet" in sys.modules and _imported_mxnet() is None:
        importlib.import_module("mxnet")
