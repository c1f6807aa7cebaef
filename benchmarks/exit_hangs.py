"""Count the family's training runs that hang at interpreter exit (issue 36, item 7).

The family's ``PrefetchingIter`` leaves a daemon thread fetching when its training script
ends; frozen there at exit it can hang the process after every file is written.
``migrate --to-python3`` adds :func:`mxpatch_bind.threads.stop_threads_at_exit` to such
classes. This runs a project's own training script (as :mod:`migrate_family_run` sets it
up: the same trees, shim, tiny backbone, config and synthetic data) ``--runs`` times per
tree, and counts the runs that wrote their last checkpoint but had not exited ``--grace``
seconds later. Such a run gets SIGABRT (``PYTHONFAULTHANDLER``: its log ends with every
thread's stack), then its process group SIGKILL.

Usage (a run of deeplab or FCIS takes 10 to 30 s on two shared cores)::

    python benchmarks/exit_hangs.py --work /tmp/exit --raw RAW --projects deeplab,fcis \\
        --runs 20 --out /tmp/exit/hangs.json

``--raw`` is a folder of unpacked raw trees (``Deformable-ConvNets``, ``FCIS``; copied, not
changed); without it the trees come from ``--mirror-root`` as in :mod:`migrate_family_run`.
``--reuse`` keeps the trees an earlier run migrated (so that one migrate's trees are measured
before and after a change to the library alone).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import migrate_family_run as family  # noqa: E402  (the trees, shim and set-up it measures)

LAST_CHECKPOINT = 'tiny-0002.params'  # written by the last epoch's end (end_epoch: 2)


def prepare(args, repo, variant):
    """The tree as ``migrate_family_run`` leaves it before training: migrated (or reused),
    with its set-up edits and, for the fork, the fork's own edits."""
    logs = os.path.join(args.work, 'logs', '%s.%s' % (repo, variant))
    os.makedirs(logs, exist_ok=True)
    tree = os.path.join(args.work, '%s.%s' % (repo, variant))
    summary = 'reused'
    if not (args.reuse and os.path.isdir(tree)):
        tree = family.prepare_tree(args, repo, variant)
        summary = family.migrate_tree(tree, variant, logs, args.timeout)['summary']
        family.apply_edits(tree, repo, family.HAND_EDITS, 'hand')
        family.apply_edits(tree, repo, family.SETUP_EDITS, 'setup')
        if variant == 'fork':
            family.apply_edits(tree, repo, family.FORK_EDITS, 'fork')
            family.port_kept_copies(tree, logs, args.timeout)
    return tree, logs, summary


def last_checkpoint(tree, project):
    return next((path for rel, path in family.output_files(tree, project).items()
                 if rel.endswith(LAST_CHECKPOINT)), None)


def train_once(args, tree, project, cfg, log):
    """One training run: 'exited' (rc), 'hung at exit' or 'failed' (no last checkpoint)."""
    shutil.rmtree(os.path.join(tree, 'output', project), ignore_errors=True)
    shutil.rmtree(os.path.join(tree, 'data', 'cache'), ignore_errors=True)
    script = family.PROJECTS[project].get('train', 'train_end2end.py')
    env = family.shim_env(args, os.devnull)
    start = time.time()
    with open(log, 'w') as out:
        proc = subprocess.Popen([sys.executable, '%s/%s' % (project, script), '--cfg', cfg],
                                cwd=tree, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        written_at = None
        while proc.poll() is None:
            now = time.time()
            if written_at is None and last_checkpoint(tree, project):
                written_at = now
            if (written_at is not None and now - written_at > args.grace) \
                    or now - start > args.timeout:
                break
            time.sleep(0.2)
    outcome = {'seconds': round(time.time() - start, 1), 'log': log}
    if proc.poll() is not None:
        outcome['rc'] = proc.returncode
        outcome['outcome'] = 'exited' if last_checkpoint(tree, project) else 'failed'
        return outcome
    os.kill(proc.pid, signal.SIGABRT)  # every thread's stack into the log
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the Pool's workers too, and nothing else
    except ProcessLookupError:
        pass
    proc.wait()
    outcome['outcome'] = 'hung at exit' if written_at is not None else 'timed out'
    return outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work', default='/tmp/exit', help='scratch folder (one tree each)')
    parser.add_argument('--mirror-root', default='/work/.mirror')
    parser.add_argument('--raw', help='folder of unpacked raw trees, one per repository')
    parser.add_argument('--projects', default='deeplab,fcis')
    parser.add_argument('--variants', default='migrated,fork')
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--grace', type=float, default=60.0,
                        help='seconds a run may take to exit after its last checkpoint')
    parser.add_argument('--timeout', type=int, default=900, help='seconds per process')
    parser.add_argument('--reuse', action='store_true', help='keep the trees of an earlier run')
    parser.add_argument('--out', default='exit_hangs.json')
    args = parser.parse_args()
    args.work = os.path.abspath(args.work)
    os.makedirs(os.path.join(args.work, 'shim'), exist_ok=True)
    with open(os.path.join(args.work, 'shim', 'sitecustomize.py'), 'w') as f:
        f.write(family.SHIM)
    head = subprocess.run(['git', '-C', family.REPO_ROOT, 'rev-parse', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', family.REPO_ROOT, 'status', '--short', 'mxpatch_bind'],
                           capture_output=True, text=True).stdout.splitlines()
    results = {'mxpatch_bind': {'head': head, 'uncommitted': dirty}, 'runs': args.runs,
               'grace': args.grace, 'trees': {}}
    projects = [p for p in args.projects.split(',') if p]
    for repo in sorted({family.PROJECTS[p]['repo'] for p in projects}):
        for variant in args.variants.split(','):
            tree, logs, summary = prepare(args, repo, variant)
            threads_stopped = subprocess.run(
                ['grep', '-rl', '--include=*.py', 'stop_threads_at_exit', tree],
                capture_output=True, text=True).stdout.split()
            for project in (p for p in projects if family.PROJECTS[p]['repo'] == repo):
                cfg = family.setup_project(tree, project)
                runs = [train_once(args, tree, project, cfg,
                                   os.path.join(logs, '%s_exit_%02d.log' % (project, k)))
                        for k in range(args.runs)]
                counts = {o: sum(r['outcome'] == o for r in runs)
                          for o in ('exited', 'hung at exit', 'failed', 'timed out')}
                results['trees']['%s %s' % (project, variant)] = {
                    'migrate': summary, 'counts': counts, 'runs': runs,
                    'files_calling_stop_threads_at_exit': [os.path.relpath(p, tree)
                                                           for p in threads_stopped]}
                print(project, variant, json.dumps(counts), flush=True)
                with open(args.out, 'w') as f:
                    json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
