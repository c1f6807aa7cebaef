"""``migrate`` on small trees written from the family's facts (docs/family.rst): each copy's
freezing rule, Python 2 copies and importers, modified copies and their extra keywords, and
deletions that never leave an import behind. No code of those repositories is used: the
copies below are written here, with the facts' signatures and rules."""

import ast
import inspect
import textwrap

import mxnet as mx
import pytest

from mxpatch_bind import migrate
from mxpatch_bind.migrate import checks as _migrate_checks
from mxpatch_bind.migrate import fork as _migrate_fork
from mxpatch_bind.migrate.fork import REVISIONS

FIT_STOCK = ("self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None, "
             "batch_end_callback=None, kvstore='local', optimizer='sgd', optimizer_params="
             "(('learning_rate', 0.01),), eval_end_callback=None, eval_batch_end_callback=None, "
             "initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False, "
             "force_rebind=False, force_init=False, begin_epoch=0, num_epoch=None, "
             "validation_metric=None, monitor=None, prefix=None")


def copy_source(rule="prefix in name", fit=FIT_STOCK + ", state=None", python2=False,
                init_params="self, initializer=Uniform(0.01), arg_params=None, "
                            "aux_params=None, allow_missing=False, force_init=False, "
                            "allow_extra=False"):
    """A vendored ``core/module.py`` as the facts describe it: a MutableModule with an inner
    module bound at the maximum shapes, freezing by ``rule``; Python 2 when asked."""
    report = "print name, 'is fixed'" if python2 else "pass"
    return textwrap.dedent('''\
        import logging
        from mxnet import context as ctx
        from mxnet.initializer import Uniform
        from mxnet.module.base_module import BaseModule
        from .DataParallelExecutorGroup import DataParallelExecutorGroup


        class MutableModule(BaseModule):
            def __init__(self, symbol, data_names, label_names, logger=logging,
                         context=ctx.cpu(), work_load_list=None, max_data_shapes=None,
                         max_label_shapes=None, fixed_param_prefix=None):
                self._curr_module = None
                self._max_data_shapes = max_data_shapes
                fixed_param_names = list()
                if fixed_param_prefix is not None:
                    for name in symbol.list_arguments():
                        for prefix in fixed_param_prefix:
                            if %(rule)s:
                                fixed_param_names.append(name)
                                %(report)s
                self._fixed_param_names = fixed_param_names

            def init_params(%(init_params)s):
                pass

            def bind(self, data_shapes, label_shapes=None, for_training=True,
                     inputs_need_grad=False, force_rebind=False, shared_module=None,
                     grad_req='write'):
                pass

            def init_optimizer(self, kvstore='local', optimizer='sgd',
                               optimizer_params=(('learning_rate', 0.01),), force_init=False):
                pass

            def forward(self, data_batch, is_train=None):
                pass

            def fit(%(fit)s):
                pass
        ''') % dict(rule=rule, report=report, fit=fit, init_params=init_params)


GROUP = textwrap.dedent('''\
    import logging


    class DataParallelExecutorGroup(object):
        def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                     for_training, inputs_need_grad, shared_group=None, logger=logging,
                     fixed_param_names=None, grad_req='write', state_names=None):
            self.batch_size = len(data_shapes)

        def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
            pass

        def reshape(self, data_shapes, label_shapes):
            pass

        def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
            def _get_or_reshape(name, shared_data_arrays, arg_shape, arg_type, context,
                                logger):
                pass
    ''')
TRAIN = textwrap.dedent('''\
    from core.module import MutableModule
    mod = MutableModule(sym, data_names, label_names, context=ctx,
                        max_data_shapes=max_data_shape,
                        fixed_param_prefix=config.network.FIXED_PARAMS)
    mod.fit(train_data, optimizer_params={'learning_rate': 0.1, 'rescale_grad': 1.0})
    ''')
TESTER_PY2 = textwrap.dedent('''\
    import cPickle
    from module import MutableModule

    class Predictor(object):
        def __init__(self, symbol, data_names, label_names, context, max_data_shapes):
            self._mod = MutableModule(symbol, data_names, label_names, context=context,
                                      max_data_shapes=max_data_shapes)
            print 'predictor ready'
    ''')


