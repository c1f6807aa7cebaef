"""What runs: per pipeline, the repository, its own config, the head's class, the data, the stages.

A pipeline is one project of one repository on one data set, run through every script it has
for training, test and evaluation. Each stage runs one of the repository's own scripts
(``script``, from the tree's root, or from the pipeline's ``cwd`` in it) with ``--cfg``
pointing at a shrunk copy of one of the repository's own configs (``configs``: a variant's
base config and overrides on top of the common shrink and the pipeline's ``overrides``) and
``args``; ``trace`` stages append each batch's metrics to the trace the comparison reads;
``lines`` is the regular expression of the log lines that carry the stage's results
(evaluation summaries). All configs of a pipeline have one file name (``cfg_name``, or the
pipeline's): the family's scripts find a model by the config's name (``output/<name>/<image
set>``), so the variants are written to folders of their own. A repository whose config is
a Python module (mx-rcnn) names it in ``config_module`` and its shrink in
``config_overrides`` (``python_config.py``).
"""

REPOS = {
    'Deformable-ConvNets': 'msracver+Deformable-ConvNets',
    'Relation-Networks-for-Object-Detection': 'msracver+Relation-Networks-for-Object-Detection',
    'FCIS': 'msracver+FCIS',
    'Deep-Feature-Flow': 'msracver+Deep-Feature-Flow',
    'Flow-Guided-Feature-Aggregation': 'msracver+Flow-Guided-Feature-Aggregation',
    'AdaScale': 'enyac-group+AdaScale',
    'mx-rcnn': 'ijkguo+mx-rcnn',
    'road_obj_detect': 'dhzhd1+road_obj_detect',
    '3DCE_new': 'jpulidojr+3DCE_new',
    'mx-maskrcnn': 'TuSimple+mx-maskrcnn',
    'SNIPER': 'mahyarnajibi+SNIPER',
}
# Repositories run in their MIGRATED tree alone: SNIPER's fork is its own MXNet build
# (its submodule SNIPER-mxnet), which pip's MXNet cannot stand in for; its outputs are
# checked instead (finite, not all zeros: sniper.check_outputs).
MIGRATED_ONLY = {'SNIPER'}
# A repository run at another revision than its mirror's HEAD: mx-rcnn's HEAD is its 2018
# rewrite (symnet/, stock Module, Python 3); 6f9f4eb is the last revision of the MutableModule
# form (rcnn/core/module.py, deleted by 024f59e), the one migrate rewrites to compat.
REVISIONS = {'mx-rcnn': '6f9f4eb'}

# What the evaluations print: COCOeval's summary, VOC's and ImageNet VID's APs, mean IU and
# the IU of each class (deeplab prints them one a line)
EVAL_LINES = (r'^( Average (Precision|Recall)|AP for |Mean AP|mean(IU| IU)|motion \[|'
              r'VOC07 metric|\d+\.\d+$)')


def _train(project, script='train_end2end.py'):
    return dict(name='train', script='%s/%s' % (project, script), trace=True)


def _test(project, script='test.py', name='test', cfg='main'):
    return dict(name=name, script='%s/%s' % (project, script), cfg=cfg, lines=EVAL_LINES)


def _detection(repo, project, cfg, base, backbone, data, **extra):
    spec = dict(repo=repo, project=project, cfg=cfg, base=base, backbone=backbone, data=data,
                stages=[_train(project), _test(project)])
    spec.update(extra)
    return spec


DCN = 'Deformable-ConvNets'
DCN_CFG = 'experiments/%s/cfgs/resnet_v1_101_%s.yaml'
VID_CFG = 'experiments/%s/cfgs/resnet_v1_101_%simagenet_vid_rfcn_end2end_ohem.yaml'
RELATION = 'resnet_v1_101_coco_trainvalminus_rcnn_end2end_relation_8epoch'
DEEPLAB = 'experiments/deeplab/cfgs/deeplab_resnet_v1_101_%s_segmentation_base.yaml'

