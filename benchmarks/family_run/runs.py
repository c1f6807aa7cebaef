"""Processes: the raw trees copied and migrated, and one script of a tree run under the shim.

The family's scripts build ``ctx = [mx.gpu(int(i)) for i in config.gpus.split(',')]``; the
shim (a ``sitecustomize.py`` first on ``PYTHONPATH`` for the family's processes only) maps
``mx.gpu`` to ``mx.cpu``, seeds ``mx.random``, ``numpy.random`` and ``random`` (0), and
appends each batch's metrics (``repr`` of every float) to ``$PROOF_TRACE`` by wrapping
``mxnet.model.BatchEndParam``, which both the fork's ``MutableModule.fit`` and stock
``BaseModule.fit`` build once per batch. ``MXNET_ENGINE_TYPE=NaiveEngine`` runs the Python
custom operators in the calling thread in device order; ``OMP_NUM_THREADS=1``.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from .pipelines import REPOS, REVISIONS

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

SHIM = r'''
"""Benchmark shim (benchmarks/migrate_family_run.py): mx.gpu -> mx.cpu, seeds, batch trace."""
import os
if os.environ.get('PROOF_SHIM') == '1':
    import json, random
    import numpy as np
    import mxnet as mx
    import mxnet.model
    import mxnet.module.base_module
    mx.gpu = mx.cpu  # the family's scripts build their contexts with mx.gpu(i)
    mx.context.gpu = mx.cpu
    seed = int(os.environ.get('PROOF_SEED', '0'))
    mx.random.seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    _trace = os.environ.get('PROOF_TRACE')
    _Original = mxnet.model.BatchEndParam

    def BatchEndParam(epoch, nbatch, eval_metric, locals=None):
        if _trace and eval_metric is not None:
            names_values = [[n, repr(float(v))] for n, v in eval_metric.get_name_value()]
            with open(_trace, 'a') as f:
                f.write(json.dumps([epoch, nbatch, names_values]) + '\n')
        return _Original(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals)

    mxnet.model.BatchEndParam = BatchEndParam
    mxnet.module.base_module.BatchEndParam = BatchEndParam

    # A repository whose config is a Python module (mx-rcnn's rcnn/config.py) gets the
    # shrunk values set on that module's objects right after it is imported:
    # $PROOF_OVERRIDES = {"module": {"object.key.key": value}}
    _overrides = json.loads(os.environ.get('PROOF_OVERRIDES', '{}'))
    if _overrides:
        import importlib.abc
        import importlib.machinery
        import sys

        def _apply(module):
            for dotted, value in _overrides[module.__name__].items():
                *path, key = dotted.split('.')
                target = module
                for part in path:
                    target = target[part] if isinstance(target, dict) else getattr(target, part)
                if isinstance(target, dict):
                    target[key] = value
                else:
                    setattr(target, key, value)

        class _Loader(importlib.abc.Loader):
            def __init__(self, loader):
                self.loader = loader

            def create_module(self, spec):
                return self.loader.create_module(spec)

            def exec_module(self, module):
                self.loader.exec_module(module)
                _apply(module)

        class _Finder(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name not in _overrides:
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, path)
                if spec is not None:
                    spec.loader = _Loader(spec.loader)
                return spec

        sys.meta_path.insert(0, _Finder())
'''


# A crash or a hang in interpreter finalization, after the script's last line: faulthandler's
# dump (of the abort, the segmentation fault, or our SIGABRT after the timeout) shows the main
# thread with no Python frame left, and no thread in a module's code, only daemon threads
# (the family's prefetch thread) in theirs. MXNet's C++ at exit ('terminate called without an
# active exception': a joinable std::thread destroyed), glibc's 'FATAL: exception not
# rethrown' (CPython ends a daemon thread that wakes during finalization with pthread_exit,
# here inside MXNet), h5py under hickle in FCIS's prefetch thread; in either tree.
FATAL = re.compile(r'Fatal Python error: (Aborted|Segmentation fault)\n'
                   r'(.*?)(\nExtension modules|$)', re.S)
SIGNALS = {-signal.SIGABRT: 'aborted at exit', -signal.SIGSEGV: 'crashed at exit',
           'timeout': 'hung at exit'}


def write_shim(work):
    os.makedirs(os.path.join(work, 'shim'), exist_ok=True)
    with open(os.path.join(work, 'shim', 'sitecustomize.py'), 'w') as f:
        f.write(SHIM)


def shim_env(work, trace):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.path.join(work, 'shim') + os.pathsep + env.get('PYTHONPATH', '')
    env.update({'PROOF_SHIM': '1', 'PROOF_SEED': '0', 'PROOF_TRACE': trace,
                'MXNET_ENGINE_TYPE': 'NaiveEngine', 'OMP_NUM_THREADS': '1',
                'PYTHONUNBUFFERED': '1', 'MXNET_CUDNN_AUTOTUNE_DEFAULT': '0',
                'PYTHONFAULTHANDLER': '1', 'MPLBACKEND': 'Agg'})
    return env


def run(cmd, cwd, log, timeout, env=None):
    """Run ``cmd``; a process that outlives ``timeout`` gets SIGABRT first (with
    PYTHONFAULTHANDLER its log ends with every thread's stack), then its group SIGKILL."""
    start = time.time()
    with open(log, 'w') as out:
        # its own process group: a timeout also ends what it forked (a loader's Pool)
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGABRT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            rc = 'timeout'
    with open(log, errors='replace') as f:
        text = f.read()
    return {'cmd': ' '.join(cmd), 'rc': rc, 'seconds': round(time.time() - start, 1),
            'log': log, 'tail': text[-3000:],
            'exit': _exit(rc, text)}


def _exit(rc, text):
    """'clean', 'failed', or how a process that had done its work ended in finalization."""
    if rc == 0:
        return 'clean'
    dump = FATAL.search(text)
    if rc in SIGNALS and dump and '<no Python frame>' in dump.group(2) \
            and ' in <module>' not in dump.group(2):
        return SIGNALS[rc]
    return 'failed'


def prepare_tree(args, repo, variant):
    """A fresh copy of the raw tree: from ``--raw`` (unpacked trees, where it has one) or a
    mirror's HEAD (its revision in ``REVISIONS``, always from the mirror)."""
    tree = os.path.join(args.work, '%s.%s' % (repo, variant))
    shutil.rmtree(tree, ignore_errors=True)
    if args.raw and repo not in REVISIONS and os.path.isdir(os.path.join(args.raw, repo)):
        shutil.copytree(os.path.join(args.raw, repo), tree, symlinks=True,
                        ignore=shutil.ignore_patterns('.git'))
        return tree
    os.makedirs(tree)
    git_dir = os.path.join(args.mirror_root, REPOS[repo], 'repo')
    revision = REVISIONS.get(repo, 'HEAD')
    # the blobs a mirror lacks (3DCE_new's DeepLesion CSV files) are left out, as
    # benchmarks/migrate_family_table.py does: git archive would stop at the first
    listing = [line.split('\t', 1) for line in subprocess.run(
        ['git', '-C', git_dir, 'ls-tree', '-r', revision], check=True, capture_output=True,
        text=True, timeout=300).stdout.splitlines()]
    check = subprocess.run(['git', '-C', git_dir, 'cat-file', '--batch-check'], check=True,
                           capture_output=True, text=True, timeout=300,
                           input='\n'.join(meta.split()[2] for meta, _ in listing)).stdout
    missing = [path for (meta, path), line in zip(listing, check.splitlines())
               if line.endswith('missing')]
    archive = subprocess.run(['git', '-C', git_dir, 'archive', revision, '--', '.'] +
                             [':(exclude,literal)' + path for path in missing],
                             check=True, capture_output=True, timeout=300).stdout
    subprocess.run(['tar', '-x', '-C', tree], input=archive, check=True, timeout=300)
    return tree


def migrate_tree(tree, variant, logs, timeout):
    """The README's migration and build (MIGRATED), or the port and the build alone (FORK:
    its vendored copies stay)."""
    options = (['--write', '--delete-vendored', '--to-python3'] if variant == 'migrated'
               else ['--to-python3']) + ['--build-ext=cpu']
    result = run([sys.executable, '-m', 'mxpatch_bind', 'migrate', tree] + options, REPO_ROOT,
                 os.path.join(logs, 'migrate.log'), timeout)
    result['summary'] = result['tail'].strip().splitlines()[-1] if result['tail'].strip() else ''
    del result['tail'], result['exit']  # migrate's exit status 1: something left to check
    return result


def port_kept_copies(tree, logs, timeout):
    """FORK only: ``migrate --to-python3`` leaves the vendored copies as they are (they are
    meant to be deleted); Relation Networks' module.py has Python 2 prints, FCIS's xrange.
    fissix ports each once (a second run changes nothing)."""
    ported = []
    for folder, _, files in os.walk(tree):
        for name in ('module.py', 'DataParallelExecutorGroup.py'):
            path = os.path.join(folder, name)
            if name in files and os.path.basename(folder) == 'core':
                result = run([sys.executable, '-m', 'fissix', '-w', '-n', path], folder,
                             os.path.join(logs, 'fork_port_%s.log' % name), timeout)
                ported.append({'file': os.path.relpath(path, tree), 'rc': result['rc']})
    return ported


def mxpatch_bind_revision():
    """migrate changes while this is measured: which commit ran, and what was uncommitted."""
    head = subprocess.run(['git', '-C', REPO_ROOT, 'rev-parse', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', REPO_ROOT, 'status', '--short', 'mxpatch_bind'],
                           capture_output=True, text=True).stdout.splitlines()
    return {'head': head, 'uncommitted': dirty}