def family_tree(root, module=None, train=TRAIN, tester=TESTER_PY2, project="proj"):
    """``proj/core/{module,DataParallelExecutorGroup,tester,__init__}.py`` and
    ``proj/train_end2end.py``, the family's layout."""
    core = root / project / "core"
    core.mkdir(parents=True)
    (core / "__init__.py").write_text("")
    (core / "module.py").write_text(module or copy_source())
    (core / "DataParallelExecutorGroup.py").write_text(GROUP)
    if tester is not None:
        (core / "tester.py").write_text(tester)
    (root / project / "train_end2end.py").write_text(train)
    return root


def run(capsys, *argv):
    status = migrate.main([str(a) for a in argv])
    return status, capsys.readouterr().out.splitlines()


def lines_for(lines, path):
    return [line for line in lines if line.startswith(path + ":")]


# --------------------------------------------------------------------------- the freezing rule
@pytest.mark.parametrize("rule, written", [("name.startswith(prefix)", True),
                                           ("prefix in name", False)])
def test_the_copys_rule_is_written_where_it_is_not_compats_default(tmp_path, capsys, rule,
                                                                   written):
    family_tree(tmp_path, module=copy_source(rule=rule))
    run(capsys, tmp_path, "--write", "--delete-vendored")
    train = (tmp_path / "proj" / "train_end2end.py").read_text()
    expected = TRAIN.replace("from core.module", "from mxpatch_bind.compat")
    if written:
        expected = expected.replace("FIXED_PARAMS)", "FIXED_PARAMS, fixed_param_rule="
                                    "'startswith')")
    assert train == expected
    assert not (tmp_path / "proj" / "core" / "module.py").exists()


def test_the_rule_is_written_only_into_constructions_of_the_imported_class(tmp_path, capsys):
    # a parameter that shadows the imported name constructs whatever the caller passes
    shadowed = TRAIN + textwrap.dedent("""\
        def build(MutableModule):
            return MutableModule(sym, fixed_param_prefix=config.network.FIXED_PARAMS)
        """)
    family_tree(tmp_path, module=copy_source(rule="name.startswith(prefix)"), train=shadowed)
    run(capsys, tmp_path, "--write", "--delete-vendored")
    train = (tmp_path / "proj" / "train_end2end.py").read_text()
    assert train.count("fixed_param_rule='startswith'") == 1
    assert "return MutableModule(sym, fixed_param_prefix=config.network.FIXED_PARAMS)\n" in train


# Relation Networks' copy: fit calls each epoch_end_callback with -1 before training.
FIT_FIRST = """\
        if epoch_end_callback is not None:
            for callback in _as_list(epoch_end_callback):
                callback(-1, self.symbol, arg_params, aux_params)
        for epoch in range(begin_epoch, num_epoch):
            for callback in _as_list(epoch_end_callback):
                callback(epoch, self.symbol, arg_params, aux_params)
"""


def test_an_epoch_end_call_before_training_is_recognised_by_its_minus_one_only():
    # a copy calling its callbacks with 0 before the loop is not Relation Networks' copy
    module = copy_source(fit=FIT_STOCK).replace(
        "    def fit(" + FIT_STOCK + "):\n        pass\n",
        "    def fit(" + FIT_STOCK + "):\n" + FIT_FIRST.replace("callback(-1,", "callback(0,"))
    assert _migrate_fork.epoch_end_first(ast.parse(module)) == 0


@pytest.mark.parametrize("first", [True, False])
def test_a_copy_whose_fit_calls_epoch_end_first_gets_the_keyword_that_keeps_it(tmp_path, capsys,
                                                                               first):
    body = FIT_FIRST if first else FIT_FIRST[FIT_FIRST.index("        for epoch"):]
    module = copy_source(fit=FIT_STOCK).replace(
        "    def fit(" + FIT_STOCK + "):\n        pass\n", "    def fit(" + FIT_STOCK + "):\n" + body)
    assert bool(_migrate_fork.epoch_end_first(ast.parse(module))) == first
    family_tree(tmp_path, module=module)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    train = (tmp_path / "proj" / "train_end2end.py").read_text()
    expected = TRAIN.replace("from core.module", "from mxpatch_bind.compat")
    if first:
        expected = expected.replace("FIXED_PARAMS)", "FIXED_PARAMS, epoch_end_callback_first="
                                    "True)")
        line = module.count("\n", 0, module.index("callback(-1")) + 1
        assert any(f"proj/core/module.py:{line} has fit call each epoch_end_callback with "
                   "epoch -1 before training" in x and "[rewritten]" in x for x in lines), lines
    assert train == expected
    assert not (tmp_path / "proj" / "core" / "module.py").exists()


