"""``migrate`` reports what each copy's freezing rule froze of the repo's own symbols, against
compat's default rule, and the prefixes that freeze nothing (FCIS's ``gamma`` / ``beta``
under ``startswith``). Trees written from the facts in docs/family.rst; nothing copied."""

import ast
import textwrap

import pytest
from test_migrate_family import copy_source, family_tree, lines_for, run

from mxpatch_bind.migrate import frozen

# A ResNet-named stand-in symbol file, layers spelt out as the family's symbol files do.
SYMBOLS = textwrap.dedent('''\
    import mxnet as mx


    def get_symbol():
        data = mx.sym.Variable(name='data')
        conv1 = mx.sym.Convolution(data, num_filter=4, kernel=(7, 7), name='conv1', no_bias=True)
        bn_conv1 = mx.sym.BatchNorm(conv1, name='bn_conv1', use_global_stats=True)
        res2a = mx.sym.Convolution(bn_conv1, num_filter=4, kernel=(1, 1), name='res2a_branch2a',
                                   no_bias=True)
        bn2a = mx.sym.BatchNorm(res2a, name='bn2a_branch2a', use_global_stats=True)
        res3a = mx.sym.Convolution(bn2a, num_filter=4, kernel=(1, 1), name='res3a_branch2a',
                                   no_bias=True)
        bn3a = mx.sym.BatchNorm(res3a, name='bn3a_branch2a', use_global_stats=True)
        relu = mx.sym.Activation(bn3a, act_type='relu', name='res3a_relu')
        return mx.sym.FullyConnected(relu, num_hidden=3, name='cls_score')
    ''')
RESNET_PREFIXES = "  FIXED_PARAMS:\n  - conv1\n  - bn_conv1\n  - res2\n  - bn2\n  - gamma\n  - beta\n"


def resnet_tree(root, rule, project="proj", config=RESNET_PREFIXES):
    family_tree(root, module=copy_source(rule=rule), project=project)
    (root / project / "symbols").mkdir()
    (root / project / "symbols" / "resnet.py").write_text(SYMBOLS)
    cfgs = root / "experiments" / project / "cfgs"
    cfgs.mkdir(parents=True)
    (cfgs / "resnet.yaml").write_text("network:\n" + config + "  ANCHOR_RATIOS:\n  - 0.5\n")
    return root


def test_a_startswith_copy_reports_what_it_froze_against_the_substring_default(tmp_path,
                                                                              capsys):
    resnet_tree(tmp_path, "name.startswith(prefix)")
    _, lines = run(capsys, tmp_path)
    copy = lines_for(lines, "proj/core/module.py")
    [difference] = [line for line in copy if "[ok] FIXED_PARAMS" in line]
    assert "(experiments/proj/cfgs/resnet.yaml:2)" in difference
    # 12 arguments: the data, 3 convolutions without bias, 3 BatchNorms, the classifier's two.
    assert ("this copy's startswith rule froze 6 of the 12 arguments the repo's symbols "
            "name; compat's default substring rule would freeze 8 (2 more, e.g. "
            "bn3a_branch2a_beta, bn3a_branch2a_gamma)") in difference
    assert "fixed_param_rule='startswith', which keeps the 6" in difference
    [dead] = [line for line in copy if "[check] FIXED_PARAMS" in line]
    assert "'gamma', 'beta' freeze nothing of the repo's symbols" in dead
    assert "by substring they would freeze 6 more" in dead


def test_a_substring_copy_reports_only_prefixes_that_freeze_nothing(tmp_path, capsys):
    resnet_tree(tmp_path, "prefix in name",
                config="  FIXED_PARAMS:\n  - gamma\n  - stage9   # a typo\n")
    _, lines = run(capsys, tmp_path)
    copy = [line for line in lines_for(lines, "proj/core/module.py") if "FIXED_PARAMS" in line]
    assert len(copy) == 1 and "[check]" in copy[0]
    assert "under this copy's substring rule 'stage9' freeze nothing" in copy[0]
    assert "by substring they would" not in copy[0]


