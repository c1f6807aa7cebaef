"""Text edits applied to the trees after ``migrate``, in four lists, and how they are applied.

Each entry: (repository or '*', file from the tree's root, old text, new text, why). Every
occurrence of the old text is replaced; an entry whose old text is not there is reported
``applied: False`` (a fix that has landed in ``migrate`` leaves its temporary edit idle).

* ``HAND_EDITS``, both trees: what a user would have to edit by hand in the migrated Python
  for it to run. Every entry would be a defect of ``migrate --write --delete-vendored
  --to-python3 --build-ext=cpu``. Empty.
* ``TEMPORARY_EDITS``, both trees, only with ``--temporary-edits``: known ``migrate`` defects
  (issue 36) while their fixes land, so that the later stages of a pipeline can be measured
  meanwhile. A run that needs one is not a proof; the report says which were applied.
* ``SETUP_EDITS``, both trees: the benchmark's set-up in the family's code (not defects).
* ``FORK_EDITS``, the FORK tree only: what the fork itself needs on MXNet 1.9.1 (not
  ``migrate`` defects: the reason to leave the fork).
"""
import os

from .pipelines import ANALYZE_LOSS_SETTINGS

HAND_EDITS = []

_VOC_EVAL_TEXT_FILES = "the pickle file-mode fixer matches handles by name: the text files " \
    "this function opens as 'f' beside its pickled cache get 'rb' (issue 36)"
TEMPORARY_EDITS = [
    (repo, 'lib/dataset/%s.py' % module, "open(%s, 'rb')" % name, "open(%s, 'r')" % name,
     _VOC_EVAL_TEXT_FILES)
    for repo, module, names in (
        ('Deformable-ConvNets', 'pascal_voc_eval', ('imageset_file', 'detfile', 'image_list')),
        ('FCIS', 'pascal_voc_eval', ('imageset_file', 'detfile', 'image_list')),
        ('Deep-Feature-Flow', 'imagenet_vid_eval', ('imageset_file', 'detpath')),
        ('AdaScale', 'imagenet_vid_eval', ('imageset_file', 'detpath')),
        ('Flow-Guided-Feature-Aggregation', 'imagenet_vid_eval_motion',
         ('imageset_file', 'detpath', 'det')),
        ('Flow-Guided-Feature-Aggregation', 'imagenet_vid_eval',
         ('imageset_file', 'detpath', 'det')))
    for name in names
] + [
    (repo, rel, 'time.clock()', 'time.process_time()',
     "time.clock() was removed in Python 3.8 and migrate does not port it (issue 36); "
     "process_time is what it measured on Linux")
    for repo, rel in (('Deep-Feature-Flow', 'rfcn/core/tester.py'),
                      ('AdaScale', 'rfcn/core/tester.py'))
] + [
    ('AdaScale', rel, 'open(%s)' % name, "open(%s, 'rb')" % name,
     "open() with no mode, then pickle.load(f, encoding='latin1'): migrate gives no 'rb' "
     "(UnicodeDecodeError; issue 36)")
    for rel, name in (('analyze_loss.py', 'filename'), ('analyze_latency.py', 'optimal_file'),
                      ('rfcn/core/loader.py', 'name'),
                      ('lib/dataset/imagenet_vid.py', 'optimal_output_path'))
] + [
    ('Flow-Guided-Feature-Aggregation', 'fgfa_rfcn/symbols/resnet_v1_101_flownet_rfcn.py',
     'aggregated_conv_feat += tiled_weight * warp_list[i]',
     'aggregated_conv_feat = aggregated_conv_feat + tiled_weight * warp_list[i]',
     "Symbol.__iadd__ raises NotImplementedForSymbol in MXNet 1.9.1; migrate names no "
     "in-place operator on a Symbol (issue 36)"),
]

SETUP_EDITS = [
    ('Relation-Networks-for-Object-Detection', 'relation_rcnn/train_end2end.py',
     "train_data = PrefetchingIter(train_data)",
     "train_data = PrefetchingIter(train_data, prefetch_n_iter=1)",
     "deterministic batch order (4 prefetch threads race on one loader)"),
] + [
    ('AdaScale', 'rfcn/train_scalereg.py', old, new,
     "the scale regressor as AdaScale's test_scalereg.py and test_adavid.py load it (grow, "
     "shrink, scale): train_scalereg.py ships the 1x1 ablation ('TODO: ABLATION'), whose "
     "model those scripts cannot load (AssertionError: grow_weight not initialized, on "
     "Python 2 as well); its own commented lines for the full one")
    for old, new in (('    # sym = sym_instance.get_scalereg_symbol(config)\n'
                      '    sym = sym_instance.get_scalereg_1x1_symbol(config)',
                      '    sym = sym_instance.get_scalereg_symbol(config)'),
                     ('        # sym_instance.init_scale_reg(config, arg_params, aux_params)\n'
                      '        sym_instance.init_scale_reg_1x1(config, arg_params, aux_params)',
                      '        sym_instance.init_scale_reg(config, arg_params, aux_params)'))
] + [
    ('road_obj_detect', 'rfcn/inference.py', 'gpu_nms_wrapper(config.TEST.NMS, 0)',
     'cpu_nms_wrapper(config.TEST.NMS)',
     "inference.py asks for CUDA's NMS on GPU 0 whatever the context (its predictor's "
     "mx.gpu(0) is the shim's cpu(0)); a CPU build has no gpu_nms (migrate's guard names "
     "CUDA at the call): the same NMS of lib/nms/nms.py, its CPU twin, the shim's device "
     "choice for NMS"),
    ('road_obj_detect', 'rfcn/inference.py', "config.symbol = 'resnet_v1_101_rfcn'",
     "config.symbol = 'tiny_road_obj_detect'",
     "inference.py sets its symbol in code, over the config's: the tiny backbone under the "
     "same head, as the config names it for road_train.py"),
] + [
    ('mx-maskrcnn', 'rcnn/tools/train_maskrcnn.py', 'config.TRAIN.BATCH_ROIS = 256',
     'config.TRAIN.BATCH_ROIS = 16',
     "train_maskrcnn sets its ROIs per image in code, over the config's: 16 (4 foreground) "
     "where it takes 256, per FPN level, through the mask head's four 256-channel "
     "convolutions"),
] + [
    ('AdaScale', 'analyze_loss.py', old, new,
     "analyze_loss.py's inputs are constants (its authors' absolute paths, the symbol's name, "
     "the resolutions): pointed at this run's outputs")
    for old, new in ANALYZE_LOSS_SETTINGS.items()
]

