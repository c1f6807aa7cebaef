"""``python -m mxpatch_bind migrate``: the report on a fork-style tree, --write, and the
migrated training run against the fork's loop (stock executors per device)."""

import ast
import json
import os
import shutil
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest
from conftest import shared_probe
from fork_oracle import load_states

from mxpatch_bind import migrate
from paths import REPO, TESTS

TESTS = str(TESTS)
REPO = os.path.dirname(TESTS)
FORK_TREE = os.path.join(TESTS, "tools", "fork_tree")
FROZEN = ["conv1_weight", "conv1_bias", "bn_conv1_gamma", "bn_conv1_beta", "bn2_gamma"]

CHECK_RCNN = ("rfcn/function/train_rcnn.py:15: [check] optimizer_params without rescale_grad: "
              "stock Module scales by 1/(total samples), the fork by 1/(number of devices); "
              "set rescale_grad explicitly")
CHECK_PREFETCH = ("rfcn/function/train_rpn.py:38: [check] mx.io.PrefetchingIter around "
                  "AnchorLoader, a per-device loader: it reads provide_data as one flat list "
                  "(batch_size = provide_data[0][1][0]); keep the fork's utils/PrefetchingIter "
                  "or use mxpatch_bind.PerDevicePrefetchingIter")
MAX_NOTE = "max shapes are allocated once, at the first bind"
PREFIX_NOTE = ("fixed_param_prefix freezes by the substring rule (rfcn/core/module.py:84: "
               "prefix in name)")
KEPT = "the drop-in keeps the fork's behaviour"


def expected_report(done=False):
    """The report on the synthetic tree, line by line (``done``: after --write/--delete)."""
    delete, rewrite = ("deleted", "rewritten") if done else ("delete", "rewrite")
    imports = ("[%s] imports MutableModule from the vendored rfcn/core/module.py: becomes "
               "'from mxpatch_bind.compat import MutableModule'" % rewrite)
    vendored = "[%s] vendored copy of the fork's %%s: delete it (stock MXNet with " \
               "mxpatch_bind replaces it)" % delete
    return [
        "rfcn/core/DataParallelExecutorGroup.py:1: " + vendored % "DataParallelExecutorGroup.py",
        "rfcn/core/module.py:1: " + vendored % "module.py",
        "rfcn/core/tester.py:5: " + imports,
        "rfcn/core/tester.py:13: [ok] MutableModule(...) with max_data_shapes: %s; %s"
        % (KEPT, MAX_NOTE),
        CHECK_RCNN,
        "rfcn/function/train_rpn.py:9: " + imports,
        "rfcn/function/train_rpn.py:27: [ok] MutableModule(...) with work_load_list, "
        "max_data_shapes, max_label_shapes, fixed_param_prefix: %s; %s; work_load_list "
        "splits only flat batches (your loader splits images); %s" % (KEPT, MAX_NOTE,
                                                                      PREFIX_NOTE),
        CHECK_PREFETCH,
        "rfcn/function/train_rpn.py:40: [ok] optimizer_params without rescale_grad on mod: "
        "the drop-in keeps the fork's default 1/(number of devices); stock Module's is "
        "1/(total samples)",
        "rfcn/train_end2end.py:15: " + imports,
        "rfcn/train_end2end.py:49: [ok] MutableModule(...) with max_data_shapes, "
        "max_label_shapes, fixed_param_prefix: %s; %s; %s" % (KEPT, MAX_NOTE, PREFIX_NOTE),
        "rfcn/train_end2end.py:55: [ok] mod._preload_opt_states: resumes the optimizer "
        "states; stock init_optimizer honours it too",
    ]


@pytest.fixture
def tree(tmp_path):
    """A fresh copy of the synthetic fork tree."""
    root = tmp_path / "fork_tree"
    shutil.copytree(FORK_TREE, root)
    return root


