"""A tiny backbone (and flow network) under a project's own head, and its 'pretrained' weights.

The symbol class written here subclasses the repository's own symbol class and overrides only
the methods that build the ResNet-101 backbone (and, for Deep-Feature-Flow and FGFA, the
FlowNet): the head, its custom operators, losses and ``init_weight`` stay the repository's.
"""
import os

_CONV = '''

def _conv(data, name, num_filter, stride, act='relu'):
    conv = mx.sym.Convolution(data=data, name=name, num_filter=num_filter, kernel=(3, 3),
                              pad=(1, 1), stride=(stride, stride))
    if act == 'leaky':
        return mx.sym.LeakyReLU(data=conv, act_type='leaky', slope=0.1, name=name + '_relu')
    return mx.sym.Activation(data=conv, act_type='relu', name=name + '_relu')
'''

_C4 = '''
    def get_resnet_v1_conv4(self, data):
        c1 = _conv(data, 'conv1', 8, 4)
        return _conv(c1, 'res4a_branch2a', 16, 4)

    def get_resnet_v1_conv5(self, conv_feat):
        return _conv(conv_feat, 'res5a_branch2b', 16, 1)
'''

_SEG = '''
    def get_resnet_conv(self, data):
        c1 = _conv(data, 'conv1', 8, 4)
        c4 = _conv(c1, 'res4a_branch2a', 16, 4)
        return _conv(c4, 'res5a_branch2b', 16, 1)
'''

_FPN = '''
    def get_resnet_backbone(self, data, *args, **kwargs):
        c2 = _conv(data, 'conv1', 8, 4)
        c3 = _conv(c2, 'res3a_branch2a', 8, 2)
        c4 = _conv(c3, 'res4a_branch2a', 16, 2)
        c5 = _conv(c4, 'res5a_branch2b', 16, 2)
        return c2, c3, c4, c5
'''

# The video projects' backbone ends in the head's own 'feat_conv_3x3' (init_weight sets it),
# stride 16, FEAT channels (FGFA's head tiles its weights to 1024 channels: FEAT is 1024 there).
_VID = '''
    def get_resnet_v1(self, data):
        c1 = _conv(data, 'conv1', 8, 4)
        c4 = _conv(c1, 'res4a_branch2a', 16, 4)
        c5 = _conv(c4, 'res5a_branch2b', 16, 1)
        feat = mx.sym.Convolution(data=c5, kernel=(3, 3), pad=(6, 6), dilate=(6, 6),
                                  num_filter=%(feat)d, name='feat_conv_3x3')
        return mx.sym.Activation(data=feat, act_type='relu', name='feat_conv_3x3_relu')
'''

# FlowNet's shape: images / 255 side by side, halved, strided to 1/16, a 2-channel flow x 2.5
_FLOW_LAYERS = '''
        resize = mx.sym.Pooling(name='resize_data', data=data, pooling_convention='full',
                                kernel=(2, 2), stride=(2, 2), pool_type='avg')
        f1 = _conv(resize, 'flow_conv1', 8, 2, 'leaky')
        f2 = _conv(f1, 'flow_conv2', 8, 2, 'leaky')
        f3 = _conv(f2, 'flow_conv3', 8, 2, 'leaky')
        flow = mx.sym.Convolution(name='Convolution5', data=f3, num_filter=2, pad=(1, 1),
                                  kernel=(3, 3))
'''

# Deep-Feature-Flow: (flow, scale map); the scale branch's names are the ones init_weight sets
_DFF_FLOW = '''
    def get_flownet(self, img_cur, img_ref):
        data = mx.sym.Concat(img_cur / 255.0, img_ref / 255.0, dim=1)
''' + _FLOW_LAYERS + '''
        scale_bias = mx.sym.Variable(name='Convolution5_scale_bias', lr_mult=0.0)
        scale = mx.sym.Convolution(name='Convolution5_scale', data=f3, num_filter=%(feat)d,
                                   kernel=(1, 1), bias=scale_bias)
        return flow * 2.5, scale
'''

_FGFA_FLOW = '''
    def get_flownet(self, data):
''' + _FLOW_LAYERS + '''
        return flow * 2.5
'''

BODIES = {'c4': _C4, 'seg': _SEG, 'fpn': _FPN, 'vid': _VID, 'dff': _VID + _DFF_FLOW,
          'fgfa': _VID + _FGFA_FLOW}


def source(name, base, backbone, feat=32):
    """The module text of class ``name``, a subclass of the repository's ``base``."""
    head = ('"""Tiny backbone under %s\'s own head (benchmarks/migrate_family_run.py)."""\n'
            'import mxnet as mx\nfrom .%s import %s\n' % (base, base, base))
    return (head + _CONV + '\n\nclass %s(%s):' % (name, base)
            + BODIES[backbone] % {'feat': feat})


def _layers(backbone, feat):
    """(name, input channels, output channels) of the 3x3 convolutions the backbone owns."""
    if backbone == 'fpn':
        return [('conv1', 3, 8), ('res3a_branch2a', 8, 8), ('res4a_branch2a', 8, 16),
                ('res5a_branch2b', 16, 16)]
    return [('conv1', 3, 8), ('res4a_branch2a', 8, 16), ('res5a_branch2b', 16, 16)]


def _flow_layers():
    return [('flow_conv1', 6, 8), ('flow_conv2', 8, 8), ('flow_conv3', 8, 8),
            ('Convolution5', 8, 2)]


def _save(path, layers, seed):
    import mxnet as mx
    import numpy as np
    rng = np.random.RandomState(seed)
    params = {}
    for name, cin, cout in layers:
        params['arg:%s_weight' % name] = rng.normal(0, 0.1, (cout, cin, 3, 3))
        params['arg:%s_bias' % name] = rng.normal(0, 0.01, (cout,))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mx.nd.save(path, {k: mx.nd.array(v.astype('float32')) for k, v in sorted(params.items())})


def write_pretrained(tree, name, backbone, feat=32):
    """'Pretrained' weights from fixed seeds where the config points: the backbone in
    ``model/pretrained_model/NAME-0000.params``, a flow network in ``NAME_flow-0000``."""
    folder = os.path.join(tree, 'model', 'pretrained_model')
    _save(os.path.join(folder, '%s-0000.params' % name), _layers(backbone, feat), 1)
    if backbone in ('dff', 'fgfa'):
        _save(os.path.join(folder, '%s_flow-0000.params' % name), _flow_layers(), 4)
