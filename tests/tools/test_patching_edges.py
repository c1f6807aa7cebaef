"""Patching's rarely taken paths: an install made while ``import mxnet`` is still running, an
MXNet without its module files, a search for MXNet that fails, a patch refused after a reload,
and the reload finder's loader, each checked against what MXNet's classes hold afterwards.

What needs an interpreter where MXNet is not yet imported (or never will be) runs in a
subprocess; the rest runs here.
"""

import functools
import importlib.util
import logging
import os
import subprocess
import sys
import textwrap
import threading
import types

import mxnet as mx
import pytest
import wrapt
from patch_checks import assert_originals_restored
from paths import REPO

import mxpatch_bind
from mxpatch_bind import PatchError, patching
from mxpatch_bind.patching import _reloads

TARGETS = [(mx.mod.Module, "bind"), (mx.mod.Module, "reshape"), (mx.mod.Module, "forward"),
           (mx.mod.BucketingModule, "bind"), (mx.mod.SequentialModule, "bind"),
           (mx.mod.Module, "init_optimizer"), (mx.kvstore, "create")]

# Captured when the test module is imported, before any test has installed anything.
ORIGINALS = {(owner, name): vars(owner)[name] for owner, name in TARGETS}

# Records what the ``mxpatch_bind`` logger logs; shared by the subprocess scenarios.
CAPTURE_LOG = """
    import logging
    logged = []
    _handler = logging.Handler()
    _handler.emit = lambda record: logged.append((record.levelname, record.getMessage()))
    logging.getLogger('mxpatch_bind').addHandler(_handler)
"""