def test_a_rewritten_rule_is_reported_ok_by_the_next_run_and_nothing_changes(tmp_path, capsys):
    family_tree(tmp_path, module=copy_source(rule="name.startswith(prefix)"))
    run(capsys, tmp_path, "--write", "--delete-vendored", "--to-python3")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.py")}
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored", "--to-python3")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.py")} == before
    assert lines_for(lines, "proj/train_end2end.py")[0].endswith(
        "fixed_param_prefix freezes by fixed_param_rule='startswith'")
    assert status == 0


def test_a_rule_that_is_neither_is_a_check_and_nothing_is_written(tmp_path, capsys):
    family_tree(tmp_path, module=copy_source(rule="name.endswith(prefix)"))
    status, lines = run(capsys, tmp_path, "--write")
    [construction] = [line for line in lines_for(lines, "proj/train_end2end.py")
                      if "MutableModule(...)" in line]
    assert "[check]" in construction and "'name.endswith(prefix)'" in construction
    assert "fixed_param_rule" not in (tmp_path / "proj" / "train_end2end.py").read_text()


def test_the_rule_is_read_from_a_python_2_copy():
    tree = ast.parse(migrate_view(copy_source(rule="prefix in name", python2=True)))
    assert _migrate_fork.freezing_rule(tree)[::2] == ("substring", "prefix in name")
    assert migrate.vendored_kind(tree) == "module.py"


def migrate_view(source):
    from mxpatch_bind.migrate import port as _migrate_py2
    return _migrate_py2.analysis_text(source, "module.py")


# --------------------------------------------------------------------------- Python 2
def test_a_python_2_importer_is_rewritten_in_place_and_keeps_its_python_2(tmp_path, capsys):
    family_tree(tmp_path)
    status, lines = run(capsys, tmp_path, "--write")
    tester = (tmp_path / "proj" / "core" / "tester.py").read_text()
    assert tester == TESTER_PY2.replace("from module import", "from mxpatch_bind.compat import")
    assert "proj/core/tester.py:2: [rewritten] imports MutableModule" in "\n".join(lines)
    assert "proj/core/tester.py:8: [port] Python 2 code" in "\n".join(lines)


def test_to_python3_ports_and_rewrites_in_one_run_and_every_file_compiles(tmp_path, capsys):
    family_tree(tmp_path, module=copy_source(python2=True))
    run(capsys, tmp_path, "--write", "--delete-vendored", "--to-python3")
    tester = (tmp_path / "proj" / "core" / "tester.py").read_text()
    assert "import pickle as cPickle" in tester or "import pickle" in tester
    assert "from mxpatch_bind.compat import MutableModule" in tester
    assert "print('predictor ready')" in tester
    for path in tmp_path.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    assert not (tmp_path / "proj" / "core" / "module.py").exists()


def test_what_the_fixers_cannot_convert_is_a_check_at_its_line(tmp_path, capsys):
    (tmp_path / "old.py").write_text("print 'x'\nmap(show, images)\n")
    status, lines = run(capsys, tmp_path, "--to-python3")
    assert "old.py:2: [check] 2to3: You should use a for loop here" in lines
    assert status == 1


