"""Nothing the package creates outlives its use: per-device classes, modules, executor groups."""

import gc
import weakref

import mxnet as mx
import pytest

import mxpatch_bind

NET = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
SPEC = [[("data", (1, 3))], [("data", (2, 3))]]
CONTEXTS = [mx.cpu(0), mx.cpu(1)]


def bind_a_module_subclass(index):
    """A Module subclass made on the fly, bound per device, and the module."""
    subclass = type("Dynamic%d" % index, (mx.mod.Module,), {"payload": bytearray(1 << 16)})
    mod = subclass(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    return subclass, mod


def adopt_a_sequential_subclass(index):
    """A SequentialModule subclass made on the fly, switched per device, and the container."""
    from mxpatch_bind.module import sequential

    subclass = type("DynamicSeq%d" % index, (mx.mod.SequentialModule,),
                    {"payload": bytearray(1 << 16)})
    return subclass, sequential.adopt_sequential(subclass())


def per_device_refs(make, index):
    """Weak references to a subclass made by ``make`` and to its per-device class."""
    subclass, module = make(index)
    assert isinstance(module, subclass) and type(module) is not subclass
    return weakref.ref(subclass), weakref.ref(type(module))


@pytest.mark.parametrize("make", [bind_a_module_subclass, adopt_a_sequential_subclass])
def test_a_hundred_dynamic_subclasses_switched_per_device_are_all_collected(make):
    refs = [per_device_refs(make, index) for index in range(100)]
    gc.collect()
    alive = [ref() for pair in refs for ref in pair if ref() is not None]
    assert alive == []


def test_a_subclass_gets_the_same_per_device_class_while_it_lives():
    subclass = type("Kept", (mx.mod.Module,), {})
    first, second = (subclass(NET, label_names=None, context=CONTEXTS) for _ in range(2))
    mxpatch_bind.bind(first, SPEC)
    mxpatch_bind.bind(second, SPEC)
    assert type(first) is type(second)
    grandchild = type("KeptChild", (subclass,), {})
    third = grandchild(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(third, SPEC)
    assert isinstance(third, grandchild) and type(third) is not type(first)


def bind_a_module_per_device():
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[[mx.nd.ones((1, 3))], [mx.nd.ones((3, 3))]]),
                is_train=False)  # a reshape, so the executor cache holds something
    return weakref.ref(mod), weakref.ref(mod._exec_group)


def test_a_hundred_per_device_modules_and_their_executor_groups_are_all_collected():
    refs = [bind_a_module_per_device() for _ in range(100)]
    gc.collect()
    alive = [ref() for pair in refs for ref in pair if ref() is not None]
    assert alive == []


def test_a_module_whose_reshape_failed_is_collected_too():
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    with pytest.raises(mx.base.MXNetError):  # fc_weight cannot take 4 features
        mxpatch_bind.reshape(mod, [[("data", (1, 4))], [("data", (1, 3))]])
    refs = weakref.ref(mod), weakref.ref(mod._exec_group)
    del mod
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
