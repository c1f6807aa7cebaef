"""Each pipeline's own configs, shrunk: 2 devices, 64x96 images, 2 epochs of 2 batches.

The repository's YAML is read, the common shrink applied (contexts, scales, the tiny symbol
and its 'pretrained' weights, the data set, short training, proposal counts), then the
pipeline's ``overrides`` and the variant's. Settings that make a run deterministic: no
shuffle or flip; ``RPN_BATCH_SIZE`` above the anchor count (the anchor loader then samples
nothing in its prefetch thread); video training offsets that draw nothing (DFF) or draw only
in the loader's thread (FGFA).
"""
import copy
import os

DATASETS = {
    'coco': {'NUM_CLASSES': 3, 'dataset': 'coco', 'dataset_path': './data/coco',
             'image_set': 'train2014', 'test_image_set': 'minival2014'},
    'voc': {'NUM_CLASSES': 21, 'dataset': 'PascalVOC', 'dataset_path': './data/VOCdevkit',
            'image_set': '2007_trainval+2012_trainval', 'test_image_set': '2007_test'},
    'voc_seg': {'dataset': 'PascalVOC', 'dataset_path': './data/VOCdevkit2012',
                'image_set': '2012_train_seg', 'test_image_set': '2012_val_seg'},
    'cityscapes': {'NUM_CLASSES': 19, 'dataset': 'CityScape', 'dataset_path': './data/cityscapes',
                   'image_set': 'leftImg8bit_train', 'test_image_set': 'leftImg8bit_val'},
    'sds': {'NUM_CLASSES': 21, 'dataset': 'PascalVOC', 'dataset_path': './data/VOCdevkit',
            'image_set': 'SDS_train', 'test_image_set': 'SDS_val'},
    'vid': {'NUM_CLASSES': 31, 'dataset': 'ImageNetVID', 'dataset_path': './data/ILSVRC2015',
            'image_set': 'DET_train_30classes+VID_train_15frames',  # the config's own test set
            'motion_iou_path': './data/ILSVRC2015/motion_iou.mat', 'enable_detailed_eval': True},
    'road': {'NUM_CLASSES': 5, 'dataset': 'RoadImages', 'dataset_path': 'RoadImages',
             'image_set': 'all', 'test_image_set': 'test'},
}
SHORT_TRAINING = {'begin_epoch': 0, 'end_epoch': 2, 'lr_step': '1.5', 'warmup': False,
                  'FLIP': False, 'SHUFFLE': False, 'RESUME': False, 'model_prefix': 'tiny'}
PROPOSALS = {'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 32, 'CXX_PROPOSAL': True}


def merge(into, overrides):
    """``overrides`` written into ``into``, dictionaries merged key by key."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def _gpus(cfg):
    # two contexts where the repository's config uses several; its own one where it uses one
    # (AdaScale's loss, scale-test and adaptive scripts feed one device)
    gpus = str(cfg.get('gpus', '0')).split(',')
    return '0,1' if len(gpus) > 1 else gpus[0]


def _detection(cfg, spec):
    net, train, test = cfg['network'], cfg['TRAIN'], cfg['TEST']
    if spec['backbone'] != 'fpn':
        net['ANCHOR_SCALES'] = [1, 2]
        net['NUM_ANCHORS'] = 2 * len(net['ANCHOR_RATIOS'])
    merge(train, dict(SHORT_TRAINING, RPN_BATCH_SIZE=1000000, **PROPOSALS))
    if train.get('BATCH_ROIS', -1) != -1:
        train['BATCH_ROIS'] = 32
    if 'BATCH_ROIS_OHEM' in train:
        train['BATCH_ROIS_OHEM'] = 16
    # at test, every anchor a proposal and no cap on detections: the anchors that are the
    # objects (data_still) reach the evaluation
    merge(test, dict(PROPOSALS, test_epoch=2, RPN_POST_NMS_TOP_N=150, max_per_image=100000))
    if 'USE_GPU_MASK_MERGE' in test:  # FCIS's switch between its CUDA and CPU mask voting
        test['USE_GPU_MASK_MERGE'] = False
    if spec['data'] == 'vid':
        net['DFF_FEAT_DIM'] = spec.get('feat', 32)
        net['pretrained_flow'] = './model/pretrained_model/tiny_%s_flow' % spec['name']
        # DFF's reference frame is the one before (randint over one value draws nothing), a
        # key frame every 2 (the test's three kinds of frames in a 3-frame video); FGFA picks
        # two of the three around a frame; its test keeps 19 frames (loader.py's constant)
        if spec['backbone'] == 'fgfa':
            train['MIN_OFFSET'], train['MAX_OFFSET'] = -1, 1
        else:
            train['MIN_OFFSET'], train['MAX_OFFSET'] = -1, -1
            test['KEY_FRAME_INTERVAL'] = 2


def _segmentation(cfg):
    merge(cfg['TRAIN'], dict(SHORT_TRAINING, ENABLE_CROP=False, CROP_HEIGHT=64, CROP_WIDTH=96))
    cfg['TEST']['test_epoch'] = 2


def shrink(cfg, spec):
    """The common shrink of one repository config, for pipeline ``spec``."""
    cfg.update({'gpus': _gpus(cfg), 'SCALES': [64, 96], 'symbol': 'tiny_' + spec['name'],
                'output_path': './output/' + spec['name'],
                'default': {'frequent': 1, 'kvstore': 'device'}})
    if 'TEST_SCALES' in cfg:
        cfg['TEST_SCALES'] = [[64, 96]]
    merge(cfg['network'], {'pretrained': './model/pretrained_model/tiny_' + spec['name'],
                           'pretrained_epoch': 0})
    merge(cfg['dataset'], dict(DATASETS[spec['data']], root_path='./data'))
    if spec['backbone'] == 'seg':
        _segmentation(cfg)
    else:
        _detection(cfg, spec)
    return cfg


def write_configs(tree, spec):
    """Every config the pipeline's stages name, as ``{variant: path from the tree}``."""
    import yaml
    paths = {}
    variants = dict(spec.get('configs', {}), main={})
    for variant, overrides in variants.items():
        overrides = dict(overrides)
        with open(os.path.join(tree, overrides.pop('cfg', spec['cfg']))) as f:
            cfg = shrink(yaml.safe_load(f), spec)
        merge(cfg, spec.get('overrides', {}))
        merge(cfg, overrides)
        rel = os.path.join('proof_cfgs', spec['name'], variant,
                           spec.get('cfg_name', spec['name']) + '.yaml')
        os.makedirs(os.path.join(tree, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(tree, rel), 'w') as f:
            yaml.safe_dump(cfg, f, default_flow_style=False)
        paths[variant] = rel
    return paths
