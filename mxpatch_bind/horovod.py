"""``kvstore='horovod'`` for MXNet 1.x: every device of every worker added up by Horovod.

MXNet 1.x lists ``'horovod'`` among ``mx.kv.create``'s types but registers no such store: the
name falls through to a native ``KVStore`` of type ``'horovod'`` with one worker, which
reduces nothing across workers. Under :func:`mxpatch_bind.install`, ``mx.kv.create('horovod')``
(and so ``init_optimizer(kvstore='horovod')`` and ``fit(kvstore='horovod')``) returns a
:class:`HorovodKVStore` instead, and ``Module.init_optimizer`` weights every step by the
samples of all devices of all workers. Horovod itself is imported only when a store is made.

Examples
--------
>>> import mxnet as mx
>>> import mxpatch_bind
>>> with mxpatch_bind.patched():
...     mx.kv.create('horovod')  # doctest: +SKIP
<mxpatch_bind.horovod.HorovodKVStore rank 0 of 2>
"""

import logging
import sys
import warnings
from typing import Any, Callable

import mxnet as mx
from mxnet import kvstore as _kvs

from .errors import HorovodError

__all__ = ["HorovodKVStore", "is_horovod", "do_checkpoint", "BUILD_COMMAND"]

logger = logging.getLogger(__name__)

STORE_TYPE = "horovod"

# How Horovod is built for MXNet with Gloo on a machine without MPI (docs/distributed.md).
BUILD_COMMAND = ("HOROVOD_WITH_MXNET=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 "
                 "HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 "
                 "pip install --no-build-isolation horovod==0.28.1")

# MXNet 1.7 and later have the pluggable store interface; 1.6 has only the native class, which
# its _create_kvstore insists on (our subclass never makes a native handle).
_BASE = getattr(_kvs, "KVStoreBase", None) or _kvs.KVStore
_OPTIMIZER = "optimizer"


def _import_horovod():
    """``horovod.mxnet``, initialised; a :class:`HorovodError` naming the build if absent."""
    try:
        import horovod.mxnet as hvd
    except ImportError as error:
        raise HorovodError(
            f"kvstore='horovod' needs Horovod built with MXNet support ({type(error).__name__}: "
            f"{error}); build it with {BUILD_COMMAND}, and run the job with horovodrun") from error
    hvd.init()
    return hvd


def _as_list(values):
    return values if isinstance(values, (list, tuple)) else [values]


def _pairs(keys, values):
    """``(key, [arrays])`` for one key or a list of keys, as MXNet's stores take them."""
    if isinstance(keys, (list, tuple)):
        return list(zip(keys, values))
    return [(keys, _as_list(values))]