PIPELINES = {
    'faster_rcnn': _detection(DCN, 'faster_rcnn',
                              DCN_CFG % ('faster_rcnn', 'coco_trainval_rcnn_end2end'),
                              'resnet_v1_101_rcnn', 'c4', 'coco'),
    'faster_rcnn_voc': _detection(DCN, 'faster_rcnn',
                                  DCN_CFG % ('faster_rcnn', 'voc0712_rcnn_end2end'),
                                  'resnet_v1_101_rcnn', 'c4', 'voc'),
    'rfcn': _detection(DCN, 'rfcn', DCN_CFG % ('rfcn', 'coco_trainval_rfcn_end2end_ohem'),
                       'resnet_v1_101_rfcn', 'c4', 'coco'),
    'rfcn_voc': _detection(DCN, 'rfcn', DCN_CFG % ('rfcn', 'voc0712_rfcn_end2end_ohem'),
                           'resnet_v1_101_rfcn', 'c4', 'voc'),
    'fpn': _detection(DCN, 'fpn', DCN_CFG % ('fpn', 'coco_trainval_fpn_end2end_ohem'),
                      'resnet_v1_101_fpn_rcnn', 'fpn', 'coco'),
    'deeplab': dict(repo=DCN, project='deeplab', base='resnet_v1_101_deeplab', backbone='seg',
                    cfg=DEEPLAB % 'voc12', data='voc_seg',
                    stages=[_train('deeplab', 'train.py'), _test('deeplab')]),
    'deeplab_cityscapes': dict(repo=DCN, project='deeplab', base='resnet_v1_101_deeplab',
                               backbone='seg', cfg=DEEPLAB % 'cityscapes', data='cityscapes',
                               stages=[_train('deeplab', 'train.py'), _test('deeplab')]),
    'relation_rcnn': _detection(
        'Relation-Networks-for-Object-Detection', 'relation_rcnn',
        'experiments/relation_rcnn/cfgs/%s.yaml' % RELATION,
        'resnet_v1_101_rcnn_attention_1024_pairwise_position_multi_head_16', 'c4', 'coco'),
    'fcis': _detection('FCIS', 'fcis', DCN_CFG % ('fcis', 'coco_fcis_end2end_ohem'),
                       'resnet_v1_101_fcis', 'c4', 'coco'),
    'fcis_sds': _detection('FCIS', 'fcis', DCN_CFG % ('fcis', 'vocSDS_fcis_end2end'),
                           'resnet_v1_101_fcis', 'c4', 'sds'),
    'dff_rfcn': _detection('Deep-Feature-Flow', 'dff_rfcn', VID_CFG % ('dff_rfcn', 'flownet_'),
                           'resnet_v1_101_flownet_rfcn', 'dff', 'vid'),
    'dff_frame_rfcn': _detection('Deep-Feature-Flow', 'rfcn', VID_CFG % ('rfcn', ''),
                                 'resnet_v1_101_rfcn', 'vid', 'vid'),
    # FGFA's head tiles its aggregation weights to 1024 channels: the backbone gives 1024.
    # TEST.SEQ_NMS's evaluation is broken in the repository itself, on Python 2 as well:
    # lib/dataset/imagenet_vid.py defines write_vid_results_multiprocess twice, the second
    # (one argument) wins, and evaluate_detections_multiprocess_seqnms passes two.
    'fgfa_rfcn': _detection('Flow-Guided-Feature-Aggregation', 'fgfa_rfcn',
                            VID_CFG % ('fgfa_rfcn', 'flownet_'), 'resnet_v1_101_flownet_rfcn',
                            'fgfa', 'vid', feat=1024),
}

