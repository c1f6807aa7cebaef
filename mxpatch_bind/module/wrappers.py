"""The wrapt wrappers ``install()`` puts on MXNet's methods, as ``patching._targets.TARGETS``
names them (private).

Each looks at the call's shape arguments (the forward wrapper: the batch's form) and sends a
stock call straight to MXNet's original; a per-device one goes to ``binding`` (or to
``PerDeviceSequentialModule``), through the module so that one name holds each function.
"""

import inspect

from mxnet.module import Module

from ..errors import ShapeSpecError
from . import binding, shapes
from .binding import BindOptions, PerDeviceModule
from .forward import check_presliced
from .sequential import PerDeviceSequentialModule
from .transactions import all_or_nothing

__all__ = ["bind_wrapper", "reshape_wrapper", "forward_wrapper", "bucketing_bind_wrapper",
           "sequential_bind_wrapper", "is_per_device_call"]


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
    """What a patched ``Module.forward`` runs: a flat batch goes straight to the original (it
    costs one ``batch_form``); a per-device batch on a plain ``Module`` bound in stock form
    switches it to the per-device class, which reshapes it to per device; stock's own
    pre-sliced list is checked whole, as every per-device batch is, then handed to the
    original."""
    form = shapes.batch_form(_batch_of(instance, args, kwargs))
    if form == shapes.STOCK:
        return wrapped(*args, **kwargs)
    module, method_args = _split_call(instance, args)
    if not isinstance(module, Module):
        return wrapped(*args, **kwargs)
    if isinstance(module, PerDeviceModule):
        # Only an explicit Module.forward(module, batch) gets here (a subclass's base call
        # written out): the per-device forward, which module.forward would recurse into.
        return PerDeviceModule.forward(module, *method_args, **kwargs)
    data_batch = _batch_of(module, method_args, kwargs)
    if form == shapes.BATCH_LIST and _one_shape(data_batch):
        if module.binded and module.params_initialized:
            check_presliced(module, data_batch, _is_train_of(method_args, kwargs))
        return wrapped(*args, **kwargs)
    with all_or_nothing(module):
        binding.adopt_module(module)
        return module.forward(*method_args, **kwargs)


def _batch_of(instance, args, kwargs):
    """The batch of a ``forward`` call however it is passed (``instance=None``: the module
    is the first argument)."""
    first = 0 if instance is not None else 1
    return args[first] if len(args) > first else kwargs.get("data_batch")


def _is_train_of(method_args, kwargs):
    return method_args[1] if len(method_args) > 1 else kwargs.get("is_train")


def _one_shape(batch_list):
    """Whether a list of batches is stock's pre-sliced form: every batch's data of one shape
    (stock asserts they are; other shapes go per device)."""
    first = _data_shapes_of(batch_list[0])
    return first is not None and all(_data_shapes_of(b) == first for b in batch_list[1:])


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


def is_per_device_call(attribute, instance, args, kwargs):
    """Whether a call of the patched method ``attribute`` (as wrapt hands it over) asks for
    per-device behaviour: a per-device (or flattened per-device) spec for ``bind`` /
    ``reshape``, a per-device batch for ``forward`` (stock's pre-sliced list is stock's)."""
    if attribute == "forward":
        batch = _batch_of(instance, args, kwargs)
        form = shapes.batch_form(batch)
        return form == shapes.DEVICE_LISTS or (form == shapes.BATCH_LIST
                                               and not _one_shape(batch))
    if attribute not in ("bind", "reshape"):
        return False
    _, method_args = _split_call(instance, args)
    try:
        return shapes.spec_form(*_shape_args(method_args, kwargs)) == shapes.PER_DEVICE
    except ShapeSpecError:
        return True  # mixed forms, or a per-device spec written flat
