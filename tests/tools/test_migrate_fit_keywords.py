"""``migrate`` and the modified copies whose keywords compat now takes: 3DCE's ``fit(iter_size=)``
(Ke Yan's revision of mx-rcnn's module, in rsummers11/CADLab; jpulidojr/3DCE_new adds more)
and road_obj_detect's ``fit(allow_extra=)``.

The trees below are written here from the facts of those copies (their signatures, the order of
their parameters, the contexts their ``forward`` rebinds on); none of their code is used.
"""

import ast
import runpy
import textwrap

import mxnet as mx
import numpy as np
import pytest

from mxpatch_bind import migrate
from mxpatch_bind.migrate import edits, fork, positions

pytestmark = pytest.mark.usefixtures("give_back_installs")

KE_FIT = ("self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None, "
          "batch_end_callback=None, kvstore='local', optimizer='sgd', "
          "optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None, iter_size=1, "
          "eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None, "
          "aux_params=None, allow_missing=False, force_rebind=False, force_init=False, "
          "begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None")
ROAD_FIT = ("self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None, "
            "batch_end_callback=None, kvstore='local', optimizer='sgd', "
            "optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None, "
            "eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None, "
            "aux_params=None, allow_missing=False, force_rebind=False, force_init=False, "
            "begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None, prefix=None, "
            "allow_extra=False")


def ke_copy(fit=KE_FIT):
    """mx-rcnn's MutableModule over stock Module, as Ke's revision changed it: grad_req
    through bind and forward, and fit(..., eval_end_callback, iter_size, ...)."""
    return textwrap.dedent('''\
        import logging
        from mxnet import context as ctx
        from mxnet.initializer import Uniform
        from mxnet.module.base_module import BaseModule
        from mxnet.module.module import Module


        class MutableModule(BaseModule):
            def __init__(self, symbol, data_names, label_names, logger=logging,
                         context=ctx.cpu(), work_load_list=None, max_data_shapes=None,
                         max_label_shapes=None, fixed_param_prefix=None):
                self._curr_module = None
                self._max_data_shapes = max_data_shapes

            def bind(self, data_shapes, label_shapes=None, for_training=True,
                     inputs_need_grad=False, force_rebind=False, shared_module=None,
                     grad_req='write'):
                pass

            def init_optimizer(self, kvstore='local', optimizer='sgd',
                               optimizer_params=(('learning_rate', 0.01),), force_init=False):
                pass

            def forward(self, data_batch, is_train=None, grad_req='write'):
                module = Module(self._symbol, self._data_names, self._label_names,
                                logger=self.logger, context=self._context)

            def fit(%s):
                pass
        ''') % fit


def road_copy(context="[self._context[i] for i in xrange(len(data_batch.provide_data))]"):
    """The Deformable-ConvNets MutableModule as road_obj_detect changed it: allow_extra through
    bind and fit (state gone), and a forward that rebinds on ``context``."""
    return textwrap.dedent('''\
        import logging
        from mxnet import context as ctx
        from mxnet.initializer import Uniform
        from mxnet.module.base_module import BaseModule


        class MutableModule(BaseModule):
            def __init__(self, symbol, data_names, label_names, logger=logging,
                         context=ctx.cpu(), work_load_list=None, max_data_shapes=None,
                         max_label_shapes=None, fixed_param_prefix=None):
                self._curr_module = None
                self._max_data_shapes = max_data_shapes

            def bind(self, data_shapes, label_shapes=None, for_training=True,
                     inputs_need_grad=False, force_rebind=False, shared_module=None,
                     grad_req='write', allow_extra=False):
                pass

            def init_optimizer(self, kvstore='local', optimizer='sgd',
                               optimizer_params=(('learning_rate', 0.01),), force_init=False):
                pass

            def forward(self, data_batch, is_train=None):
                module = Module(self._symbol, self._data_names, self._label_names,
                                logger=self.logger, context=%s,
                                work_load_list=self._work_load_list)

            def fit(%s):
                pass
        ''') % (context, ROAD_FIT)


def tree(root, copy, train):
    core = root / "proj" / "core"
    core.mkdir(parents=True)
    (core / "__init__.py").write_text("")
    (core / "module.py").write_text(copy)
    (root / "proj" / "train.py").write_text(train)
    return root / "proj" / "train.py"


def run(capsys, *argv):
    status = migrate.main([str(a) for a in argv])
    return status, capsys.readouterr().out.splitlines()


def lines_for(lines, path):
    return [line for line in lines if line.startswith(path + ":")]


TRAIN_KE = textwrap.dedent('''\
    from core.module import MutableModule
    mod = MutableModule(sym, data_names, label_names, context=ctx)
    mod.fit(train_data, eval_metric=metrics, iter_size=args.iter_size,
            optimizer_params={'rescale_grad': 1.0}, num_epoch=2)
    mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, num_epoch=2)
    ''')