def test_a_python_3_file_with_python_2_names_is_offered_to_the_port(tmp_path, capsys):
    (tmp_path / "shim.py").write_text("try:\n    xrange\nexcept NameError:\n    xrange = range\n"
                                      "for i in xrange(3):\n    pass\n")
    assert migrate.scan(tmp_path) == []  # it binds xrange itself: no Python 2 code
    (tmp_path / "loop.py").write_text("for i in xrange(3):\n    pass\n")
    findings = migrate.scan(tmp_path)
    # beside a Python 2 file the shim ran on Python 2 too, and the 2to3 fixers change it
    assert [(f.path, f.line, f.action) for f in findings] == [("loop.py", 1, "port"),
                                                              ("shim.py", 1, "port")]
    assert "it ran on Python 2 (a Python 2 tree)" in findings[1].message


# --------------------------------------------------------------------------- deletions
def test_a_copy_an_unrewritable_import_still_uses_is_kept_and_the_importer_named(tmp_path,
                                                                                capsys):
    family_tree(tmp_path, tester="from module import MutableModule, _parse_data_desc\n")
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    core = tmp_path / "proj" / "core"
    assert (core / "module.py").exists() and (core / "DataParallelExecutorGroup.py").exists()
    assert lines_for(lines, "proj/core/module.py") == [
        "proj/core/module.py:1: [check] vendored copy of the fork's module.py: kept, still "
        "imported by proj/core/tester.py:1 (imports that --write cannot rewrite)"]
    assert "still imported by proj/core/module.py:5" in lines_for(
        lines, "proj/core/DataParallelExecutorGroup.py")[0]
    assert status == 1


def test_delete_without_write_deletes_nothing_that_is_still_imported(tmp_path, capsys):
    family_tree(tmp_path)
    status, lines = run(capsys, tmp_path, "--delete-vendored")
    assert (tmp_path / "proj" / "core" / "module.py").exists()
    [line] = lines_for(lines, "proj/core/module.py")
    assert "[check]" in line and "not deleted: still imported by proj/core/tester.py:2, " \
        "proj/train_end2end.py:1" in line


def test_an_unparseable_importer_keeps_the_copy_by_its_import_line(tmp_path, capsys):
    family_tree(tmp_path, tester="from module import MutableModule\ndef broken(:\n")
    run(capsys, tmp_path, "--write", "--delete-vendored")
    assert (tmp_path / "proj" / "core" / "module.py").exists()


def test_after_the_run_no_import_of_a_deleted_file_is_left(tmp_path, capsys):
    family_tree(tmp_path, module=copy_source(python2=True))
    run(capsys, tmp_path, "--write", "--delete-vendored", "--to-python3")
    remaining = {p.relative_to(tmp_path).with_suffix("").as_posix() for p in
                 tmp_path.rglob("*.py")}
    for path in tmp_path.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "module" in node.module:
                assert node.module == "mxpatch_bind.compat", (path, node.module)
    assert "proj/core/module" not in remaining


# --------------------------------------------------------------------------- modified copies
def test_a_copy_with_ogdb_before_eval_data_is_kept_and_its_call_is_a_check(tmp_path, capsys):
    fit = FIT_STOCK.replace("train_data, ", "train_data, ogdb, ") + ", iter_size=1"
    train = ("from core.module import MutableModule\n"
             "mod = MutableModule(sym, data_names, label_names)\n"
             "mod.fit(train_data, roidb, optimizer_params={'rescale_grad': 1.0}, iter_size=2)\n")
    family_tree(tmp_path, module=copy_source(fit=fit), train=train, tester=None)
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored")
    assert (tmp_path / "proj" / "core" / "module.py").exists()
    assert (tmp_path / "proj" / "train_end2end.py").read_text() == train
    [copy] = lines_for(lines, "proj/core/module.py")
    assert "[check]" in copy and "modified: kept" in copy
    assert "MutableModule.fit: parameter ogdb that no known revision has" in copy
    assert "iter_size" not in copy  # 3DCE's keyword: compat's fit takes it
    calls = lines_for(lines, "proj/train_end2end.py")
    assert not [line for line in calls if "iter_size" in line]
    assert any("positional argument 2 is ogdb in proj/core/module.py but eval_data" in line
               for line in calls)


