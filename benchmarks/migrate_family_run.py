"""Run migrated family repositories' own training and test code, against the fork's module.

Not part of the test suite: it needs the family's raw trees (``git archive`` of a clone or of
a ``fetch`` mirror) and takes minutes. Issue 30, item 8. Per family repository, two copies of
the raw tree:

* MIGRATED: ``python -m mxpatch_bind migrate TREE --write --delete-vendored --to-python3
  --build-ext=cpu``, once: the README's migration and build, with no hand edit after it;
* FORK: ``python -m mxpatch_bind migrate TREE --to-python3 --build-ext=cpu`` (the port and
  the build only: the vendored ``core/module.py`` and ``core/DataParallelExecutorGroup.py``
  stay and run, with ``FORK_EDITS``, what the fork itself needs on MXNet 1.9.1).

Both get the same ``HAND_EDITS`` (below: empty; an entry would be a defect of ``migrate``)
and the same benchmark set-up (``SETUP_EDITS`` and a tiny symbol, a config, synthetic data:
not defects). Then, per project (D-CN faster_rcnn, rfcn, fpn, deeplab; Relation Networks'
relation_rcnn), the repository's own ``<project>/train_end2end.py --cfg`` (deeplab's
``train.py``) for 2 epochs of 2 batches (4 images of 64x96, one per device and batch) and its
own ``<project>/test.py --cfg`` on the last checkpoint (2 images: COCO evaluation, or VOC
segmentation for deeplab), and compares the two trees: the metrics at every batch (full
precision), every saved checkpoint (``np.array_equal`` per array) and the detections written
by the test. A process that outlives ``--timeout`` gets SIGABRT first, so that its log ends
with every thread's stack (``PYTHONFAULTHANDLER``).

How it runs on a CPU-only machine:

* the family's scripts build ``ctx = [mx.gpu(int(i)) for i in config.gpus.split(',')]``; a
  ``sitecustomize.py`` (written into ``WORK/shim``, put first on ``PYTHONPATH`` for the
  train and test processes only) maps ``mx.gpu`` to ``mx.cpu``, so ``gpus: '0,1'`` is
  ``[cpu(0), cpu(1)]``;
* determinism: the shim seeds ``mx.random``, ``numpy.random`` and ``random`` (0) at start-up;
  ``MXNET_ENGINE_TYPE=NaiveEngine`` runs the Python custom operators (``proposal_target``,
  ``BoxAnnotatorOHEM``) in the calling thread in device order, and ``OMP_NUM_THREADS=1``; the
  config sets ``RPN_BATCH_SIZE`` above the anchor count so that the loader's prefetch thread
  draws no random numbers (``assign_anchor`` samples only when there are more anchors than
  that), ``SHUFFLE`` and ``FLIP`` off;
* per-batch metrics: the shim wraps ``mxnet.model.BatchEndParam`` (which both the fork's
  ``MutableModule.fit`` and stock ``BaseModule.fit`` build once per batch) and appends the
  metric's ``get_name_value()`` (``repr`` of each float) to ``$PROOF_TRACE``.

Usage (about 10 to 20 minutes on two shared cores)::

    python benchmarks/migrate_family_run.py --work /tmp/proof/run --out results.json
    python benchmarks/migrate_family_run.py --projects rfcn --work /tmp/proof/run

``--mirror-root`` holds ``msracver+Deformable-ConvNets/repo`` and
``msracver+Relation-Networks-for-Object-Detection/repo`` (bare clones, as ``fetch`` leaves
them); ``--raw`` takes unpacked trees instead. Python packages the family needs at run time,
beside MXNet 1.9.1 and numpy<1.24: Cython, easydict, opencv-python-headless<4.9 (newer wheels
pull numpy 2, which breaks MXNet), scipy<1.12, PyYAML.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)

REPOS = {
    'Deformable-ConvNets': 'msracver+Deformable-ConvNets',
    'Relation-Networks-for-Object-Detection': 'msracver+Relation-Networks-for-Object-Detection',
    'FCIS': 'msracver+FCIS',
}

# project -> repository, the repository's own config it starts from, the symbol class our
# tiny symbol subclasses (its head, custom operators and losses are the repository's own;
# only the ResNet-101 backbone is replaced), and the backbone's form.
PROJECTS = {
    'faster_rcnn': dict(repo='Deformable-ConvNets',
                        cfg='experiments/faster_rcnn/cfgs/resnet_v1_101_coco_trainval_rcnn_end2end.yaml',
                        base='resnet_v1_101_rcnn', backbone='c4'),
    'rfcn': dict(repo='Deformable-ConvNets',
                 cfg='experiments/rfcn/cfgs/resnet_v1_101_coco_trainval_rfcn_end2end_ohem.yaml',
                 base='resnet_v1_101_rfcn', backbone='c4'),
    'fpn': dict(repo='Deformable-ConvNets',
                cfg='experiments/fpn/cfgs/resnet_v1_101_coco_trainval_fpn_end2end_ohem.yaml',
                base='resnet_v1_101_fpn_rcnn', backbone='fpn'),
    'relation_rcnn': dict(repo='Relation-Networks-for-Object-Detection',
                          cfg='experiments/relation_rcnn/cfgs/'
                              'resnet_v1_101_coco_trainvalminus_rcnn_end2end_relation_8epoch.yaml',
                          base='resnet_v1_101_rcnn_attention_1024_pairwise_position_multi_head_16',
                          backbone='c4'),
    'fcis': dict(repo='FCIS',
                 cfg='experiments/fcis/cfgs/resnet_v1_101_coco_fcis_end2end_ohem.yaml',
                 base='resnet_v1_101_fcis', backbone='c4'),
    'deeplab': dict(repo='Deformable-ConvNets',
                    cfg='experiments/deeplab/cfgs/deeplab_resnet_v1_101_voc12_segmentation_base.yaml',
                    base='resnet_v1_101_deeplab', backbone='seg', train='train.py'),
}

# Each entry: (repository, file, old text, new text, why). Every one would be a defect of
# `migrate --write --delete-vendored --to-python3 --build-ext=cpu`: the tree it leaves not
# running without it. Applied to both trees after migrate. Empty: the last ones (np.linspace's
# float num, pickles in text-mode files, pycocotools' PyMem_Malloc, cpu_nms's int buffer,
# `self._batch_rois / self._batch_images`, Relation Networks' `dim[0] / group`, fpn's
# gpu_nms_wrapper on a CPU context) are migrate's own fixes now.
HAND_EDITS = []

# Benchmark set-up in the family's code, both trees (not defects): Relation Networks'
# PrefetchingIterV2 fetches with 4 threads from one loader, so the batch order (and, with
# fewer than 4 batches an epoch, whether an epoch starts with StopIteration out of stock
# BaseModule.fit) depends on thread scheduling; one thread makes the order fixed.
SETUP_EDITS = [
    ('Relation-Networks-for-Object-Detection', 'relation_rcnn/train_end2end.py',
     "train_data = PrefetchingIter(train_data)",
     "train_data = PrefetchingIter(train_data, prefetch_n_iter=1)",
     "deterministic batch order (4 prefetch threads race on one loader)"),
]

# The fork itself on MXNet 1.9.1, FORK tree only (not migrate defects: the reason to leave it).
FORK_EDITS = [
    ('*', '%s/core/DataParallelExecutorGroup.py' % project,
     "arg_arr = arg_arr.reshape(arg_shape)",
     "arg_arr = arg_arr.reshape((-1,))[:int(np.prod(arg_shape))].reshape(arg_shape)",
     "the fork's _get_or_reshape shrinks a shared buffer with NDArray.reshape, which MXNet "
     "1.9.1 refuses: ValueError: Cannot reshape array of size 500 into shape (1, 2, 5) "
     "(gt_boxes bound at (1, 100, 5)) at the first batch; the view MXNet 0.12 returned")
    for project in ('faster_rcnn', 'rfcn', 'fpn', 'deeplab', 'relation_rcnn', 'fcis')
] + [
    ('FCIS', 'fcis/symbols/resnet_v1_101_fcis.py', 'mx.contrib.sym.ChannelOperator(',
     "__import__('mxpatch_bind.compat').compat.ChannelOperator(",
     "FCIS's own MXNet build registered ChannelOperator in C++; stock MXNet 1.9.1 has none, "
     "so the FORK tree takes compat's too (what the MIGRATED tree gets from migrate --write): "
     "the comparison is of the module"),
    ('FCIS', 'fcis/core/module.py',
     "self._exec_group.grad_arrays,\n                                      self._kvstore)",
     "self._exec_group.grad_arrays,\n                                      self._kvstore, "
     "self._exec_group.param_names)",
     "FCIS's copy calls mxnet.model._update_params_on_kvstore without param_names, which "
     "MXNet 1.9.1 requires: TypeError at the first update"),
    ('FCIS', 'fcis/core/module.py', "allow_missing=False, force_init=False):",
     "allow_missing=False, force_init=False, allow_extra=False):",
     "FCIS's copy's init_params (Module's and MutableModule's) take no allow_extra, which "
     "MXNet 1.9.1's BaseModule.set_params passes: TypeError at the first epoch's end"),
]

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
'''


def tiny_symbol_source(project):
    """A symbol class that keeps the repository's head and swaps in a small backbone."""
    spec = PROJECTS[project]
    base = spec['base']
    lines = [
        '"""Tiny backbone under %s\'s own head (benchmarks/migrate_family_run.py)."""' % base,
        'import mxnet as mx',
        'from .%s import %s' % (base, base),
        '',
        '',
        'def _conv(data, name, num_filter, stride):',
        '    conv = mx.sym.Convolution(data=data, name=name, num_filter=num_filter, kernel=(3, 3),',
        '                              pad=(1, 1), stride=(stride, stride))',
        "    return mx.sym.Activation(data=conv, act_type='relu', name=name + '_relu')",
        '',
        '',
        'class tiny_%s(%s):' % (project, base),
    ]
    if spec['backbone'] == 'seg':
        lines += [
            '    def get_resnet_conv(self, data):',
            "        c1 = _conv(data, 'conv1', 8, 4)",
            "        c4 = _conv(c1, 'res4a_branch2a', 16, 4)",
            "        return _conv(c4, 'res5a_branch2b', 16, 1)",
        ]
    elif spec['backbone'] == 'c4':
        lines += [
            '    def get_resnet_v1_conv4(self, data):',
            "        c1 = _conv(data, 'conv1', 8, 4)",
            "        return _conv(c1, 'res4a_branch2a', 16, 4)",
            '',
            '    def get_resnet_v1_conv5(self, conv_feat):',
            "        return _conv(conv_feat, 'res5a_branch2b', 16, 1)",
        ]
    else:
        lines += [
            '    def get_resnet_backbone(self, data, *args, **kwargs):',
            "        c2 = _conv(data, 'conv1', 8, 4)",
            "        c3 = _conv(c2, 'res3a_branch2a', 8, 2)",
            "        c4 = _conv(c3, 'res4a_branch2a', 16, 2)",
            "        c5 = _conv(c4, 'res5a_branch2b', 16, 2)",
            '        return c2, c3, c4, c5',
        ]
    return '\n'.join(lines) + '\n'


