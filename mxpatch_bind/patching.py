"""install / uninstall / patched / status: which bind and reshape MXNet's Module runs (private).

All patch state lives in one :class:`_State` behind one lock. The patched targets are declared
once, in :data:`TARGETS`, which install, uninstall, the version guard and status all read.
"""

import contextlib
import importlib
import inspect
import logging
import re
import sys
import threading
import warnings
from collections import namedtuple

import wrapt

from .errors import PatchError, UnsupportedMXNetError

__all__ = ["install", "uninstall", "patched", "is_installed", "status", "PatchStatus", "TARGETS"]

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS = ((1, 6), (1, 9))  # inclusive range of (major, minor)

_BIND_PARAMETERS = ("self", "data_shapes", "label_shapes", "for_training", "inputs_need_grad",
                    "force_rebind", "shared_module", "grad_req")

Target = namedtuple("Target", ["module", "owner", "attribute", "wrapper", "parameters"])
Target.__doc__ = ("One patched method: where it lives, our wrapper's name in binding.py, "
                  "its parameters.")

# Patch the classes in the modules that define them: MXNet looks the methods up on the class
# (``module.bind(...)``, ``Module.bind(self, ...)`` through super()), so every caller sees it.
# BucketingModule.bind is patched only to keep its buckets binding per device after uninstall().
TARGETS = (
    Target("mxnet.module.module", "Module", "bind", "bind_wrapper", _BIND_PARAMETERS),
    Target("mxnet.module.module", "Module", "reshape", "reshape_wrapper",
           ("self", "data_shapes", "label_shapes")),
    Target("mxnet.module.bucketing_module", "BucketingModule", "bind", "bucketing_bind_wrapper",
           _BIND_PARAMETERS),
    Target("mxnet.module.sequential_module", "SequentialModule", "bind",
           "sequential.bind_wrapper", _BIND_PARAMETERS),
)


def _target_name(target):
    return "%s.%s.%s" % (target.module, target.owner, target.attribute)


class PatchStatus(namedtuple("PatchStatus", ["installed", "refcount", "pending", "mxnet_version",
                                             "targets", "foreign_wrappers"])):
    """A snapshot of the patch state, returned by :func:`status`.

    Attributes
    ----------
    installed : bool
        Whether MXNet's methods are patched right now.
    refcount : int
        Outstanding :func:`install` calls (each needs one :func:`uninstall`).
    pending : bool
        ``install()`` was called before ``import mxnet``; the patch waits for the import.
    mxnet_version : str or None
        ``mxnet.__version__``, or ``None`` when MXNet is not imported.
    targets : tuple of str
        The patched methods, e.g. ``'mxnet.module.module.Module.bind'``.
    foreign_wrappers : tuple of str
        Wrappers someone else put on top of ours, as ``'target: repr'``.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.status().targets[0]
    'mxnet.module.module.Module.bind'
    """

    __slots__ = ()


class _State:
    """Everything install/uninstall change, guarded by ``lock``."""

    def __init__(self):
        self.lock = threading.RLock()
        self.refcount = 0
        self.handles = {}  # Target -> the FunctionWrapper we installed, while applied
        self.force = False
        self.hook_registered = False
        # The last check_mxnet: (version, the methods checked, problems), reused while MXNet
        # has the same version and the same method objects (inspect.signature is most of
        # an install/uninstall cycle otherwise).
        self.checked = None


_state = _State()


# --------------------------------------------------------------------------- public API
def install(*, force=False):
    """Patch ``Module.bind`` / ``Module.reshape`` to accept per-device shape lists.

    Reference-counted: each call needs one :func:`uninstall`; the patch is applied by the
    first. Thread-safe. Before touching anything it checks ``mxnet.__version__`` (1.6–1.9.x)
    and the parameters of the methods it replaces. Called before ``import mxnet``, it patches
    when MXNet is imported.

    Parameters
    ----------
    force : bool
        Default ``False``. Patch even an unsupported MXNet, with a warning.

    Raises
    ------
    UnsupportedMXNetError
        MXNet's version or a patched method's parameters are not the expected ones;
        nothing is patched.

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
            return
        # Count first: the hook may run at once, and must see the pending install.
        _state.refcount = 1
        _state.force = force
        _register_import_hook()


def uninstall():
    """Undo one :func:`install`; the last one restores MXNet's original methods by identity.

    If another wrapt wrapper was put on top of ours since, ours is spliced out from under
    it and theirs keeps working. Called with nothing installed, it logs a warning.

    Raises
    ------
    PatchError
        Something that is not a wrapt wrapper sits on top of a patched method; nothing is
        changed (ours stays in place and the count is kept).

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.install(); mxpatch_bind.install()
    >>> mxpatch_bind.uninstall(); mxpatch_bind.is_installed()
    True
    >>> mxpatch_bind.uninstall(); mxpatch_bind.is_installed()
    False
    """
    with _state.lock:
        if _state.refcount == 0:
            logger.warning("mxpatch_bind.uninstall() called but the patch is not installed")
            return
        if _state.refcount == 1 and _state.handles:
            _remove()
        _state.refcount -= 1


class patched(contextlib.ContextDecorator):  # pylint: disable=invalid-name
    """Apply the patch for a ``with`` block or a decorated function; nestable.

    Entering calls :func:`install`, leaving calls :func:`uninstall`, also on an exception,
    so an outer ``install()`` (or an outer block) stays in force.

    Parameters
    ----------
    force : bool
        Passed to :func:`install`.

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

    def __init__(self, *, force=False):
        self.force = force

    def __enter__(self):
        install(force=self.force)
        return self

    def __exit__(self, *exc_info):
        uninstall()
        return False


