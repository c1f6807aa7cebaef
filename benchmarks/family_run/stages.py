"""One pipeline in one tree: its set-up, then each stage's script, and what each stage wrote.

After every stage the files it wrote or changed (under the pipeline's output folder, the data
caches and the image-set folders its evaluation writes into) are copied to a snapshot folder
of that stage, so that a later stage that rewrites a file does not hide an earlier stage's.
"""
import os
import shutil
import sys

from . import configs, data_still, data_vid, deeplesion, maskrcnn, python_config, sniper, symbols
from .runs import run, shim_env

DATA = dict(data_still.WRITERS, vid=data_vid.write_vid)
# where the family's code writes besides output/: dataset caches, VOC-SDS's annotation
# cache, the evaluation image lists ImageNet VID writes
WATCHED = ['data/cache', 'data/VOCdevkit/annotations_cache', 'data/ILSVRC2015/ImageSets']
SKIPPED = ('.log',)  # the family's loggers write the time of day


def setup(tree, spec):
    """SETUP (not defects): the tiny symbol module and its import, data, weights, configs."""
    if spec['data'] == 'cityscape_instances':
        return maskrcnn.setup(tree, spec)
    if spec['data'] == 'sniper_coco':
        return sniper.setup(tree, spec)
    if 'config_module' in spec:
        return python_config.setup(tree, spec, DATA[spec['data']])
    if spec['data'] == 'deeplesion':
        return deeplesion.setup(tree, spec)
    name, folder = spec['name'], os.path.join(tree, spec['project'], 'symbols')
    with open(os.path.join(folder, 'tiny_%s.py' % name), 'w') as f:
        f.write(symbols.source('tiny_' + name, spec['base'], spec['backbone'],
                               spec.get('feat', 32)))
    init = os.path.join(folder, '__init__.py')
    with open(init) as f:
        text = f.read()
    # D-CN's scripts eval 'module.class' (`from . import x`); FCIS's eval the class, which
    # its __init__ star-imports from the symbol module
    star = 'from .%s import *' % spec['base'] in text
    line = ('from .tiny_%s import *\n' if star else 'from . import tiny_%s\n') % name
    if line not in text:
        with open(init, 'a') as f:
            f.write(('' if text.endswith('\n') or not text else '\n') + line)
    root = os.path.join(tree, spec.get('cwd', ''))
    for folder in spec.get('folders', []):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    # written once per tree (the raw trees ship some image sets: ours replace them)
    marker = os.path.join(root, 'data', '.proof_' + spec['data'])
    if not os.path.exists(marker):
        DATA[spec['data']](root)
        open(marker, 'w').close()
    symbols.write_pretrained(root, 'tiny_' + name, spec['backbone'], spec.get('feat', 32))
    paths = configs.write_configs(tree, spec)
    if 'config_at' in spec:  # a script that reads one fixed config file (road's inference.py)
        shutil.copyfile(os.path.join(tree, paths['main']), os.path.join(tree, spec['config_at']))
    return paths


def _listing(tree, spec):
    found = {}
    for rel in spec.get('files', []):  # files a script writes in place (road's results.json)
        if os.path.exists(os.path.join(tree, rel)):
            stat = os.stat(os.path.join(tree, rel))
            found[rel] = (stat.st_size, stat.st_mtime_ns)
    for root in ['output/' + spec['name']] + WATCHED + spec.get('folders', []):
        for folder, _, files in os.walk(os.path.join(tree, root)):
            for file_name in files:
                path = os.path.join(folder, file_name)
                if not file_name.endswith(SKIPPED):
                    stat = os.stat(path)
                    found[os.path.relpath(path, tree)] = (stat.st_size, stat.st_mtime_ns)
    return found


def _snapshot(tree, before, after, folder):
    written = sorted(rel for rel, stamp in after.items() if before.get(rel) != stamp)
    for rel in written:
        os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
        shutil.copy2(os.path.join(tree, rel), os.path.join(folder, rel))
    return written


def _clean(tree, spec):
    for rel in ['output/' + spec['name'], 'data/cache', 'data/VOCdevkit/annotations_cache'] + \
            spec.get('folders', []):
        shutil.rmtree(os.path.join(tree, rel), ignore_errors=True)


def run_pipeline(args, tree, spec, logs, snapshots):
    """Every stage of ``spec`` in ``tree``, in order, until one fails having written nothing."""
    # the folder the stages run in (road_obj_detect's scripts read ./data and write ./output
    # where they are, rfcn/): data, outputs and snapshots are relative to it
    root = os.path.join(tree, spec.get('cwd', ''))
    _clean(root, spec)
    config_paths = setup(tree, spec)
    results = []
    for stage in spec['stages']:
        label = '%s_%s' % (spec['name'], stage['name'])
        trace = os.path.join(logs, label + '_trace.jsonl')
        if os.path.exists(trace):
            os.remove(trace)
        # a stage may run an installed tool as a module (mx-maskrcnn's cityscapesScripts)
        cmd = [sys.executable] + (['-m', stage['module']] if 'module' in stage
                                  else [stage['script']])
        if stage.get('cfg', 'main'):
            cmd += ['--cfg', config_paths[stage.get('cfg', 'main')]]
        cmd += stage.get('args', [])
        before = _listing(root, spec)
        env = dict(shim_env(args.work, trace), **python_config.overrides_env(spec))
        env.update(stage.get('env', {}))
        result = run(cmd, root, os.path.join(logs, label + '.log'), args.timeout, env)
        result['stage'] = stage['name']
        result['written'] = _snapshot(root, before, _listing(root, spec),
                                      os.path.join(snapshots, stage['name']))
        result['batches'] = sum(1 for _ in open(trace)) if os.path.exists(trace) else 0
        results.append(result)
        print('  %s %s rc=%s %ss files=%d batches=%d' % (
            os.path.basename(tree), label, result['rc'], result['seconds'],
            len(result['written']), result['batches']), flush=True)
        # a process can hang or abort at exit after its work is done (the family's prefetch
        # threads): the next stage runs when this one wrote its files
        if result['rc'] != 0 and not result['written']:
            break
    return results
