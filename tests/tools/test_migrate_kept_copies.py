"""A vendored copy that stays runs on MXNet 1.9.1 after ``migrate --to-python3``: it is ported
with the fixers of any file, and the fork's three places 1.9.1 refuses are fixed by content
(the shrinking ``reshape`` of ``_get_or_reshape``, the update calls without parameter names,
``init_params`` without ``allow_extra``). A copy the same run deletes is neither ported nor
reported as ported. Every copy here is written for these tests, from the facts of
docs/family.rst; the old and the new code are run side by side on the installed MXNet."""

import ast
import textwrap
import types

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd
from mxnet.module.base_module import BaseModule

from mxpatch_bind import migrate
from mxpatch_bind.migrate import fork_fixes

pytest.importorskip("fissix")
pytest.importorskip("libcst")

# The executor group's borrowing helper as the fork wrote it (Python 2: xrange in the class).
GROUP = textwrap.dedent('''\
    import logging
    import numpy as np
    import mxnet.ndarray as nd


    class DataParallelExecutorGroup(object):
        def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                     for_training, inputs_need_grad, shared_group=None, logger=logging,
                     fixed_param_names=None, grad_req='write', state_names=None):
            self.batch_size = len(data_shapes)
            self.shared_data_arrays = [{} for _ in xrange(len(contexts))]

        def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
            pass

        def reshape(self, data_shapes, label_shapes):
            pass

        def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
            def _get_or_reshape(name, shared_data_arrays, arg_shape, arg_type, context, logger):
                if name in shared_data_arrays:
                    arg_arr = shared_data_arrays[name]
                    if np.prod(arg_arr.shape) >= np.prod(arg_shape):
                        assert arg_arr.dtype == arg_type
                        arg_arr = arg_arr.reshape(arg_shape)
                    else:
                        arg_arr = nd.zeros(arg_shape, context, dtype=arg_type)
                        shared_data_arrays[name] = arg_arr
                else:
                    arg_arr = nd.zeros(arg_shape, context, dtype=arg_type)
                    shared_data_arrays[name] = arg_arr
                return arg_arr
            return _get_or_reshape
    ''')

# The fork's Module (update, init_params as 0.x-era copies wrote them) and its MutableModule.
MODULE = textwrap.dedent('''\
    import logging
    from mxnet import context as ctx
    from mxnet.initializer import Uniform
    from mxnet.module.base_module import BaseModule
    from mxnet.model import _update_params_on_kvstore, _update_params


    class Module(BaseModule):
        def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                        allow_missing=False, force_init=False):
            for name, arr in self._arg_params.items():
                if name in arg_params:
                    arg_params[name].copyto(arr)
            print 'parameters set'

        def update(self):
            if self._update_on_kvstore:
                _update_params_on_kvstore(self._exec_group.param_arrays,
                                          self._exec_group.grad_arrays,
                                          self._kvstore)
            else:
                _update_params(self._exec_group.param_arrays,
                               self._exec_group.grad_arrays,
                               updater=self._updater,
                               num_device=len(self._context),
                               kvstore=self._kvstore)


    class MutableModule(BaseModule):
        def __init__(self, symbol, data_names, label_names, logger=logging, context=ctx.cpu(),
                     work_load_list=None, max_data_shapes=None, max_label_shapes=None,
                     fixed_param_prefix=None):
            self._curr_module = None
            self._max_data_shapes = max_data_shapes

        def bind(self, data_shapes, label_shapes=None, for_training=True,
                 inputs_need_grad=False, force_rebind=False, shared_module=None,
                 grad_req='write'):
            pass

        def init_optimizer(self, kvstore='local', optimizer='sgd',
                           optimizer_params=(('learning_rate', 0.01),), force_init=False):
            pass

        def forward(self, data_batch, is_train=None):
            pass

        def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                        allow_missing=False, force_init=False):
            self._curr_module.init_params(initializer=initializer, arg_params=arg_params)

        def annealing(self, ogdb):
            pass
    ''')


def tree(root, module="module.py", group="DataParallelExecutorGroup.py"):
    core = root / "proj" / "core"
    core.mkdir(parents=True)
    (core / "__init__.py").write_text("")
    (core / module).write_text(MODULE)
    (core / group).write_text(GROUP)
    (root / "proj" / "train.py").write_text("from core.module import MutableModule\n")
    return core


def run(capsys, *argv):
    status = migrate.main([str(a) for a in argv])
    return status, capsys.readouterr().out.splitlines()


def function_from(text, name, namespace):
    """The function ``name`` defined anywhere in ``text``, compiled alone in ``namespace``."""
    [node] = [n for n in ast.walk(ast.parse(text))
              if isinstance(n, ast.FunctionDef) and n.name == name]
    exec(compile(ast.Module([node], []), "<copy>", "exec"), namespace)
    return namespace[name]