class HorovodKVStore(_BASE):  # type: ignore[misc, valid-type]
    """A store for ``Module`` that adds up every device of every Horovod worker.

    What MXNet's master branch has as ``mxnet.kvstore.Horovod``, written for MXNet 1.6-1.9,
    with one difference that per-device modules need: the devices of one process are added
    up before Horovod's allreduce adds up the processes (Horovod's own optimizer averages
    each device over the workers and never adds a process's devices). Like MXNet's
    ``'local'`` store it runs the optimizer once per parameter, on the CPU, and hands every
    device the same new weights; the states it keeps are the module's optimizer states.

    ``init`` (and ``broadcast``) hand every worker rank 0's value, so all workers start from
    rank 0's parameters. Every call is collective: every worker makes it, in the same order.

    Made by ``mx.kv.create('horovod')`` under :func:`mxpatch_bind.install`; it imports and
    initialises Horovod.

    Raises
    ------
    HorovodError
        Horovod with MXNet support is not installed (the message gives the build command).

    Examples
    --------
    >>> store = HorovodKVStore()  # doctest: +SKIP
    >>> store.type, store.num_workers  # doctest: +SKIP
    ('horovod', 2)
    """

    def __init__(self) -> None:  # no super().__init__: there is no native store behind this one
        self._hvd = _import_horovod()
        self._stored: "dict[Any, Any]" = {}  # key -> its value, on the CPU
        self._updater = None
        self.handle = None  # what MXNet 1.6's KVStore methods would use; never a native one

    def __del__(self):  # MXNet 1.6's KVStore.__del__ frees a native handle we never made
        pass

    def __repr__(self):
        return (f"<{type(self).__module__}.{type(self).__name__} rank {self.rank} of "
               f"{self.num_workers}>")

    # ------------------------------------------------------------------ what it is
    @property
    def type(self):
        """``'horovod'``."""
        return STORE_TYPE

    @property
    def rank(self):
        """This worker's Horovod rank."""
        return self._hvd.rank()

    @property
    def local_rank(self):
        """This worker's rank on its own machine."""
        return self._hvd.local_rank()

    @property
    def num_workers(self):
        """The number of Horovod workers."""
        return self._hvd.size()

    @staticmethod
    def is_capable(capability):
        """The store runs an optimizer (``'optimizer'``); it has no other capability."""
        return capability.lower() == _OPTIMIZER

    # ------------------------------------------------------------------ values
    def init(self, key, value):
        """Keeps rank 0's ``value`` under ``key`` and writes it into ``value`` on every worker."""
        for name, arrays in _pairs(key, value):
            self._stored[name] = self.from_rank0(name, arrays)

    def broadcast(self, key, value, out, priority=0):
        """Keeps rank 0's ``value`` under ``key`` and writes it into every array of ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def push(self, key, value, priority=0):
        """Adds up ``value`` (one array per device) over the devices and over the workers; with
        an optimizer, applies it to the kept weight, otherwise keeps the sum."""
        for name, arrays in _pairs(key, value):
            total = self.allreduce(name, arrays, priority)
            if self._updater is None:
                self._stored[name] = total
            else:
                self._updater(name, total, self._kept(name))

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Writes the value kept under ``key`` into every array of ``out``."""
        for name, arrays in _pairs(key, out):
            for array in arrays:
                self._kept(name).copyto(array)

    def pushpull(self, key, value, out=None, priority=0):
        """``push(key, value)`` then ``pull`` into ``out`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Refused: the store keeps dense values only."""
        raise HorovodError("kvstore='horovod' keeps dense parameters only; row_sparse_pull of "
                           f"{key!r} is not supported")

    def set_gradient_compression(self, compression_params):
        """Refused: Horovod's allreduce sends whole gradients."""
        raise HorovodError("kvstore='horovod' does not compress gradients; drop "
                           f"compression_params={compression_params!r} from the Module")

    def allreduce(self, name, arrays, priority=0):
        """The sum of ``arrays`` (this worker's devices, added in order) over all workers, on
        the CPU. Collective: every worker calls it with the same ``name``."""
        total = arrays[0].copyto(mx.cpu())
        for array in arrays[1:]:
            total += array.as_in_context(total.context)
        self._hvd.allreduce_(total, average=False, name=f"mxpatch_bind.{name}",
                             priority=priority)
        return total

    def from_rank0(self, name, arrays):
        """Writes rank 0's ``arrays[0]`` into every array of ``arrays`` on every worker; returns
        it, on the CPU. Collective: every worker calls it with the same ``name``."""
        value = arrays[0].copyto(mx.cpu())
        self._hvd.broadcast_(value, root_rank=0, name=f"mxpatch_bind.init.{name}")
        for array in arrays:
            value.copyto(array)
        return value

    def _kept(self, name):
        try:
            return self._stored[name]
        except KeyError:
            raise HorovodError(f"kvstore='horovod' holds no value for key {name!r}: init it first "
                               "(on every worker)") from None

    # ------------------------------------------------------------------ optimizer
    def set_optimizer(self, optimizer):
        """Runs ``optimizer`` on every push from now on (on this worker, on the CPU)."""
        self._updater = mx.optimizer.get_updater(optimizer)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the optimizer states to ``fname``."""
        states = self._optimizer_updater().get_states(dump_optimizer)  # before the file opens
        with open(fname, "wb") as file:
            file.write(states)

    def load_optimizer_states(self, fname):
        """Reads the optimizer states from ``fname``."""
        with open(fname, "rb") as file:
            self._optimizer_updater().set_states(file.read())

    def _optimizer_updater(self):
        if self._updater is None:
            raise HorovodError("kvstore='horovod' has no optimizer yet: call the module's "
                               "init_optimizer first")
        return self._updater


def is_horovod(kvstore: Any) -> bool:
    """Whether ``kvstore`` (a type name or a store) is a Horovod store.

    Examples
    --------
    >>> from mxpatch_bind.horovod import is_horovod
    >>> is_horovod('Horovod'), is_horovod('dist_sync'), is_horovod(None)
    (True, False, False)
    """
    kv_type = kvstore if isinstance(kvstore, str) else getattr(kvstore, "type", None) or ""
    return kv_type.lower() == STORE_TYPE


def create_wrapper(wrapped, instance, args, kwargs):
    """``mx.kv.create``: ``'horovod'`` makes a :class:`HorovodKVStore` (unless MXNet has a
    store of that name registered itself); every other name is MXNet's."""
    name = kwargs.get("name", args[0] if args else "local")
    registry = getattr(_BASE, "kv_registry", {})
    if isinstance(name, str) and is_horovod(name) and STORE_TYPE not in registry:
        return HorovodKVStore()
    return wrapped(*args, **kwargs)


