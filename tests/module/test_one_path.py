"""Every entry point classifies a call once and parses a per-device spec once."""

import mxnet as mx
import pytest

import mxpatch_bind
from mxpatch_bind.module import shapes

CONTEXTS = [mx.cpu(0), mx.cpu(1)]
NET = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
SPEC = [[("data", (1, 3))], [("data", (2, 3))]]


@pytest.fixture
def parses(monkeypatch):
    """How many per-device entries the parser reads (one per device per parse)."""
    count = [0]
    original = shapes._parse_device

    def counted(*args):
        count[0] += 1
        return original(*args)

    monkeypatch.setattr(shapes, "_parse_device", counted)
    return count


def free_bind(mod):
    mxpatch_bind.bind(mod, SPEC)


def patched_bind(mod):
    with mxpatch_bind.patched():
        mod.bind(SPEC)


@pytest.mark.parametrize("bind", [free_bind, patched_bind], ids=["free", "patched"])
def test_a_per_device_bind_parses_the_spec_once(parses, bind):
    bind(mx.mod.Module(NET, label_names=None, context=CONTEXTS))
    assert parses[0] == len(SPEC)


def test_a_free_reshape_parses_the_spec_once(parses):
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    parses[0] = 0
    mxpatch_bind.reshape(mod, [[("data", (3, 3))], [("data", (1, 3))]])
    assert parses[0] == 2


def test_a_forward_with_new_shapes_builds_its_spec_without_parsing(parses):
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    mod.init_params()
    parses[0] = 0
    mod.forward(mx.io.DataBatch(data=[[mx.nd.ones((4, 3))], [mx.nd.ones((1, 3))]]),
                is_train=False)
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[(4, 3)], [(1, 3)]]
    assert parses[0] == 0


@pytest.mark.parametrize("layout, device_shapes, flat_shape", [
    ("NC", [(1, 3), (2, 3)], (3, 3)),
    ("TNC", [(5, 1, 3), (5, 2, 3)], (5, 3, 3)),  # the batch axis is 1
], ids=["NC", "TNC"])
def test_a_flat_batch_that_fits_the_devices_merged_shapes_reshapes_nothing(
        parses, layout, device_shapes, flat_shape):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(mx.sym.sum(data, axis=0) if layout == "TNC" else data,
                                num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, [[mx.io.DataDesc("data", s, layout=layout)] for s in device_shapes],
                      for_training=False)
    mod.init_params()
    execs = list(mod._exec_group.execs)
    parses[0] = 0
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones(flat_shape)]), is_train=False)
    assert parses[0] == 0 and mod._exec_group.execs == execs
    assert [[d.shape for d in device] for device in mod.data_shapes] == \
        [[s] for s in device_shapes]


def test_a_parsed_spec_for_another_module_is_refused():
    mod = mx.mod.Module(NET, label_names=None, context=CONTEXTS)
    spec = shapes.parse_device_shapes([[("data", (1, 3))]] * 3, None, ["data"], [], 3)
    with pytest.raises(mxpatch_bind.ShapeSpecError, match="3 devices but the module has 2"):
        mxpatch_bind.bind(mod, spec)
    assert type(mod) is mx.mod.Module and not mod.binded


@pytest.mark.parametrize("batch, form", [
    (mx.io.DataBatch(data=[mx.nd.ones((2, 3))]), "stock"),
    (mx.io.DataBatch(data=[[mx.nd.ones((2, 3))], [mx.nd.ones((1, 3))]]), "device-lists"),
    ([mx.io.DataBatch(data=[mx.nd.ones((2, 3))])] * 2, "batch-list"),
    ([], "stock"),
    (None, "stock"),
])
def test_batch_form_tells_the_three_forms_apart(batch, form):
    assert shapes.batch_form(batch) == form


class OwnBind(mx.mod.Module):
    """A subclass with its own bind, as SVRGModule has: it reaches Module.bind via super()."""

    def bind(self, *args, **kwargs):
        self.own_bind_ran = True
        return super().bind(*args, **kwargs)


@pytest.mark.parametrize("cls, installs", [(mx.mod.Module, 0), (OwnBind, 1)],
                         ids=["plain", "own-bind"])
def test_the_free_bind_patches_only_for_a_subclass_with_its_own_bind(cls, installs,
                                                                      monkeypatch):
    from mxpatch_bind import patching
    calls, install = [], patching.install
    monkeypatch.setattr(patching, "install", lambda **kw: (calls.append(kw), install(**kw)))
    mod = cls(NET, label_names=None, context=CONTEXTS)
    mxpatch_bind.bind(mod, SPEC)
    assert len(calls) == installs and not mxpatch_bind.is_installed()
    assert [[d.shape for d in device] for device in mod.data_shapes] == [[(1, 3)], [(2, 3)]]
    assert getattr(mod, "own_bind_ran", False) == (cls is OwnBind)


LABELLED = mx.sym.SoftmaxOutput(NET, name="softmax")
LABELS = [[("softmax_label", (1,))], [("softmax_label", (2,))]]
OTHER = [[("data", (2, 3))], [("data", (3, 3))]]
OTHER_LABELS = [[("softmax_label", (2,))], [("softmax_label", (3,))]]


@pytest.mark.parametrize("bind, reshape", [
    (lambda mod: mod.bind(SPEC, LABELS, False), lambda mod: mod.reshape(OTHER, OTHER_LABELS)),
    (lambda mod: mod.bind(data_shapes=SPEC, label_shapes=LABELS, for_training=False),
     lambda mod: mod.reshape(data_shapes=OTHER, label_shapes=OTHER_LABELS)),
    (lambda mod: mod.bind(SPEC, label_shapes=LABELS, for_training=False),
     lambda mod: mod.reshape(OTHER, label_shapes=OTHER_LABELS)),
    (lambda mod: mx.mod.Module.bind(mod, SPEC, LABELS, for_training=False),
     lambda mod: mx.mod.Module.reshape(mod, OTHER, OTHER_LABELS)),
    (lambda mod: mx.mod.Module.bind(mod, data_shapes=SPEC, label_shapes=LABELS,
                                    for_training=False),
     lambda mod: mx.mod.Module.reshape(mod, data_shapes=OTHER, label_shapes=OTHER_LABELS)),
    # What a foreign decorator holding the wrapper itself calls: no descriptor, no instance.
    (lambda mod: vars(mx.mod.Module)["bind"](mod, SPEC, LABELS, for_training=False),
     lambda mod: vars(mx.mod.Module)["reshape"](mod, OTHER, OTHER_LABELS)),
], ids=["positional", "keywords", "mixed", "through-the-class", "class-and-keywords",
        "the-wrapper-itself"])
def test_the_patched_methods_read_the_shapes_however_they_are_passed(bind, reshape):
    mod = mx.mod.Module(LABELLED, context=CONTEXTS)
    with mxpatch_bind.patched():
        bind(mod)
        assert not mod.for_training
        assert ([[d.shape for d in device] for device in mod.data_shapes],
                [[d.shape for d in device] for device in mod.label_shapes]) == (
            [[(1, 3)], [(2, 3)]], [[(1,)], [(2,)]])
        reshape(mod)
    assert ([[d.shape for d in device] for device in mod.data_shapes],
            [[d.shape for d in device] for device in mod.label_shapes]) == (
        [[(2, 3)], [(3, 3)]], [[(2,)], [(3,)]])