def module_class(text, name="Module"):
    """Class ``name`` of a ported copy's text, as the copy defines it."""
    namespace = {"__name__": "copy_under_test"}
    exec(compile(text, "<copy>", "exec"), namespace)
    return namespace[name]


def ported(tmp_path, capsys, *flags):
    core = tree(tmp_path)
    status, lines = run(capsys, tmp_path, "--to-python3", *flags)
    return core, lines


# --------------------------------------------------------------------------- the report
def test_a_copy_that_stays_is_ported_and_each_place_is_a_port_finding_with_its_reason(
        tmp_path, capsys):
    core = tree(tmp_path)
    status, lines = run(capsys, tmp_path)
    group = [line for line in lines if line.startswith("proj/core/DataParallelExecutorGroup")]
    module = [line for line in lines if line.startswith("proj/core/module.py")]
    assert any(":11: [port] Python 2 code (xrange" in line for line in group), group
    [reshape] = [line for line in group if "NDArray.reshape" in line]
    assert reshape.startswith("proj/core/DataParallelExecutorGroup.py:25: [port] the fork's code")
    assert "MXNet 1.9.1 refuses" in reshape and "that MXNet 0.x returned" in reshape
    [update] = [line for line in module if "_update_params_on_kvstore" in line]
    assert update.startswith("proj/core/module.py:18: [port]")
    assert "passes self._exec_group.param_names" in update
    assert any(line.startswith("proj/core/module.py:22: [port]") and "_update_params passes"
               in line for line in module), module
    assert [line.split(":")[1] for line in module if "allow_extra" in line] == ["9", "48"]
    assert (core / "module.py").read_text() == MODULE  # a report writes nothing


def test_the_ported_copy_keeps_python_2s_meaning_with_the_same_fixers_as_any_file(
        tmp_path, capsys):
    core, _ = ported(tmp_path, capsys)
    module = (core / "module.py").read_text()
    assert "print('parameters set')" in module
    assert "for name, arr in list(self._arg_params.items()):" in module
    group = (core / "DataParallelExecutorGroup.py").read_text()
    assert "for _ in range(len(contexts))" in group
    # the same text elsewhere (not a copy: no class of the fork) is ported the same way
    other = GROUP.replace("DataParallelExecutorGroup", "Other").replace(
        "self.batch_size = len(data_shapes)", "pass")
    (tmp_path / "same.py").write_text(other)
    run(capsys, tmp_path, "--to-python3")
    fixed = "arg_arr = arg_arr.reshape((-1,))[:int(np.prod(arg_shape))].reshape(arg_shape)"
    assert (tmp_path / "same.py").read_text() == group.replace(
        "DataParallelExecutorGroup", "Other").replace(
        "self.batch_size = len(data_shapes)", "pass").replace(
        fixed, "arg_arr = arg_arr.reshape(arg_shape)")


def test_a_second_run_finds_nothing_more_to_fix_and_changes_nothing(tmp_path, capsys):
    core, _ = ported(tmp_path, capsys)
    before = {p: p.read_bytes() for p in core.iterdir()}
    status, lines = run(capsys, tmp_path, "--to-python3")
    assert {p: p.read_bytes() for p in core.iterdir()} == before
    assert not [line for line in lines if "[port]" in line or "[ported]" in line], lines


def test_the_places_are_found_by_content_whatever_the_files_are_called(tmp_path, capsys):
    core = tree(tmp_path, module="mutable.py", group="executors.py")
    (tmp_path / "proj" / "train.py").write_text("from core.mutable import MutableModule\n")
    run(capsys, tmp_path, "--to-python3")
    assert "self._kvstore, self._exec_group.param_names)" in (core / "mutable.py").read_text()
    assert "arg_arr.reshape((-1,))[:int(np.prod(arg_shape))]" in \
        (core / "executors.py").read_text()


def test_code_that_is_not_a_copy_of_the_fork_keeps_its_calls(tmp_path, capsys):
    (tmp_path / "mine.py").write_text(
        "from mxnet.model import _update_params_on_kvstore\n"
        "def step(g, kv):\n    _update_params_on_kvstore(g.param_arrays, g.grad_arrays, kv)\n")
    run(capsys, tmp_path, "--to-python3")
    assert "kv)\n" in (tmp_path / "mine.py").read_text()