def backbone_shapes(project):
    layers = ([('conv1', 3, 8), ('res4a_branch2a', 8, 16), ('res5a_branch2b', 16, 16)]
              if PROJECTS[project]['backbone'] in ('c4', 'seg') else
              [('conv1', 3, 8), ('res3a_branch2a', 8, 8), ('res4a_branch2a', 8, 16),
               ('res5a_branch2b', 16, 16)])
    shapes = {}
    for name, cin, cout in layers:
        shapes[name + '_weight'] = (cout, cin, 3, 3)
        shapes[name + '_bias'] = (cout,)
    return shapes


def write_pretrained(tree, project):
    """'Pretrained' backbone parameters, from a fixed seed, where the config points."""
    import numpy as np
    import mxnet as mx
    rng = np.random.RandomState(1)
    params = {'arg:' + name: mx.nd.array(rng.normal(0, 0.1, shape).astype('float32'))
              for name, shape in sorted(backbone_shapes(project).items())}
    folder = os.path.join(tree, 'model', 'pretrained_model')
    os.makedirs(folder, exist_ok=True)
    mx.nd.save(os.path.join(folder, 'tiny_%s-0000.params' % project), params)


def write_coco(tree):
    """A COCO-format folder: 4 training images (train2014), 2 test images (minival2014)."""
    import numpy as np
    import cv2
    root = os.path.join(tree, 'data', 'coco')
    rng = np.random.RandomState(2)
    categories = [{'id': 1, 'name': 'block', 'supercategory': 'shape'},
                  {'id': 2, 'name': 'slab', 'supercategory': 'shape'}]
    for image_set, data_name, count, first_id in (('train2014', 'train2014', 4, 1),
                                                  ('minival2014', 'val2014', 2, 101)):
        folder = os.path.join(root, 'images', data_name)
        os.makedirs(folder, exist_ok=True)
        images, annotations = [], []
        for k in range(count):
            image_id = first_id + k
            h, w = 64, 96
            im = rng.randint(0, 60, size=(h, w, 3)).astype(np.uint8)
            for j in range(2):
                bw, bh = rng.randint(20, 40), rng.randint(16, 32)
                x, y = rng.randint(0, w - bw), rng.randint(0, h - bh)
                im[y:y + bh, x:x + bw] = (200, 80, 40) if j == 0 else (40, 200, 160)
                annotations.append({'id': len(annotations) + 1 + 1000 * first_id,
                                    'image_id': image_id, 'category_id': j + 1,
                                    'bbox': [x, y, bw, bh], 'area': bw * bh, 'iscrowd': 0,
                                    'segmentation': [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]})
            cv2.imwrite(os.path.join(folder, 'COCO_%s_%012d.jpg' % (data_name, image_id)), im,
                        [cv2.IMWRITE_JPEG_QUALITY, 95])
            images.append({'id': image_id, 'width': w, 'height': h,
                           'file_name': 'COCO_%s_%012d.jpg' % (data_name, image_id)})
        os.makedirs(os.path.join(root, 'annotations'), exist_ok=True)
        with open(os.path.join(root, 'annotations', 'instances_%s.json' % image_set), 'w') as f:
            json.dump({'images': images, 'annotations': annotations, 'categories': categories}, f)


