"""Putting our wrappers into MXNet's classes and taking them out, all or nothing (private).

``patching`` counts the installs and calls :func:`apply` and :func:`remove`; the state they
change is :data:`state`, behind its lock. Policies, each decided here:

* **Other patchers.** ``uninstall()`` puts back what our wrapper wrapped when ours is
  outermost, and splices ours out from under wrapt wrappers put on top of it
  (``wrapt.unwrap_object``). A target that no longer reaches our wrapper through
  ``__wrapped__`` (replaced, or restored to MXNet's original, behind our back) is forgotten
  with a ``RuntimeWarning`` naming what is there now. A wrapper that is not wrapt's sitting
  directly on ours cannot be spliced, so ``uninstall()`` refuses with :class:`PatchError`
  and changes nothing; ``uninstall(force=True)`` leaves it in place instead. Every wrapper
  we remove or forget is switched off (``FunctionWrapper(enabled=...)``), so anything still
  holding one, such as that foreign wrapper, calls straight through to what ours wrapped.
  ``is_installed()`` is true only while every target still reaches a live wrapper of ours.
* **fork().** The child gets a fresh lock (the parent's may be held by a thread the child
  does not have) and classes that match the install count: a child forked in the middle of
  another thread's install or uninstall has every wrapper of ours taken out of its classes,
  then, if the count says installed, the patch applied again.
* **Each message once.** A warning is also logged, but only where logging has a handler:
  with none, logging's last-resort handler would print it a second time on stderr.
"""

import importlib
import logging
import os
import threading
import warnings

import wrapt

from ..errors import PatchError, UnsupportedMXNetError
from . import _reloads
from ._chains import (
    Switch,
    describe,
    forgotten,
    is_guard,
    left_inside,
    ours,
    place_of,
    refusal,
    replacement,
    take_out,
)
from ._targets import TARGETS, check_mxnet, current, full_name, imported_mxnet, owner

logger = logging.getLogger("mxpatch_bind.patching")  # one logger for the patch, as users filter it


class State:
    """Everything install/uninstall change, guarded by ``lock``."""

    def __init__(self):
        self.lock = threading.RLock()
        self.refcount = 0
        self.handles = {}  # Target -> the wrapper we installed, while applied
        self.owners = {}  # Target -> the class (or module) we installed it on
        self.switch = Switch()  # enables the wrappers in ``handles``
        self.force = False  # the force of the install() that applied (or will apply) the patch
        self.hook_registered = False
        # find_spec('mxnet') found MXNet once (it is not asked again), or we warned it is missing.
        self.mxnet_findable = False
        self.warned_missing = False

    def retire_switch(self):
        """Switch off every wrapper of the last install, and give the next its own switch:
        whatever still holds one of them (a foreign wrapper, a saved reference put back
        later) then runs what it wrapped, never our per-device bind."""
        self.switch.on = False
        self.switch = Switch()


state = State()


# --------------------------------------------------------------------------- applying
def apply(mx, force):
    halves = _reloads.half_reloaded()
    if halves:
        raise UnsupportedMXNetError(f"mxpatch_bind cannot patch this MXNet: {'; '.join(halves)}"
                                    ". Nothing was patched.")
    problems = check_mxnet(mx)
    if problems and not force:
        raise UnsupportedMXNetError(f"mxpatch_bind cannot patch this MXNet: {'; '.join(problems)}"
                                    ". Nothing was patched; install(force=True) patches anyway.")
    if problems:
        warnings.warn("mxpatch_bind patching an unsupported MXNet (force=True): "
                      f"{'; '.join(problems)}", RuntimeWarning, stacklevel=3)
    if _reloads.stale_core():
        _reloads.rebuild_core()  # before wrapper_function imports the wrappers
    sweep()  # a switched-off wrapper a patcher put back would sit under ours for good
    try:
        for target in TARGETS:
            state.owners[target] = owner(target)
            state.handles[target] = wrapt.wrap_object(
                owner(target), target.attribute, wrapt.FunctionWrapper,
                (wrapper_function(target),), {"enabled": state.switch})
    except BaseException:
        remove(force=True)  # all or nothing: undo the targets already wrapped
        raise
    logger.debug("mxpatch_bind patched %s", ", ".join(full_name(t) for t in TARGETS))


