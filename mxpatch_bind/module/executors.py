"""What the per-device group does to one executor: reshape it, cache it, copy into it (private).

MXNet's ``Executor`` is left as it is; :func:`reshape_executor` makes a reshaped one the lean
way where that was checked against MXNet's own code, and the group
(:mod:`~mxpatch_bind.module.executor_group`) decides which executor each device runs.
"""

import ctypes
import weakref
from array import array as py_array

import mxnet as mx
from mxnet import ndarray as nd
from mxnet.base import (
    _LIB,
    ExecutorHandle,
    NDArrayHandle,
    c_array_buf,
    c_str_array,
    check_call,
    mx_int,
    mx_uint,
)
from mxnet.executor import Executor
from mxnet.ndarray import NDArray, _ndarray_cls

from . import shapes

# MXNet versions whose Executor.reshape / Executor.__init__ reshape_executor was checked
# against, line by line (1.8.0 and 1.9.1); any other falls back to Executor.reshape.
LEAN_RESHAPE_VERSIONS = ("1.8.", "1.9.")
# MXNet versions whose lean reshapes were run from several threads at once and found safe:
# outputs equal to the serial ones, no crash in stress runs (docs/concurrent_reshape.rst).
# simple_bind is not among them: two threads in it at once abort MXNet's frontend.
CONCURRENT_RESHAPE_VERSIONS = ("1.9.",)
# Fewer never-seen reshapes than this run on the calling thread: the thread hand-offs cost
# about what overlapping 2 or 3 reshapes saves (python -m benchmarks reshape; the figures are
# in docs/performance.md, section 3).
MIN_CONCURRENT_RESHAPES = 4

# What an executor's arrays are never changes, but asking MXNet costs a C call per array
# (shape, storage type): asked once per executor, kept as long as the executor lives.
_KNOWN_SHAPES: "weakref.WeakKeyDictionary[Executor, dict]" = weakref.WeakKeyDictionary()
_ALL_DENSE: "weakref.WeakKeyDictionary[Executor, bool]" = weakref.WeakKeyDictionary()


def copy_inputs(arrays, exec_, names):
    """Copy one device's arrays (NDArrays or numpy) into the executor's inputs ``names``."""
    for name, src in zip(names, arrays):
        dst = exec_.arg_dict[name]
        if isinstance(src, nd.NDArray):
            src.copyto(dst)
        else:
            dst[:] = src


def input_shapes(exec_, wanted):
    """The executor's shapes of the inputs named in ``wanted``, asked of MXNet once each."""
    known = _KNOWN_SHAPES.setdefault(exec_, {})
    for name in wanted:
        if name not in known:
            known[name] = exec_.arg_dict[name].shape
    return {name: known[name] for name in wanted}


def _all_dense(exec_):
    """Whether every array of ``exec_`` has the default (dense) storage type."""
    dense = _ALL_DENSE.get(exec_)
    if dense is None:
        arrays = exec_.arg_arrays + exec_.grad_arrays + exec_.aux_arrays
        dense = _ALL_DENSE[exec_] = all(a is None or a.stype == "default" for a in arrays)
    return dense