def do_checkpoint(prefix: str, period: int = 1) -> Callable[..., None]:
    """``mx.callback.do_checkpoint`` that writes on Horovod's rank 0 only.

    Every worker holds the same parameters, so one copy is enough; written by all, the
    workers of one machine would write the same files at once.

    Parameters
    ----------
    prefix : str
        The checkpoint's prefix (``prefix-symbol.json``, ``prefix-%04d.params``).
    period : int
        Default 1. Write every ``period`` epochs.

    Examples
    --------
    >>> from mxpatch_bind.horovod import do_checkpoint
    >>> mod.fit(train, kvstore='horovod', epoch_end_callback=do_checkpoint('model'))
    ... # doctest: +SKIP
    """
    write = mx.callback.do_checkpoint(prefix, period)
    hvd = _import_horovod()

    def _callback(epoch: int, symbol: Any, arg_params: Any, aux_params: Any) -> None:
        if hvd.rank() == 0:
            write(epoch, symbol, arg_params, aux_params)

    return _callback


# --------------------------------------------------------------------------- init_optimizer
def init_optimizer_wrapper(wrapped, instance, args, kwargs):
    """``Module.init_optimizer``: on a Horovod store, ``rescale_grad`` counts the samples of
    all workers' devices, and rank 0's auxiliary states reach every worker; Horovod's own
    optimizer on several contexts is named as a trap."""
    arguments = _init_optimizer_arguments(args, kwargs)
    if arguments is None:  # not stock's signature: stock raises its own TypeError
        return _warning_at_caller(wrapped, *args, **kwargs)
    kvstore, optimizer, optimizer_params, force_init = arguments
    _warn_distributed_optimizer(instance, kvstore, optimizer)
    if not (is_horovod(kvstore) and _will_init(instance, force_init)):
        return _warning_at_caller(wrapped, *args, **kwargs)
    if isinstance(kvstore, str):
        kvstore = mx.kv.create(kvstore)
    optimizer_params = _weighted(instance, kvstore, optimizer, optimizer_params)
    with warnings.catch_warnings():
        # Stock compares a given optimizer's rescale_grad with 1/(this worker's samples),
        # advice that is wrong on this store; _weighted has said what is right.
        warnings.filterwarnings("ignore", "Optimizer created manually outside Module")
        result = _warning_at_caller(wrapped, kvstore, optimizer, optimizer_params, force_init)
    _share_rank0_values(instance, kvstore)
    return result


def _warning_at_caller(function, *args, **kwargs):
    """``function(*args, **kwargs)``, its warnings shown at the line that called into this
    package, where stock's ``warnings.warn(..., stacklevel=2)`` would have put them (a
    wrapper is a frame more)."""
    caller = sys._getframe(1)
    while caller is not None and caller.f_globals.get("__name__", "").startswith(__package__):
        caller = caller.f_back
    # The user's filters decide as ever ("error" raises where stock raised); what they let
    # through is held here and shown at the caller's line. Without catch_warnings, which
    # would reset every module's record of the warnings already shown.
    vars(sys.modules[__name__]).pop("__warningregistry__", None)  # shown here: held, not shown
    held: "list[Any]" = []
    shown = warnings.showwarning
    warnings.showwarning = lambda *warning: held.append(warning)
    try:
        return function(*args, **kwargs)
    finally:
        warnings.showwarning = shown
        _show_at(held, caller)


def _show_at(held, caller):
    for message, category, filename, lineno, *_ in held:
        if caller is None or filename != __file__:
            warnings.showwarning(message, category, filename, lineno)
            continue
        # Shown once already under a "once" filter: by us, to be held; show it for real now.
        warnings.onceregistry.pop((str(message), category), None)
        warnings.warn_explicit(message, category, caller.f_code.co_filename, caller.f_lineno,
                               caller.f_globals.get("__name__"),
                               caller.f_globals.setdefault("__warningregistry__", {}),
                               caller.f_globals)