# AdaScale (README, experiments/rfcn/*.py): R-FCN training and test (its tester feeds one
# device: its test configs name one GPU) and a re-evaluation of the test's results at IoU
# 0.5:0.95 (eval_results.py); the loss at each scale (testloss.py, once per resolution);
# analyze_loss.py picks each image's best scale, analyze_latency.py the latency it implies;
# the scale regressor trains on them (train_scalereg.py) and predicts scales
# (test_scalereg.py); adaptive inference (test_adavid.py) runs each frame at the scale the
# frame before regressed. Every stage reads and writes one folder
# (output/adascale/adascale/MIX_train), as the scripts' paths expect: the configs share one
# name, in folders of their own.
ADASCALE_SCALES = [(64, 2000), (48, 2000)]
ADA_CFGS = 'experiments/rfcn/cfgs/%s.yaml'
ADA_OUT = 'output/adascale/adascale/'
PIPELINES['adascale'] = dict(
    repo='AdaScale', project='rfcn', base='resnet_v1_101_rfcn', backbone='vid', data='vid',
    cfg=ADA_CFGS % 'resnet_v1_101_imagenet_vid_rfcn_end2end_ohem', cfg_name='adascale',
    # two training and two test scales: multi-scale training and its tester's merge
    # its evaluation saves a PR curve per class and needs a detection of every class: no cap
    overrides=dict(SCALES=[64, 96, 48, 96], TEST_SCALES=[[64, 96], [48, 96]],
                   dataset={'image_set': 'MIX_train', 'test_image_set': 'VID_val_frames'},
                   TEST={'max_per_image': 100000}),
    folders=['prcurve'],  # imagenet_vid_eval.py writes its PR curves to ./prcurve
    configs=dict({
        'loss_%d' % s: dict(cfg=ADA_CFGS % 'rfcn_testloss', SCALES=[s, m],
                            TEST_SCALES=[[s, m]], dataset={'test_image_set': 'MIX_train'})
        for s, m in ADASCALE_SCALES},
        test=dict(gpus='0'),
        scalereg=dict(cfg=ADA_CFGS % 'resnet_v1_101_scalereg', SCALES=[64, 2000],
                      network={'pretrained': './' + ADA_OUT + 'MIX_train/tiny',
                               'pretrained_epoch': 2},
                      TRAIN={'model_prefix': 'tiny_scalereg', 'lr_step': '1.5', 'end_epoch': 2}),
        test_scalereg=dict(cfg=ADA_CFGS % 'rfcn_test_scalereg', SCALES=[64, 2000],
                           TRAIN={'model_prefix': 'tiny_scalereg'},
                           dataset={'test_image_set': 'MIX_train'}),
        adaptive=dict(cfg=ADA_CFGS % 'rfcn_vid_adaptive', SCALES=[64, 2000],
                      MIN_REG_SCALE=32, MAX_REG_SCALE=64,
                      TRAIN={'model_prefix': '', 'rfcn_model_prefix': 'tiny',
                             'regressor_model_prefix': 'tiny_scalereg'},
                      TEST={'reg_test_epoch': 2})),
    stages=[
        _train('rfcn'), _test('rfcn', cfg='test'),
        dict(_test('rfcn', 'eval_results.py', 'eval_results', 'test'),
             args=['--result', ADA_OUT + 'VID_val_frames/results/det_VID_val_frames_all.txt']),
    ] + [_test('rfcn', 'testloss.py', 'testloss_%d' % s, 'loss_%d' % s)
         for s, _ in ADASCALE_SCALES] + [
        dict(name='analyze_loss', script='analyze_loss.py', cfg=None,
             lines=r'^(Resolutions|Avg\.|Hist|Latency)'),
        dict(name='analyze_latency', script='analyze_latency.py', cfg=None, lines=r'^Expected',
             args=[ADA_OUT + 'MIX_train/tiny_adascale_optimal.pkl', ADA_OUT + 'latency.png']),
        dict(name='train_scalereg', script='rfcn/train_scalereg.py', cfg='scalereg', trace=True),
        dict(_test('rfcn', 'test_scalereg.py', 'test_scalereg', 'test_scalereg'), lines=None),
        _test('rfcn', 'test_adavid.py', 'test_adavid', 'adaptive'),
    ])

# analyze_loss.py keeps its inputs in constants (absolute paths of its authors' machine):
# the benchmark points them at this run's outputs (SETUP_EDITS in edits.py).
ANALYZE_LOSS_SETTINGS = {
    "root = '/data/adascale_output/rfcn/imagenet_vid/rfcn_testloss/'":
        "root = './output/adascale/adascale/'",
    "t_root = '/data/adascale_output/rfcn/imagenet_vid/resnet_v1_101_scalereg_1x1/'":
        "t_root = './output/adascale/adascale/'",
    "net = 'resnet_v1_101_rfcn'": "net = 'tiny_adascale'",
    "resolutions = [(600, 2000), (480, 2000), (360, 2000), (240, 2000), (128, 2000)]":
        'resolutions = %r' % ADASCALE_SCALES,
}