def write_voc_seg(tree):
    """A PASCAL VOC 2012 segmentation folder: 4 training images (train_seg), 2 (val_seg)."""
    import numpy as np
    import cv2
    root = os.path.join(tree, 'data', 'VOCdevkit2012', 'VOC2012')
    for sub in ('JPEGImages', 'SegmentationClass', os.path.join('ImageSets', 'Main')):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    rng = np.random.RandomState(3)
    for image_set, names in (('train_seg', ['2012_%06d' % k for k in range(1, 5)]),
                             ('val_seg', ['2012_%06d' % k for k in range(101, 103)])):
        for name in names:
            im = rng.randint(0, 60, size=(64, 96, 3)).astype(np.uint8)
            label = np.zeros((64, 96), np.uint8)
            for cls in (rng.randint(1, 21), rng.randint(1, 21)):
                bw, bh = rng.randint(20, 40), rng.randint(16, 32)
                x, y = rng.randint(0, 96 - bw), rng.randint(0, 64 - bh)
                im[y:y + bh, x:x + bw] = (10 * cls, 200 - 5 * cls, 90)
                label[y:y + bh, x:x + bw] = cls
                label[y, x:x + bw] = 255  # VOC's 'void' border
            cv2.imwrite(os.path.join(root, 'JPEGImages', name + '.jpg'), im,
                        [cv2.IMWRITE_JPEG_QUALITY, 95])
            cv2.imwrite(os.path.join(root, 'SegmentationClass', name + '.png'), label)
        with open(os.path.join(root, 'ImageSets', 'Main', image_set + '.txt'), 'w') as f:
            f.write('\n'.join(names) + '\n')


