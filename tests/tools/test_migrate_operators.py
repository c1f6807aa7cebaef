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
                          "rois = mx.sym.MultiProposal(cls_prob=None, bbox_pred=None)\n"})
    (root / "SNIPER-mxnet").mkdir()
    status, lines = run_migrate(capsys, root)
    version = operators.installed()["version"]
    assert lines[0] == (
        f"symbols/net.py:2: [check] mx.sym.MultiProposal is not in the installed MXNet "
        f"{version} (it has mx.sym.contrib.MultiProposal, which may take other parameters), "
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