def run_migrate(capsys, *argv):
    status = migrate.main([str(a) for a in argv])
    return status, capsys.readouterr().out.splitlines()


def snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}


# --------------------------------------------------------------------------- the report
def test_the_report_lists_every_finding_of_the_fork_tree_line_by_line(tree, capsys):
    status, lines = run_migrate(capsys, tree)
    assert lines[:-1] == expected_report()
    assert lines[-1] == ("migrate: 12 findings in 6 files: 3 to rewrite (--write), 2 to delete "
                         "(--delete-vendored), 2 to check by hand, 5 handled by "
                         "mxpatch_bind.compat")
    assert status == 1


@pytest.mark.real_probe
@pytest.mark.parametrize("write", [[], ["--write", "--delete-vendored"]], ids=["report", "write"])
def test_the_probe_run_anew_gives_the_report_its_shared_answer_gives(tree, tmp_path, capsys,
                                                                      write):
    # tests/conftest.py reuses the probe's answers within a session: a run that asks it
    # again (this test) and one given the shared answer print the same, and write the same;
    # names the probe finds gone make the report depend on its answer
    (tree / "rfcn" / "timing.py").write_text(
        "import collections\nimport time\n\nstart = time.clock()\n"
        "print(isinstance({}, collections.Mapping), time.clock() - start)\n")
    copies = [shutil.copytree(tree, tmp_path / name) for name in ("asks", "is_answered")]
    anew = run_migrate(capsys, tree, *write)
    with shared_probe():  # the first run asks (or is answered), the second is answered
        shared = [run_migrate(capsys, copy, *write) for copy in copies][-1]
    assert [line.replace(str(copies[-1]), str(tree)) for line in shared[1]] == anew[1]
    assert shared[0] == anew[0] and snapshot(copies[-1]) == snapshot(tree)
    assert any("time.clock" in line for line in anew[1]), anew[1]


def test_without_write_nothing_is_written(tree, capsys):
    before = snapshot(tree)
    run_migrate(capsys, tree)
    assert snapshot(tree) == before


def test_write_rewrites_only_the_import_lines_and_delete_removes_the_vendored_files(tree,
                                                                                    capsys):
    before = snapshot(tree)
    status, lines = run_migrate(capsys, tree, "--write", "--delete-vendored")
    after = snapshot(tree)
    assert lines[:-1] == expected_report(done=True)
    assert status == 1  # two findings still need a person
    assert set(before) - set(after) == {"rfcn/core/module.py",
                                        "rfcn/core/DataParallelExecutorGroup.py"}
    changed = {}
    for name in after:
        old, new = before[name].decode().splitlines(), after[name].decode().splitlines()
        assert len(old) == len(new)
        changed.update({(name, i + 1): (a, b) for i, (a, b) in enumerate(zip(old, new))
                        if a != b})
    assert changed == {
        ("rfcn/core/tester.py", 5): ("from module import MutableModule",
                                     "from mxpatch_bind.compat import MutableModule"),
        ("rfcn/function/train_rpn.py", 9): ("from core.module import MutableModule",
                                            "from mxpatch_bind.compat import MutableModule"),
        ("rfcn/train_end2end.py", 15): ("from core.module import MutableModule",
                                        "from mxpatch_bind.compat import MutableModule"),
    }


def test_a_second_run_after_write_reports_only_what_needs_a_person(tree, capsys):
    run_migrate(capsys, tree, "--write", "--delete-vendored")
    status, lines = run_migrate(capsys, tree)
    pending = [line for line in lines[:-1] if "] " in line and "[ok]" not in line]
    assert pending == [CHECK_RCNN, CHECK_PREFETCH]
    assert status == 1


def test_nothing_left_to_do_exits_0(tree, capsys):
    run_migrate(capsys, tree, "--write", "--delete-vendored")
    status, lines = run_migrate(capsys, tree / "rfcn" / "train_end2end.py")
    assert status == 0
    assert lines[-1] == "migrate: 2 findings in 1 file: 2 handled by mxpatch_bind.compat"


