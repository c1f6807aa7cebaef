"""Operators the installed MXNet lacks: a ``[check]`` at each call, naming the repository's
own C++ source where it has one (SNIPER's and FCIS's trees, in miniature, written here)."""

import ast
import pytest

from mxpatch_bind.migrate import operators
from test_migrate import run_migrate
from test_migrate_imports import write_tree

pytest.importorskip("mxnet")

OWN_OPERATOR = """\
#include "./multi_proposal_target-inl.h"
namespace mxnet {
namespace op {
DMLC_REGISTER_PARAMETER(MultiProposalTargetParam);
MXNET_REGISTER_OP_PROPERTY(_contrib_MultiProposalTarget, MultiProposalTargetProp)
.describe("the repository's own operator");
}  // namespace op
}  // namespace mxnet
"""

SYMBOL = """\
import mxnet as mx


def get_symbol(data, rois, label):
    conv = mx.sym.Convolution(data=data, num_filter=4, kernel=(3, 3), name='conv')
    offset = mx.sym.contrib.DeformableConvolution(data=conv, offset=conv, num_filter=4,
                                                  kernel=(3, 3))
    target = mx.sym.contrib.MultiProposalTarget(rois=rois, gt_boxes=label)
    mask = mx.contrib.sym.MaskRcnnTarget(rois=rois)
    return mx.sym.Group([offset, target, mask])


def scores(x):
    return mx.nd.contrib.NoSuchOperatorAnywhere(x)
"""


def test_each_missing_operator_is_a_check_at_its_call(tmp_path, capsys):
    root = write_tree(tmp_path, {"sniper/symbols/net.py": SYMBOL,
                                 "sniper/operator_cxx/multi_proposal_target.cc": OWN_OPERATOR})
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    assert lines[:-1] == [
        f"sniper/symbols/net.py:8: [check] mx.sym.contrib.MultiProposalTarget is not in the "
        f"installed MXNet {version}: the repository's own C++ operator "
        "(sniper/operator_cxx/multi_proposal_target.cc) has to be built into MXNet from source",
        f"sniper/symbols/net.py:9: [check] mx.contrib.sym.MaskRcnnTarget is not in the "
        f"installed MXNet {version}, and the repository has no C++ source for it",
        f"sniper/symbols/net.py:14: [check] mx.nd.contrib.NoSuchOperatorAnywhere is not in the "
        f"installed MXNet {version}, and the repository has no C++ source for it"]
    assert status == 1


def test_the_operators_stock_mxnet_ships_are_not_reported(tmp_path, capsys):
    root = write_tree(tmp_path, {"net.py": "import mxnet as m\n"
                                 "s = m.symbol.contrib.PSROIPooling(data=m.sym.var('d'))\n"
                                 "p = m.contrib.sym.Proposal(cls_prob=None)\n"
                                 "d = m.sym.contrib.DeformablePSROIPooling(data=None)\n"})
    assert run_migrate(capsys, root) == (0, ["migrate: 0 findings in 0 files: nothing to "
                                             "migrate"])


def test_calls_reads_every_spelling_and_alias():
    import ast
    tree = ast.parse("import mxnet as mx\nimport mxnet\nmx.ndarray.contrib.A(1)\n"
                     "mxnet.contrib.nd.B()\nmx.sym.C()\nother.sym.D()\nmx.io.E()\n")
    assert operators.calls(tree) == [(3, "nd.contrib", "A", "mx.ndarray.contrib.A"),
                                     (4, "nd.contrib", "B", "mxnet.contrib.nd.B"),
                                     (5, "sym", "C", "mx.sym.C")]


