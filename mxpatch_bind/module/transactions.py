"""All-or-nothing module transitions: snapshot a module's state, restore it on failure (private).

A bind, reshape or bucket switch changes a module, its executor group and (for bucketing)
its bucket table in several steps, some of them MXNet's own (stock ``Module.reshape`` sets
``_data_shapes`` before the group reshapes; stock ``bind_exec`` replaces executors one at a
time). :func:`all_or_nothing` records everything those steps may change and puts it back if
any step raises, so the module is exactly as before: class, attributes, executor group,
executors, parameters and optimizer (which live in objects the steps only replace, never
modify).
"""

import contextlib
import threading

from mxnet.module.base_module import BaseModule
from mxnet.module.executor_group import DataParallelExecutorGroup

__all__ = ["all_or_nothing"]

# The objects whose attributes a transition may change: modules (a bucketing module's
# buckets, SVRGModule's auxiliary module) and their executor groups.
_TRACKED = (BaseModule, DataParallelExecutorGroup)

# Containers that transitions change in place rather than replace, and how deep: stock
# bind_exec sets execs[i]; the per-device group sets _default_execs[i] and fills its
# per-device executor caches; switch_bucket adds to _buckets. Everything else a transition
# changes, it assigns (restored from the attribute copy). Not the group's _seen_shapes: up to
# 256 shape keys per device that only decide when a shape enters the executor cache, filled
# only once every device's reshape has succeeded; copying them before every reshape cost more
# than the rest of a recurring shape's reshape.
_CHANGED_IN_PLACE = {"execs": 1, "_default_execs": 1, "_exec_cache": 2, "_buckets": 1}

# ids of the objects recorded by the transactions running in this thread: a transition
# nested in another (a reshape inside a free function's call) is covered by the outer one.
_active = threading.local()


@contextlib.contextmanager
def all_or_nothing(module):
    """Run the block; if it raises, restore ``module`` (and what it holds) as it was.

    Examples
    --------
    >>> import mxnet as mx
    >>> mod = mx.mod.Module(mx.sym.Variable('data'), label_names=None)
    >>> try:
    ...     with all_or_nothing(mod):
    ...         mod.binded = True
    ...         raise RuntimeError('MXNet failed')
    ... except RuntimeError:
    ...     pass
    >>> mod.binded
    False
    """
    recorded = getattr(_active, "ids", None)
    if recorded is not None and id(module) in recorded:
        yield  # an enclosing transaction restores this module
        return
    objects, containers = {}, {}
    _snapshot(module, objects, containers)
    ids = {id(obj) for obj in objects}
    outer = recorded
    _active.ids = ids if outer is None else outer | ids
    try:
        yield
    except BaseException:
        for container, contents in containers.values():
            _refill(container, contents)
        for obj, (cls, attributes) in objects.items():
            if type(obj) is not cls:
                obj.__class__ = cls
            state = vars(obj)
            state.clear()
            state.update(attributes)
        raise
    finally:
        _active.ids = outer


def _snapshot(obj, objects, containers):
    """Record ``obj``'s class and attributes, and those of every tracked object it holds."""
    attributes = dict(vars(obj))
    objects[obj] = (type(obj), attributes)
    for name, depth in _CHANGED_IN_PLACE.items():
        _save_contents(attributes.get(name), containers, depth)
    for value in _held(attributes):
        if value not in objects:
            _snapshot(value, objects, containers)


def _save_contents(value, containers, depth):
    """Record the items of ``value`` and, ``depth - 1`` levels down, of the containers in it."""
    if not isinstance(value, (list, dict)) or id(value) in containers:
        return
    # A copy keeps the order too (an OrderedDict's LRU order is part of its state).
    items = list(value) if isinstance(value, list) else list(value.items())
    containers[id(value)] = (value, items)
    if depth > 1:  # the last level's items are kept as they are, not entered
        for item in (value if isinstance(value, list) else value.values()):
            _save_contents(item, containers, depth - 1)


def _refill(container, contents):
    if isinstance(container, list):
        container[:] = contents
    else:
        container.clear()
        container.update(contents)


def _held(attributes):
    """Tracked objects among the attributes, and among a bucketing module's buckets."""
    for value in attributes.values():
        if isinstance(value, _TRACKED):
            yield value
    yield from (bucket for bucket in (attributes.get("_buckets") or {}).values()
                if isinstance(bucket, _TRACKED))
