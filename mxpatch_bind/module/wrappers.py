"""The wrapt wrappers ``install()`` puts on MXNet's methods, as ``patching._targets.TARGETS``
names them (private).

Each looks at the call's shape arguments (the forward wrapper: the batch's form) and sends a
stock call straight to MXNet's original; a per-device one goes to ``binding`` (or to
``PerDeviceSequentialModule``), through the module so that one name holds each function.
"""

import inspect

from mxnet.module import Module

from . import binding, shapes
from .binding import BindOptions, PerDeviceModule
from .sequential import PerDeviceSequentialModule
from .transactions import all_or_nothing

__all__ = ["bind_wrapper", "reshape_wrapper", "forward_wrapper", "bucketing_bind_wrapper",
           "sequential_bind_wrapper"]


def _split_call(instance, args):
    """wrapt passes ``instance=None`` when the method is called through the class."""
    if instance is None:
        return args[0], args[1:]
    return instance, args


def _shape_args(args, kwargs):
    data_shapes = args[0] if args else kwargs.get("data_shapes")
    label_shapes = args[1] if len(args) > 1 else kwargs.get("label_shapes")
    return data_shapes, label_shapes


def bind_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``Module.bind`` runs: stock specs go straight to the original."""
    module, method_args = _split_call(instance, args)
    spec = binding._per_device_spec(module, *_shape_args(method_args, kwargs))
    if spec is None:
        return wrapped(*args, **kwargs)
    return binding._bind_per_device(module, spec, _bind_options(module, method_args, kwargs))


def reshape_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``Module.reshape`` runs: stock specs go straight to the original."""
    module, method_args = _split_call(instance, args)
    spec = binding._per_device_spec(module, *_shape_args(method_args, kwargs))
    if spec is None:
        return wrapped(*args, **kwargs)
    _RESHAPE_SIGNATURE.bind(module, *method_args, **kwargs)  # a TypeError as stock gives
    return binding._reshape_per_device(module, spec)


def forward_wrapper(wrapped, instance, args, kwargs):
    """What a patched ``Module.forward`` runs: a per-device batch on a plain ``Module`` bound
    in stock form switches it to the per-device class, which reshapes it to per device;
    everything else goes straight to the original (a flat batch costs one ``batch_form``)."""
    module, method_args = _split_call(instance, args)
    data_batch = method_args[0] if method_args else kwargs.get("data_batch")
    if (isinstance(module, PerDeviceModule) or not isinstance(module, Module)
            or _stock_forward_takes(data_batch)):
        return wrapped(*args, **kwargs)
    with all_or_nothing(module):
        binding.adopt_module(module)
        return module.forward(*method_args, **kwargs)


def _stock_forward_takes(data_batch):
    """Whether stock ``Module.forward`` handles this batch as it is: a flat batch, or a
    pre-sliced list of batches whose data shapes are all equal (stock asserts they are)."""
    form = shapes.batch_form(data_batch)
    if form != shapes.BATCH_LIST:
        return form == shapes.STOCK
    first = _data_shapes_of(data_batch[0])
    return first is not None and all(_data_shapes_of(b) == first for b in data_batch[1:])


def _data_shapes_of(batch):
    data = getattr(batch, "data", None)
    if not isinstance(data, (list, tuple)) or not all(hasattr(a, "shape") for a in data):
        return None  # malformed: the per-device path names what is wrong
    return [tuple(a.shape) for a in data]


# The options of a call, named as PerDeviceModule's methods (signatures written once) name them.
_BIND_SIGNATURE = inspect.signature(PerDeviceModule.bind)
_RESHAPE_SIGNATURE = inspect.signature(PerDeviceModule.reshape)


def _bind_options(module, method_args, kwargs):
    call = _BIND_SIGNATURE.bind(module, *method_args, **kwargs)
    call.apply_defaults()
    return BindOptions(*(call.arguments[name] for name in BindOptions._fields))


def bucketing_bind_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``BucketingModule.bind`` runs: stock bind, then keep per-device buckets
    binding per device after ``uninstall()``."""
    module, _ = _split_call(instance, args)
    result = wrapped(*args, **kwargs)
    if isinstance(getattr(module, "_curr_module", None), PerDeviceModule):
        binding.adopt_module(module)
    return result


def sequential_bind_wrapper(wrapped, instance, args, kwargs):
    """What the patched ``SequentialModule.bind`` runs: stock specs go straight to MXNet."""
    module, method_args = _split_call(instance, args)
    if shapes.spec_form(*_shape_args(method_args, kwargs)) == shapes.STOCK:
        return wrapped(*args, **kwargs)
    # The class's bind holds the one per-device signature; it works on a stock instance.
    return PerDeviceSequentialModule.bind(module, *method_args, **kwargs)