# --------------------------------------------------------------------------- deleted copies
def test_a_copy_the_run_deletes_is_neither_ported_nor_reported_as_ported(tmp_path, capsys):
    core = tree(tmp_path)  # the group: compat covers it, nothing imports it
    status, lines = run(capsys, tmp_path, "--write", "--delete-vendored", "--to-python3")
    assert not (core / "DataParallelExecutorGroup.py").exists()
    assert [line.split(" ", 2)[1] for line in lines
            if line.startswith("proj/core/DataParallelExecutorGroup.py")] == ["[deleted]"]
    # the modified copy stays, ported and fixed
    assert "self._kvstore, self._exec_group.param_names)" in (core / "module.py").read_text()


def test_a_copy_delete_vendored_cannot_delete_is_ported(tmp_path, capsys):
    core = tree(tmp_path)
    (core / "module.py").write_text(MODULE.replace(
        "    def annealing(self, ogdb):\n        pass\n", ""))  # compat covers it
    status, lines = run(capsys, tmp_path, "--delete-vendored", "--to-python3")  # no --write
    [kept] = [line for line in lines if line.startswith("proj/core/module.py:1:")]
    assert "[check]" in kept and "not deleted: still imported by proj/train.py:1" in kept
    module = (core / "module.py").read_text()
    assert "self._kvstore, self._exec_group.param_names)" in module
    assert "print('parameters set')" in module


def test_the_diff_of_a_run_that_deletes_a_copy_holds_its_deletion_alone(tmp_path, capsys):
    core = tree(tmp_path)
    status = migrate.main([str(tmp_path), "--write", "--delete-vendored", "--to-python3",
                           "--diff"])
    patch = capsys.readouterr().out
    headers = [line for line in patch.splitlines() if line.startswith("diff --git")]
    group = [h for h in headers if "DataParallelExecutorGroup" in h]
    assert len(group) == 1 and "deleted file mode" in patch.split(group[0])[1].splitlines()[1]
    assert (core / "DataParallelExecutorGroup.py").read_text() == GROUP  # --diff writes nothing
    assert status == 1


# --------------------------------------------------------------------------- the behaviour
def old_and_new(tmp_path, capsys, name, source="DataParallelExecutorGroup.py"):
    core, _ = ported(tmp_path, capsys)
    old_text = GROUP if source.startswith("Data") else MODULE
    namespace = {"np": np, "nd": nd}
    old = function_from(migrate_view(old_text), name, dict(namespace))
    new = function_from((core / source).read_text(), name, dict(namespace))
    return old, new


def migrate_view(source):
    from mxpatch_bind.migrate import port as _migrate_py2
    return _migrate_py2.analysis_text(source, "copy.py")


