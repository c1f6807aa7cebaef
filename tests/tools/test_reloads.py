"""``importlib.reload`` of MXNet's module files while (or before) the patch is installed.

A reload makes new classes for the whole process, so each scenario runs in a subprocess. The
reference is stock MXNet: a per-device bind gives the device shapes asked for, a flat bind
binds as stock does, and uninstall() leaves the reloaded classes with MXNet's functions.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from paths import REPO

# each scenario is a child Python that imports MXNet: a process test (setup.cfg's slow marker)
pytestmark = pytest.mark.slow

PRELUDE = """
    import importlib, sys, warnings
    import mxnet as mx
    import mxpatch_bind

    def net():
        data = mx.sym.var('data')
        fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
        return mx.sym.SoftmaxOutput(fc, name='softmax')

    def per_device_bind():
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (1, 5))], [('data', (3, 5))]],
                 [[('softmax_label', (1,))], [('softmax_label', (3,))]])
        return [[d.shape for d in device] for device in mod.data_shapes]

    def reload_module_files():
        importlib.reload(sys.modules['mxnet.module.module'])
        importlib.reload(sys.modules['mxnet.module'])

    def functions(cls):
        return {name: vars(cls)[name] for name in ('bind', 'reshape', 'forward')}
"""


def _run(code):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PRELUDE) + textwrap.dedent(code)], env=env,
        capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()


def test_a_reload_while_installed_patches_the_new_classes_without_another_install():
    assert _run("""
        mxpatch_bind.install()
        old = mx.mod.Module
        reload_module_files()
        assert mx.mod.Module is not old
        assert mxpatch_bind.is_installed(), mxpatch_bind.status()
        assert mxpatch_bind.status().foreign_wrappers == ()
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_second_install_after_a_reload_patches_the_new_classes():
    assert _run("""
        mxpatch_bind.install()
        mxpatch_bind.patching._reloads.unwatch()  # a reload the finder does not see
        reload_module_files()
        assert not mxpatch_bind.is_installed()
        assert 'was reloaded' in mxpatch_bind.status().foreign_wrappers[0]
        mxpatch_bind.install()
        assert mxpatch_bind.is_installed() and mxpatch_bind.status().refcount == 2
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_uninstall_after_a_reload_leaves_both_the_old_and_the_new_classes_as_mxnet_made_them():
    assert _run("""
        old_class = mx.mod.Module
        old = functions(old_class)
        mxpatch_bind.install()
        reload_module_files()
        new = functions(mx.mod.Module)
        mxpatch_bind.uninstall()
        assert all(functions(old_class)[name] is old[name] for name in old)
        assert all(new[name].__wrapped__ is vars(mx.mod.Module)[name] for name in new)
        assert mxpatch_bind.status().foreign_wrappers == ()
        print('ok')
    """) == ["ok"]


def test_uninstalling_to_zero_and_installing_again_after_a_reload_binds_per_device():
    assert _run("""
        mxpatch_bind.install()
        mxpatch_bind.patching._reloads.unwatch()
        reload_module_files()
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            mxpatch_bind.uninstall()
        mxpatch_bind.install()
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_reload_before_the_first_install_binds_per_device():
    assert _run("""
        mxpatch_bind.bind  # the module core is built on the classes from before the reload
        reload_module_files()
        with mxpatch_bind.patched():
            print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_reload_while_installed_keeps_stock_binds_working():
    assert _run("""
        mxpatch_bind.install()
        reload_module_files()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([('data', (4, 5))], [('softmax_label', (4,))])
        print([d.shape for d in mod.data_shapes])
    """) == ["[(4,", "5)]"]


def test_install_names_a_module_file_reloaded_without_its_package():
    assert _run("""
        mxpatch_bind.bind
        importlib.reload(sys.modules['mxnet.module.module'])
        before = functions(sys.modules['mxnet.module.module'].Module)
        try:
            mxpatch_bind.install()
        except mxpatch_bind.UnsupportedMXNetError as error:
            message = str(error)
        assert 'mxnet.module.module was reloaded (importlib.reload)' in message, message
        assert 'reload mxnet.module after it' in message, message
        assert functions(sys.modules['mxnet.module.module'].Module) == before
        assert mxpatch_bind.status().refcount == 0
        print('refused')
    """) == ["refused"]


def test_a_reload_of_only_the_module_file_while_installed_waits_for_the_package():
    # Halfway MXNet itself mixes old and new classes; the reload must not fail because of us.
    assert _run("""
        mxpatch_bind.install()
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            importlib.reload(sys.modules['mxnet.module.module'])
            importlib.reload(sys.modules['mxnet.module'])
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_reload_of_the_kvstore_while_installed_patches_its_new_create():
    assert _run("""
        home = mx.kvstore.create.__module__  # mxnet.kvstore.base; mxnet.kvstore before 1.7
        mxpatch_bind.install()
        if home != 'mxnet.kvstore':
            importlib.reload(sys.modules[home])
        importlib.reload(sys.modules['mxnet.kvstore'])
        assert mxpatch_bind.is_installed(), mxpatch_bind.status()
        assert mx.kv.create('local').type == 'local'
        mxpatch_bind.uninstall()
        assert mx.kvstore.create is sys.modules[home].create
        print('ok')
    """) == ["ok"]


def test_bucketing_and_sequential_modules_bind_per_device_after_their_files_are_reloaded():
    assert _run("""
        mxpatch_bind.install()
        for name in ('mxnet.module.module', 'mxnet.module.bucketing_module',
                     'mxnet.module.sequential_module', 'mxnet.module'):
            importlib.reload(sys.modules[name])
        assert mxpatch_bind.is_installed(), mxpatch_bind.status()
        contexts = [mx.cpu(0), mx.cpu(1)]
        data = [[('data', (1, 5))], [('data', (3, 5))]]
        labels = [[('softmax_label', (1,))], [('softmax_label', (3,))]]
        buckets = mx.mod.BucketingModule(lambda key: (net(), ('data',), ('softmax_label',)),
                                         default_bucket_key=5, context=contexts)
        buckets.bind(data, labels)
        chain = mx.mod.SequentialModule()
        chain.add(mx.mod.Module(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=5,
                                                      name='a'),
                                label_names=None, context=contexts))
        chain.add(mx.mod.Module(net(), context=contexts), take_labels=True, auto_wiring=True)
        chain.bind(data, labels)
        for mod in (buckets, chain):
            print([[d.shape for d in device] for device in mod.data_shapes])
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"] * 2



def test_a_stock_bound_module_fed_a_per_device_batch_after_a_reload_goes_per_device():
    # The forward wrapper tells a per-device batch on a plain Module by the classes it was
    # built with: rebuilt on the reloaded ones, it still does.
    assert _run("""
        mxpatch_bind.install()
        reload_module_files()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([('data', (4, 5))], [('softmax_label', (4,))], for_training=False)
        mod.init_params()
        data = [mx.nd.ones((1, 5)), mx.nd.ones((3, 5))]
        mod.forward(mx.io.DataBatch([[d] for d in data], None), is_train=False)
        print([o.shape for o in mod.get_outputs(merge_multi_context=False)[0]])
    """) == ["[(1,", "3),", "(3,", "3)]"]


# --------------------------------------------------------------------------- halfway
def test_a_per_device_bind_on_the_new_class_of_a_half_reload_is_refused_as_install_refuses():
    # MXNet's own error would be "DataDesc.__new__() missing 1 required positional argument".
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        new = sys.modules['mxnet.module.module'].Module
        for call in ('bind', 'forward'):
            mod = new(net(), context=[mx.cpu(0), mx.cpu(1)])
            try:
                if call == 'bind':
                    mod.bind([[('data', (1, 5))], [('data', (3, 5))]])
                else:
                    mod.bind([('data', (4, 5))], None, for_training=False)
                    mod.init_params()
                    mod.forward(mx.io.DataBatch([[mx.nd.ones((1, 5))], [mx.nd.ones((3, 5))]]))
            except mxpatch_bind.UnsupportedMXNetError as error:
                message = str(error)
            assert message.startswith('mxpatch_bind cannot run a per-device %s()' % call), message
            assert 'reload mxnet.module after it' in message, message
        stock = new(net(), context=[mx.cpu(0), mx.cpu(1)])
        stock.bind([('data', (4, 5))], [('softmax_label', (4,))])  # stock calls run MXNet's
        assert not mxpatch_bind.is_installed()
        assert 'refuses per-device calls' in mxpatch_bind.status().foreign_wrappers[0]
        importlib.reload(sys.modules['mxnet.module'])
        assert mxpatch_bind.is_installed() and mxpatch_bind.status().foreign_wrappers == ()
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_half_reload_seen_by_a_later_install_is_refused_with_nothing_changed():
    assert _run("""
        import wrapt
        from mxpatch_bind.patching import TARGETS as targets
        def chains():
            owners = [sys.modules[t.module] if t.owner is None
                      else getattr(sys.modules[t.module], t.owner) for t in targets]
            return [list(wrapt.wrapper_chain(vars(o)[t.attribute]))
                    for o, t in zip(owners, targets)] + [
                functions(mx.mod.Module), mxpatch_bind.status()]
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        before = chains()
        try:
            mxpatch_bind.install()
        except mxpatch_bind.UnsupportedMXNetError as error:
            assert 'reload mxnet.module after it' in str(error), error
            assert str(error).endswith('Nothing was changed.'), error
        after = chains()
        assert all(len(a) == len(b) and all(x is y for x, y in zip(a, b))
                   for a, b in zip(before[:-2], after[:-2]))
        assert before[-2] == after[-2] and before[-1] == after[-1]
        assert mxpatch_bind.status().refcount == 1
        print('refused')
    """) == ["refused"]


def test_a_wrapper_of_ours_held_across_a_reload_is_switched_off_and_runs_stock():
    assert _run("""
        mxpatch_bind.install()
        held = vars(mx.mod.Module)['bind']  # ours, as someone saved it before the reload
        reload_module_files()
        assert vars(mx.mod.Module)['bind'] is not held and mxpatch_bind.is_installed()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        try:
            held(mod, [[('data', (1, 5))], [('data', (3, 5))]])
        except TypeError as error:  # stock MXNet's, from DataDesc(*x)
            print(type(error).__name__)
        held(mod, [('data', (4, 5))], [('softmax_label', (4,))])
        print(type(mod).__name__, [d.shape for d in mod.data_shapes])
    """) == ["TypeError", "Module", "[(4,", "5)]"]


def test_a_reload_of_base_module_with_its_package_keeps_the_core_on_the_classes_mxnet_uses():
    # mxnet.module.Module still derives from the BaseModule of before the reload: the core
    # must go on recognising the modules it makes (a held module is restored on a failure).
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.base_module'])
        importlib.reload(sys.modules['mxnet.module'])
        from mxpatch_bind.module import transactions
        outer = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        outer.helper = inner = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        try:
            with transactions.all_or_nothing(outer):
                inner.binded = True
                raise RuntimeError('MXNet failed')
        except RuntimeError:
            pass
        assert mxpatch_bind.is_installed() and not inner.binded
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_a_reload_of_base_module_module_and_package_rebuilds_the_core_on_the_new_classes():
    assert _run("""
        mxpatch_bind.install()
        for name in ('mxnet.module.base_module', 'mxnet.module.module', 'mxnet.module'):
            importlib.reload(sys.modules[name])
        from mxpatch_bind.module import transactions
        assert transactions.BaseModule is sys.modules['mxnet.module.base_module'].BaseModule
        assert issubclass(mx.mod.Module, transactions.BaseModule)
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_the_free_bind_names_a_reload_the_core_was_not_rebuilt_for():
    assert _run("""
        mxpatch_bind.bind  # the core, built on the classes of now
        reload_module_files()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        try:
            mxpatch_bind.bind(mod, [[('data', (1, 5))], [('data', (3, 5))]])
        except mxpatch_bind.UnsupportedMXNetError as error:
            assert 'then call mxpatch_bind.install()' in str(error), error
            print('named')
        assert not mod.binded
    """) == ["named"]


def test_the_guard_of_a_half_reload_refuses_every_per_device_form_and_passes_stock_ones():
    # A list of batches of several shapes, and a per-device spec written flat, are per-device
    # calls too; stock's pre-sliced list of one shape is MXNet's own.
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        new = sys.modules['mxnet.module.module'].Module
        mod = new(net(), context=[mx.cpu(0), mx.cpu(1)])
        refused = []
        for call in (lambda: mod.bind([('data', (1, 5)), ('data', (3, 5))]),
                     lambda: mod.forward([mx.io.DataBatch([mx.nd.ones((1, 5))]),
                                          mx.io.DataBatch([mx.nd.ones((3, 5))])])):
            try:
                call()
            except mxpatch_bind.UnsupportedMXNetError as error:
                refused.append('reload mxnet.module after it' in str(error))
        mod.bind([('data', (4, 5))], [('softmax_label', (4,))])
        mod.init_params()
        mod.forward([mx.io.DataBatch([mx.nd.ones((2, 5))], [mx.nd.zeros((2,))])] * 2)
        print(refused, [o.shape for o in mod.get_outputs()])
    """) == ["[True,", "True]", "[(4,", "3)]"]


def test_the_guard_of_a_half_reload_refuses_a_per_device_reshape_leaving_the_module_as_it_was():
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        new = sys.modules['mxnet.module.module'].Module
        mod = new(net(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([('data', (4, 5))], [('softmax_label', (4,))])
        try:
            mod.reshape([[('data', (1, 5))], [('data', (3, 5))]])
        except mxpatch_bind.UnsupportedMXNetError as error:
            print('reload mxnet.module after it' in str(error), [d.shape for d in mod.data_shapes])
    """) == ["True", "[(4,", "5)]"]


def test_a_reload_while_installed_keeps_a_per_device_forward_of_other_shapes_working():
    # The core is rebuilt on the new classes, the forward path included.
    assert _run("""
        mxpatch_bind.install()
        reload_module_files()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (1, 5))], [('data', (3, 5))]],
                 [[('softmax_label', (1,))], [('softmax_label', (3,))]])
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[[mx.nd.ones((2, 5))], [mx.nd.ones((1, 5))]],
                                    label=[[mx.nd.zeros((2,))], [mx.nd.zeros((1,))]]),
                    is_train=False)
        print([o.shape for o in mod.get_outputs(merge_multi_context=False)[0]])
    """) == ["[(2,", "3),", "(1,", "3)]"]


def test_the_guard_names_every_module_file_reloaded_without_its_package():
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        importlib.reload(sys.modules['mxnet.module.bucketing_module'])
        new = sys.modules['mxnet.module.module'].Module
        try:
            new(net(), context=[mx.cpu(0), mx.cpu(1)]).bind([[('data', (1, 5))],
                                                            [('data', (3, 5))]])
        except mxpatch_bind.UnsupportedMXNetError as error:
            message = str(error)
        print('mxnet.module.module was reloaded' in message,
              'mxnet.module.bucketing_module was reloaded' in message)
    """) == ["True", "True"]


def test_a_reload_under_a_forced_install_patches_the_new_classes_as_forced():
    # install(force=True) on an MXNet version outside the supported range: a reload while
    # installed patches the new classes with the same force, not refusing them.
    assert _run("""
        import warnings
        mx.__version__ = '1.2.0'
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            mxpatch_bind.install(force=True)
            reload_module_files()
        print(mxpatch_bind.is_installed(), per_device_bind())
    """) == ["True", "[[(1,", "5)],", "[(3,", "5)]]"]


def test_the_free_functions_used_before_a_reload_run_the_rebuilt_core_after_it():
    # The package caches what its lazy names gave; a rebuild drops both bind and reshape.
    assert _run("""
        mxpatch_bind.install()
        before = (mxpatch_bind.bind, mxpatch_bind.reshape)
        reload_module_files()
        mod = mx.mod.Module(net(), context=[mx.cpu(0), mx.cpu(1)])
        mxpatch_bind.bind(mod, [[('data', (1, 5))], [('data', (3, 5))]])
        mxpatch_bind.reshape(mod, [[('data', (2, 5))], [('data', (2, 5))]])
        print(mxpatch_bind.bind is not before[0], mxpatch_bind.reshape is not before[1],
              [[d.shape for d in device] for device in mod.data_shapes])
    """) == ["True", "True", "[[(2,", "5)],", "[(2,", "5)]]"]


def test_a_finder_put_back_after_uninstall_leaves_a_reload_alone():
    # A saved copy of sys.meta_path put back (as test tools and plugin loaders do) brings our
    # finder back without its callback: a reload then runs as MXNet's alone.
    assert _run("""
        saved = list(sys.meta_path)
        mxpatch_bind.install()
        finder = [f for f in sys.meta_path if f not in saved][0]
        mxpatch_bind.uninstall()
        sys.meta_path.insert(0, finder)
        reload_module_files()
        print(mxpatch_bind.is_installed(), mx.mod.Module.__module__)
    """) == ["False", "mxnet.module.module"]


def test_a_half_reload_guards_each_method_of_the_new_class_once_and_status_says_why():
    # Another module file reloaded while half done runs the finder again: still one guard.
    assert _run("""
        import wrapt
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        importlib.reload(sys.modules['mxnet.module.bucketing_module'])
        new = sys.modules['mxnet.module.module'].Module
        print([len(list(wrapt.wrapper_chain(vars(new)[name]))) for name in ('bind', 'forward')])
        notes = mxpatch_bind.status().foreign_wrappers
        assert notes and all('refuses per-device calls' in note for note in notes), notes
        assert not any('switched off' in note for note in notes), notes
    """) == ["[2,", "2]"]


def test_an_uninstall_while_half_reloaded_leaves_the_new_class_as_mxnet_made_it():
    assert _run("""
        import wrapt
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        new = sys.modules['mxnet.module.module'].Module
        mxpatch_bind.uninstall()
        print([len(list(wrapt.wrapper_chain(vars(new)[name])))
               for name in ('bind', 'reshape', 'forward')], mxpatch_bind.status().foreign_wrappers)
    """) == ["[1,", "1,", "1]", "()"]


def test_status_after_a_whole_reload_the_finder_did_not_see_says_to_install_again():
    assert _run("""
        mxpatch_bind.install()
        mxpatch_bind.patching._reloads.unwatch()
        reload_module_files()
        notes = mxpatch_bind.status().foreign_wrappers
        assert notes and all('install() again patches it' in note for note in notes), notes
        print('ok')
    """) == ["ok"]


def test_a_guard_a_decorator_still_covers_after_the_package_reload_is_reported_switched_off():
    # A user's decorator put on the new class while the reload was half done keeps our guard
    # inside it; once the package is reloaded the guard is switched off, and status says so.
    assert _run("""
        import functools
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        new = sys.modules['mxnet.module.module'].Module
        guard = vars(new)['bind']
        @functools.wraps(guard)
        def logged(*args, **kwargs):
            return guard(*args, **kwargs)
        new.bind = logged
        importlib.reload(sys.modules['mxnet.module'])
        notes = [note for note in mxpatch_bind.status().foreign_wrappers
                 if 'switched off' in note]
        assert len(notes) == 1 and 'halfway_wrapper' in notes[0], notes
        print(per_device_bind())
    """) == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_an_install_made_before_import_mxnet_follows_a_later_reload():
    code = textwrap.dedent("""
        import importlib, sys
        import mxpatch_bind
        mxpatch_bind.install()  # pending: MXNet is not imported yet
        import mxnet as mx
        before = sys.modules['mxnet.module.module'].Module
        importlib.reload(sys.modules['mxnet.module.module'])
        importlib.reload(sys.modules['mxnet.module'])
        assert mx.mod.Module is not before and mxpatch_bind.is_installed(), mxpatch_bind.status()
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3),
                                   name='softmax')
        mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (1, 5))], [('data', (3, 5))]])
        print([[d.shape for d in device] for device in mod.data_shapes])
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[[(1,", "5)],", "[(3,", "5)]]"]


def test_the_last_uninstall_leaves_no_import_hook_of_ours_behind():
    assert _run("""
        before = list(sys.meta_path)
        mxpatch_bind.install()
        mxpatch_bind.install()
        mxpatch_bind.uninstall()
        assert len(sys.meta_path) == len(before) + 1  # the finder that sees reloads
        mxpatch_bind.uninstall()
        print(sys.meta_path == before)
    """) == ["True"]


def test_a_reload_of_the_sequential_module_alone_rebuilds_the_core_on_its_new_class():
    # Not the first class the core checks (Module, unchanged here): each one is looked at.
    assert _run("""
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.sequential_module'])
        importlib.reload(sys.modules['mxnet.module'])
        from mxpatch_bind.module import sequential
        print(sequential.SequentialModule is mx.mod.SequentialModule)
        print(per_device_bind())
    """) == ["True", "[[(1,", "5)],", "[(3,", "5)]]"]
