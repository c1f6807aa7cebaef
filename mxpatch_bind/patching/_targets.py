"""The methods ``install()`` patches, and whether this MXNet has them as expected (private).

:data:`TARGETS` is the one table that install, uninstall, status, the version guard
(:func:`check_mxnet`) and ``doctor`` read: a method is patched only by a row here.
"""

import inspect
import re
import sys
from collections import namedtuple

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

# The last check_mxnet: (version, the methods checked, problems), reused while MXNet has the
# same version and the same method objects (inspect.signature is most of an install/uninstall
# cycle otherwise). Replaced whole, so a reader never sees half of it.
_checked = None


def full_name(target):
    """``'mxnet.module.module.Module.bind'``: where the target is defined, and its name."""
    return f"{target.module}.{qualified_name(target)}"


def qualified_name(target):
    """The target's ``__qualname__``: ``'Module.bind'``, or ``'create'`` for a function."""
    if target.owner is None:
        return target.attribute
    return f"{target.owner}.{target.attribute}"


def imported_mxnet():
    """MXNet, if it has finished importing (``mxnet/__init__`` imports ``mxnet.module``)."""
    mx = sys.modules.get("mxnet")
    if mx is None or not hasattr(mx, "__version__") or any(
            t.module not in sys.modules for t in TARGETS):
        return None
    return mx


def owner(target):
    """The class (or, for a function, the module) whose ``__dict__`` holds the target."""
    module = sys.modules[target.module]
    return module if target.owner is None else getattr(module, target.owner)


def current(target):
    """What the class's own ``__dict__`` holds for the target (``None`` if it was deleted)."""
    return vars(owner(target)).get(target.attribute)


def check_mxnet(mx):
    """Problems that make this MXNet unsupported, as a list of sentences (empty when fine)."""
    global _checked  # pylint: disable=global-statement
    version = getattr(mx, "__version__", "")
    methods = tuple(getattr(owner(target), target.attribute) for target in TARGETS)
    checked = _checked
    if (checked is not None and checked[0] == version
            and all(a is b for a, b in zip(checked[1], methods))):
        return list(checked[2])
    problems = _problems(version, methods)
    _checked = (version, methods, tuple(problems))
    return problems


def _problems(version, methods):
    problems = []
    match = re.match(r"(\d+)\.(\d+)", version)
    (low_major, low_minor), (high_major, high_minor) = SUPPORTED_VERSIONS
    if not match or not ((low_major, low_minor) <= (int(match.group(1)), int(match.group(2)))
                         <= (high_major, high_minor)):
        problems.append(f"mxnet.__version__ is {version!r}; supported: {low_major}.{low_minor} "
                        f"to {high_major}.{high_minor}.x")
    for target, method in zip(TARGETS, methods):
        parameters = tuple(inspect.signature(method).parameters)
        if parameters != target.parameters:
            problems.append(f"{full_name(target)} takes {parameters!r}; expected "
                            f"{target.parameters!r}")
    return problems