def test_write_keeps_parentheses_aliases_and_comments(tmp_path, capsys):
    shutil.copytree(os.path.join(FORK_TREE, "rfcn", "core"), tmp_path / "core")
    script = tmp_path / "train.py"
    script.write_text("from core.module import (  # the fork's\n"
                      "    MutableModule as MM,\n"
                      "    Module,\n"
                      ")\n"
                      "mod = MM(sym, ['data'], None)\n")
    run_migrate(capsys, tmp_path, "--write")
    assert script.read_text() == ("from mxpatch_bind.compat import (  # the fork's\n"
                                  "    MutableModule as MM,\n"
                                  "    Module,\n"
                                  ")\n"
                                  "mod = MM(sym, ['data'], None)\n")


def test_imports_the_drop_ins_cannot_replace_need_a_person(tmp_path, capsys):
    shutil.copytree(os.path.join(FORK_TREE, "rfcn", "core"), tmp_path / "core")
    script = tmp_path / "train.py"
    source = ("from core.module import MutableModule, _parse_data_desc\n"
              "from core.DataParallelExecutorGroup import DataParallelExecutorGroup\n"
              "mod = MutableModule(sym, ['data'], None)\n"
              "inner = mod._curr_module\n")
    script.write_text(source)
    status, lines = run_migrate(capsys, tmp_path, "--write")
    assert [line.split(": [")[0] + " " + line.split("] ")[0].split("[")[1]
            for line in lines if line.startswith("train.py")] == [
        "train.py:1 check", "train.py:2 check", "train.py:3 ok", "train.py:4 check"]
    assert script.read_text() == source
    assert status == 1


# --------------------------------------------------------------------------- recognition
def test_a_renamed_vendored_copy_is_found_by_its_content(tree, capsys):
    core = tree / "rfcn" / "core"
    (tree / "lib").mkdir()
    shutil.copy(core / "module.py", tree / "lib" / "mutable.py")
    shutil.copy(core / "DataParallelExecutorGroup.py", tree / "lib" / "executors.py")
    findings = migrate.scan(tree)
    assert [(f.path, f.action) for f in findings if f.path.startswith("lib/")] == [
        ("lib/executors.py", "delete"), ("lib/mutable.py", "delete")]
    assert "DataParallelExecutorGroup.py" in str(findings[0])


def test_an_unrelated_module_py_and_a_stock_executor_group_are_not_reported(tree):
    assert [f for f in migrate.scan(tree) if f.path.startswith("unrelated/")] == []
    assert migrate.vendored_kind(ast.parse(
        (tree / "unrelated" / "executor_group.py").read_text())) is None


def test_a_python_2_file_is_read_and_offered_to_the_port(tree, capsys):
    (tree / "rfcn" / "py2.py").write_text("import os\nprint 'generating %d' % 3\n")
    status, lines = run_migrate(capsys, tree)
    assert [line for line in lines if line.startswith("rfcn/py2.py")] == [
        "rfcn/py2.py:2: [port] Python 2 code (Missing parentheses in call to 'print'. Did you "
        "mean print(...)? at line 2): --to-python3 ports it with the 2to3 fixers"]
    assert status == 1


def test_a_file_that_parses_as_neither_python_is_reported_not_raised(tree, capsys):
    (tree / "rfcn" / "broken.py").write_text("import os\ndef f(:\n")
    status, lines = run_migrate(capsys, tree)
    [line] = [line for line in lines if line.startswith("rfcn/broken.py")]
    assert line.startswith("rfcn/broken.py:2: [check] cannot parse as Python 3 (invalid "
                           "syntax at line 2) nor as Python 2")
    assert status == 1


