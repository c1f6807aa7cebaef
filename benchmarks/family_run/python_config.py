"""Set-up of a repository whose config is a Python module, not YAML: ijkguo/mx-rcnn.

Its scripts take their settings from ``rcnn/config.py`` (``config``, ``default``, and a
``network`` entry per backbone that ``generate_config(args.network, ...)`` copies in) and from
their own command line. The shrunk values are set on that module's objects right after it is
imported (the shim's ``$PROOF_OVERRIDES``, ``runs.shim_env``); the stage arguments are the
scripts' own options. The tiny backbone replaces ``get_vgg_conv`` while the repository's own
``get_vgg_train`` / ``get_vgg_test`` build their RPN, proposal, proposal-target and Fast
R-CNN head around it (``fc6`` and ``fc7`` keep their 4096 units: the head is the
repository's).
"""
import json
import os

TINY_SYMBOL = '''"""Tiny backbone under mx-rcnn's VGG head (benchmarks/migrate_family_run.py)."""
import mxnet as mx
from . import symbol_vgg


def get_tiny_conv(data):
    """Stride 16 in two 3x3 convolutions: conv1_1 (frozen by FIXED_PARAMS), conv5_3."""
    conv1 = mx.symbol.Convolution(data=data, kernel=(3, 3), pad=(1, 1), stride=(4, 4),
                                  num_filter=8, name='conv1_1')
    relu1 = mx.symbol.Activation(data=conv1, act_type='relu', name='relu1_1')
    conv5 = mx.symbol.Convolution(data=relu1, kernel=(3, 3), pad=(1, 1), stride=(4, 4),
                                  num_filter=16, name='conv5_3')
    return mx.symbol.Activation(data=conv5, act_type='relu', name='relu5_3')


def _under_vgg_head(build):
    def built(*args, **kwargs):
        original = symbol_vgg.get_vgg_conv
        symbol_vgg.get_vgg_conv = get_tiny_conv
        try:
            return build(*args, **kwargs)
        finally:
            symbol_vgg.get_vgg_conv = original
    return built


get_tiny_train = _under_vgg_head(symbol_vgg.get_vgg_train)
get_tiny_test = _under_vgg_head(symbol_vgg.get_vgg_test)
'''

# (name, shape) of every weight the tiny network loads from its 'pretrained' file; the RPN
# and the classifier's last layers are initialised by train_end2end.py itself
PRETRAINED = [('conv1_1', (8, 3, 3, 3)), ('conv5_3', (16, 8, 3, 3)),
              ('fc6', (4096, 16 * 7 * 7)), ('fc7', (4096, 4096))]


def _write_pretrained(path):
    import mxnet as mx
    import numpy as np
    rng = np.random.RandomState(1)
    params = {}
    for name, shape in PRETRAINED:
        scale = 0.1 if len(shape) == 4 else 0.01
        params['arg:%s_weight' % name] = rng.normal(0, scale, shape)
        params['arg:%s_bias' % name] = rng.normal(0, 0.01, shape[:1])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mx.nd.save(path, {k: mx.nd.array(v.astype('float32')) for k, v in sorted(params.items())})


def setup(tree, spec, write_data):
    """The tiny symbol module, its import, the data and the 'pretrained' weights; no config
    file (the shrink travels in ``spec['config_overrides']``)."""
    return install(tree, spec, TINY_SYMBOL, write_data, _write_pretrained)


def install(tree, spec, tiny_symbol, write_data, write_pretrained):
    """Write ``tiny_symbol`` as ``rcnn/symbol/symbol_tiny.py`` (star-imported by the package),
    the pipeline's folders, the data once per tree and the weights: the set-up of the
    repositories whose config is ``rcnn/config.py`` (mx-rcnn, mx-maskrcnn)."""
    folder = os.path.join(tree, 'rcnn', 'symbol')
    with open(os.path.join(folder, 'symbol_tiny.py'), 'w') as f:
        f.write(tiny_symbol)
    init = os.path.join(folder, '__init__.py')
    with open(init) as f:
        text = f.read()
    line = 'from .symbol_tiny import *\n'
    if line not in text:
        with open(init, 'a') as f:
            f.write(('' if text.endswith('\n') or not text else '\n') + line)
    for rel in spec.get('folders', []):
        os.makedirs(os.path.join(tree, rel), exist_ok=True)
    marker = os.path.join(tree, 'data', '.proof_' + spec['data'])
    if not os.path.exists(marker):
        write_data(tree)
        open(marker, 'w').close()
    write_pretrained(os.path.join(tree, 'model', 'tiny-0000.params'))
    return {}


def overrides_env(spec):
    """``$PROOF_OVERRIDES`` for the shim: ``{module: {dotted path: value}}``."""
    return {'PROOF_OVERRIDES': json.dumps(spec['config_overrides'])} \
        if 'config_overrides' in spec else {}
