"""Set-up of TuSimple/mx-maskrcnn: a tiny backbone, Cityscapes-like instance data, weights.

Its scripts take their settings from ``rcnn/config.py`` (a Python module, as mx-rcnn's: the
shrink travels in the pipeline's ``config_overrides``, ``python_config.overrides_env``) and
their own command line. The tiny backbone replaces ``get_resnet_conv`` (ResNet-50's C2 to C5)
while the repository's own ``get_resnet_fpn_rpn`` / ``_rpn_test`` / ``_maskrcnn`` /
``_mask_test`` build everything above it: the FPN (P2 to P6, 256 channels), the RPN on five
levels and its Python ``proposal_fpn``, ``ROIAlign`` (14x14, the operator ``migrate`` points
at compat), the Fast R-CNN head (``fc6`` / ``fc7`` of 1024) and the mask head (four 3x3
convolutions, a deconvolution, 28x28 masks) with its Python ``MaskOutput``.

The data: ``data/cityscape`` in Cityscapes' layout, 4 training and 2 validation images of
128x256 (the shrunk ``SCALES``, so the test writes masks at the image's own size, as
Cityscapes' evaluation reads them), ``leftImg8bit/<split>/tinycity/*_leftImg8bit.png``,
``gtFine/<split>/tinycity/*_gtFine_instanceIds.png`` (16-bit: road ``7`` under instances
``class_id * 1000 + k`` of person, car and bus) and ``imglists/<split>.lst`` as the
repository's own lists name them. Written by us; nothing is copied from Cityscapes.
"""
import os

from . import python_config

H, W = 128, 256
# (label id, colour): person, car, bus, as Cityscapes numbers them
CLASSES = [(24, (220, 20, 60)), (26, (0, 0, 142)), (28, (0, 60, 100))]
ROAD = 7
SPLITS = (('train', 4), ('val', 2))

TINY_SYMBOL = '''"""Tiny backbone under mx-maskrcnn's FPN heads (benchmarks/migrate_family_run.py)."""
import mxnet as mx
from . import symbol_mask_fpn


def get_tiny_conv(data):
    """C2 to C5 at strides 4 to 32 in five 3x3 convolutions: conv0 and stage1 (frozen by
    FIXED_PARAMS), stage2 to stage4 (frozen by FIXED_PARAMS_SHARED)."""
    feat = data
    layers = []
    for name, filters in (('conv0', 8), ('stage1', 16), ('stage2', 16), ('stage3', 16),
                          ('stage4', 16)):
        feat = mx.symbol.Convolution(data=feat, kernel=(3, 3), pad=(1, 1), stride=(2, 2),
                                     num_filter=filters, name=name + '_conv')
        feat = mx.symbol.Activation(data=feat, act_type='relu', name=name + '_relu')
        layers.append(feat)
    return [layers[4], layers[3], layers[2], layers[1]]


def _under_fpn_head(build):
    def built(*args, **kwargs):
        original = symbol_mask_fpn.get_resnet_conv
        symbol_mask_fpn.get_resnet_conv = get_tiny_conv
        try:
            return build(*args, **kwargs)
        finally:
            symbol_mask_fpn.get_resnet_conv = original
    return built


get_tiny_fpn_rpn = _under_fpn_head(symbol_mask_fpn.get_resnet_fpn_rpn)
get_tiny_fpn_rpn_test = _under_fpn_head(symbol_mask_fpn.get_resnet_fpn_rpn_test)
get_tiny_fpn_maskrcnn = _under_fpn_head(symbol_mask_fpn.get_resnet_fpn_maskrcnn)
get_tiny_fpn_mask_test = _under_fpn_head(symbol_mask_fpn.get_resnet_fpn_mask_test)
'''

PRETRAINED = [('conv0', (8, 3, 3, 3)), ('stage1', (16, 8, 3, 3)), ('stage2', (16, 16, 3, 3)),
              ('stage3', (16, 16, 3, 3)), ('stage4', (16, 16, 3, 3))]


def _instances(rng, count):
    """``count`` objects (label id, x1, y1, x2, y2), 32 or 64 pixels wide (the tiny model's
    anchors at strides 4 and 8 are 32 and 64), in cells of their own."""
    objects = []
    cells = rng.permutation([(i, j) for i in range(3) for j in range(2)])[:count]
    for k, (i, j) in enumerate(cells):
        size = 32 if k % 2 else 64
        x, y = 8 + 80 * int(i), 8 + 56 * int(j)
        objects.append((CLASSES[k % len(CLASSES)][0], x, y, x + size, y + size * 3 // 4))
    return objects


def _write_image(root, split, index, rng):
    import cv2
    import numpy as np
    name = 'tinycity_000000_%06d' % (19 + index)
    image = rng.randint(40, 90, size=(H, W, 3)).astype(np.uint8)
    instance_ids = np.full((H, W), ROAD, np.uint16)
    yy, xx = np.mgrid[0:H, 0:W]
    counts = {}
    for label, x1, y1, x2, y2 in _instances(rng, 3):
        # an ellipse in its box: the masks are not the boxes
        cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
        inside = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1
        counts[label] = counts.get(label, -1) + 1
        instance_ids[inside] = label * 1000 + counts[label]
        image[inside] = dict(CLASSES)[label]
    image_rel = 'leftImg8bit/%s/tinycity/%s_leftImg8bit.png' % (split, name)
    gt_rel = 'gtFine/%s/tinycity/%s_gtFine_%%s.png' % (split, name)
    for rel, array in ((image_rel, image), (gt_rel % 'instanceIds', instance_ids)):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        cv2.imwrite(os.path.join(root, rel), array)
    return '%d\t%s\t%s\n' % (index, image_rel, gt_rel % 'labelTrainIds')


def write_cityscape_instances(tree):
    """The images, the instance masks and the image lists of ``data/cityscape``."""
    import numpy as np
    root = os.path.join(tree, 'data', 'cityscape')
    rng = np.random.RandomState(37)
    os.makedirs(os.path.join(root, 'imglists'), exist_ok=True)
    index = 0
    for split, count in SPLITS:
        lines = []
        for _ in range(count):
            lines.append(_write_image(root, split, index, rng))
            index += 1
        with open(os.path.join(root, 'imglists', split + '.lst'), 'w') as f:
            f.writelines(lines)


def _write_pretrained(path):
    import mxnet as mx
    import numpy as np
    rng = np.random.RandomState(1)
    params = {}
    for name, shape in PRETRAINED:
        params['arg:%s_conv_weight' % name] = rng.normal(0, 0.2, shape)
        params['arg:%s_conv_bias' % name] = rng.normal(0, 0.01, shape[:1])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mx.nd.save(path, {k: mx.nd.array(v.astype('float32')) for k, v in sorted(params.items())})


def _forget_ground_truth_cache():
    """cityscapesScripts caches the ground truth's instances in its own installed folder
    (``gtInstances.json``), whatever the data: each tree's evaluation reads its own."""
    try:
        import cityscapesscripts.evaluation as evaluation
    except ImportError:
        return
    cache = os.path.join(os.path.dirname(evaluation.__file__), 'gtInstances.json')
    if os.path.exists(cache):
        os.remove(cache)


def setup(tree, spec):
    """The tiny symbol module and its import, the data, the 'pretrained' weights; no config
    file (the shrink travels in ``spec['config_overrides']``)."""
    python_config.install(tree, spec, TINY_SYMBOL, write_cityscape_instances, _write_pretrained)
    _forget_ground_truth_cache()
    return {}