def write_config(tree, project):
    """The repository's own config, shrunk: 2 devices, 64x96 images, 2 epochs of 2 batches."""
    import yaml
    with open(os.path.join(tree, PROJECTS[project]['cfg'])) as f:
        cfg = yaml.safe_load(f)
    cfg.update({'gpus': '0,1', 'SCALES': [64, 96], 'symbol': 'tiny_' + project,
                'output_path': './output/' + project,
                'default': {'frequent': 1, 'kvstore': 'device'}})
    if 'TEST_SCALES' in cfg:
        cfg['TEST_SCALES'] = [[64, 96]]
    net = cfg['network']
    net.update({'pretrained': './model/pretrained_model/tiny_' + project, 'pretrained_epoch': 0})
    if PROJECTS[project]['backbone'] == 'seg':
        cfg['dataset'].update({'dataset': 'PascalVOC', 'dataset_path': './data/VOCdevkit2012',
                               'image_set': '2012_train_seg', 'root_path': './data',
                               'test_image_set': '2012_val_seg'})
        cfg['TRAIN'].update({'begin_epoch': 0, 'end_epoch': 2, 'lr_step': '1.5', 'FLIP': False,
                             'SHUFFLE': False, 'RESUME': False, 'model_prefix': 'tiny',
                             'ENABLE_CROP': False, 'CROP_HEIGHT': 64, 'CROP_WIDTH': 96})
        cfg['TEST']['test_epoch'] = 2
        path = os.path.join(tree, 'proof_%s.yaml' % project)
        with open(path, 'w') as f:
            yaml.safe_dump(cfg, f, default_flow_style=False)
        return os.path.basename(path)
    if PROJECTS[project]['backbone'] == 'c4':
        net['ANCHOR_SCALES'] = [1, 2]
        net['NUM_ANCHORS'] = 2 * len(net['ANCHOR_RATIOS'])
    cfg['dataset'].update({'NUM_CLASSES': 3, 'dataset': 'coco', 'dataset_path': './data/coco',
                           'image_set': 'train2014', 'root_path': './data',
                           'test_image_set': 'minival2014'})
    train = cfg['TRAIN']
    train.update({'begin_epoch': 0, 'end_epoch': 2, 'lr_step': '1.5', 'warmup': False,
                  'FLIP': False, 'SHUFFLE': False, 'RESUME': False, 'model_prefix': 'tiny',
                  'RPN_BATCH_SIZE': 1000000, 'RPN_PRE_NMS_TOP_N': 300,
                  'RPN_POST_NMS_TOP_N': 32, 'CXX_PROPOSAL': True})
    if train.get('BATCH_ROIS', -1) != -1:
        train['BATCH_ROIS'] = 32
    if 'BATCH_ROIS_OHEM' in train:
        train['BATCH_ROIS_OHEM'] = 16
    test = cfg['TEST']
    test.update({'test_epoch': 2, 'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 32,
                 'CXX_PROPOSAL': True})
    if 'USE_GPU_MASK_MERGE' in test:  # FCIS's switch between its CUDA and CPU mask voting
        test['USE_GPU_MASK_MERGE'] = False
    path = os.path.join(tree, 'proof_%s.yaml' % project)
    with open(path, 'w') as f:
        yaml.safe_dump(cfg, f, default_flow_style=False)
    return os.path.basename(path)