# --------------------------------------------------------------------------- 3DCE's revision
def test_kes_copy_is_deleted_and_its_importer_moved_to_compat(tmp_path, capsys):
    train = tree(tmp_path, ke_copy(), TRAIN_KE)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert not (tmp_path / "proj" / "core" / "module.py").exists()
    text = train.read_text()
    assert text.splitlines()[0] == "from mxpatch_bind.compat import MutableModule"
    assert "iter_size=args.iter_size," in text  # compat takes it as it is
    [copy] = lines_for(lines, "proj/core/module.py")
    assert copy.startswith("proj/core/module.py:1: [deleted] vendored copy")


def test_a_fit_call_without_iter_size_gets_iter_size_1_to_keep_the_copys_loop(tmp_path, capsys):
    train = tree(tmp_path, ke_copy(), TRAIN_KE)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert train.read_text().splitlines()[4] == (
        "mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, num_epoch=2, iter_size=1)")
    [added] = [line for line in lines_for(lines, "proj/train.py") if ":5:" in line]
    assert "[rewritten]" in added and "proj/core/module.py's fit trains by its own loop" in added


@pytest.mark.parametrize("arguments, written", [
    ("train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None",
     "train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, iter_size=1"),
    ("train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, 3",
     "train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, iter_size=3"),
])
def test_iter_size_1_is_written_unless_the_call_passes_it_even_by_position(tmp_path, capsys,
                                                                           arguments, written):
    # The copy's ninth parameter is eval_end_callback, its tenth iter_size.
    train = tree(tmp_path, ke_copy(), "from core.module import MutableModule\n"
                 "mod = MutableModule(net, ['data'], None)\n" f"mod.fit({arguments})\n")
    run(capsys, tmp_path, "--write", "--delete-vendored")
    assert train.read_text().splitlines()[2] == f"mod.fit({written})"


POSITIONAL = textwrap.dedent('''\
    from core.module import MutableModule
    mod = MutableModule(net, ['data'], ['softmax_label'], context=[mx.cpu(0)])
    mod.fit(train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, 2, None,
            mx.init.Uniform(0.01), ARGS, {},  # the copy's order: iter_size tenth
            False, False, False, 0, 2)
    ''')


def test_a_call_in_the_copys_positional_order_is_rewritten_to_the_copys_keywords(tmp_path,
                                                                                 capsys):
    train = tree(tmp_path, ke_copy(), POSITIONAL)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert train.read_text().splitlines()[2:] == [
        "mod.fit(train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, iter_size=2, "
        "eval_batch_end_callback=None,",
        "        initializer=mx.init.Uniform(0.01), arg_params=ARGS, aux_params={},  # the "
        "copy's order: iter_size tenth",
        "        allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0, "
        "num_epoch=2)"]
    [call] = [line for line in lines_for(lines, "proj/train.py") if ":3:" in line]
    assert call.startswith("proj/train.py:3: [rewritten] mod.fit: positional argument 10 is "
                           "iter_size in proj/core/module.py but eval_batch_end_callback in "
                           "stock Module.fit: passes arguments 10 to 19 by the copy's names "
                           "(iter_size=, eval_batch_end_callback=, initializer=")
    assert not (tmp_path / "proj" / "core" / "module.py").exists()


def small_net():
    out = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(out, name="softmax")


def training_globals(seed=0):
    rng = np.random.RandomState(seed)
    data = rng.uniform(-1, 1, (8, 4)).astype("float32")
    label = rng.randint(0, 3, 8).astype("float32")
    return {"mx": mx, "net": small_net(),
            "train": mx.io.NDArrayIter(data, label, batch_size=2, label_name="softmax_label"),
            "OPTIMIZER": {"learning_rate": 0.5, "momentum": 0.9, "rescale_grad": 0.5},
            "ARGS": {"fc_weight": mx.nd.array(rng.uniform(-1, 1, (3, 4))),
                     "fc_bias": mx.nd.zeros((3,))}}


def test_the_rewritten_positional_call_trains_as_the_call_written_with_keywords(tmp_path,
                                                                                capsys):
    train = tree(tmp_path, ke_copy(), POSITIONAL)
    run(capsys, tmp_path, "--write", "--delete-vendored")
    rewritten = runpy.run_path(str(train), init_globals=training_globals())["mod"]
    from mxpatch_bind.compat import MutableModule

    given = training_globals()
    by_keyword = MutableModule(given["net"], ["data"], ["softmax_label"], context=[mx.cpu(0)])
    by_keyword.fit(given["train"], optimizer_params=given["OPTIMIZER"], iter_size=2,
                   arg_params=given["ARGS"], aux_params={}, num_epoch=2)
    got, expected = rewritten.get_params()[0], by_keyword.get_params()[0]
    assert {k: v.asnumpy().tolist() for k, v in got.items()} == {
        k: v.asnumpy().tolist() for k, v in expected.items()}
    assert not np.array_equal(got["fc_weight"].asnumpy(), given["ARGS"]["fc_weight"].asnumpy())