def test_a_python_config_and_a_flow_list_are_read_and_equal_lists_counted_once(tmp_path,
                                                                              capsys):
    resnet_tree(tmp_path, "name.startswith(prefix)", config="  FIXED_PARAMS: [conv1, gamma]\n")
    (tmp_path / "proj" / "config.py").write_text(
        "from easydict import EasyDict\nconfig = EasyDict()\n"
        "config.network = EasyDict()\nconfig.network.FIXED_PARAMS = ['conv1', 'gamma']\n")
    _, lines = run(capsys, tmp_path)
    found = [line for line in lines_for(lines, "proj/core/module.py") if "[ok] FIXED" in line]
    assert len(found) == 1
    assert "FIXED_PARAMS ['conv1', 'gamma'] (proj/config.py:4 and 1 more configs)" in found[0]
    assert "froze 1 of the 12" in found[0] and "would freeze 5" in found[0]


def test_each_copy_is_told_about_its_own_sub_projects_configs(tmp_path, capsys):
    resnet_tree(tmp_path, "name.startswith(prefix)", project="fcis")
    resnet_tree(tmp_path, "name.startswith(prefix)", project="rfcn",
                config="  FIXED_PARAMS:\n  - res3\n  - gamma\n")
    _, lines = run(capsys, tmp_path)
    fcis = [line for line in lines_for(lines, "fcis/core/module.py") if "FIXED_PARAMS" in line]
    rfcn = [line for line in lines_for(lines, "rfcn/core/module.py") if "FIXED_PARAMS" in line]
    assert fcis and all("experiments/fcis/cfgs/resnet.yaml" in line for line in fcis)
    assert rfcn and all("experiments/rfcn/cfgs/resnet.yaml" in line for line in rfcn)


def test_without_literal_symbol_names_nothing_is_claimed(tmp_path, capsys):
    family_tree(tmp_path, module=copy_source(rule="name.startswith(prefix)"))
    (tmp_path / "cfg.yaml").write_text("FIXED_PARAMS:\n- gamma\n")
    _, lines = run(capsys, tmp_path)
    assert not [line for line in lines if "FIXED_PARAMS [" in line]


# --------------------------------------------------------------------------- the pieces
def test_the_parameters_a_symbol_file_names_follow_each_operators_arguments():
    tree = ast.parse(SYMBOLS + textwrap.dedent('''\
        offset = mx.symbol.Variable('res5a_branch2b_offset_weight', lr_mult=1.0)
        fc = mx.sym.FullyConnected(offset, num_hidden=2, name='bbox_pred')
        dyn = mx.sym.Convolution(fc, num_filter=1, name='conv_%d' % 3)
        '''))
    names = frozen.symbol_parameters({"s.py": tree})
    assert names == {"data", "conv1_weight", "bn_conv1_gamma", "bn_conv1_beta",
                     "res2a_branch2a_weight", "bn2a_branch2a_gamma", "bn2a_branch2a_beta",
                     "res3a_branch2a_weight", "bn3a_branch2a_gamma", "bn3a_branch2a_beta",
                     "cls_score_weight", "cls_score_bias", "res5a_branch2b_offset_weight",
                     "bbox_pred_weight", "bbox_pred_bias"}


@pytest.mark.parametrize("rule, expected", [
    ("startswith", {"conv1_weight"}),
    ("substring", {"conv1_weight", "bn_conv1_gamma", "bn3a_gamma"}),
])
def test_each_rule_freezes_as_its_copy_did(rule, expected):
    names = {"conv1_weight", "bn_conv1_gamma", "bn3a_gamma", "fc_bias"}
    assert frozen.frozen(names, ["conv1", "gamma"], rule) == expected


def test_yaml_lists_end_at_the_first_line_that_is_no_item():
    lines = ["network:", "  FIXED_PARAMS:", "  - conv1", "  - 'gamma'  # frozen BN",
             "  FIXED_PARAMS_SHARED: []", "  OTHER:", "  - 1"]
    assert list(frozen._yaml_in(lines)) == [(2, ["conv1", "gamma"])]
