"""Set-up of mahyarnajibi/SNIPER: a tiny backbone under its own head, its config shrunk, COCO.

SNIPER's scripts (``main_train.py``, ``main_test.py``) take ``--cfg`` and eval
``config.symbol`` in ``symbols.faster``. The symbol: a class of our own,
``symbols/faster/tiny_sniper.py``, that subclasses its ``resnet_mx_101_e2e`` with one unit per
stage (three in ``stage4``, whose offsets its ``init_weight_rcnn`` sets) and 16 to 64 filters:
its own RPN, ``MultiProposalTarget`` / ``MultiProposal``, deformable PS-ROI pooling and
``fc_new_*`` head. The config: its ``configs/faster/sniper_res101_e2e.yml``, loaded and
shrunk (``OVERRIDES``) into ``configs/faster/tiny_sniper.yml``. The data: the synthetic COCO
of ``data_still.write_coco``. Its 'pretrained' backbone: the tiny symbol's backbone arrays
from a fixed seed, written by a process in the tree (which imports its symbol as the
scripts do). Written by us; nothing is copied from SNIPER or COCO.
"""
import copy
import os
import subprocess
import sys

from . import data_still

TINY_SYMBOL = '''"""Tiny backbone under SNIPER's own head (benchmarks/migrate_family_run.py)."""
from .resnet_mx_101_e2e import resnet_mx_101_e2e, checkpoint_callback  # noqa: F401


class tiny_sniper(resnet_mx_101_e2e):
    def __init__(self, *args, **kwargs):
        resnet_mx_101_e2e.__init__(self, *args, **kwargs)
        self.units = (1, 1, 1, 3)  # stage4's three units: init_weight_rcnn sets their offsets
        self.filter_list = [16, 32, 32, 64, 64]
'''

# the backbone's arrays: every argument and auxiliary state of the tiny symbol that its
# init_weight_rcnn does not set (those are the head's), from seed 0
PRETRAINED = '''
import init
import mxnet as mx
import numpy as np
from configs.faster.default_configs import config, update_config
from symbols.faster import tiny_sniper
update_config(%(cfg)r)
# the backbone: what its head concatenates (cat4)
sym = tiny_sniper.tiny_sniper(n_proposals=400).get_symbol_rcnn(config)
sym = sym.get_internals()['cat4_output']
arg_shapes, _, aux_shapes = sym.infer_shape(data=(1, 3, 512, 512))
rng = np.random.RandomState(0)
params = {}
for name, shape in zip(sym.list_arguments(), arg_shapes):
    if not name.startswith(('bn_data', 'conv0', 'bn0', 'stage')) or 'offset' in name:
        continue
    if name.endswith('gamma'):
        value = np.ones(shape)
    elif name.endswith('beta') or name.endswith('bias'):
        value = np.zeros(shape)
    else:
        value = rng.normal(0, 0.1, shape)
    params['arg:' + name] = mx.nd.array(value)
for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
    params['aux:' + name] = mx.nd.array(np.ones(shape) if name.endswith('var') else np.zeros(shape))
mx.nd.save(%(out)r, params)
'''

CFG = 'configs/faster/tiny_sniper.yml'
PRETRAINED_PREFIX = './data/pretrained_model/tiny_sniper'
# The shrink: 2 CPU contexts, one chip per context and batch, 2 epochs; two training scales
# (the 64x96 images at 128x192 and at 96 pixels' longest side) whose valid ranges both hold
# the 32x32 boxes; fp16 off (a CPU run); few processes; the proposal counts of the others.
OVERRIDES = {
    'symbol': 'tiny_sniper', 'gpus': '0,1', 'output_path': './output/sniper',
    'default': {'kvstore': 'device'},
    # its anchors stay: its MultiProposalTarget takes none from the config (the C++
    # operator's defaults are its 21)
    'network': {'pretrained': PRETRAINED_PREFIX, 'pretrained_epoch': 0},
    'dataset': {'NUM_CLASSES': 3, 'dataset': 'coco', 'dataset_path': './data/coco',
                'image_set': 'train2014', 'test_image_set': 'minival2014'},
    'TRAIN': {'CHIPS_DB_PARTS': 1, 'NUM_PROCESS': 1, 'NUM_THREAD': 1,
              'SCALES': [(128, 192), (-1, 96)], 'VALID_RANGES': [(-1, 60), (16, -1)],
              'lr': 0.001, 'lr_step': '1', 'warmup': False, 'fp16': False, 'scale': 1.0,
              'begin_epoch': 0, 'end_epoch': 2, 'FLIP': False, 'SHUFFLE': False,
              'BATCH_IMAGES': 1, 'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 32},
    # TEST.CONCURRENT_JOBS stays its 2 (a Pool of 2 processes, each on the 2 contexts): its
    # path for 1 (lib/inference.py:454) hands detect_scale_worker 10 values where it unpacks
    # 11 (scale_i, line 412), in the repository itself
    'TEST': {'SCALES': [(128, 192)], 'BATCH_IMAGES': [1],
             'VALID_RANGES': [(-1, -1)], 'RPN_PRE_NMS_TOP_N': 300, 'RPN_POST_NMS_TOP_N': 150,
             'TEST_EPOCH': 2},
}


def _merge(into, overrides):
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def write_config(tree):
    """Its ``sniper_res101_e2e.yml`` with ``OVERRIDES``, as ``configs/faster/tiny_sniper.yml``
    (its YAML tags tuples ``!!python/tuple``: its own loader reads them back)."""
    import yaml
    with open(os.path.join(tree, 'configs/faster/sniper_res101_e2e.yml')) as f:
        config = yaml.load(f, Loader=yaml.UnsafeLoader)
    _merge(config, OVERRIDES)
    with open(os.path.join(tree, CFG), 'w') as f:
        yaml.dump(config, f)
    return CFG


def setup(tree, spec):
    """SETUP (not defects): the tiny symbol and its import, the config, data, weights."""
    folder = os.path.join(tree, 'symbols', 'faster')
    with open(os.path.join(folder, 'tiny_sniper.py'), 'w') as f:
        f.write(TINY_SYMBOL)
    init = os.path.join(folder, '__init__.py')
    with open(init) as f:
        text = f.read()
    if 'tiny_sniper' not in text:
        with open(init, 'a') as f:
            f.write(('' if text.endswith('\n') else '\n') + 'from . import tiny_sniper\n')
    for rel in spec.get('folders', []):
        os.makedirs(os.path.join(tree, rel), exist_ok=True)
    marker = os.path.join(tree, 'data', '.proof_coco')
    if not os.path.exists(marker):
        data_still.write_coco(tree)
        open(marker, 'w').close()
    cfg = write_config(tree)
    os.makedirs(os.path.join(tree, 'data', 'pretrained_model'), exist_ok=True)
    code = PRETRAINED % {'cfg': cfg, 'out': PRETRAINED_PREFIX + '-0000.params'}
    subprocess.run([sys.executable, '-c', code], cwd=tree, check=True, timeout=300,
                   env=dict(os.environ, MXNET_ENGINE_TYPE='NaiveEngine'))
    return {'main': cfg}