def reshape_executor(base, shapes):
    """``base.reshape(allow_up_sizing=True, **shapes)``, without copying what executors only read.

    MXNet's ``Executor.reshape`` ends in ``Executor.__init__``, which deep-copies the symbol,
    context, ``grad_req`` and ``group2ctx``, and the first ``arg_dict`` asks the symbol for
    its argument names again: a measurable part of a reshape on a small network (figures in
    docs/performance.md).
    Executors never modify them, so the new executor shares the base's. The C call and the
    arrays are exactly ``Executor.reshape``'s. Other MXNet versions, a monitor callback and
    ``group2ctx`` take ``Executor.reshape`` itself.

    Upstream: mxnet.executor.Executor.reshape
    Upstream: mxnet.executor.Executor.__init__
    """
    if not _takes_lean_reshape(base):
        executor = base.reshape(allow_up_sizing=True, **shapes)
        _KNOWN_SHAPES[executor] = dict(shapes)
        return executor
    names = list(shapes)
    dims, indptr = [], [0]
    for name in names:
        dims.extend(shapes[name])
        indptr.append(len(dims))
    handle = ExecutorHandle()
    num_args, num_aux = ctypes.c_uint(), ctypes.c_uint()
    args, grads, aux = (ctypes.POINTER(NDArrayHandle)() for _ in range(3))
    no_ints = c_array_buf(ctypes.c_int, py_array('i', []))
    check_call(_LIB.MXExecutorReshapeEx(
        ctypes.c_int(0), ctypes.c_int(1),  # partial_shaping=False, allow_up_sizing=True
        ctypes.c_int(base._ctx.device_typeid), ctypes.c_int(base._ctx.device_id),
        mx_uint(0), c_str_array([]), no_ints, no_ints,  # no group2ctx
        mx_uint(len(names)), c_str_array(names), c_array_buf(mx_int, py_array('i', dims)),
        c_array_buf(mx_uint, py_array('I', indptr)),
        ctypes.byref(num_args), ctypes.byref(args), ctypes.byref(grads),
        ctypes.byref(num_aux), ctypes.byref(aux), base.handle, ctypes.byref(handle)))
    # The handles point into MXNet's per-thread return buffer, which the next C call
    # (e.g. for the outputs) overwrites: wrap them first. A reshape keeps storage types, so
    # a dense base gives dense arrays (_ndarray_cls would ask MXNet for each one).
    dense = _all_dense(base)
    wrap = NDArray if dense else _ndarray_cls
    arg_arrays = [wrap(NDArrayHandle(args[i])) for i in range(num_args.value)]
    grad_arrays = [wrap(NDArrayHandle(grads[i])) if grads[i] is not None else None
                   for i in range(num_args.value)]
    aux_arrays = [wrap(NDArrayHandle(aux[i])) for i in range(num_aux.value)]
    executor = Executor.__new__(Executor)
    # Every attribute Executor.__init__ sets (its __del__ frees ``handle``).
    vars(executor).update(
        handle=handle, _symbol=base._symbol, _ctx=base._ctx, _grad_req=base._grad_req,
        _group2ctx=base._group2ctx, _optimized_symbol=None, _grad_dict=None,
        # The names are the base's (same symbol); stock would ask the symbol again.
        _arg_dict=dict(zip(base.arg_dict, arg_arrays)),
        _aux_dict=None, _output_dict=None, _monitor_callback=None, _monitor_all=None,
        arg_arrays=arg_arrays, grad_arrays=grad_arrays, aux_arrays=aux_arrays)
    executor.outputs = executor._get_outputs()
    _ALL_DENSE[executor] = dense
    _KNOWN_SHAPES[executor] = dict(shapes)
    return executor


def _takes_lean_reshape(base):
    return (mx.__version__.startswith(LEAN_RESHAPE_VERSIONS)
            and base._monitor_callback is None and not base._group2ctx)


def can_reshape_concurrently(bases):
    """Whether the reshapes from ``bases`` run on several threads at once.

    Only where it was proven (MXNet 1.9, the lean reshape, CPU contexts): a GPU's reshape
    runs on the device its thread has selected, which no test here can check. And only
    for enough of them to pay for the hand-offs.
    """
    return (len(bases) >= MIN_CONCURRENT_RESHAPES
            and mx.__version__.startswith(CONCURRENT_RESHAPE_VERSIONS)
            and all(_takes_lean_reshape(base) and base._ctx.device_type == "cpu"
                    for base in bases))


def cache_key(wanted):
    return tuple(sorted(wanted.items()))


def put_bounded(cache, key, value, size):
    """Insert into an LRU ``OrderedDict``, dropping the least recently used beyond ``size``."""
    cache[key] = value
    while len(cache) > size:
        cache.popitem(last=False)


def grows(base, wanted):
    """Whether the executor for ``wanted`` should replace ``base`` as the device's base.

    It must need more elements than the base holds for some input, and more in all: an
    executor that grows one input while shrinking another (a bigger batch of smaller images:
    the label grows, the data shrinks) would otherwise hold only a view of the larger data,
    and the next large image would grow it back, replacing the base every other step.
    """
    held = sum(base.arg_dict[name].size for name in wanted)
    # More in all implies more than the base holds for some input.
    return sum(shapes.num_elements(shape) for shape in wanted.values()) > held
