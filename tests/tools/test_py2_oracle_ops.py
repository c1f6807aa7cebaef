"""The rewrites that reach MXNet's operators, proven by running both sides
(tests/py2_oracle.py): a config pickled into ``mx.sym.Custom``'s keywords and unpickled in the
op's ``CustomOpProp.__init__``, and the CPU twin chosen for ``gpu_nms_wrapper`` on a CPU
context. Python 2 has no MXNet here: each tree carries stand-ins, the same on both sides,
that do exactly what MXNet and a built CUDA extension do with what they are given."""

import pytest
from py2_oracle import assert_same_output

pytest.importorskip("fissix")
pytest.importorskip("libcst")

# MXNet 1.x (symbol/register.py, _ctypes/symbol.py): every keyword of a Custom symbol goes
# to C as str(value), a NUL-terminated UTF-8 string, and comes back to the registered
# CustomOpProp as keyword strings (operator.py: prop_cls(**kwargs)).
STAND_IN_MXNET = {
    "mxnet/__init__.py": """\
        from . import operator
        from . import symbol
        sym = symbol
        """,
    "mxnet/operator.py": """\
        _REGISTRY = {}


        class CustomOpProp(object):
            def __init__(self, need_top_grad=True):
                self.need_top_grad_ = need_top_grad


        def register(reg_name):
            def do_register(prop_cls):
                _REGISTRY[reg_name] = prop_cls
                return prop_cls
            return do_register


        def create(op_type, keywords):
            return _REGISTRY[op_type](**keywords)
        """,
    "mxnet/symbol.py": """\
        from . import operator


        def Custom(*data, **kwargs):
            op_type = kwargs.pop('op_type')
            strings = dict((key, str(value).split('\\0')[0]) for key, value in kwargs.items())
            return operator.create(op_type, strings)
        """,
}

CUSTOM_MAIN = """\
    import network
    cfg = {'TRAIN': {'BATCH_ROIS': 128, 'FG_FRACTION': 0.25}, 'SCALES': [(600, 1000)]}
    prop = network.get_symbol(cfg)
    print repr(prop._cfg['TRAIN']['FG_FRACTION']), repr(prop._cfg['SCALES']), prop._batch_rois
    """

SYMBOL_SIDE = {
    "directly": ("import cPickle", "cfg=cPickle.dumps(cfg)"),
    "through a variable": ("import cPickle", "cfg=pickled", "pickled = cPickle.dumps(cfg)"),
    "import cPickle as pickle": ("import cPickle as pickle", "cfg=pickle.dumps(cfg)"),
}
OP_SIDE = {
    "directly": ("import cPickle", "cPickle.loads(cfg)"),
    "through a variable": ("import cPickle", "cPickle.loads(text)", "text = cfg"),
    "import cPickle as pickle": ("import cPickle as pickle", "pickle.loads(cfg)"),
}


def custom_op_tree(symbol_side, op_side):
    symbol_import, keyword, *symbol_before = symbol_side
    op_import, loads, *op_before = op_side
    return {**STAND_IN_MXNET, "main.py": CUSTOM_MAIN, "network.py": f"""\
        {symbol_import}
        import mxnet as mx
        import proposal_target


        def get_symbol(cfg):
            print 'building the symbol'
            {symbol_before[0] if symbol_before else 'pass'}
            return mx.sym.Custom(op_type='proposal_target', {keyword}, batch_rois=128)
        """, "proposal_target.py": f"""\
        {op_import}
        import mxnet as mx


        @mx.operator.register('proposal_target')
        class ProposalTargetProp(mx.operator.CustomOpProp):
            def __init__(self, cfg, batch_rois='128'):
                super(ProposalTargetProp, self).__init__(need_top_grad=False)
                {op_before[0] if op_before else 'pass'}
                self._cfg = {loads}
                self._batch_rois = int(batch_rois)
        """}


PICKLED_CONFIGS = {
    "directly": ("directly", "directly"),
    "import cPickle as pickle": ("import cPickle as pickle", "import cPickle as pickle"),
    "pickled into a variable first": ("through a variable", "directly"),
    "unpickled from a variable in the op": ("directly", "through a variable"),
}


@pytest.mark.parametrize("symbol_side, op_side", PICKLED_CONFIGS.values(),
                         ids=PICKLED_CONFIGS.keys())
def test_a_config_pickled_into_a_custom_op_reaches_the_op_whole(tmp_path, symbol_side,
                                                                  op_side):
    assert_same_output(tmp_path, custom_op_tree(SYMBOL_SIDE[symbol_side], OP_SIDE[op_side]))


SETUP = """\
    from distutils.core import setup
    from distutils.extension import Extension

    setup(ext_modules=[Extension('gpu_nms', ['nms_kernel.cu', 'gpu_nms.pyx'])])
    """
# What the family's CPU and GPU NMS compute alike: the boxes a score keeps.
NMS_BODY = "    return [i for i, d in enumerate(dets) if d[4] > thresh]\n"


def nms_tree(import_line, call):
    return {
        "lib/nms/__init__.py": "",
        "lib/nms/setup_linux.py": SETUP,
        "lib/nms/gpu_nms.pyx": "def gpu_nms(dets, thresh, device_id):\n" + NMS_BODY,
        "lib/nms/cpu_nms.py": "def cpu_nms(dets, thresh):\n" + NMS_BODY,
        "lib/nms/nms.py": """\
            from cpu_nms import cpu_nms
            from gpu_nms import gpu_nms


            def cpu_nms_wrapper(thresh):
                def _nms(dets):
                    return cpu_nms(dets, thresh)
                return _nms


            def gpu_nms_wrapper(thresh, device_id):
                def _nms(dets):
                    return gpu_nms(dets, thresh, device_id)
                return _nms
            """,
        "proj/__init__.py": "",
        "proj/proposal.py": f"""\
            {import_line}


            def keep(in_data, thresh):
                nms = {call}(thresh, in_data[0].context.device_id)
                return nms(in_data[0].rows)
            """,
        "proj/test.py": """\
            import os
            import sys
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))
            from proposal import keep


            class Context(object):
                def __init__(self, device_type, device_id):
                    self.device_type, self.device_id = device_type, device_id


            class Array(object):
                def __init__(self, rows, context):
                    self.rows, self.context = rows, context

            dets = [[0, 0, 9, 9, 0.9], [1, 1, 9, 9, 0.2], [5, 5, 9, 9, 0.7]]
            print keep([Array(dets, Context('cpu', 0))], 0.5)
            """,
    }


# The machine Python 2 ran on had built the CUDA extension; the port runs where none is.
BUILT_ON_PYTHON_2S_MACHINE = {"lib/nms/gpu_nms.py": "def gpu_nms(dets, thresh, device_id):\n"
                                                    + NMS_BODY}
NMS_IMPORTS = {
    "from nms.nms import gpu_nms_wrapper": ("from nms.nms import gpu_nms_wrapper",
                                            "gpu_nms_wrapper"),
    "import as nms_gpu": ("from nms.nms import gpu_nms_wrapper as nms_gpu", "nms_gpu"),
}


@pytest.mark.parametrize("import_line, call", NMS_IMPORTS.values(), ids=NMS_IMPORTS.keys())
def test_nms_on_a_cpu_context_keeps_the_same_boxes_without_cuda(tmp_path, import_line, call):
    assert_same_output(tmp_path, nms_tree(import_line, call), main="proj/test.py",
                       python2_only=BUILT_ON_PYTHON_2S_MACHINE)