def test_the_reshape_of_an_equal_size_is_what_the_old_line_gave_on_mxnet_1_9_1(tmp_path,
                                                                                 capsys):
    old, new = old_and_new(tmp_path, capsys, "_get_or_reshape")
    for shape, asked in (((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (6, 4)), ((1, 100, 5), (1, 500))):
        buffers = [{"data": nd.array(np.arange(np.prod(shape)).reshape(shape))}
                   for _ in range(2)]
        got = [f("data", b, asked, np.float32, mx.cpu(), None) for f, b in zip((old, new),
                                                                                  buffers)]
        assert got[0].shape == got[1].shape == asked
        assert np.array_equal(got[0].asnumpy(), got[1].asnumpy())
        for array, buffer in zip(got, buffers):  # both are views: a write reaches the buffer
            array[:] = -1
            assert (buffer["data"].asnumpy() == -1).all()


def test_a_shrinking_reshape_is_the_view_of_the_first_elements_where_the_old_line_failed(
        tmp_path, capsys):
    old, new = old_and_new(tmp_path, capsys, "_get_or_reshape")
    buffer = {"gt_boxes": nd.array(np.arange(500).reshape(1, 100, 5))}
    try:
        before = old("gt_boxes", dict(buffer), (1, 2, 5), np.float32, mx.cpu(), None)
    except Exception as error:  # MXNet 1.9.1 refuses a reshape that changes the size
        assert "size 500" in str(error)
    else:  # an older MXNet (1.6.0) gave the view of the first elements: the port's line too
        assert np.array_equal(before.asnumpy(), np.arange(10).reshape(1, 2, 5))
    view = new("gt_boxes", buffer, (1, 2, 5), np.float32, mx.cpu(), None)
    assert view.shape == (1, 2, 5)
    assert np.array_equal(view.asnumpy(), np.arange(10).reshape(1, 2, 5))
    view[:] = -7  # the first ten elements of the buffer, and nothing else
    whole = buffer["gt_boxes"].asnumpy().reshape(-1)
    assert (whole[:10] == -7).all() and np.array_equal(whole[10:], np.arange(10, 500))
    assert buffer["gt_boxes"].shape == (1, 100, 5)  # the buffer stays the largest


def test_a_growing_shape_still_allocates_and_replaces_the_buffer_in_both(tmp_path, capsys):
    old, new = old_and_new(tmp_path, capsys, "_get_or_reshape")
    for f in (old, new):
        buffers = {"data": nd.ones((1, 2))}
        grown = f("data", buffers, (3, 4), np.float32, mx.cpu(), None)
        assert grown.shape == (3, 4) and buffers["data"] is grown
        assert (grown.asnumpy() == 0).all()


def kvstore_and_group(update_on_kvstore):
    contexts = [mx.cpu(0), mx.cpu(1)]
    names = ["w", "b"]
    rng = np.random.RandomState(3)
    values = {n: rng.normal(size=(3, 2) if n == "w" else (2,)) for n in names}
    group = types.SimpleNamespace(
        param_names=names,
        param_arrays=[[nd.array(values[n], ctx=c) for c in contexts] for n in names],
        grad_arrays=[[nd.array(rng.normal(size=values[n].shape), ctx=c) for c in contexts]
                     for n in names])
    kv = mx.kv.create("device")
    optimizer = mx.optimizer.SGD(learning_rate=0.1, rescale_grad=0.5)
    mx.model._initialize_kvstore(kvstore=kv, param_arrays=group.param_arrays,
                                 arg_params={n: nd.array(values[n]) for n in names},
                                 param_names=names, update_on_kvstore=update_on_kvstore)
    updater = None
    if update_on_kvstore:
        kv.set_optimizer(optimizer)
    else:
        updater = mx.optimizer.get_updater(optimizer)
    return types.SimpleNamespace(_exec_group=group, _kvstore=kv, _updater=updater,
                                 _context=contexts, _update_on_kvstore=update_on_kvstore)


@pytest.mark.parametrize("on_kvstore", [True, False])
def test_the_update_passes_the_names_and_updates_as_mxnet_does_with_them(tmp_path, capsys,
                                                                         on_kvstore):
    core, _ = ported(tmp_path, capsys)
    old = module_class(migrate_view(MODULE)).update
    new = module_class((core / "module.py").read_text()).update
    with pytest.raises(TypeError):
        old(kvstore_and_group(on_kvstore))
    fixed, stock = kvstore_and_group(on_kvstore), kvstore_and_group(on_kvstore)
    new(fixed)
    group = stock._exec_group
    if on_kvstore:
        mx.model._update_params_on_kvstore(group.param_arrays, group.grad_arrays,
                                           stock._kvstore, group.param_names)
    else:
        mx.model._update_params(group.param_arrays, group.grad_arrays, updater=stock._updater,
                                num_device=2, kvstore=stock._kvstore,
                                param_names=group.param_names)
    for a, b in zip(fixed._exec_group.param_arrays, group.param_arrays):
        for x, y in zip(a, b):
            assert np.array_equal(x.asnumpy(), y.asnumpy())
    assert not np.array_equal(fixed._exec_group.param_arrays[0][0].asnumpy(),
                              kvstore_and_group(on_kvstore)._exec_group.param_arrays[0][0]
                              .asnumpy())  # it did update


def test_init_params_takes_set_params_allow_extra_and_ignores_extra_names_as_before(
        tmp_path, capsys):
    core, _ = ported(tmp_path, capsys)
    old = module_class(migrate_view(MODULE).replace("print 'parameters set'", "pass"))
    new = module_class((core / "module.py").read_text())
    extra = {"w": nd.ones((2,)), "not_in_the_network": nd.ones((1,))}
    for cls in (old, new):
        module = cls.__new__(cls)
        module._arg_params = {"w": nd.zeros((2,))}
        if cls is old:
            with pytest.raises(TypeError, match="allow_extra"):
                BaseModule.set_params(module, extra, {})
            continue
        for allow_extra in (False, True):
            module._arg_params["w"][:] = 0
            BaseModule.set_params(module, extra, {}, allow_extra=allow_extra)
            assert (module._arg_params["w"].asnumpy() == 1).all()


def test_sites_and_fix_agree_and_leave_other_reshapes_alone():
    text = textwrap.dedent('''\
        import numpy
        def f(a, s, b):
            if numpy.prod(a.shape) >= numpy.prod(s):
                a = a.reshape(s)
                b = b.reshape(s)
            if numpy.prod(a.shape) > numpy.prod(s):
                a = a.reshape(s)
            return a, b
        ''')
    assert [(s.line, s.kind) for s in fork_fixes.sites(ast.parse(text))] == [(4, "reshape")]
    new, kinds = fork_fixes.fix(text)
    assert kinds == {"reshape"}
    assert new.splitlines()[3] == "        a = a.reshape((-1,))[:int(numpy.prod(s))].reshape(s)"
    assert new.splitlines()[4:] == text.splitlines()[4:]