def test_a_keyword_compat_does_not_take_is_a_check_on_the_drop_in_too(tmp_path, capsys):
    (tmp_path / "train.py").write_text(
        "from mxpatch_bind.compat import MutableModule\n"
        "mod = MutableModule(sym, ['data'], None)\n"
        "mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, grad_req='add')\n"
        "mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, prefix='x', state=None)\n"
        "mod.fit(train_data, optimizer_params={'rescale_grad': 1.0}, iter_size=2,\n"
        "        allow_extra=False)\n")
    findings = migrate.scan(tmp_path)
    assert [(f.line, f.action) for f in findings if f.action == "check"] == [(3, "check")]
    assert "take no grad_req" in str([f for f in findings if f.line == 3][0])


def shipped_revision_source(name):
    """A copy written from the shipped fingerprint of revision ``name`` (its signatures,
    empty bodies) plus what makes it recognisable as the fork's module.py."""
    methods = REVISIONS[name]["methods"]
    classes = {}
    for qualified, signature in methods.items():
        cls, method = qualified.split(".")
        body = "pass"
        if method == "__init__" and cls == "MutableModule":
            body = "self._curr_module = None; self._max_data_shapes = None"
        classes.setdefault(cls, []).append("    def %s%s:\n        %s\n" % (method, signature,
                                                                           body))
    return "".join("class %s(object):\n%s\n" % (cls, "".join(defs))
                   for cls, defs in classes.items())


@pytest.mark.parametrize("name", sorted(n for n in REVISIONS
                                        if REVISIONS[n]["kind"] == "module.py"))
def test_each_shipped_revision_is_recognised_with_its_verdict(name):
    tree = ast.parse(shipped_revision_source(name))
    revision = _migrate_fork.classify(tree, "module.py")
    assert (revision.name, revision.covered) == (name, REVISIONS[name]["covered"])


def test_the_one_known_revision_compat_does_not_cover_is_3dce_news():
    # road_obj_detect's allow_extra and Ke's iter_size are compat's keywords now; what
    # keeps road_obj_detect's last copy is its forward's contexts (fork.rebind_contexts).
    assert sorted(n.split("@")[0] for n, r in REVISIONS.items() if not r["covered"]) == [
        "jpulidojr/3DCE_new:rcnn/core/module.py"]


def test_the_stock_parameters_migrate_checks_against_are_mxnets_own():
    for method, expected in _migrate_checks.STOCK_PARAMETERS.items():
        parameters = list(inspect.signature(getattr(mx.mod.Module, method)).parameters)[1:]
        assert tuple(parameters) == expected, method


def test_compat_ignores_extra_keys_in_init_params_as_adascales_default_did():
    """AdaScale's MutableModule.init_params defaulted allow_extra=True (never passed on):
    extra keys were ignored; the drop-in's stock init_params ignores them too."""
    import mxpatch_bind
    from mxpatch_bind.compat import MutableModule

    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    mod = MutableModule(net, ["data"], None, context=[mx.cpu(0)])
    try:
        mod.bind([[("data", (1, 3))]], None, for_training=False)
        extra = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,)),
                 "not_in_the_net": mx.nd.ones((1,))}
        mod.init_params(arg_params=extra, aux_params={})
        assert mod.get_params()[0]["fc_weight"].asnumpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    finally:
        mxpatch_bind.uninstall()


# --------------------------------------------------------------------------- sample 8's survivors
@pytest.mark.parametrize("rule", ["prefix in skipped", "prefix in zname", "other in name"])
def test_a_rule_on_other_variables_than_the_loops_is_neither(tmp_path, capsys, rule):
    # Only `prefix in name` over the loop's own two variables is the substring rule.
    family_tree(tmp_path, module=copy_source(rule=rule))
    status, lines = run(capsys, tmp_path, "--write")
    [construction] = [line for line in lines_for(lines, "proj/train_end2end.py")
                      if "MutableModule(...)" in line]
    assert "[check]" in construction and repr(rule) in construction


def test_a_file_neither_python_reads_is_a_check_at_the_line_the_tokenizer_stopped(tmp_path,
                                                                                 capsys):
    # An unterminated triple-quoted string: ast and fissix's tokenizer both fail, at line 3.
    (tmp_path / "broken.py").write_text("x = 1\ny = 2\nz = '''never closed\nw = 3\n")
    status, lines = run(capsys, tmp_path)
    [finding] = lines_for(lines, "broken.py")
    assert finding.startswith("broken.py:3: [check] cannot parse as Python 3")
    assert "nor as Python 2 (not Python 2 either (EOF in multi-line string))" in finding