# mx-rcnn (6f9f4eb): end-to-end Faster R-CNN (train_end2end.py, its MutableModule) on PASCAL
# VOC 2007+2012 trainval, then test.py (its Predictor, a MutableModule on one device) and
# the VOC evaluation on 2007 test. Its config is rcnn/config.py (python_config.py); the
# shrink is set on that module's objects, the rest is the scripts' own options.
MX_RCNN_PREFIX = 'output/mx_rcnn/e2e'
MX_RCNN_DATA = ['--network', 'tiny', '--dataset', 'PascalVOC']
PIPELINES['mx_rcnn'] = dict(
    repo='mx-rcnn', data='voc', config_module='rcnn.config',
    # the checkpoints' folder (the README has a user make model/) and the VOC result files
    folders=['output/mx_rcnn', 'data/VOCdevkit/results'],
    config_overrides={'rcnn.config': {
        'config.SCALES': [[64, 96]], 'config.ANCHOR_SCALES': [2, 4], 'config.NUM_ANCHORS': 6,
        'config.TRAIN.RPN_PRE_NMS_TOP_N': 300, 'config.TRAIN.RPN_POST_NMS_TOP_N': 32,
        'config.TEST.RPN_PRE_NMS_TOP_N': 300, 'config.TEST.RPN_POST_NMS_TOP_N': 150,
        'network.tiny': {'pretrained': 'model/tiny', 'pretrained_epoch': 0}}},
    stages=[
        dict(name='train', script='train_end2end.py', cfg=None, trace=True,
             args=MX_RCNN_DATA + ['--image_set', '2007_trainval+2012_trainval',
                                  '--gpus', '0,1', '--prefix', MX_RCNN_PREFIX,
                                  '--end_epoch', '2', '--lr_step', '1', '--no_flip',
                                  '--no_shuffle', '--frequent', '1']),
        dict(name='test', script='test.py', cfg=None,
             lines=r'(AP for |Mean AP|VOC07 metric)',
             # --thresh 0 (its own option; 1e-3 by default): every box of every class
             # reaches the evaluation, whose APs of car and dog then count true positives
             args=MX_RCNN_DATA + ['--image_set', '2007_test', '--prefix', MX_RCNN_PREFIX,
                                  '--epoch', '2', '--gpu', '0', '--thresh', '0']),
    ])

# dhzhd1/road_obj_detect: its README's two commands, from rfcn/: road_train.py --cfg
# road_train_all.yaml (R-FCN with OHEM on RoadImages, its modified module's fit(allow_extra=))
# and inference.py, its wild test: it reads ./road_train_all.yaml, globs
# ./data/RoadImages/test/*.jpg, loads output/rfcn/road_obj/road_train_all/all/rfcn_road-0019,
# and writes the detections above 0.7 to ./results.json and each image with its boxes to
# ./bbox_pic/. The shrunk config is written over road_train_all.yaml; training runs epochs 17
# and 18 (the config's begin_epoch: 17, saving 0018 and 0019, the epoch inference.py loads).
# Its config names one GPU: two contexts here, as for the other repositories' training.
PIPELINES['road_obj_detect'] = dict(
    repo='road_obj_detect', project='rfcn', cfg='rfcn/road_train_all.yaml',
    base='resnet_v1_101_rfcn', backbone='c4', data='road', cfg_name='road_train_all',
    cwd='rfcn', config_at='rfcn/road_train_all.yaml',
    folders=['output/rfcn', 'bbox_pic'], files=['results.json'],
    overrides=dict(gpus='0,1', output_path='./output/rfcn/road_obj',
                   TRAIN={'model_prefix': 'rfcn_road', 'begin_epoch': 17, 'end_epoch': 19,
                          'lr_step': '17.5'}),
    stages=[dict(name='train', script='road_train.py', cfg=None, trace=True,
                 args=['--cfg', 'road_train_all.yaml']),
            dict(name='test', script='inference.py', cfg=None,
                 lines=r'^(Image amount|New Label)')])

