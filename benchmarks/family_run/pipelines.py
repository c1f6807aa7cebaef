"""What runs: per pipeline, the repository, its own config, the head's class, the data, the stages.

A pipeline is one project of one repository on one data set, run through every script it has
for training, test and evaluation. Each stage runs one of the repository's own scripts
(``script``, from the tree's root) with ``--cfg`` pointing at a shrunk copy of one of the
repository's own configs (``configs``: a variant's base config and overrides on top of the
common shrink and the pipeline's ``overrides``) and ``args``; ``trace`` stages append each
batch's metrics to the trace the comparison reads; ``lines`` is the regular expression of
the log lines that carry the stage's results (evaluation summaries). All configs of a
pipeline have one file name (``cfg_name``, or the pipeline's): the family's scripts find a
model by the config's name (``output/<name>/<image set>``), so the variants are written to
folders of their own.
"""

REPOS = {
    'Deformable-ConvNets': 'msracver+Deformable-ConvNets',
    'Relation-Networks-for-Object-Detection': 'msracver+Relation-Networks-for-Object-Detection',
    'FCIS': 'msracver+FCIS',
    'Deep-Feature-Flow': 'msracver+Deep-Feature-Flow',
    'Flow-Guided-Feature-Aggregation': 'msracver+Flow-Guided-Feature-Aggregation',
    'AdaScale': 'enyac-group+AdaScale',
}

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