def is_installed():
    """Whether MXNet's ``Module.bind`` / ``reshape`` are patched right now.

    Examples
    --------
    >>> import mxpatch_bind
    >>> mxpatch_bind.is_installed()
    False
    """
    with _state.lock:
        return bool(_state.handles)


def status():
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
            installed=bool(_state.handles),
            refcount=_state.refcount,
            pending=_state.refcount > 0 and not _state.handles,
            mxnet_version=getattr(mx, "__version__", None),
            targets=tuple(_target_name(t) for t in TARGETS),
            foreign_wrappers=tuple(_foreign_wrappers()),
        )


# --------------------------------------------------------------------------- applying
def _imported_mxnet():
    """MXNet, if it has finished importing (``mxnet/__init__`` imports ``mxnet.module``)."""
    mx = sys.modules.get("mxnet")
    if mx is None or not hasattr(mx, "__version__") or any(
            t.module not in sys.modules for t in TARGETS):
        return None
    return mx


def _owner(target):
    return getattr(sys.modules[target.module], target.owner)


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
            module_name, _, name = target.wrapper.rpartition(".")  # "module.name" or a name
            wrapper = getattr(importlib.import_module("." + (module_name or "binding"),
                                                      __package__), name)
            _state.handles[target] = wrapt.wrap_function_wrapper(
                _owner(target), target.attribute, wrapper)
    except BaseException:
        _remove()  # all or nothing: undo the targets already wrapped
        raise
    logger.debug("mxpatch_bind patched %s", ", ".join(_target_name(t) for t in TARGETS))


def _remove():
    # Check every target first so that a refusal changes nothing.
    above = {target: _removable_above(target, handle)
             for target, handle in _state.handles.items()}
    for target, handle in list(_state.handles.items()):
        if above[target]:
            # Someone's wrapt wrapper sits on ours: splice ours out from under it.
            wrapt.unwrap_object(_owner(target), target.attribute, handle)
        else:
            # Ours is outermost, in the class's own __dict__: put the original back.
            setattr(_owner(target), target.attribute, handle.__wrapped__)
        del _state.handles[target]
    logger.debug("mxpatch_bind restored the original methods")


def _chain_above(target, handle):
    """The chain entries above our wrapper, or ``None`` if ours is no longer reachable."""
    above = []
    for entry in wrapt.wrapper_chain(vars(_owner(target)).get(target.attribute)):
        if entry is handle:
            return above
        above.append(entry)
    return None


def _removable_above(target, handle):
    """The wrappers above ours, after checking ours can be taken out from under them."""
    above = _chain_above(target, handle)
    if above is None:
        raise PatchError("cannot uninstall: %s was replaced by %r, which does not wrap the "
                         "mxpatch_bind wrapper; restore it first"
                         % (_target_name(target), vars(_owner(target)).get(target.attribute)))
    if above and not isinstance(above[-1], wrapt.BaseObjectProxy):
        raise PatchError("cannot uninstall: %s is wrapped by %r, which is not a wrapt wrapper, "
                         "so mxpatch_bind cannot be spliced out from under it; remove it first"
                         % (_target_name(target), above[-1]))
    return above


def _foreign_wrappers():
    found = []
    for target, handle in _state.handles.items():
        above = _chain_above(target, handle)
        if above is None:
            found.append("%s: replaced by %r" % (_target_name(target),
                                                 vars(_owner(target)).get(target.attribute)))
        for entry in above or ():
            found.append("%s: %s" % (_target_name(target), _describe(entry)))
    return found


def _describe(entry):
    """A wrapt wrapper by the function it runs (its repr shows only an address)."""
    wrapper = getattr(entry, "_self_wrapper", None)
    if wrapper is None:
        return repr(entry)
    return "%s at 0x%x running %s.%s" % (type(entry).__name__, id(entry),
                                         getattr(wrapper, "__module__", "?"),
                                         getattr(wrapper, "__qualname__", repr(wrapper)))


# --------------------------------------------------------------------------- deferred install
def _register_import_hook():
    # wrapt's post-import hooks cannot be unregistered, so register once per import and let
    # the hook check whether an install() is still waiting (uninstall() may have cancelled it).
    if not _state.hook_registered:
        _state.hook_registered = True
        wrapt.register_post_import_hook(_on_mxnet_imported, "mxnet")


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
            logger.error("%s", error)
            warnings.warn(str(error), RuntimeWarning, stacklevel=2)


def _wait_for_an_import_in_progress():
    """If another thread is importing MXNet now, let it finish before install() decides.

    Outside our lock: the import runs our post-import hook, which takes the lock. When the
    import is this thread's own (further up the stack) this returns at once.
    """
    if "mxnet" in sys.modules and _imported_mxnet() is None:
        importlib.import_module("mxnet")
