"""fork() while another thread holds the patch lock, or is halfway through install/uninstall.

Each scenario runs in its own Python process (a hang cannot wedge pytest, and the patch state
cannot leak): it sets the scene, forks, and the child checks that its patch state matches its
classes, then installs, binds a module per device and uninstalls within a time limit. The
child leaves with ``os._exit(code)``; the parent kills it if it runs past the limit.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from paths import REPO

# each scenario is a child Python that imports MXNet and forks: a process test (setup.cfg's
# slow marker)
pytestmark = pytest.mark.slow

REPO_ROOT = str(REPO)

CHILD_LIMIT_S = 120  # a limit on hangs, not a benchmark: the child needs about a second

# Shared by every scenario: the originals, the child's checks, and fork-and-wait.
PRELUDE = """
import builtins, os, sys, threading, time, traceback
import mxnet as mx
import wrapt
import mxpatch_bind
from mxpatch_bind.patching import _applying

TARGETS = [(mx.mod.Module, 'bind'), (mx.mod.Module, 'reshape'), (mx.mod.BucketingModule, 'bind')]
ORIGINALS = {(owner, name): vars(owner)[name] for owner, name in TARGETS}
REAL_WRAP = wrapt.wrap_object
NET = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')


def check_classes_match(refcount):
    status = mxpatch_bind.status()
    assert status.refcount == refcount, status
    assert status.installed == (refcount > 0) == mxpatch_bind.is_installed(), status
    assert status.foreign_wrappers == (), status
    for (owner, name), original in ORIGINALS.items():
        chain = list(wrapt.wrapper_chain(vars(owner)[name]))
        assert chain[-1] is original and len(chain) == 1 + (refcount > 0), (owner, name, chain)


def install_bind_uninstall(refcount):
    mxpatch_bind.install()
    mod = mx.mod.Module(NET, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([[('data', (1, 4))], [('data', (3, 4))]], for_training=False)
    shapes = [[d.shape for d in device] for device in mod.data_shapes]
    assert shapes == [[(1, 4)], [(3, 4)]], shapes
    for _ in range(refcount + 1):
        mxpatch_bind.uninstall()
    check_classes_match(0)


def child(refcount, work=None):
    wrapt.wrap_object = REAL_WRAP
    vars(_applying).pop('setattr', None)
    try:
        if work is not None:
            work()
        else:
            check_classes_match(refcount)
            install_bind_uninstall(refcount)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)
    print('child ok', flush=True)
    os._exit(0)


def fork_and_wait(refcount, work=None):
    pid = os.fork()
    if pid == 0:
        child(refcount, work)
    deadline = time.monotonic() + %(limit)d
    while time.monotonic() < deadline:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            print('child exit', os.waitstatus_to_exitcode(code), flush=True)
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print('child hung', flush=True)


def hold_the_lock(lock=None):
    taken, release = threading.Event(), threading.Event()

    def holder():
        with lock or _applying.state.lock:
            taken.set()
            release.wait()

    threading.Thread(target=holder, daemon=True).start()
    taken.wait()
    return release