_INIT_OPTIMIZER = ("kvstore", "optimizer", "optimizer_params", "force_init")
_INIT_OPTIMIZER_DEFAULTS = ("local", "sgd", (("learning_rate", 0.01),), False)


def _init_optimizer_arguments(args, kwargs):
    """``(kvstore, optimizer, optimizer_params, force_init)`` with stock's defaults, or None
    for a call stock's signature does not take."""
    if len(args) > len(_INIT_OPTIMIZER) or not set(kwargs) <= set(_INIT_OPTIMIZER[len(args):]):
        return None
    values = dict(zip(_INIT_OPTIMIZER, _INIT_OPTIMIZER_DEFAULTS))
    values.update(zip(_INIT_OPTIMIZER, args))
    values.update(kwargs)
    return tuple(values[name] for name in _INIT_OPTIMIZER)


def _share_rank0_values(module, store):
    """Rank 0's parameters and auxiliary states (BatchNorm's moving statistics) on every
    worker's devices.

    Updating on the store, stock's ``_initialize_kvstore`` broadcasts each parameter into the
    devices. Updating on the workers (``MXNET_UPDATE_ON_KVSTORE=0``) it only calls ``init``,
    which gives rank 0's value to the module's CPU copy (``_arg_params``) and never to the
    devices: each worker would go on from its own starting values, so the devices pull what
    ``init`` kept. Auxiliary states never pass through the store's keys; they are handed out
    here, under names of their own.
    """
    group = module._exec_group
    if not module._update_on_kvstore:
        for name, devices in zip(group.param_names, group.param_arrays):
            store.pull(name, out=list(devices))
    for name, devices in zip(module._aux_names, group.aux_arrays):
        store.from_rank0(f"aux:{name}", [module._aux_params[name]] + list(devices))


def _will_init(module, force_init):
    """Whether stock ``init_optimizer`` will carry the init out (every worker decides alike)."""
    return (module.binded and module.params_initialized
            and (force_init or not module.optimizer_initialized))


def _weighted(module, store, optimizer, optimizer_params):
    """``optimizer_params`` with ``rescale_grad = 1/(samples of all workers)``; a given
    ``rescale_grad`` (or optimizer object) is kept, with a warning unless it is that value."""
    local = module._exec_group.batch_size
    # nd.full, not nd.array: MXNet's nd.array asks SciPy's deprecated scipy.sparse.csr
    # namespace where SciPy is installed, a DeprecationWarning on every call.
    total = int(store.allreduce("__mxpatch_bind_samples__",
                                [mx.nd.full((1,), local)]).asscalar())
    if isinstance(optimizer, str) and "rescale_grad" not in dict(optimizer_params):
        return dict(optimizer_params, rescale_grad=1.0 / total)
    given = (dict(optimizer_params)["rescale_grad"] if isinstance(optimizer, str)
             else optimizer.rescale_grad)
    if given != 1.0 / total:
        warnings.warn(
            f"kvstore='horovod': rescale_grad={given!r} is kept; 1/{total} = {1.0 / total!r} "
            f"weights every sample of all workers alike ({local} samples here; leave rescale_grad "
            "out and give the optimizer by name to get it)",
            RuntimeWarning, stacklevel=4)
    return optimizer_params


def _warn_distributed_optimizer(module, kvstore, optimizer):
    """Horovod's ``DistributedOptimizer`` averages each device over the workers and never adds
    up the devices of one process: wrong with more than one context per process."""
    if (type(optimizer).__name__ == "DistributedOptimizer"
            and type(optimizer).__module__.startswith("horovod")
            and len(module._context) > 1):
        warnings.warn(
            f"Horovod's DistributedOptimizer on a module with {len(module._context)} contexts "
            "averages each context's gradient over the workers and never adds up the contexts of "
            "one process, so each step differs from one over all samples; give the module "
            "kvstore='horovod' and the plain optimizer instead (mxpatch_bind adds up every "
            "context of every worker)", RuntimeWarning, stacklevel=4)
    if is_horovod(kvstore) and type(optimizer).__name__ == "DistributedOptimizer":
        warnings.warn("kvstore='horovod' with Horovod's DistributedOptimizer reduces every "
                      "gradient twice; pass the plain optimizer", RuntimeWarning, stacklevel=4)