def test_the_call_as_the_copy_took_it_fails_loudly_against_compat_unrewritten(tmp_path):
    source = POSITIONAL.replace("from core.module import", "from mxpatch_bind.compat import")
    (tmp_path / "train.py").write_text(source)
    with pytest.raises(TypeError, match="took iter_size at this position"):
        runpy.run_path(str(tmp_path / "train.py"), init_globals=training_globals())


def test_a_python_2_importer_has_its_positional_call_rewritten_and_stays_python_2(tmp_path,
                                                                                 capsys):
    train = tree(tmp_path, ke_copy(), POSITIONAL + "print 'trained'\n")
    run(capsys, tmp_path, "--write", "--delete-vendored")
    text = train.read_text()
    assert "None, iter_size=2, eval_batch_end_callback=None," in text
    assert text.endswith("print 'trained'\n")


@pytest.mark.parametrize("call", [
    "mod.fit(train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, (2), num_epoch=2)",
    "mod.fit(train, None, 'acc', None, None, 'local', 'sgd', OPTIMIZER, None, *rest)",
])
def test_a_positional_call_that_cannot_be_named_so_is_a_check(tmp_path, capsys, call):
    source = POSITIONAL.splitlines()[:2] + [call, ""]
    train = tree(tmp_path, ke_copy(), "\n".join(source))
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert train.read_text().splitlines()[2] == call
    [check] = [line for line in lines_for(lines, "proj/train.py") if ":3:" in line]
    assert "[check]" in check and "pass it by keyword, or port the copy's change" in check


def test_3dce_news_copy_with_ogdb_stays_kept_and_named_without_its_iter_size(tmp_path, capsys):
    fit = KE_FIT.replace("train_data, ", "train_data, ogdb, ")
    train = ("from core.module import MutableModule\n"
             "mod = MutableModule(sym, data_names, label_names)\n"
             "mod.fit(train_data, roidb, optimizer_params={'rescale_grad': 1.0}, iter_size=2)\n")
    path = tree(tmp_path, ke_copy(fit), train)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert (tmp_path / "proj" / "core" / "module.py").exists() and path.read_text() == train
    [copy] = lines_for(lines, "proj/core/module.py")
    assert copy.endswith("modified: kept (MutableModule.fit: parameter ogdb that no known "
                         "revision has); mxpatch_bind.compat does not do this")
    calls = lines_for(lines, "proj/train.py")
    assert not [line for line in calls if "iter_size" in line]
    assert "positional argument 2 is ogdb in proj/core/module.py but eval_data" in calls[-1]


# --------------------------------------------------------------------------- road_obj_detect
TRAIN_ROAD = textwrap.dedent('''\
    from core.module import MutableModule
    mod = MutableModule(sym, data_names, label_names, context=ctx)
    mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, num_epoch=2, allow_extra=False)
    ''')


def test_road_obj_detects_copy_before_its_context_change_is_deleted(tmp_path, capsys):
    train = tree(tmp_path, road_copy(), TRAIN_ROAD)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert not (tmp_path / "proj" / "core" / "module.py").exists()
    assert train.read_text() == TRAIN_ROAD.replace("from core.module", "from mxpatch_bind.compat")
    assert not [line for line in lines if "[check]" in line and "allow_extra" in line]


def test_road_obj_detects_copy_that_rebinds_on_the_first_context_is_kept_and_named(tmp_path,
                                                                                   capsys):
    copy = road_copy("[self._context[0]]")
    line = 1 + [n for n, text in enumerate(copy.splitlines()) if "= Module(" in text][0]
    train = tree(tmp_path, copy, TRAIN_ROAD)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert (tmp_path / "proj" / "core" / "module.py").exists() and train.read_text() == TRAIN_ROAD
    [kept] = lines_for(lines, "proj/core/module.py")
    assert "modified: kept (MutableModule.forward rebinds a changed shape on context=" \
           f"[self._context[0]] (line {line}), not on every context: with more than one, the " \
           "copy ran the first device alone from then on; compat keeps every context)" in kept


def test_a_road_call_with_prefix_and_allow_extra_by_position_is_rewritten(tmp_path, capsys):
    call = ("mod.fit(train_data, None, 'acc', None, None, 'local', 'sgd', {}, None, None,\n"
            "        init, None, None, False, False, False, 0, 2, None, None, 'out', True)\n")
    train = tree(tmp_path, road_copy(), TRAIN_ROAD.splitlines(True)[0] + "mod = MutableModule("
                 "sym, ['data'], None)\n" + call)
    run(capsys, tmp_path, "--write", "--delete-vendored")
    assert train.read_text().splitlines()[3] == (
        "        init, None, None, False, False, False, 0, 2, None, None, prefix='out', "
        "allow_extra=True)")