def stop_inside(namespace, name, real, on_call):
    # Replace a function patching calls under its lock, once per target, with one that does
    # the real work, then stops there for good on its ``on_call``-th call.
    calls, stopped = [], threading.Event()

    def stopping(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == on_call:
            stopped.set()
            threading.Event().wait()
        return result

    setattr(namespace, name, stopping)
    return stopped
""" % {"limit": CHILD_LIMIT_S}


def _run(scenario):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO_ROOT, env.get("PYTHONPATH")]))
    # Python 3.12+ warns about fork() with threads running: that is the point here.
    result = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c",
         PRELUDE + textwrap.dedent(scenario)],
        env=env, capture_output=True, text=True, timeout=CHILD_LIMIT_S + 120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return result.stdout.split("\n")


@pytest.mark.parametrize("refcount", [0, 1], ids=["nothing installed", "installed"])
def test_a_child_forked_while_another_thread_holds_the_lock_installs_binds_and_uninstalls(
        refcount):
    lines = _run("""
        for _ in range(%d):
            mxpatch_bind.install()
        release = hold_the_lock()
        fork_and_wait(%d)
        release.set()
    """ % (refcount, refcount))
    assert "child exit 0" in lines, lines


def test_a_child_forked_halfway_through_an_install_starts_with_nothing_patched():
    # The other thread stops right after wrapping the second target and before recording
    # it: the child finds a wrapper of ours that its state never heard of.
    lines = _run("""
        stopped = stop_inside(wrapt, 'wrap_object', REAL_WRAP, 2)
        threading.Thread(target=mxpatch_bind.install, daemon=True).start()
        assert stopped.wait(60), 'the other thread never got there'
        from mxpatch_bind.patching._chains import is_ours
        assert is_ours(vars(mx.mod.Module)['reshape'])
        fork_and_wait(0)
    """)
    assert "child exit 0" in lines, lines


def test_a_child_forked_halfway_through_an_uninstall_keeps_the_whole_patch():
    # The count still says installed (it drops only after the work): the child gets every
    # target patched again, then uninstalls normally. uninstall() puts an outermost wrapper's
    # original back with the builtin setattr: a module global of that name shadows it.
    lines = _run("""
        mxpatch_bind.install()
        stopped = stop_inside(_applying, 'setattr', builtins.setattr, 2)
        threading.Thread(target=mxpatch_bind.uninstall, daemon=True).start()
        assert stopped.wait(60), 'the other thread never got there'
        assert vars(mx.mod.Module)['reshape'] is ORIGINALS[(mx.mod.Module, 'reshape')]
        fork_and_wait(1)
    """)
    assert "child exit 0" in lines, lines


def test_a_multiprocessing_fork_child_works_while_another_thread_holds_the_lock():
    lines = _run("""
        import multiprocessing

        def job():
            child(1)

        mxpatch_bind.install()
        release = hold_the_lock()
        process = multiprocessing.get_context('fork').Process(target=job)
        process.start()
        process.join(%d)
        if process.is_alive():
            process.kill()
            process.join()
            print('child hung', flush=True)
        print('child exit', process.exitcode, flush=True)
        release.set()
    """ % CHILD_LIMIT_S)
    assert "child exit 0" in lines, lines


def test_a_child_forked_from_a_settled_patch_keeps_the_parents_wrappers():
    # Nothing was half-done: the child has nothing to redo, so its classes hold the very
    # wrappers the parent installed (re-applying would give new ones and log a repair).
    lines = _run("""
        mxpatch_bind.install()
        installed = {key: vars(key[0])[key[1]] for key in ORIGINALS}
        pid = os.fork()
        if pid == 0:
            kept = all(vars(owner)[name] is installed[(owner, name)] for owner, name in ORIGINALS)
            os._exit(0 if kept and mxpatch_bind.is_installed() else 4)
        _, code = os.waitpid(pid, 0)
        print('child exit', os.waitstatus_to_exitcode(code), flush=True)
        mxpatch_bind.uninstall()
    """)
    assert "child exit 0" in lines, lines


@pytest.mark.parametrize("lock", ["settings", "parallel"])
def test_a_child_forked_while_another_thread_holds_a_settings_or_pool_lock_reshapes(lock):
    # The child reads the settings and takes the reshape pool: a lock its parent's thread
    # held at the fork would never be released there.
    lines = _run("""
        from mxpatch_bind import settings
        from mxpatch_bind.module import parallel
        release = hold_the_lock({'settings': settings, 'parallel': parallel}[%r]._LOCK)

        def reshape_on_threads():
            mxpatch_bind.configure(reshape_threads=2)
            mod = mx.mod.Module(NET, label_names=None, context=[mx.cpu(i) for i in range(4)])
            mxpatch_bind.bind(mod, [[('data', (1, 4))]] * 4, for_training=False)
            mxpatch_bind.reshape(mod, [[('data', (i + 2, 4))] for i in range(4)])
            shapes = [e.arg_dict['data'].shape for e in mod._exec_group.execs]
            assert shapes == [(i + 2, 4) for i in range(4)], shapes

        fork_and_wait(0, reshape_on_threads)
        release.set()
    """ % lock)
    assert "child exit 0" in lines, lines


def test_a_child_forked_halfway_through_an_uninstall_that_cannot_patch_again_counts_zero_and_logs():
    # As above, but MXNet now fails the check: the child cannot patch again, so it takes its
    # count to zero, leaves MXNet's own functions in the classes and logs why.
    lines = _run("""
        import logging
        logged = []
        handler = logging.Handler()
        handler.emit = lambda record: logged.append((record.levelname, record.getMessage()))
        logging.getLogger('mxpatch_bind').addHandler(handler)
        logging.getLogger('mxpatch_bind').setLevel(logging.INFO)
        mxpatch_bind.install()
        stopped = stop_inside(_applying, 'setattr', builtins.setattr, 2)
        threading.Thread(target=mxpatch_bind.uninstall, daemon=True).start()
        assert stopped.wait(60), 'the other thread never got there'
        _applying.check_mxnet = lambda mx: ['MXNet 0.0 is not supported']

        def refused_in_the_child():
            check_classes_match(0)
            assert logged == [('ERROR', 'mxpatch_bind: the patch could not be applied again '
                               'after fork(): mxpatch_bind cannot patch this MXNet: MXNet 0.0 '
                               'is not supported. Nothing was patched; install(force=True) '
                               'patches anyway.'),
                              ('INFO', "mxpatch_bind: forked during another thread's "
                               "install/uninstall; the child's patch now matches its count "
                               "(0)")], logged

        fork_and_wait(0, refused_in_the_child)
    """)
    assert "child exit 0" in lines, lines