# jpulidojr/3DCE_new: rcnn/tools/train.py (train.sh's one command) trains 3DCE (its modified
# module's fit(iter_size=): 2 batches accumulated into each update here), validates after
# each epoch and tests the best epoch (test_net, rcnn/tools/test.py's function) at its end;
# one stage. Its configs are config.yml and default.yml at the tree's root (deeplesion.py).
PIPELINES['3dce'] = dict(
    repo='3DCE_new', data='deeplesion',
    folders=['model', 'data/DeepLesion/cache'], files=['proposals_test_tiny.mat'],
    yaml_overrides={
        # IMG_DO_CLIP stays (True): its test batches read the crop only clipping records
        'config.yml': {'NORM_SPACING': 0.8, 'ANCHOR_SCALES': [2, 4],
                       'TRAIN': {'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 32},
                       'TEST': {'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 150}},
        'default.yml': {'exp_name': 'tiny', 'gpus': '0,1', 'prefetch_thread_num': 0,
                        'shuffle': False, 'begin_sample': 100, 'network': 'tiny',
                        'pretrained': './model/pretrained/tiny3dce', 'pretrained_epoch': 0,
                        'dataset_path': './data/DeepLesion/',
                        'image_path': './data/DeepLesion/Images_16bit/',
                        'groundtruth_file': 'DL_info.csv', 'e2e_lr_step': '1',
                        'e2e_epoch': 2, 'frequent': 1, 'show_avg_loss': 1, 'iter_size': 2,
                        'validate_at_begin': False}},
    stages=[dict(name='train', script='rcnn/tools/train.py', cfg=None, trace=True,
                 # its validations' and test's sensitivities, PR values, TP / FP ids
                 # (its arrays print as '[0. 0. ...]'; MXNet's log lines start '[hh:mm:ss]')
                 lines=r'^(Sensitivity @|Iter \d+:|\[(?!\d\d:)|---|precision|recall|'
                       r'f-measure)')])

# TuSimple/mx-maskrcnn at HEAD (c35fb76): its README's training (scripts/train_alternate.sh:
# train_alternate_mask_fpn.py, the one training script, whose four alternating stages train
# the RPN, the Mask R-CNN head on its proposals, the RPN again and the head again, and combine
# them into final-0000) and evaluation (scripts/eval.sh: eval_maskrcnn.py, its tester and
# Cityscape.evaluate_mask, which writes each detection's mask and a list per image; then
# cityscapesScripts' evalInstanceLevelSemanticLabeling, which eval.sh runs from a checkout
# that scripts/download_cityscapescripts.sh fetches: here the pip package, run as a module
# with Cityscapes' own variables pointing at the data and the predictions). The config is
# the Python module rcnn/config.py (as mx-rcnn's): SCALES are set on dataset.Cityscape too,
# which generate_config copies over config's; a network.tiny_fpn entry for generate_config.
MASKRCNN_PREFIX = 'model/tiny-fpn/cityscape/alternate'
MASKRCNN_DATA = ['--network', 'tiny_fpn', '--dataset', 'Cityscape']
PIPELINES['mx_maskrcnn'] = dict(
    repo='mx-maskrcnn', data='cityscape_instances', config_module='rcnn.config',
    folders=[MASKRCNN_PREFIX, 'data/rpn_data', 'data/cityscape/results/pred',
             'data/cityscape/evaluationResults'],
    config_overrides={'rcnn.config': {
        'config.SCALES': [[128, 256]], 'dataset.Cityscape.SCALES': [[128, 256]],
        'config.TRAIN.RPN_PRE_NMS_TOP_N': 300, 'config.TRAIN.RPN_POST_NMS_TOP_N': 64,
        'config.TEST.RPN_PRE_NMS_TOP_N': 300, 'config.TEST.RPN_POST_NMS_TOP_N': 32,
        'config.TEST.PROPOSAL_PRE_NMS_TOP_N': 300, 'config.TEST.PROPOSAL_POST_NMS_TOP_N': 64,
        'config.TRAIN.RPN_BATCH_SIZE': 64,
        # its own option: the fixed means and stds of the targets; the empirical ones of
        # a few tiny images leave a zero std (NaN targets, NaN weights) in the last stage
        'config.TRAIN.BBOX_NORMALIZATION_PRECOMPUTED': True,
        'network.tiny_fpn': {'pretrained': 'model/tiny', 'pretrained_epoch': 0}}},
    stages=[
        dict(name='train', script='train_alternate_mask_fpn.py', cfg=None, trace=True,
             args=MASKRCNN_DATA + ['--image_set', 'train', '--root_path', 'data',
                                   '--pretrained', 'model/tiny', '--pretrained_epoch', '0',
                                   '--prefix', MASKRCNN_PREFIX, '--gpus', '0,1',
                                   '--rpn_epoch', '1', '--rpn_lr_step', '1',
                                   '--rcnn_epoch', '1', '--rcnn_lr_step', '1',
                                   '--no_flip', '--no_shuffle', '--frequent', '1']),
        # --thresh 0 (its own option; 1e-3 by default, under which the tiny model's test
        # keeps no box): every box of every class reaches the masks and the evaluation
        dict(name='test', script='eval_maskrcnn.py', cfg=None,
             lines=r'^writing results for',
             args=MASKRCNN_DATA + ['--has_rpn', '--image_set', 'val',
                                   '--prefix', MASKRCNN_PREFIX + '/final',
                                   '--result_path', 'data/cityscape/results/pred/',
                                   '--epoch', '0', '--gpu', '0', '--thresh', '0']),
        dict(name='eval', module='cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling',
             cfg=None, env={'CITYSCAPES_DATASET': 'data/cityscape',
                            'CITYSCAPES_RESULTS': 'data/cityscape/results/pred'},
             lines=r'(person|rider|car|truck|bus|train|motorcycle|bicycle|average)\s*:'),
    ])

# mahyarnajibi/SNIPER at HEAD (66d7d5b): its README's training with negative chip mining,
# scripts/train_neg_props_and_sniper.sh's three commands, then its README's test. A proposal
# network trained 2 epochs (main_train.py, TRAIN.ONLY_PROPOSAL: its RPN alone, chips without
# negative mining); its proposals on the training set (main_test.py, TEST.EXTRACT_PROPOSALS);
# SNIPER trained on chips with negative chips from them (main_train.py: its chip generator,
# MultiProposalTarget, deformable PS-ROI pooling, 2 epochs); its detection test on
# minival2014 (main_test.py: MultiProposal, chips_inference, NMS, COCO's evaluation). The
# config: its sniper_res101_e2e.yml, shrunk (sniper.py); the script's own --set options.
SNIPER_CFG = 'configs/faster/tiny_sniper.yml'
SNIPER_PROPS = ['TEST.PROPOSAL_SAVE_PATH', 'data/computed_proposals',
                'output_path', 'output/sniper_neg_proposals']
PIPELINES['sniper'] = dict(
    repo='SNIPER', data='sniper_coco',
    folders=['output/sniper', 'output/sniper_neg_proposals', 'data/computed_proposals'],
    stages=[
        dict(name='train_props', script='main_train.py', cfg='main', trace=True,
             args=['--display', '1', '--set', 'TRAIN.USE_NEG_CHIPS', 'False',
                   'TRAIN.ONLY_PROPOSAL', 'True', 'TRAIN.end_epoch', '2',
                   'output_path', 'output/sniper_neg_proposals']),
        dict(name='extract_props', script='main_test.py', cfg='main',
             args=['--set', 'TEST.EXTRACT_PROPOSALS', 'True', 'TEST.TEST_EPOCH', '2',
                   'dataset.test_image_set', 'train2014'] + SNIPER_PROPS),
        dict(name='train', script='main_train.py', cfg='main', trace=True,
             args=['--display', '1', '--set', 'proposal_path', 'data/computed_proposals']),
        # its COCO evaluation prints the mean AP and each class's (ours: block, slab)
        dict(name='test', script='main_test.py', cfg='main',
             lines=r'^(all|block|slab)\s+\d|^ Average'),
    ])