# --------------------------------------------------------------------------- the pieces
@pytest.mark.parametrize("context, found", [
    ("self._context", []),
    ("[self._context[i] for i in range(len(data_batch.provide_data))]", []),
    ("[self._context[i] for i in xrange(len(data_batch.provide_data))]", []),
    ("[self._context[0]]", [(3, "[self._context[0]]")]),
    ("[self._context[j] for j in range(len(data_batch.provide_data))]",
     [(3, "[self._context[j] for j in range(len(data_batch.provide_data))]")]),
])
def test_the_contexts_forward_rebinds_on_are_every_context_in_the_familys_forms(context, found):
    source = ("class MutableModule:\n    def forward(self, data_batch):\n"
              f"        m = mx.mod.Module(s, d, l, context={context})\n"
              "        other = MutableModule(s, d, l, context=[self._context[0]])\n")
    assert fork.rebind_contexts(ast.parse(source)) == found


@pytest.mark.parametrize("call, found", [
    ("Module(s, d, l, logging, [self._context[0]])", [(3, "[self._context[0]]")]),
    ("Module(s, d, l, logging, self._context)", []),
    ("Module(s, d, l)", [(3, "(Module's default)")]),
])
def test_a_context_by_position_or_left_out_is_read_as_module_takes_it(call, found):
    source = f"class MutableModule:\n    def forward(self, data_batch):\n        m = {call}\n"
    assert fork.rebind_contexts(ast.parse(source)) == found


def test_a_known_revision_with_code_that_differs_is_named_and_not_covered():
    name = next(n for n in fork.REVISIONS if n.startswith("dhzhd1/road_obj_detect:rfcn/core/m"))
    methods = fork.REVISIONS[name]["methods"]
    lines = ["class MutableModule(object):"]
    for qualified, signature in methods.items():
        cls, method = qualified.split(".")
        if cls == "MutableModule":
            body = ("m = Module(s, d, l, context=[self._context[0]])" if method == "forward"
                    else "pass")
            lines += [f"    def {method}{signature}:", f"        {body}"]
    for cls in sorted({q.split(".")[0] for q in methods} - {"MutableModule"}):
        lines.append(f"class {cls}(object):")
        lines += [f"    def {q.split('.')[1]}{s}:\n        pass" for q, s in methods.items()
                  if q.startswith(cls + ".")]
    revision = fork.classify(ast.parse("\n".join(lines)), "module.py")
    assert revision.name == name and fork.REVISIONS[name]["covered"]
    assert not revision.covered and len(revision.differences) == 1
    assert revision.differences[0].startswith("MutableModule.forward rebinds a changed shape on "
                                              "context=[self._context[0]] (line ")


@pytest.mark.parametrize("source, insertions", [
    ("f(a,\n  b,  # why\n  c)", [(2, 2, "x="), (3, 2, "y=")]),
    ("f(a, 'é', b)", [(1, 5, "x="), (1, 10, "y=")]),
    ("f(a, (b), c)", None),
    ("f(a, *b, c)", None),
    ("f(a)", None),
])
def test_keyword_insertions_name_each_argument_where_only_a_comma_precedes_it(source,
                                                                              insertions):
    call = ast.parse(source).body[0].value
    lines = source.split("\n")
    assert positions.keyword_insertions(call, 1, ["x", "y"][:len(call.args) - 1], lines,
                                        lines) == insertions


def test_keyword_insertions_refuse_a_line_the_python_2_view_changed():
    source = "f(a,\n  b)"
    call = ast.parse(source).body[0].value
    assert positions.keyword_insertions(call, 1, ["x"], ["f(a,", "  b)"],
                                        ["f(a,", "  b) "]) is None
    assert positions.keyword_insertions(call, 1, ["x"], ["f(a, ", "  b)"],
                                        ["f(a,", "  b)"]) is None


def test_keyword_edits_carry_one_insertion_or_several():
    key = ("import", 1, 0, "core.module")
    assert edits.keyword_insertions([("keyword", 3, 9, ", iter_size=1", key),
                                     ("keyword", 4, 2, "x=", key, (5, 2, "y="), (6, 0, "z="))]) \
        == [(3, 9, ", iter_size=1"), (4, 2, "x="), (5, 2, "y="), (6, 0, "z=")]


def test_the_examples_in_positions_docstrings_hold():
    import doctest

    assert doctest.testmod(positions).failed == 0 and doctest.testmod(positions).attempted