def wrapper_function(target):
    """Our wrapper function for ``target``, importing its module (module/binding.py imports
    MXNet)."""
    module_name, _, name = target.wrapper.rpartition(".")
    module = importlib.import_module(".." + module_name, __package__)  # from mxpatch_bind
    return getattr(module, name)


def in_force():
    """Every target still reaches the wrapper we installed on it."""
    return bool(state.handles) and all(place_of(target, handle).reachable
                                       for target, handle in state.handles.items())


# --------------------------------------------------------------------------- reloads
def reloaded(target):
    """Whether MXNet's module of ``target`` was reloaded since we wrapped it: the class is
    another object, or the function is MXNet's defined again (not reaching ours)."""
    handle = state.handles[target]
    if owner(target) is not state.owners[target]:
        return True
    found = current(target)
    return (not place_of(target, handle).reachable
            and _reloads.redefined(found, wrapt.unwrapped(handle)))


def needs_reapply():
    """A reload left a target without our wrapper, or our core on classes from before it."""
    return bool(state.handles) and (any(reloaded(target) for target in state.handles)
                                    or bool(_reloads.stale_core()))


def reapply(mx, force):
    """After a reload: ours off the classes from before it, the core rebuilt, the new
    classes wrapped. Refuses first, changing nothing, where :func:`apply` would refuse."""
    halves = _reloads.half_reloaded()
    problems = check_mxnet(mx)
    if halves or (problems and not force):
        raise UnsupportedMXNetError(f"mxpatch_bind cannot patch this MXNet: "
                                    f"{'; '.join(halves + problems)}. Nothing was changed.")
    for target, handle in list(state.handles.items()):
        _take_off_the_old_owner(target, handle)
        del state.handles[target]
    state.retire_switch()
    apply(mx, force)
    logger.info("mxpatch_bind: MXNet's module files were reloaded; patched the new classes")


def guard_halfway():
    """Halfway through a reload (a module file reloaded, its package not yet): the new class
    of each target reloaded gets a guard of ours that refuses per-device calls with the
    refusal ``install()`` gives, where MXNet would fail on them with a bare ``TypeError``.

    Our wrappers stay on the classes from before the reload (modules made before it keep
    binding per device). The guards share the install's switch, and :func:`sweep` takes them
    out with every other wrapper of ours not in ``handles``: :func:`reapply` once the package
    is reloaded, :func:`remove` at the last uninstall.
    """
    for target in state.handles:
        if owner(target) is state.owners[target] or any(map(is_guard, ours(target))):
            continue  # not reloaded, or already guarded
        wrapt.wrap_object(owner(target), target.attribute, wrapt.FunctionWrapper,
                          (_reloads.halfway_wrapper(target.attribute),),
                          {"enabled": state.switch})


def _take_off_the_old_owner(target, handle):
    """Our wrapper off the class (or module) we put it on, wherever that is now."""
    old = state.owners.pop(target)
    if vars(old).get(target.attribute) is handle:
        setattr(old, target.attribute, handle.__wrapped__)
        return
    try:
        wrapt.unwrap_object(old, target.attribute, handle)
    except (wrapt.WrapperNotOutermostError, wrapt.WrapperNotFoundError):
        pass  # covered or gone: retire_switch() turns it off where it is


def sweep():
    """Take out the switched-off wrappers of ours still in the classes (a patcher put one back
    after uninstall); those covered by a wrapper that is not wrapt's stay. Returns how many
    were taken out."""
    if imported_mxnet() is None:
        return 0
    taken = 0
    for target in TARGETS:
        for entry in ours(target):
            if entry is not state.handles.get(target) and take_out(target, entry):
                taken += 1
    if taken:
        logger.debug("mxpatch_bind took out %d switched-off wrappers of its own", taken)
    return taken