FCIS_STYLE = {
    "fcis/__init__.py": "",
    "fcis/symbols/__init__.py": "import group_max\n",
    "fcis/symbols/group_max.py": """\
import mxnet as mx


def get_symbol(num_classes):
    data = mx.sym.Variable('data')
    print 'building'
    return mx.contrib.sym.ChannelOperator(name='psroipool_cls', data=data,
                                          group=num_classes, op_type='Group_Max')
""",
    "fcis/run.py": """\
import mxnet as mx
import numpy as np
from symbols import group_max

if __name__ == '__main__':
    data = np.arange(2 * 6 * 2 * 2, dtype=np.float32).reshape((2, 6, 2, 2)) % 7
    executor = group_max.get_symbol(3).simple_bind(mx.cpu(), data=data.shape)
    executor.arg_dict['data'][:] = data
    out = executor.forward()[0].asnumpy()
    print np.array_equal(out, data.reshape((2, 3, 2, 2, 2)).max(axis=2)), out.shape
""",
}


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_write_points_fcis_channel_operator_at_compat_and_the_symbol_runs(tmp_path, capsys):
    import subprocess
    import sys
    root = write_tree(tmp_path, FCIS_STYLE)
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    assert (f"fcis/symbols/group_max.py:7: [rewrite] mx.contrib.sym.ChannelOperator is not in "
            f"the installed MXNet {version}: --write calls mxpatch_bind.compat.ChannelOperator "
            "instead, built from stock operators") in lines
    assert run_migrate(capsys, root, "--write", "--to-python3")[0] == 0
    assert "return mxpatch_bind.compat.ChannelOperator(name='psroipool_cls'" in (
        root / "fcis/symbols/group_max.py").read_text()
    ran = subprocess.run([sys.executable, "fcis/run.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "building\nTrue (2, 3, 2, 2)\n"), ran.stderr


def test_an_operator_in_an_unfetched_submodule_or_another_namespace_says_so(tmp_path, capsys):
    root = write_tree(tmp_path, {
        ".gitmodules": '[submodule "SNIPER-mxnet"]\n\tpath = SNIPER-mxnet\n\turl = x\n',
        "symbols/net.py": "import mxnet as mx\n"
                          "pooled = mx.sym.PSROIPooling(data=None, rois=None)\n"})
    (root / "SNIPER-mxnet").mkdir()
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    assert lines[0] == (
        f"symbols/net.py:2: [check] mx.sym.PSROIPooling is not in the installed MXNet "
        f"{version} (it has mx.sym.contrib.PSROIPooling, which may take other parameters), "
        "and the tree has no C++ source for it; its git submodule SNIPER-mxnet is not checked "
        "out (git submodule update --init) and may hold it")
    assert status == 1


def test_an_operator_is_found_through_every_import_form_of_mxnet():
    from mxpatch_bind.migrate import operators
    source = ("from mxnet import symbol as S\nimport mxnet.ndarray as F\n"
              "a = S.contrib.ChannelOperator(x)\nb = F.Foo(y)\n"
              "def f(S):\n    return S.contrib.ChannelOperator(x)\n")
    assert [(line, namespace, name) for line, namespace, name, _ in
            operators.calls(ast.parse(source))] == [(3, "sym.contrib", "ChannelOperator"),
                                                    (4, "nd", "Foo")]


SNIPER_STYLE = {
    ".gitmodules": '[submodule "SNIPER-mxnet"]\n\tpath = SNIPER-mxnet\n\turl = x\n',
    "symbols/__init__.py": "",
    "symbols/e2e.py": """\
import mxnet as mx


def get_symbol(post):
    cls_prob, bbox_pred, im_info = (mx.sym.Variable(n) for n in ('cls', 'bbox', 'im_info'))
    gt_boxes, valid_ranges = mx.sym.Variable('gt_boxes'), mx.sym.Variable('valid_ranges')
    rois, label, bbox_target, bbox_weight = mx.sym.MultiProposalTarget(cls_prob=cls_prob,
        bbox_pred=bbox_pred, im_info=im_info, gt_boxes=gt_boxes, valid_ranges=valid_ranges,
        batch_size=1, rpn_post_nms_top_n=post, scales=(2.0, 4.0), ratios=(1.0,),
        name='multi_proposal_target')
    test_rois, _ = mx.sym.MultiProposal(cls_prob=cls_prob, bbox_pred=bbox_pred,
        im_info=im_info, name='rois', batch_size=1, rpn_post_nms_top_n=post,
        scales=(2.0, 4.0), ratios=(1.0,))
    outputs = mx.sym.MultiProposalTargetMask(cls_prob=cls_prob, bbox_pred=bbox_pred,
        im_info=im_info, gt_boxes=gt_boxes, valid_ranges=valid_ranges, batch_size=1,
        rpn_post_nms_top_n=post, scales=(2.0, 4.0), ratios=(1.0,), max_gts=3, max_masks=2)
    targets, classes = mx.sym.MaskRcnnTarget(rois=outputs[4], mask_polys=mx.sym.Variable('p'),
        mask_ids=outputs[5], batch_size=1, mask_size=4, num_proposals=2)
    stock = mx.sym.contrib.MultiProposal(cls_prob=cls_prob, bbox_pred=bbox_pred,
        im_info=im_info, scales=(2.0, 4.0), ratios=(1.0,))
    return mx.sym.Group([label, test_rois, targets, stock])
""",
    "run.py": """\
import mxnet as mx
import numpy as np
from symbols import e2e

if __name__ == '__main__':
    rng = np.random.RandomState(0)
    shapes = dict(cls=(1, 4, 3, 3), bbox=(1, 8, 3, 3), im_info=(1, 3), gt_boxes=(1, 3, 5),
                  valid_ranges=(1, 2), p=(1, 3, 12))
    executor = e2e.get_symbol(5).simple_bind(mx.cpu(), **shapes)
    for name, shape in shapes.items():
        executor.arg_dict[name][:] = rng.rand(*shape) * 40
    executor.arg_dict['im_info'][:] = [[48, 48, 1]]
    executor.arg_dict['valid_ranges'][:] = [[0, 1000]]
    outputs = executor.forward(is_train=True)
    print [o.shape for o in outputs]
""",
}


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_write_points_snipers_operators_at_compat_and_its_symbol_runs(tmp_path, capsys):
    import subprocess
    import sys
    root = write_tree(tmp_path, SNIPER_STYLE)
    (root / "SNIPER-mxnet").mkdir()
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    numpy_op = "a NumPy operator on the CPU with SNIPER's semantics"
    for line, name, stock in [(7, "MultiProposalTarget", ""),
                              (11, "MultiProposal", " (mx.sym.contrib.MultiProposal computes "
                                                    "otherwise)"),
                              (14, "MultiProposalTargetMask", ""), (17, "MaskRcnnTarget", "")]:
        assert (f"symbols/e2e.py:{line}: [rewrite] mx.sym.{name} is not in the installed "
                f"MXNet {version}: --write calls mxpatch_bind.compat.{name} instead, "
                f"{numpy_op}{stock}") in lines
    assert not any(":19:" in line for line in lines)  # stock's contrib.MultiProposal stays
    assert run_migrate(capsys, root, "--write", "--to-python3")[0] == 0
    text = (root / "symbols/e2e.py").read_text()
    assert "= mxpatch_bind.compat.MultiProposalTarget(cls_prob=cls_prob," in text
    assert "stock = mx.sym.contrib.MultiProposal(" in text
    ran = subprocess.run([sys.executable, "run.py"], cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert (ran.returncode, ran.stdout) == (0, "[(5, 1), (5, 5), (2, 4, 4), (300, 5)]\n"), \
        ran.stderr


MASKRCNN_STYLE = {
    "rcnn/__init__.py": "",
    "rcnn/CXX_OP/roi_align.cc": OWN_OPERATOR.replace("_contrib_MultiProposalTarget", "ROIAlign"),
    "rcnn/symbol.py": """\
import mxnet as mx


def get_symbol():
    feat, rois = mx.sym.Variable('feat'), mx.sym.Variable('rois')
    pooled = mx.symbol.ROIAlign(name='roi_pool', data=feat, rois=rois, pooled_size=(2, 2),
                                spatial_scale=1.0 / 4)
    stock = mx.sym.contrib.ROIAlign(data=feat, rois=rois, pooled_size=(2, 2),
                                    spatial_scale=1.0 / 4, sample_ratio=2)
    return mx.sym.Group([pooled, stock])


def pool(feat, rois, s):
    return mx.nd.ROIAlign(feat, rois, (2, 2), 1.0 / float(s))
""",
    "run.py": """\
import mxnet as mx
from rcnn import symbol

if __name__ == '__main__':
    feat = mx.nd.arange(64).reshape((1, 1, 8, 8))
    rois = mx.nd.array([[0, 0, 0, 28, 28]])
    executor = symbol.get_symbol().bind(mx.cpu(), {'feat': feat, 'rois': rois})
    ours, stock = (o.asnumpy().ravel().tolist() for o in executor.forward())
    print ours == symbol.pool(feat, rois, 4).asnumpy().ravel().tolist(), ours != stock
""",
}


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_write_points_mx_maskrcnns_roi_align_at_compat_but_not_stocks(tmp_path, capsys):
    import subprocess
    import sys
    root = write_tree(tmp_path, MASKRCNN_STYLE)
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    drop_in = ("--write calls mxpatch_bind.compat.ROIAlign instead, a NumPy operator on the "
               "CPU with mx-maskrcnn's semantics")
    assert (f"rcnn/symbol.py:6: [rewrite] mx.symbol.ROIAlign is not in the installed MXNet "
            f"{version}: {drop_in} (mx.sym.contrib.ROIAlign computes otherwise)") in lines
    assert (f"rcnn/symbol.py:14: [rewrite] mx.nd.ROIAlign is not in the installed MXNet "
            f"{version}: {drop_in} (mx.nd.contrib.ROIAlign computes otherwise)") in lines
    assert not any("[check]" in line and "ROIAlign" in line for line in lines)
    assert run_migrate(capsys, root, "--write", "--to-python3")[0] == 0
    text = (root / "rcnn/symbol.py").read_text()
    assert "return mxpatch_bind.compat.ROIAlign(feat, rois, (2, 2), 1.0 / float(s))" in text
    assert "stock = mx.sym.contrib.ROIAlign(" in text
    ran = subprocess.run([sys.executable, "run.py"], cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert (ran.returncode, ran.stdout) == (0, "True True\n"), ran.stderr
