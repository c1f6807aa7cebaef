"""Set-up of jpulidojr/3DCE_new: a tiny backbone, DeepLesion-like CT slices, its two configs.

Its ``rcnn/tools/train.py`` changes to the tree's root and reads ``config.yml`` and
``default.yml`` there: both are the repository's own, loaded, given the pipeline's overrides
and written back over themselves. The data: 16-bit PNG slices (Hounsfield units + 32768, as
DeepLesion stores them) in ``data/DeepLesion/Images_16bit/<series>/<slice>.png``, five
slices a series around a key slice, and a ``DL_info.csv`` in DeepLesion's 18 columns (the
mirror lacks the repository's own CSV files). Written by us; nothing is copied from
DeepLesion.
"""
import csv
import os

H, W = 64, 96
SERIES = [('%06d_01_01' % k, split) for k, split in
          enumerate([1, 1, 1, 1, 2, 2, 3, 3], start=1)]  # 4 train, 2 val, 2 test
KEY_SLICE = 3

TINY_SYMBOL = '''"""Tiny backbone under 3DCE's VGG head (benchmarks/migrate_family_run.py)."""
import mxnet as mx
from . import symbol_vgg


def get_tiny_conv(data):
    """Stride 8 in two 3x3 convolutions; conv1_1_new has the 64 filters train.py's
    init_params builds from the pretrained conv1_1."""
    conv1 = mx.symbol.Convolution(data=data, kernel=(3, 3), pad=(1, 1), stride=(4, 4),
                                  num_filter=64, name='conv1_1_new')
    relu1 = mx.symbol.Activation(data=conv1, act_type='relu', name='relu1_1')
    conv5 = mx.symbol.Convolution(data=relu1, kernel=(3, 3), pad=(1, 1), stride=(2, 2),
                                  num_filter=16, name='conv5_3')
    return mx.symbol.Activation(data=conv5, act_type='relu', name='relu5_3')


def get_tiny(*args, **kwargs):
    original = symbol_vgg.get_vgg_conv
    symbol_vgg.get_vgg_conv = get_tiny_conv
    try:
        return symbol_vgg.get_vgg(*args, **kwargs)
    finally:
        symbol_vgg.get_vgg_conv = original
'''


def _write_slices(folder, rng, box):
    import cv2
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    x1, y1, x2, y2 = box
    for index in range(1, 6):
        hounsfield = rng.normal(-600, 80, (H, W))
        if abs(index - KEY_SLICE) <= 1:  # the lesion spans the key slice and its neighbours
            hounsfield[y1:y2, x1:x2] = 60 + 20 * index
        cv2.imwrite(os.path.join(folder, '%03d.png' % index),
                    (hounsfield + 32768).astype(np.uint16))


def write_deeplesion(root):
    """The slices and ``DL_info.csv`` (its header, then one lesion per series)."""
    import numpy as np
    rng = np.random.RandomState(12)
    base = os.path.join(root, 'data', 'DeepLesion')
    rows = [['File_name', 'Patient_index', 'Study_index', 'Series_ID', 'Key_slice_index',
             'Measurement_coordinates', 'Bounding_boxes', 'Lesion_diameters_Pixel_',
             'Normalized_lesion_location', 'Coarse_lesion_type', 'Possibly_noisy',
             'Slice_range', 'Spacing_mm_px_', 'Image_size', 'DICOM_windows',
             'Patient_gender', 'Patient_age', 'Train_Val_Test']]
    for k, (series, split) in enumerate(SERIES):
        x1, y1 = 8 + 16 * (k % 4), 8 + 16 * (k % 2)
        box = (x1, y1, x1 + 24, y1 + 24)
        _write_slices(os.path.join(base, 'Images_16bit', series), rng, box)
        rows.append(['%s_%03d.png' % (series, KEY_SLICE), str(k + 1), '1', '1',
                     str(KEY_SLICE), '0, 0, 0, 0', '%d, %d, %d, %d' % tuple(v + 1 for v in box),
                     '24, 24', '0.5, 0.5, 0.5', '-1', '0', '1, 5', '0.8, 0.8, 2',
                     '%d, %d' % (H, W), '-175, 275', 'F', '50', str(split)])
    with open(os.path.join(base, 'DL_info.csv'), 'w', newline='') as f:
        csv.writer(f).writerows(rows)


def _write_pretrained(path):
    import mxnet as mx
    import numpy as np
    rng = np.random.RandomState(1)
    params = {'arg:conv1_1_weight': rng.normal(0, 0.05, (64, 3, 3, 3)),
              'arg:conv1_1_bias': rng.normal(0, 0.01, (64,)),
              'arg:conv5_3_weight': rng.normal(0, 0.05, (16, 64, 3, 3)),
              'arg:conv5_3_bias': rng.normal(0, 0.01, (16,))}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mx.nd.save(path, {k: mx.nd.array(v.astype('float32')) for k, v in sorted(params.items())})


def _overwrite_yaml(path, overrides):
    import yaml

    from .configs import merge
    with open(path) as f:
        cfg = yaml.safe_load(f)
    with open(path, 'w') as f:
        yaml.safe_dump(merge(cfg, overrides), f, default_flow_style=False, sort_keys=False)


def setup(tree, spec):
    """The tiny symbol module and its import, data, weights, and both configs shrunk."""
    folder = os.path.join(tree, 'rcnn', 'symbol')
    with open(os.path.join(folder, 'symbol_tiny.py'), 'w') as f:
        f.write(TINY_SYMBOL)
    with open(os.path.join(folder, '__init__.py')) as f:
        text = f.read()
    if 'symbol_tiny' not in text:
        with open(os.path.join(folder, '__init__.py'), 'a') as f:
            f.write(('' if text.endswith('\n') else '\n') + 'from .symbol_tiny import *\n')
    for rel in spec.get('folders', []):
        os.makedirs(os.path.join(tree, rel), exist_ok=True)
    marker = os.path.join(tree, 'data', '.proof_deeplesion')
    if not os.path.exists(marker):
        write_deeplesion(tree)
        open(marker, 'w').close()
    _write_pretrained(os.path.join(tree, 'model', 'pretrained', 'tiny3dce-0000.params'))
    for name, overrides in spec['yaml_overrides'].items():
        _overwrite_yaml(os.path.join(tree, name), overrides)
    return {}