_RESHAPE = ('*', '%s/core/DataParallelExecutorGroup.py',
            "arg_arr = arg_arr.reshape(arg_shape)",
            "arg_arr = arg_arr.reshape((-1,))[:int(np.prod(arg_shape))].reshape(arg_shape)",
            "the fork's _get_or_reshape shrinks a shared buffer with NDArray.reshape, which "
            "MXNet 1.9.1 refuses: ValueError: Cannot reshape array of size 500 into shape "
            "(1, 2, 5) (gt_boxes bound at (1, 100, 5)) at the first batch; the view MXNet "
            "0.12 returned")
_COPIES = ('faster_rcnn', 'rfcn', 'fpn', 'deeplab', 'relation_rcnn', 'fcis', 'dff_rfcn',
           'fgfa_rfcn')
_OLD_COPIES = (('FCIS', 'fcis'), ('Deep-Feature-Flow', 'rfcn'), ('Deep-Feature-Flow', 'dff_rfcn'),
               ('Flow-Guided-Feature-Aggregation', 'fgfa_rfcn'))
FORK_EDITS = [_RESHAPE[:1] + (_RESHAPE[1] % project,) + _RESHAPE[2:] for project in _COPIES] + [
    ('FCIS', 'fcis/symbols/resnet_v1_101_fcis.py', 'mx.contrib.sym.ChannelOperator(',
     "__import__('mxpatch_bind.compat').compat.ChannelOperator(",
     "FCIS's own MXNet build registered ChannelOperator in C++; stock MXNet 1.9.1 has none, "
     "so the FORK tree takes compat's too (what the MIGRATED tree gets from migrate --write): "
     "the comparison is of the module"),
] + [
    ('mx-maskrcnn', rel, old, "__import__('mxpatch_bind.compat').compat.ROIAlign(",
     "mx-maskrcnn's own MXNet build registered ROIAlign in C++ (rcnn/CXX_OP, copied into "
     "MXNet's source by its README); stock MXNet 1.9.1 has none (its contrib.ROIAlign is "
     "another computation), so the FORK tree takes compat's too (what the MIGRATED tree "
     "gets from migrate --write): the comparison is of the module")
    for rel, old in (('rcnn/symbol/symbol_mask_fpn.py', 'mx.symbol.ROIAlign('),
                     ('rcnn/PY_OP/fpn_roi_pooling.py', 'mx.nd.ROIAlign('))
] + [
    (repo, '%s/core/module.py' % project,
     "self._exec_group.grad_arrays,\n                                      self._kvstore)",
     "self._exec_group.grad_arrays,\n                                      self._kvstore, "
     "self._exec_group.param_names)",
     "the copy calls mxnet.model._update_params_on_kvstore without param_names, which "
     "MXNet 1.9.1 requires: TypeError at the first update")
    for repo, project in _OLD_COPIES
] + [
    (repo, '%s/core/module.py' % project, "allow_missing=False, force_init=False):",
     "allow_missing=False, force_init=False, allow_extra=False):",
     "the copy's init_params (Module's and MutableModule's) take no allow_extra, which MXNet "
     "1.9.1's BaseModule.set_params passes: TypeError at the first epoch's end")
    for repo, project in _OLD_COPIES + (('AdaScale', 'rfcn'),)
]


def _replace_all(path, old, new):
    with open(path) as f:
        text = f.read()
    if old not in text:
        return False
    with open(path, 'w') as f:
        f.write(text.replace(old, new))
    return True


def apply_edits(tree, repo, edits, label):
    """Apply the entries of ``edits`` for ``repo``; one record per entry."""
    done = []
    for edit_repo, rel, old, new, why in edits:
        if edit_repo not in ('*', repo):
            continue
        path = os.path.join(tree, rel)
        applied = os.path.exists(path) and _replace_all(path, old, new)
        done.append({'kind': label, 'file': rel, 'old': old, 'new': new, 'applied': applied,
                     'why': why})
    return done