def test_the_rule_is_written_into_a_construction_on_the_files_last_line(tmp_path, capsys):
    # No newline after the call: its last argument ends on the last line of the file.
    train = ("from core.module import MutableModule\n"
             "mod = MutableModule(sym, data_names, label_names, "
             "fixed_param_prefix=config.network.FIXED_PARAMS)")
    family_tree(tmp_path, module=copy_source(rule="name.startswith(prefix)"), train=train)
    run(capsys, tmp_path, "--write")
    assert (tmp_path / "proj" / "train_end2end.py").read_text() == (
        "from mxpatch_bind.compat import MutableModule\n"
        "mod = MutableModule(sym, data_names, label_names, "
        "fixed_param_prefix=config.network.FIXED_PARAMS, fixed_param_rule='startswith')")


def test_python_2_next_calls_are_a_check_naming_their_lines(tmp_path, capsys):
    (tmp_path / "loop.py").write_text("print 'start'\nbatch = it.next()\nmore = it.next()\n")
    status, lines = run(capsys, tmp_path)
    assert ("loop.py:2: [check] .next() at lines 2, 3: kept as it is (an MXNet DataIter has "
            "next() on Python 3 too); a generator or file needs next(x)") in lines


def test_a_python_3_file_calling_a_python_2_method_names_it_for_the_port(tmp_path, capsys):
    (tmp_path / "cache.py").write_text("def hit(d, key):\n    return d.has_key(key)\n")
    status, lines = run(capsys, tmp_path)
    assert ("cache.py:2: [port] Python 2 code (.has_key() at line 2): --to-python3 ports it "
            "with the 2to3 fixers") in lines


def test_without_fissix_python_2_is_named_with_the_extra_and_the_port_refused(tmp_path, capsys,
                                                                            monkeypatch):
    from mxpatch_bind.migrate import port as _migrate_py2
    monkeypatch.setattr(_migrate_py2, "available", lambda: False)
    (tmp_path / "old.py").write_text("x = 1\nprint 'x'\n")
    status, lines = run(capsys, tmp_path)
    assert lines_for(lines, "old.py") == [
        'old.py:2: [check] cannot parse (Missing parentheses in call to \'print\'. Did you '
        'mean print(...)?; Python 2 code?): pip install ".[migrate]" in the mxpatch_bind '
        'checkout (or "mxpatch_bind[migrate]" once it is on an index) (fissix) to read '
        'Python 2']
    with pytest.raises(SystemExit) as done:
        migrate.main([str(tmp_path), "--to-python3"])
    assert done.value.code == 2
    assert "error: --to-python3 needs fissix: pip install \".[migrate]\"" in (
        capsys.readouterr().err)


def test_fit_without_rescale_grad_on_a_copy_that_wrapped_stock_is_a_check_naming_the_copy(
        tmp_path):
    # mx-rcnn's MutableModule wrapped stock Module: its steps were scaled by 1/(total
    # samples), the drop-in's by 1/(number of devices).
    name = "ijkguo/mx-rcnn:rcnn/core/module.py@410f089"
    assert REVISIONS[name]["rescale_grad_default"] == "samples"
    (tmp_path / "rcnn" / "core").mkdir(parents=True)
    (tmp_path / "rcnn" / "core" / "module.py").write_text(shipped_revision_source(name))
    (tmp_path / "rcnn" / "train.py").write_text(
        "from rcnn.core.module import MutableModule\n"
        "mod = MutableModule(sym, data_names, label_names)\n"
        "mod.fit(train_data, optimizer_params={'learning_rate': 0.1})\n")

    [finding] = [f for f in migrate.scan(tmp_path) if f.path == "rcnn/train.py" and f.line == 3]

    assert (finding.action, finding.message) == ("check", (
        "optimizer_params without rescale_grad on mod: rcnn/core/module.py wraps stock Module "
        "and scaled by 1/(total samples); the drop-in scales by 1/(number of devices): set "
        "rescale_grad explicitly"))