def setup_project(tree, project):
    """SETUP (not defects): tiny symbol module, its import, config, data, pretrained params."""
    symbols = os.path.join(tree, project, 'symbols')
    with open(os.path.join(symbols, 'tiny_%s.py' % project), 'w') as f:
        f.write(tiny_symbol_source(project))
    init = os.path.join(symbols, '__init__.py')
    with open(init) as f:
        text = f.read()
    # D-CN's scripts eval 'module.class' (`from . import x`); FCIS's eval the class, which its
    # __init__ star-imports from the symbol module
    star = 'from .%s import *' % PROJECTS[project]['base'] in text
    line = ('from .tiny_%s import *\n' if star else 'from . import tiny_%s\n') % project
    if line not in text:
        with open(init, 'a') as f:
            f.write(('' if text.endswith('\n') or not text else '\n') + line)
    if PROJECTS[project]['backbone'] == 'seg':
        if not os.path.isdir(os.path.join(tree, 'data', 'VOCdevkit2012')):
            write_voc_seg(tree)
    elif not os.path.isdir(os.path.join(tree, 'data', 'coco')):
        write_coco(tree)
    write_pretrained(tree, project)
    return write_config(tree, project)


def run(cmd, cwd, log, timeout, env=None):
    start = time.time()
    with open(log, 'w') as out:
        # Its own process group, so that a timeout also ends what it forked (deeplab's
        # loader keeps a multiprocessing Pool) and nothing else.
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # PYTHONFAULTHANDLER (shim_env): SIGABRT writes every thread's stack to the log
            os.kill(proc.pid, signal.SIGABRT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # what it forked, if anything is left
            except ProcessLookupError:
                pass
            proc.wait()
            rc = 'timeout'
    with open(log, errors='replace') as f:
        tail = f.read()[-3000:]
    return {'cmd': ' '.join(cmd), 'rc': rc, 'seconds': round(time.time() - start, 1),
            'log': log, 'tail': tail}


def replace_all(path, old, new):
    with open(path) as f:
        text = f.read()
    if old not in text:
        return False
    with open(path, 'w') as f:
        f.write(text.replace(old, new))
    return True


def apply_edits(tree, repo, edits, label):
    done = []
    for edit_repo, rel, old, new, why in edits:
        if edit_repo not in ('*', repo):
            continue
        path = os.path.join(tree, rel)
        ok = os.path.exists(path) and replace_all(path, old, new)
        done.append({'kind': label, 'file': rel, 'applied': ok, 'why': why})
    return done


def port_kept_copies(tree, logs, timeout):
    """FORK only: `migrate --to-python3` leaves the vendored copies as they are (they are
    meant to be deleted); Relation Networks' module.py has Python 2 prints (line 767), FCIS's
    xrange (it parses as Python 3). fissix ports each once (a second run changes nothing)."""
    ported = []
    for folder, _, files in os.walk(tree):
        for name in ('module.py', 'DataParallelExecutorGroup.py'):
            path = os.path.join(folder, name)
            if name in files and os.path.basename(folder) == 'core':
                result = run([sys.executable, '-m', 'fissix', '-w', '-n', path], folder,
                             os.path.join(logs, 'fork_port_%s.log' % name), timeout)
                ported.append({'file': os.path.relpath(path, tree), 'rc': result['rc']})
    return ported


def prepare_tree(args, repo, variant):
    tree = os.path.join(args.work, '%s.%s' % (repo, variant))
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    if args.raw:
        shutil.rmtree(tree)
        shutil.copytree(os.path.join(args.raw, repo), tree, symlinks=True)
    else:
        git_dir = os.path.join(args.mirror_root, REPOS[repo], 'repo')
        archive = subprocess.run(['git', '-C', git_dir, 'archive', 'HEAD'], check=True,
                                 stdout=subprocess.PIPE, timeout=300).stdout
        subprocess.run(['tar', '-x', '-C', tree], input=archive, check=True, timeout=300)
    return tree


def migrate_tree(tree, variant, logs, timeout):
    """The README's migration, then its build (--build-ext=cpu: no nvcc here); the FORK
    tree gets the port and the same build, its vendored copies stay."""
    options = (['--write', '--delete-vendored', '--to-python3'] if variant == 'migrated'
               else ['--to-python3']) + ['--build-ext=cpu']
    result = run([sys.executable, '-m', 'mxpatch_bind', 'migrate', tree] + options, REPO_ROOT,
                 os.path.join(logs, 'migrate.log'), timeout)
    result['summary'] = result['tail'].strip().splitlines()[-1] if result['tail'].strip() else ''
    del result['tail']
    return result


def shim_env(args, trace):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.path.join(args.work, 'shim') + os.pathsep + env.get('PYTHONPATH', '')
    env.update({'PROOF_SHIM': '1', 'PROOF_SEED': '0', 'PROOF_TRACE': trace,
                'MXNET_ENGINE_TYPE': 'NaiveEngine', 'OMP_NUM_THREADS': '1',
                'PYTHONUNBUFFERED': '1', 'MXNET_CUDNN_AUTOTUNE_DEFAULT': '0',
                'PYTHONFAULTHANDLER': '1'})
    return env


def train_and_test(args, tree, project, logs):
    cfg = setup_project(tree, project)
    shutil.rmtree(os.path.join(tree, 'output', project), ignore_errors=True)
    shutil.rmtree(os.path.join(tree, 'data', 'cache'), ignore_errors=True)
    trace = os.path.join(logs, '%s_trace.jsonl' % project)
    if os.path.exists(trace):
        os.remove(trace)
    env = shim_env(args, trace)
    out = {'cfg': cfg}
    script = PROJECTS[project].get('train', 'train_end2end.py')
    out['train'] = run([sys.executable, '%s/%s' % (project, script), '--cfg', cfg], tree,
                       os.path.join(logs, '%s_train.log' % project), args.timeout, env)
    if any(k.endswith('tiny-0002.params') for k in output_files(tree, project)):
        out['test'] = run([sys.executable, '%s/test.py' % project, '--cfg', cfg], tree,
                          os.path.join(logs, '%s_test.log' % project), args.timeout, env)
    out['batches'] = sum(1 for _ in open(trace)) if os.path.exists(trace) else 0
    # An exit status alone does not say how far it got: MXNet can abort at interpreter exit
    # ('terminate called without an active exception') after the work is done.
    done = output_files(tree, project)
    out['train_completed'] = any(k.endswith('tiny-0002.params') for k in done)
    out['test_completed'] = any(k.endswith(('detections_minival2014_results.pkl', '.png'))
                                for k in done)
    return out


def output_files(tree, project):
    found = {}
    base = os.path.join(tree, 'output', project)
    for folder, _, files in os.walk(base):
        for name in files:
            if name.endswith(('.params', '.states', '.json', '.pkl', '.png')):
                path = os.path.join(folder, name)
                found[os.path.relpath(path, base)] = path
    return found


def compare(args, trees, project):
    import numpy as np
    import mxnet as mx
    result = {}
    traces = [os.path.join(args.work, 'logs', '%s.%s' % (repo, v), '%s_trace.jsonl' % project)
              for repo, v in trees]
    if all(os.path.exists(t) for t in traces):
        a, b = ([json.loads(line) for line in open(t)] for t in traces)
        result['batch_metrics_equal'] = a == b and len(a) > 0
        result['batches'] = [len(a), len(b)]
        result['last_metrics_migrated'] = a[-1] if a else None
    logs = [os.path.join(args.work, 'logs', '%s.%s' % t, '%s_test.log' % project) for t in trees]
    if all(os.path.exists(t) for t in logs):
        # COCOeval's summary lines; its pickle holds the time of day (eval['date']).
        a, b = ([line for line in open(t, errors='replace')
                 if line.startswith(' Average ') or 'IU' in line] for t in logs)
        result['eval_summary_equal'] = a == b and len(a) > 0
        result['eval_summary_migrated'] = [line.strip() for line in a[:2]]
    files = [output_files(os.path.join(args.work, '%s.%s' % t), project) for t in trees]
    result['files'] = {}
    for rel in sorted(set(files[0]) | set(files[1])):
        if rel not in files[0] or rel not in files[1]:
            result['files'][rel] = 'only in %s' % ('fork' if rel in files[1] else 'migrated')
            continue
        p, q = files[0][rel], files[1][rel]
        if rel.endswith('.params'):
            x, y = mx.nd.load(p), mx.nd.load(q)
            same = sorted(x) == sorted(y) and all(
                np.array_equal(x[k].asnumpy(), y[k].asnumpy()) for k in x)
            result['files'][rel] = 'arrays equal (%d)' % len(x) if same else 'ARRAYS DIFFER'
        else:
            same = open(p, 'rb').read() == open(q, 'rb').read()
            result['files'][rel] = 'bytes equal' if same else 'BYTES DIFFER'
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work', default='/tmp/proof/run', help='scratch folder (emptied per tree)')
    parser.add_argument('--mirror-root', default='/work/.mirror', help='folder of owner+name/repo git dirs')
    parser.add_argument('--raw', help='folder of unpacked raw trees, one per repository (instead of git)')
    parser.add_argument('--projects', default=','.join(PROJECTS), help='comma-separated subset')
    parser.add_argument('--timeout', type=int, default=900, help='seconds per process')
    parser.add_argument('--reuse', action='store_true',
                        help='keep the migrated trees of an earlier run (no new migrate)')
    parser.add_argument('--out', default='results.json')
    args = parser.parse_args()
    args.work = os.path.abspath(args.work)
    projects = [p for p in args.projects.split(',') if p]
    os.makedirs(os.path.join(args.work, 'shim'), exist_ok=True)
    with open(os.path.join(args.work, 'shim', 'sitecustomize.py'), 'w') as f:
        f.write(SHIM)
    # migrate changes while this is measured: say which one ran.
    head = subprocess.run(['git', '-C', REPO_ROOT, 'rev-parse', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', REPO_ROOT, 'status', '--short', 'mxpatch_bind'],
                           capture_output=True, text=True).stdout.splitlines()
    results = {'mxpatch_bind': {'head': head, 'uncommitted': dirty},
               'hand_edits': [list(e) for e in HAND_EDITS], 'repos': {}, 'projects': {}}
    for repo in sorted({PROJECTS[p]['repo'] for p in projects}):
        results['repos'][repo] = {}
        for variant in ('migrated', 'fork'):
            logs = os.path.join(args.work, 'logs', '%s.%s' % (repo, variant))
            os.makedirs(logs, exist_ok=True)
            tree = os.path.join(args.work, '%s.%s' % (repo, variant))
            r = results['repos'][repo][variant] = {}
            if not (args.reuse and os.path.isdir(tree)):
                tree = prepare_tree(args, repo, variant)
                r['migrate'] = migrate_tree(tree, variant, logs, args.timeout)
            r['hand_edits'] = apply_edits(tree, repo, HAND_EDITS, 'hand')
            r['setup_edits'] = apply_edits(tree, repo, SETUP_EDITS, 'setup')
            if variant == 'fork':
                r['fork_edits'] = apply_edits(tree, repo, FORK_EDITS, 'fork')
                r['fork_port'] = port_kept_copies(tree, logs, args.timeout)
            print(repo, variant, json.dumps(r.get('migrate', 'reused')), flush=True)
    for project in projects:
        repo = PROJECTS[project]['repo']
        pr = results['projects'][project] = {}
        for variant in ('migrated', 'fork'):
            tree = os.path.join(args.work, '%s.%s' % (repo, variant))
            logs = os.path.join(args.work, 'logs', '%s.%s' % (repo, variant))
            pr[variant] = train_and_test(args, tree, project, logs)
            t = pr[variant]
            print(project, variant, 'train rc=%s %ss' % (t['train']['rc'], t['train']['seconds']),
                  'completed=%s' % t['train_completed'], 'test rc=%s %ss' % (
                      t.get('test', {}).get('rc'), t.get('test', {}).get('seconds')),
                  'completed=%s' % t['test_completed'], 'batches=%d' % t['batches'], flush=True)
        pr['compare'] = compare(args, [(repo, 'migrated'), (repo, 'fork')], project)
        print(project, json.dumps(pr['compare'], indent=1), flush=True)
        with open(args.out, 'w') as f:
            json.dump(results, f, indent=1)
    with open(args.out, 'w') as f:
        json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
