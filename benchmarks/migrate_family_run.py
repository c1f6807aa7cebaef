"""Run migrated family repositories' own training, test and evaluation, against the fork's.

Not part of the test suite: it needs the family's raw trees (``git archive`` of a clone or of
a ``fetch`` mirror, or unpacked trees with ``--raw``; a repository ``--raw`` lacks, or one
pinned to a revision in ``REVISIONS``, comes from its mirror) and takes tens of minutes. Issue 30
item 8, issue 36 item 9. Per family repository, two copies of the raw tree:

* MIGRATED: ``python -m mxpatch_bind migrate TREE --write --delete-vendored --to-python3
  --build-ext=cpu``, once: the README's migration and build, with no hand edit after it;
* FORK: ``python -m mxpatch_bind migrate TREE --to-python3 --build-ext=cpu`` (the port and
  the build only: the vendored ``core/module.py`` and ``core/DataParallelExecutorGroup.py``
  stay and run, with ``FORK_EDITS``, what the fork itself needs on MXNet 1.9.1).

Both get the same ``HAND_EDITS`` (``family_run/edits.py``: empty; an entry would be a defect
of ``migrate``) and the same benchmark set-up (``SETUP_EDITS``, a tiny backbone under each
project's own head, a shrunk copy of its own config, synthetic data: not defects). Then every
stage of every pipeline (``family_run/pipelines.py``: D-CN faster_rcnn and rfcn on COCO and
on PASCAL VOC, fpn on COCO, deeplab on VOC segmentation; Relation Networks; FCIS on COCO and
on SDS; Deep-Feature-Flow's dff_rfcn and rfcn and FGFA's fgfa_rfcn on ImageNet VID, FGFA's
test once more with seq-NMS; AdaScale's R-FCN training and test, its per-scale loss, loss
analysis, scale-regressor training and test, and adaptive inference; mx-rcnn's end-to-end
Faster R-CNN and VOC test, at the last revision of its MutableModule; road_obj_detect's
training and wild test; 3DCE_new's training with its validations and test; mx-maskrcnn's
alternating training of its FPN Mask R-CNN, its mask test and Cityscapes' instance
evaluation; SNIPER's proposal network, its proposals, its training with negative chip mining
and its test, in the MIGRATED tree alone: ``MIGRATED_ONLY``) runs the
repository's own script on 2 CPU contexts (4 images of 64x96, one per device and batch, 2
epochs), and the two trees are compared stage by stage (``family_run/compare.py``): each
batch's metrics, each evaluation's summary lines, each file written (checkpoints,
detections, caches, results). A ``MIGRATED_ONLY`` repository has no fork that runs on pip
MXNet (SNIPER's is its own MXNet build): each stage's outputs are read instead
(``family_run/checks.py``: metrics and arrays finite, what each file holds).

``--temporary-edits`` also applies ``TEMPORARY_EDITS`` to both trees: known ``migrate``
defects of issue 36 while their fixes land (a run with them is not the proof; the results
say which were applied).

Usage (about 30 to 60 minutes on two shared cores)::

    python benchmarks/migrate_family_run.py --raw /work/raw --work /tmp/proof/run --out results.json
    python benchmarks/migrate_family_run.py --pipelines rfcn_voc,dff_rfcn --work /tmp/proof/run

Python packages the family needs at run time, beside MXNet 1.9.1 and numpy<1.24: Cython,
easydict, opencv-python-headless<4.9 (newer wheels pull numpy 2, which breaks MXNet),
scipy<1.12, PyYAML, scikit-image<0.22 (the COCO API's polygons), hickle (FCIS), dill (FGFA),
matplotlib<3.9 (AdaScale's analysis), nibabel (3DCE_new), cityscapesscripts (mx-maskrcnn's
evaluation, run as ``python -m cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling``).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.family_run import checks, compare, edits, runs  # noqa: E402
from benchmarks.family_run.pipelines import MIGRATED_ONLY, PIPELINES  # noqa: E402
from benchmarks.family_run.stages import run_pipeline  # noqa: E402


def prepare_trees(args, repo):
    """Both trees of ``repo``, migrated (or reused) and edited; what was done to each."""
    out = {}
    for variant in ('migrated',) if repo in MIGRATED_ONLY else ('migrated', 'fork'):
        logs = os.path.join(args.work, 'logs', '%s.%s' % (repo, variant))
        os.makedirs(logs, exist_ok=True)
        tree = os.path.join(args.work, '%s.%s' % (repo, variant))
        r = out[variant] = {}
        if not (args.reuse and os.path.isdir(tree)):
            tree = runs.prepare_tree(args, repo, variant)
            r['migrate'] = runs.migrate_tree(tree, variant, logs, args.timeout)
        r['hand_edits'] = edits.apply_edits(tree, repo, edits.HAND_EDITS, 'hand')
        if args.temporary_edits:
            r['temporary_edits'] = edits.apply_edits(tree, repo, edits.TEMPORARY_EDITS, 'temporary')
        r['setup_edits'] = edits.apply_edits(tree, repo, edits.SETUP_EDITS, 'setup')
        if variant == 'fork':
            r['fork_edits'] = edits.apply_edits(tree, repo, edits.FORK_EDITS, 'fork')
            r['fork_port'] = runs.port_kept_copies(tree, logs, args.timeout)
        print(repo, variant, json.dumps(r.get('migrate', 'reused')), flush=True)
    return out


def run_and_check(args, name):
    """A MIGRATED-only pipeline (``MIGRATED_ONLY``): its stages, and what each wrote."""
    spec = dict(PIPELINES[name], name=name)
    logs = os.path.join(args.work, 'logs', '%s.migrated' % spec['repo'])
    snapshots = os.path.join(args.work, 'snapshots', 'migrated', name)
    tree = os.path.join(args.work, '%s.migrated' % spec['repo'])
    out = {'migrated': run_pipeline(args, tree, spec, logs, snapshots), 'checked': {}}
    for stage in spec['stages']:
        ran = [r for r in out['migrated'] if r['stage'] == stage['name']]
        result = checks.check_stage(stage, logs, snapshots, '%s_%s' % (name, stage['name']))
        result['exit'] = ran[0]['exit'] if ran else 'not run'
        result['seconds'] = ran[0]['seconds'] if ran else None
        out['checked'][stage['name']] = result
        print('%s %s exit=%s: %d files, all finite: %s' % (
            name, stage['name'], result['exit'], len(result['files']), result['all_finite']),
            flush=True)
    return out


def run_and_compare(args, name):
    if PIPELINES[name]['repo'] in MIGRATED_ONLY:
        return run_and_check(args, name)
    spec = dict(PIPELINES[name], name=name)
    folders = {v: (os.path.join(args.work, 'logs', '%s.%s' % (spec['repo'], v)),
                   os.path.join(args.work, 'snapshots', v, name)) for v in ('migrated', 'fork')}
    out = {}
    for variant, (logs, snapshots) in folders.items():
        tree = os.path.join(args.work, '%s.%s' % (spec['repo'], variant))
        out[variant] = run_pipeline(args, tree, spec, logs, snapshots)
    out['compare'] = {}
    for stage in spec['stages']:
        result = compare.compare_stage(stage, [folders[v][0] for v in ('migrated', 'fork')],
                                       [folders[v][1] for v in ('migrated', 'fork')],
                                       '%s_%s' % (name, stage['name']))
        ran = {v: [r for r in out[v] if r['stage'] == stage['name']] for v in folders}
        result['rc'] = {v: ran[v][0]['rc'] if ran[v] else 'not run' for v in folders}
        result['equal'] = all(ran.values()) and compare.verdict(result)
        # 'aborted / crashed / hung at exit': in interpreter finalization, after the stage's
        # last line (runs.FATAL); listed, and counted as run through
        result['exit'] = {v: ran[v][0]['exit'] if ran[v] else 'not run' for v in folders}
        # proven: ran to its end in both trees and everything compared equal
        result['proven'] = result['equal'] and all(
            result['exit'][v] == 'clean' or result['exit'][v].endswith(' at exit')
            for v in folders)
        out['compare'][stage['name']] = result
        print('%s %s exit=%s: %s' % (name, stage['name'], result['exit'], verdict(result)),
              flush=True)
    return out


def summary(results):
    """One line per stage: exit statuses, seconds, what was compared, and the verdict."""
    lines = []
    for name, pipeline in results['pipelines'].items():
        for stage, result in pipeline.get('checked', {}).items():
            lines.append('%-18s %-15s exit %-15s (MIGRATED only) s %-6s files %-3d batches %-5s '
                         'all finite %s' % (name, stage, result['exit'], result['seconds'],
                                            len(result['files']), result.get('batches', '-'),
                                            result['all_finite']))
        for stage, result in pipeline.get('compare', {}).items():
            seconds = {v: [r['seconds'] for r in pipeline[v] if r['stage'] == stage]
                       for v in ('migrated', 'fork')}
            compared = len(result['files'])
            lines.append('%-18s %-15s exit %-15s %-15s s %-6s %-6s files %-3d batches %-5s '
                         'lines %-5s %s' % (
                             name, stage, result['exit']['migrated'], result['exit']['fork'],
                             (seconds['migrated'] or ['-'])[0], (seconds['fork'] or ['-'])[0],
                             compared, result.get('batch_metrics_equal', '-'),
                             result.get('result_lines_equal', '-'),
                             verdict(result)))
    return lines


def verdict(result):
    exits = set(result['exit'].values())
    if result['proven']:
        return 'PROVEN'
    if 'not run' in exits:
        return 'not run (an earlier stage failed)'
    if 'failed' in exits:
        return 'FAILED in %s' % ' and '.join(v for v in ('migrated', 'fork')
                                             if result['exit'][v] == 'failed')
    return 'DIFFERENT'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work', default='/tmp/proof/run',
                        help='scratch folder (emptied per tree)')
    parser.add_argument('--mirror-root', default='/work/.mirror',
                        help='folder of owner+name/repo git dirs')
    parser.add_argument('--raw',
                        help='folder of unpacked raw trees, one per repository (instead of git)')
    parser.add_argument('--pipelines', '--projects', default=','.join(PIPELINES),
                        help='comma-separated subset of: ' + ', '.join(PIPELINES))
    parser.add_argument('--timeout', type=int, default=900, help='seconds per process')
    parser.add_argument('--reuse', action='store_true',
                        help='keep the migrated trees of an earlier run (no new migrate)')
    parser.add_argument('--temporary-edits', action='store_true',
                        help="also apply TEMPORARY_EDITS (known migrate defects; not a proof)")
    parser.add_argument('--out', default='results.json')
    args = parser.parse_args()
    args.work = os.path.abspath(args.work)
    names = [p for p in args.pipelines.split(',') if p]
    unknown = sorted(set(names) - set(PIPELINES))
    if unknown:
        parser.error('unknown pipelines %s; known: %s' % (unknown, ', '.join(PIPELINES)))
    runs.write_shim(args.work)
    results = {'mxpatch_bind': runs.mxpatch_bind_revision(),
               'temporary_edits': args.temporary_edits,
               'hand_edits': [list(e) for e in edits.HAND_EDITS], 'repos': {}, 'pipelines': {}}
    for repo in sorted({PIPELINES[p]['repo'] for p in names}):
        results['repos'][repo] = prepare_trees(args, repo)
    for name in names:
        results['pipelines'][name] = run_and_compare(args, name)
        with open(args.out, 'w') as f:
            json.dump(results, f, indent=1)
    results['summary'] = summary(results)
    with open(args.out, 'w') as f:
        json.dump(results, f, indent=1)
    print('\n'.join(results['summary']))


if __name__ == '__main__':
    main()
