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

from mxnet.module.base_module import BaseModule
from mxnet.module.executor_group import DataParallelExecutorGroup

__all__ = ["all_or_nothing"]

# The objects whose attributes a transition may change: modules (a bucketing module's
# buckets, SVRGModule's auxiliary module) and their executor groups.
_TRACKED = (BaseModule, DataParallelExecutorGroup)


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
    objects, containers = {}, {}
    _snapshot(module, objects, containers)
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


def _snapshot(obj, objects, containers):
    """Record ``obj``'s class and attributes, and those of every tracked object it holds."""
    attributes = dict(vars(obj))
    objects[obj] = (type(obj), attributes)
    for value in attributes.values():
        _save_contents(value, containers, depth=2)
    for value in _held(attributes.values()):
        if value not in objects:
            _snapshot(value, objects, containers)


def _save_contents(value, containers, depth):
    """Containers are changed in place (``execs[i] = ...``, caches, memory pools): record
    their contents, two levels deep, so they can be refilled as they were."""
    if depth == 0 or not isinstance(value, (list, dict)) or id(value) in containers:
        return
    items = list(value) if isinstance(value, list) else list(value.items())
    containers[id(value)] = (value, items)
    for item in (value if isinstance(value, list) else value.values()):
        _save_contents(item, containers, depth - 1)


def _refill(container, contents):
    if isinstance(container, list):
        container[:] = contents
    else:
        container.clear()
        container.update(contents)


def _held(values):
    """Tracked objects among ``values``, looking one level into lists and dicts."""
    for value in values:
        if isinstance(value, _TRACKED):
            yield value
        elif isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, _TRACKED))
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, _TRACKED))