@pytest.mark.parametrize("source, reported", [
    ("mod.fit(d, optimizer_params={'learning_rate': 0.1})\n", True),
    ("mod.fit(d, optimizer_params={'learning_rate': 0.1, 'rescale_grad': 1.0})\n", False),
    ("mod.fit(d, optimizer_params=dict(learning_rate=0.1, rescale_grad=1.0))\n", False),
    ("p = {'learning_rate': 0.1}\np['rescale_grad'] = 0.5\nmod.fit(d, optimizer_params=p)\n",
     False),
    ("p = {'learning_rate': 0.1}\nmod.fit(d, optimizer_params=p)\n", True),
    ("mod.fit(d, optimizer_params=make_params())\n", True),
    ("mod.fit(d, optimizer_params=dict(learning_rate=0.1))\n", True),
    ("mod.fit(d, optimizer_params=dict(**base))\n", True),
])
def test_optimizer_params_need_a_person_unless_they_set_rescale_grad(tmp_path, source,
                                                                      reported):
    (tmp_path / "train.py").write_text(source)
    assert [f.action for f in migrate.scan(tmp_path)] == (["check"] if reported else [])


# --------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv", [[], ["--write"], ["a", "b"], ["a", "--bogus"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        migrate.main(argv)
    assert exit_info.value.code == 2


def test_a_missing_path_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        migrate.main([str(tmp_path / "nowhere")])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith(
        "python -m mxpatch_bind migrate: error: no such file or directory")


def test_write_without_libcst_exits_2_before_anything_changes(tree, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "libcst", None)  # import libcst now raises ImportError
    before = snapshot(tree)
    with pytest.raises(SystemExit) as done:
        migrate.main([str(tree), "--write", "--delete-vendored"])
    assert done.value.code == 2
    assert 'error: --write needs libcst: pip install ".[migrate]"' in capsys.readouterr().err
    assert snapshot(tree) == before


@pytest.mark.slow  # a child Python
def test_python_m_runs_it_on_its_own_without_importing_mxnet(tree):
    code = ("import sys, runpy; sys.argv = ['migrate', %r]\n"
            "try:\n    runpy.run_module('mxpatch_bind.migrate', run_name='__main__')\n"
            "except SystemExit as e:\n    print('rc', e.code, 'mxnet' in sys.modules)\n"
            % str(tree))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, PYTHONPATH=REPO))
    lines = result.stdout.splitlines()
    assert lines[-2].startswith("migrate: 12 findings in 6 files")
    assert lines[-1] == "rc 1 False"


def test_pytest_collects_nothing_from_the_data_tree():
    result = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", FORK_TREE],
                            capture_output=True, text=True, timeout=300, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 5, result.stdout  # 5: no tests collected
    assert "error" not in result.stdout.lower()


# --------------------------------------------------------------------------- migrated training
def write_pretrained(rfcn, path):
    """Deterministic starting parameters, as the fork loads from a pretrained model."""
    sys.path.insert(0, str(rfcn))
    try:
        from symbols import get_symbol
        symbol = get_symbol()
    finally:
        sys.path.remove(str(rfcn))
        sys.modules.pop("symbols", None)
    arg_shapes, _, aux_shapes = symbol.infer_shape(data=(2, 3, 20, 20), label=(2,))
    rng = np.random.RandomState(0)
    saved = {"arg:" + n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
             for n, s in zip(symbol.list_arguments(), arg_shapes) if n not in ("data", "label")}
    saved.update({"aux:" + n: mx.nd.array(rng.uniform(0.5, 1.0, s) if "var" in n
                                          else rng.uniform(-0.1, 0.1, s))
                  for n, s in zip(symbol.list_auxiliary_states(), aux_shapes)})
    mx.nd.save(str(path), saved)
    return saved