# --------------------------------------------------------------------------- removing
def remove(force):
    """Take every handle out of its chain, or forget it where that is impossible.

    Checks every target first, so that a refusal changes nothing. Returns the warnings to
    give, one per target forgotten rather than taken out, for the caller to give once the
    state is whole again.
    """
    reloads = [target for target in state.handles if reloaded(target)]
    places = {target: place_of(target, handle) for target, handle in state.handles.items()
              if target not in reloads}
    blocked = {target: place for target, place in places.items()
               if place.reachable and place.blocker is not None}
    if blocked and not force:
        target, place = next(iter(blocked.items()))
        raise PatchError(refusal(target, place, state.handles[target]))
    for target in reloads:
        # Not replaced behind our back: MXNet's module was reloaded. The old class is ours to
        # clean; the new one never held our wrapper.
        _take_off_the_old_owner(target, state.handles.pop(target))
    news = []
    for target, handle in list(state.handles.items()):
        place = places[target]
        if target in blocked:
            news.append(left_inside(target, place, handle))
        elif not place.reachable:
            news.append(forgotten(target, place, handle))
        elif place.above:
            wrapt.unwrap_object(owner(target), target.attribute, handle)  # splice out
        else:
            # Outermost, in the class's own __dict__ where wrap_object put it: put back what
            # it wrapped (unwrap_object would resolve the owner again, at twice the cost).
            setattr(owner(target), target.attribute, handle.__wrapped__)
        del state.handles[target]
        state.owners.pop(target, None)
    state.retire_switch()
    sweep()
    for message in news:
        log_if_handled(logging.WARNING, message)
    logger.debug("mxpatch_bind restored the original methods")
    return news


def warn(message, stacklevel):
    """A RuntimeWarning; ``stacklevel`` as ``warnings.warn`` would count it in our caller."""
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


def log_if_handled(level, message):
    """Log what is also warned, only where a handler takes it: else it prints twice."""
    if logger.hasHandlers():
        logger.log(level, "%s", message)


# --------------------------------------------------------------------------- status
def foreign_wrappers():
    found = []
    halfway = bool(_reloads.half_reloaded())
    for target, handle in state.handles.items():
        if reloaded(target) and halfway:
            found.append(f"{full_name(target)}: MXNet's module was reloaded (importlib.reload) "
                         "without its package; its new class refuses per-device calls until "
                         "the package is reloaded too (stock calls run as MXNet's)")
            continue
        if reloaded(target):
            found.append(f"{full_name(target)}: MXNet's module was reloaded (importlib.reload) "
                         "and its new class is not patched; install() again patches it, "
                         "uninstall() takes mxpatch_bind's wrapper off the old one")
            continue
        place = place_of(target, handle)
        if not place.reachable:
            found.append(f"{replacement(target, place, handle)}; uninstall() will forget "
                         "mxpatch_bind's wrapper")
        for entry in place.above:
            note = ""
            if entry is place.blocker:
                note = (" (not a wrapt wrapper: uninstall() refuses to take mxpatch_bind's "
                        "wrapper out from under it; uninstall(force=True) leaves it in place "
                        "with ours switched off)")
            found.append(f"{full_name(target)}: {describe(entry)}{note}")
    if imported_mxnet() is not None:
        found.extend(f"{full_name(target)}: {describe(entry)}, switched off (it calls "
                     "straight through to what it wraps)"
                     for target in TARGETS for entry in ours(target)
                     if entry is not state.handles.get(target) and not _live_guard(entry))
    return found


def _live_guard(entry):
    return is_guard(entry) and entry._self_enabled is state.switch


# --------------------------------------------------------------------------- fork
def _after_fork_in_child():
    """The child of ``fork()`` has only the forking thread: a fresh lock, consistent classes."""
    state.lock = threading.RLock()
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
    mx = imported_mxnet()
    if mx is None:
        return  # nothing can be patched yet; a pending install still waits for the import
    live = {target: [entry for entry in ours(target) if entry._self_enabled is state.switch]
            for target in TARGETS}
    if state.refcount > 0 and all(len(entries) == 1 and entries[0] is state.handles.get(target)
                                   for target, entries in live.items()):
        return
    for target, entries in live.items():
        for entry in entries:
            take_out(target, entry)
    state.handles.clear()
    state.owners.clear()
    state.retire_switch()
    if state.refcount > 0:
        try:
            apply(mx, state.force)
        except UnsupportedMXNetError as error:
            state.refcount = 0
            logger.error("mxpatch_bind: the patch could not be applied again after fork(): %s",
                         error)
    logger.info("mxpatch_bind: forked during another thread's install/uninstall; the child's "
                "patch now matches its count (%d)", state.refcount)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