def _run(code, *paths, quiet=False):
    """Run ``code`` after :data:`CAPTURE_LOG`, with ``paths`` first on ``PYTHONPATH``; its
    stdout, split. ``quiet``: nothing may be printed on stderr either (an exception in a
    thread is printed there, not raised)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*map(str, paths), str(REPO),
                                                      env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(CAPTURE_LOG)
                             + textwrap.dedent(code)],
                            env=env, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not quiet or result.stderr == "", result.stderr
    return result.stdout.split()


# --------------------------------------------------------------------------- deferred install
def test_install_whose_search_for_mxnet_fails_warns_once_that_mxnet_is_missing():
    # A broken finder on sys.meta_path makes find_spec('mxnet') raise instead of answering.
    assert _run("""
        import sys, warnings
        import mxpatch_bind

        class BrokenFinder:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == 'mxnet':
                    raise ValueError('a finder that fails')
                return None

        sys.meta_path.insert(0, BrokenFinder)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            mxpatch_bind.install()
            mxpatch_bind.install()
        (warning,) = caught
        assert warning.category is RuntimeWarning, warning
        assert str(warning.message).startswith(
            "mxpatch_bind.install(): MXNet is not installed"), warning.message
        assert logged == [('WARNING', str(warning.message))], logged
        status = mxpatch_bind.status()
        assert (status.pending, status.installed, status.refcount) == (True, False, 2), status
        print('ok')
    """) == ["ok"]


def test_uninstall_with_nothing_installed_before_mxnet_is_imported_only_logs_a_warning():
    assert _run("""
        import sys
        import mxpatch_bind
        mxpatch_bind.uninstall()
        assert logged == [('WARNING', 'mxpatch_bind.uninstall() called but the patch is not '
                                      'installed')], logged
        assert 'mxnet' not in sys.modules
        status = mxpatch_bind.status()
        assert (status.pending, status.installed, status.refcount) == (False, False, 0), status
        print('ok')
    """) == ["ok"]


# Waits for the threads the scenario started, the post-import hook's background one included.
JOIN_OTHER_THREADS = """
        import threading
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(120)
"""


@pytest.mark.slow  # a child Python that imports MXNet
@pytest.mark.parametrize("imported_by_then", ["mxnet.base", "mxnet.model"])
def test_an_install_made_while_import_mxnet_is_running_patches_once_the_import_ends(
        imported_by_then):
    # install() called from inside ``import mxnet``, once ``imported_by_then`` has run: wrapt
    # runs the hook at once, before MXNet has all the files the patch targets (mxnet.model
    # has imported mxnet.kvstore, not yet mxnet.module), so the patch is applied when the
    # import finishes, exactly once per target.
    assert _run("""
        import sys, wrapt
        import mxpatch_bind
        during = []

        def install_now(_module):
            mxpatch_bind.install()
            during.append(mxpatch_bind.status())

        wrapt.register_post_import_hook(install_now, %r)
        import mxnet as mx
    """ % imported_by_then + JOIN_OTHER_THREADS + """
        (status,) = during
        assert (status.pending, status.installed, status.refcount) == (True, False, 1), status
        status = mxpatch_bind.status()
        assert (status.pending, status.installed, status.refcount) == (False, True, 1), status
        chain = list(wrapt.wrapper_chain(vars(mx.mod.Module)['bind']))
        original = chain[-1]
        assert len(chain) == 2 and original.__module__ == 'mxnet.module.module', chain
        net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
        mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (1, 4))], [('data', (3, 4))]], for_training=False)
        print([[d.shape for d in device] for device in mod.data_shapes])
        mxpatch_bind.uninstall()
        assert vars(mx.mod.Module)['bind'] is original
        assert logged == [], logged
    """) == ["[[(1,", "4)],", "[(3,", "4)]]"]


def test_an_mxnet_imported_without_its_module_files_leaves_the_install_pending_and_logs_why(
        tmp_path):
    # An ``mxnet`` package that has a version but none of the files the patch targets.
    (tmp_path / "mxnet").mkdir()
    (tmp_path / "mxnet" / "__init__.py").write_text("__version__ = '1.9.1'\n")
    assert _run("""
        import warnings
        import mxpatch_bind
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            mxpatch_bind.install()
            import mxnet
    """ + JOIN_OTHER_THREADS + """
        assert logged == [('ERROR', 'mxpatch_bind: MXNet imported without mxnet.module.module, '
                                    'mxnet.module.bucketing_module, '
                                    'mxnet.module.sequential_module, mxnet.kvstore; nothing '
                                    'patched')], logged
        status = mxpatch_bind.status()
        assert (status.pending, status.installed, status.refcount) == (True, False, 1), status
        mxpatch_bind.uninstall()
        print('ok')
    """, tmp_path, quiet=True) == ["ok"]


# --------------------------------------------------------------------------- reloads
@pytest.mark.slow  # a child Python that imports MXNet
def test_a_reload_whose_new_classes_cannot_be_patched_warns_and_logs_and_the_reload_succeeds():
    assert _run("""
        import importlib, sys, warnings
        import mxnet as mx
        import mxpatch_bind
        from mxpatch_bind.patching import _applying
        old_class = mx.mod.Module
        old_bind = vars(old_class)['bind']
        mxpatch_bind.install()
        _applying.check_mxnet = lambda mx: ['MXNet 0.0 is not supported']
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            importlib.reload(sys.modules['mxnet.module.module'])
            importlib.reload(sys.modules['mxnet.module'])
        message = ('mxpatch_bind cannot patch this MXNet: MXNet 0.0 is not supported. Nothing '
                   'was changed.')
        assert [(w.category, str(w.message)) for w in caught] == [(RuntimeWarning, message)], [
            str(w.message) for w in caught]
        assert logged == [('ERROR', message)], logged
        assert mx.mod.Module is not old_class
        status = mxpatch_bind.status()
        assert (status.installed, status.refcount) == (False, 1), status
        assert 'install() again patches it' in status.foreign_wrappers[0], status
        # The new class keeps the halfway guard: a per-device bind is refused by name.
        net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
        mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
        try:
            mod.bind([[('data', (1, 4))], [('data', (3, 4))]], for_training=False)
        except mxpatch_bind.UnsupportedMXNetError as error:
            assert 'could not patch the new classes' in str(error), error
        else:
            raise AssertionError('a per-device bind ran on a class the patch refused')
        new_bind = vars(mx.mod.Module)['bind'].__wrapped__
        mxpatch_bind.uninstall()
        assert vars(old_class)['bind'] is old_bind
        assert vars(mx.mod.Module)['bind'] is new_bind
        assert new_bind.__module__ == 'mxnet.module.module' and new_bind is not old_bind
        print('ok')
    """) == ["ok"]


def test_a_reload_reported_after_the_last_uninstall_changes_nothing():
    # A reload's loader holds the callback it was given; the reload may end after uninstall().
    with mxpatch_bind.patched():
        pass
    patching._after_reload()
    status = mxpatch_bind.status()
    assert (status.installed, status.refcount, status.foreign_wrappers) == (False, 0, ())
    assert_originals_restored(ORIGINALS)


def test_watching_twice_keeps_one_reload_finder_calling_the_newest_callback():
    calls = []
    _reloads.watch(lambda: calls.append("first"))
    try:
        _reloads.watch(lambda: calls.append("second"))
        finders = [finder for finder in sys.meta_path if finder is _reloads._FINDER]
        assert len(finders) == 1
        _reloads._FINDER.after()
        assert calls == ["second"]
    finally:
        _reloads.unwatch()
    assert _reloads._FINDER not in sys.meta_path


def test_the_reload_finder_leaves_a_module_file_no_finder_finds_to_importlib():
    finder = _reloads._Finder()
    finder.after = lambda: None
    target = types.ModuleType("mxnet.kvstore")
    assert finder.find_spec("mxnet.kvstore", ["/nonexistent/mxpatch_bind"], target) is None


@pytest.fixture
def small_module_file(tmp_path):
    path = tmp_path / "reloaded_here.py"
    path.write_text("VALUE = 1\n")
    return importlib.util.spec_from_file_location("reloaded_here", path)


def test_the_reload_loader_runs_the_module_then_the_callback_and_puts_back_the_real_loader(
        small_module_file):
    spec, calls = small_module_file, []
    real = spec.loader
    loader = _reloads._Loader(real, lambda: calls.append(vars(module).get("VALUE")))
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    assert module.__loader__ is loader and module.__spec__.loader is loader
    loader.exec_module(module)
    assert (module.VALUE, calls) == (1, [1])
    assert module.__loader__ is real and module.__spec__.loader is real


def test_the_reload_loader_leaves_a_module_that_names_another_loader_as_it_is(
        small_module_file):
    spec, calls = small_module_file, []
    module = importlib.util.module_from_spec(spec)
    real = spec.loader
    loader = _reloads._Loader(real, lambda: calls.append(True))
    loader.exec_module(module)
    assert (module.VALUE, calls) == (1, [True])
    assert module.__loader__ is real and module.__spec__.loader is real


def test_the_reload_loader_answers_other_questions_as_the_loader_it_wraps(small_module_file):
    real = small_module_file.loader
    loader = _reloads._Loader(real, lambda: None)
    assert loader.get_filename("reloaded_here") == real.get_filename("reloaded_here")
    assert loader.create_module(small_module_file) is real.create_module(small_module_file)
    assert loader.is_package("reloaded_here") is False


# --------------------------------------------------------------------------- logging and threads
def test_a_post_import_hook_on_a_thread_other_than_the_importer_applies_nothing_twice():
    # The hook's background half, run on its own thread after install() has patched.
    with mxpatch_bind.patched():
        worker = threading.Thread(target=patching._after_import_finishes)
        worker.start()
        worker.join()
        for (owner, name), original in ORIGINALS.items():
            assert vars(owner)[name].__wrapped__ is original
    assert_originals_restored(ORIGINALS)


def test_a_warning_is_also_logged_where_logging_has_a_handler(caplog):
    logger = logging.getLogger("mxpatch_bind.patching")
    with caplog.at_level(logging.WARNING, logger="mxpatch_bind.patching"):
        patching._applying.log_if_handled(logging.WARNING, "said once")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("WARNING", "said once")]
    assert logger.hasHandlers()


# --------------------------------------------------------------------------- describe_targets
def _bind_info():
    (info,) = [i for i in mxpatch_bind.describe_targets()
               if i.name == "mxnet.module.module.Module.bind"]
    return info


def test_describe_targets_names_no_wrapper_of_ours_on_a_method_replaced_behind_our_back():
    original = ORIGINALS[(mx.mod.Module, "bind")]

    def replacement(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    replacement.__qualname__ = "Module.bind"  # MXNet's name, but not defined by MXNet
    with mxpatch_bind.patched():
        ours = vars(mx.mod.Module)["bind"]
        assert _bind_info().ours is ours
        mx.mod.Module.bind = replacement
        try:
            info = _bind_info()
            assert (info.chain, info.ours, info.original) == ((replacement,), None, False)
        finally:
            mx.mod.Module.bind = ours
    assert_originals_restored(ORIGINALS)


# --------------------------------------------------------------------------- force, messages
def test_patched_with_force_patches_an_unsupported_mxnet_and_restores_it(monkeypatch):
    monkeypatch.setattr(mx, "__version__", "2.0.0")
    with pytest.warns(RuntimeWarning, match="unsupported MXNet \\(force=True\\)"):
        with mxpatch_bind.patched(force=True):
            assert mxpatch_bind.is_installed()
            for (owner, name), original in ORIGINALS.items():
                assert vars(owner)[name].__wrapped__ is original
    assert_originals_restored(ORIGINALS)


@pytest.mark.slow  # a child Python that imports MXNet
def test_a_forced_install_made_before_import_mxnet_patches_an_unsupported_mxnet_with_a_warning():
    assert _run("""
        import warnings
        import mxpatch_bind
        from mxpatch_bind.patching import _applying
        _applying.check_mxnet = lambda mx: ['MXNet 0.0 is not supported']
        mxpatch_bind.install(force=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            import mxnet as mx
        assert [str(w.message) for w in caught if w.category is RuntimeWarning] == [
            'mxpatch_bind patching an unsupported MXNet (force=True): MXNet 0.0 is not '
            'supported'], [str(w.message) for w in caught]
        status = mxpatch_bind.status()
        assert (status.installed, status.pending, status.refcount) == (True, False, 1), status
        original = vars(mx.mod.Module)['bind'].__wrapped__
        mxpatch_bind.uninstall()
        assert vars(mx.mod.Module)['bind'] is original
        print('ok')
    """) == ["ok"]


@pytest.mark.slow  # a child Python that imports MXNet
def test_install_while_another_thread_is_inside_import_mxnet_returns_with_the_patch_applied():
    # The importing thread is held inside ``import mxnet`` (once mxnet.base has run) until a
    # timer lets it go: install() waits for that import, then patches before it returns.
    assert _run("""
        import threading, wrapt
        import mxpatch_bind
        inside, release = threading.Event(), threading.Event()

        def hold(_module):
            inside.set()
            release.wait()

        wrapt.register_post_import_hook(hold, 'mxnet.base')
        importer = threading.Thread(target=__import__, args=('mxnet',))
        importer.start()
        inside.wait()
        threading.Timer(0.5, release.set).start()
        mxpatch_bind.install()
        status = mxpatch_bind.status()
        assert (status.installed, status.pending, status.refcount) == (True, False, 1), status
        importer.join()
        mxpatch_bind.uninstall()
        print('ok')
    """) == ["ok"]


def test_a_wrapper_forgotten_by_uninstall_is_also_logged_where_logging_has_a_handler(caplog):
    original = ORIGINALS[(mx.mod.Module, "bind")]

    def replacement(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    mxpatch_bind.install()
    mx.mod.Module.bind = replacement
    try:
        with caplog.at_level(logging.WARNING, logger="mxpatch_bind.patching"):
            with pytest.warns(RuntimeWarning, match="replaced behind") as caught:
                mxpatch_bind.uninstall()
        assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
            ("WARNING", str(caught[0].message))]
    finally:
        mx.mod.Module.bind = original
    assert_originals_restored(ORIGINALS)


ORIGINAL_BIND = ORIGINALS[(mx.mod.Module, "bind")]


def _plain_decorator_on_bind():
    """A decorator that is not wrapt's (functools.wraps), put on Module.bind as it is now."""
    inner = vars(mx.mod.Module)["bind"]

    @functools.wraps(inner)
    def decorated(self, *args, **kwargs):
        return inner(self, *args, **kwargs)

    mx.mod.Module.bind = decorated
    return decorated


def test_the_refusal_and_the_forced_uninstall_name_the_decorator_and_mxnets_function():
    mxpatch_bind.install()
    plain = _plain_decorator_on_bind()
    try:
        with pytest.raises(PatchError) as refused:
            mxpatch_bind.uninstall()
        assert f"Module.bind is wrapped by {plain!r}, which is not a wrapt" in str(refused.value)
        assert str(refused.value).endswith(f"calls straight through to {ORIGINAL_BIND!r}")
        with pytest.warns(RuntimeWarning) as caught:
            mxpatch_bind.uninstall(force=True)
        (message,) = [str(w.message) for w in caught]
        assert message.startswith("mxpatch_bind.uninstall(force=True): "
                                  f"mxnet.module.module.Module.bind stays wrapped by {plain!r}")
        assert f"(it calls straight through to {ORIGINAL_BIND!r}) and forgotten" in message
    finally:
        mx.mod.Module.bind = ORIGINAL_BIND
    assert_originals_restored(ORIGINALS)


@pytest.mark.parametrize("put_there", ["a replacement", "MXNet's original"])
def test_the_forgotten_wrapper_warning_names_what_is_there_and_what_ours_calls(put_there):
    def replacement(self, *args, **kwargs):
        return ORIGINAL_BIND(self, *args, **kwargs)

    there = replacement if put_there == "a replacement" else ORIGINAL_BIND
    mxpatch_bind.install()
    mx.mod.Module.bind = there
    try:
        with pytest.warns(RuntimeWarning) as caught:
            mxpatch_bind.uninstall()
    finally:
        mx.mod.Module.bind = ORIGINAL_BIND
    (message,) = [str(w.message) for w in caught]
    what = (f"replaced behind mxpatch_bind's back by {there!r}" if there is replacement
            else f"restored to MXNet's original {there!r} behind mxpatch_bind's back")
    assert message.startswith(f"mxpatch_bind.uninstall(): mxnet.module.module.Module.bind "
                              f"was {what}"), message
    assert message.endswith(f"calls straight through to {ORIGINAL_BIND!r})"), message
    assert_originals_restored(ORIGINALS)


def test_uninstall_with_nothing_installed_counts_the_switched_off_wrappers_it_takes_out(caplog):
    mxpatch_bind.install()
    saved = vars(mx.mod.Module)["bind"]
    mxpatch_bind.uninstall()
    mx.mod.Module.bind = saved  # a patcher puts back what it saw: ours, switched off
    with caplog.at_level(logging.DEBUG, logger="mxpatch_bind.patching"):
        mxpatch_bind.uninstall()
    assert [r.getMessage() for r in caplog.records] == [
        "mxpatch_bind.uninstall() called but the patch is not installed",
        "mxpatch_bind took out 1 switched-off wrappers of its own"]
    assert_originals_restored(ORIGINALS)


def test_a_foreign_wrapt_wrapper_with_its_own_enabled_flag_is_never_taken_for_ours():
    # wrapt's ``enabled=`` is how our wrappers are switched; another patcher may use it too.
    def theirs(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    mxpatch_bind.install()
    ours = vars(mx.mod.Module)["bind"]
    wrapper = wrapt.FunctionWrapper(ours, theirs, enabled=lambda: True)
    mx.mod.Module.bind = wrapper
    try:
        (entry,) = mxpatch_bind.status().foreign_wrappers
        assert entry.startswith("mxnet.module.module.Module.bind: FunctionWrapper at 0x"), entry
        assert "an mxpatch_bind" not in entry, entry
        mxpatch_bind.uninstall()
        assert list(wrapt.wrapper_chain(vars(mx.mod.Module)["bind"])) == [wrapper,
                                                                          ORIGINAL_BIND]
        mxpatch_bind.uninstall()  # nothing installed: the sweep leaves theirs alone
        assert vars(mx.mod.Module)["bind"] is wrapper and wrapper.__wrapped__ is ORIGINAL_BIND
    finally:
        mx.mod.Module.bind = ORIGINAL_BIND
    assert_originals_restored(ORIGINALS)


@pytest.mark.slow  # a child Python that imports MXNet
def test_an_install_made_before_mxnet_is_imported_again_patches_the_new_import():
    # A harness that purges MXNet's modules between runs: the post-import hook that patched
    # the first import is spent, so the next pending install() needs a hook of its own.
    assert _run("""
        import sys
        import mxpatch_bind
        mxpatch_bind.install()
        import mxnet
        assert mxpatch_bind.status().installed
        mxpatch_bind.uninstall()
        for name in [n for n in sys.modules if n == 'mxnet' or n.startswith('mxnet.')]:
            del sys.modules[name]
        mxpatch_bind.install()
        assert mxpatch_bind.status().pending
        import mxnet as mx
        status = mxpatch_bind.status()
        assert (status.installed, status.pending, status.refcount) == (True, False, 1), status
        net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
        mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (1, 4))], [('data', (3, 4))]], for_training=False)
        print([[d.shape for d in device] for device in mod.data_shapes])
        mxpatch_bind.uninstall()
        assert not hasattr(vars(mx.mod.Module)['bind'], '__wrapped__')
    """) == ["[[(1,", "4)],", "[(3,", "4)]]"]


# --------------------------------------------------------------------------- logged
def test_install_and_uninstall_log_what_they_did_at_debug_level(caplog):
    patched = ", ".join(mxpatch_bind.status().targets)
    with caplog.at_level(logging.DEBUG, logger="mxpatch_bind.patching"):
        mxpatch_bind.install()
        mxpatch_bind.install()
        mxpatch_bind.uninstall()
        mxpatch_bind.uninstall()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", f"mxpatch_bind patched {patched}"),
        ("DEBUG", "mxpatch_bind already installed; 2 install() calls outstanding"),
        ("DEBUG", "mxpatch_bind restored the original methods")]
    assert_originals_restored(ORIGINALS)


@pytest.mark.slow  # a child Python that imports MXNet
def test_a_reload_while_installed_logs_that_the_new_classes_were_patched():
    assert _run("""
        import importlib, logging, sys
        import mxnet as mx
        import mxpatch_bind
        logging.getLogger('mxpatch_bind').setLevel(logging.INFO)
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        importlib.reload(sys.modules['mxnet.module'])
        assert mxpatch_bind.is_installed()
        assert logged == [('INFO', "mxpatch_bind: MXNet's module files were reloaded; "
                                   "patched the new classes")], logged
        mxpatch_bind.uninstall()
        print('ok')
    """) == ["ok"]


@pytest.mark.slow  # a child Python that imports MXNet
def test_a_pending_install_refused_when_mxnet_is_imported_logs_what_it_warns():
    assert _run("""
        import warnings
        import mxpatch_bind
        from mxpatch_bind.patching import _applying
        _applying.check_mxnet = lambda mx: ['MXNet 0.0 is not supported']
        mxpatch_bind.install()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            import mxnet
        (warned,) = [str(w.message) for w in caught if w.category is RuntimeWarning]
        assert logged == [('ERROR', warned)], (logged, warned)
        assert mxpatch_bind.status().refcount == 0
        print('ok')
    """) == ["ok"]