def run_script(cwd, *argv):
    result = subprocess.run([sys.executable, *map(str, argv)], cwd=cwd, capture_output=True,
                            text=True, timeout=600, env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 0, result.stderr[-3000:]


def arrays(path):
    return {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}


def assert_same_arrays(left, right):
    assert sorted(left) == sorted(right)
    for name in left:
        assert left[name].dtype == right[name].dtype
        assert left[name].tobytes() == right[name].tobytes(), name


@pytest.fixture(scope="module")
def migrated_and_fork_runs(tmp_path_factory):
    """The tree migrated with --write --delete-vendored; its train_end2end.py run for two
    epochs on cpu(0)/cpu(1), and resumed from epoch 1; the fork's loop as the oracle."""
    work = tmp_path_factory.mktemp("migrated")
    root = work / "fork_tree"
    shutil.copytree(FORK_TREE, root)
    assert migrate.main([str(root), "--write", "--delete-vendored"]) == 1
    rfcn = root / "rfcn"
    pretrained = write_pretrained(rfcn, work / "pretrained.params")
    common = ["--devices", "2", "--pretrained", work / "pretrained.params"]
    run_script(rfcn, "train_end2end.py", *common, "--epochs", "2", "--prefix", work / "mig",
               "--record", work / "mig.json")
    shutil.copy(work / "mig-0001.params", work / "res-0001.params")
    shutil.copy(work / "mig-0001.states", work / "res-0001.states")
    run_script(rfcn, "train_end2end.py", *common, "--begin-epoch", "1", "--epochs", "1",
               "--prefix", work / "res", "--record", work / "res.json")
    run_script(rfcn, os.path.join(TESTS, "fork_oracle.py"), rfcn, *common, "--epochs", "2",
               "--prefix", work / "fork", "--record", work / "fork.json")
    return work, {k: v.asnumpy() for k, v in pretrained.items()}


@pytest.mark.slow  # trains the fork and the migrated copy in subprocesses
def test_the_migrated_run_has_the_fork_loops_losses_exactly(migrated_and_fork_runs):
    work, _ = migrated_and_fork_runs
    migrated = json.loads((work / "mig.json").read_text())
    fork = json.loads((work / "fork.json").read_text())
    assert len(migrated) == 2 * 6 * 2  # epochs x batches x devices
    assert migrated == fork


@pytest.mark.slow  # reads the runs the fixture trains in subprocesses
@pytest.mark.parametrize("epoch", [1, 2])
def test_the_migrated_checkpoints_equal_the_fork_loops(migrated_and_fork_runs, epoch):
    work, _ = migrated_and_fork_runs
    assert_same_arrays(arrays(work / ("mig-%04d.params" % epoch)),
                       arrays(work / ("fork-%04d.params" % epoch)))
    assert_same_arrays(load_states(work / ("mig-%04d.states" % epoch)),
                       load_states(work / ("fork-%04d.states" % epoch)))


@pytest.mark.slow  # reads the runs the fixture trains in subprocesses
def test_frozen_parameters_are_unchanged_to_the_bit_and_the_others_train(
        migrated_and_fork_runs):
    work, pretrained = migrated_and_fork_runs
    final = arrays(work / "mig-0002.params")
    assert_same_arrays({n: final["arg:" + n] for n in FROZEN},
                       {n: pretrained["arg:" + n] for n in FROZEN})
    trained = [n[4:] for n in final if n.startswith("arg:") and n[4:] not in FROZEN]
    assert sorted(trained) == ["bn2_beta", "cls_score_bias", "cls_score_weight",
                               "conv2_bias", "conv2_weight"]
    assert all(not np.array_equal(final["arg:" + n], pretrained["arg:" + n]) for n in trained)


@pytest.mark.slow  # reads the runs the fixture trains in subprocesses
def test_resuming_with_preload_opt_states_continues_the_run_exactly(migrated_and_fork_runs):
    work, _ = migrated_and_fork_runs
    assert_same_arrays(arrays(work / "res-0002.params"), arrays(work / "mig-0002.params"))
    migrated = json.loads((work / "mig.json").read_text())
    assert json.loads((work / "res.json").read_text()) == migrated[len(migrated) // 2:]
