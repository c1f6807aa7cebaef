"""``migrate`` against the faults hand-made mutants of its modules put in (docs/mutation.rst,
the samples of issue 30): each test guards one fault pattern, on a small tree written here,
and says which in its comment."""

import pytest
from test_migrate import run_migrate
from test_migrate_family import copy_source, family_tree
from test_migrate_imports import write_tree

from mxpatch_bind import migrate

pytest.importorskip("fissix")
pytest.importorskip("libcst")


# --------------------------------------------------------------------------- issue 30's six
def test_a_python_3_file_whose_parameters_are_named_like_python_2_builtins_is_python_3(
        tmp_path):
    # Fault: a parameter (``file``, ``reduce``) not counted among the names the file binds
    # itself, so a Python 3 file is taken for Python 2 and offered to the port.
    write_tree(tmp_path, {"ops.py": """\
        def apply(file, reduce, *unicode, **long):
            return reduce(file, unicode, long)


        def later(xrange=range):
            return [i for i in xrange(3)]
        """})
    assert migrate.scan(tmp_path) == []


def test_one_files_2to3_warnings_are_not_repeated_in_the_next_files_report(tmp_path, capsys):
    # Fault: the fixers' log not emptied between files (one tool serves every file), so the
    # first file's "use a for loop" warning comes back for every file ported after it.
    write_tree(tmp_path, {"a.py": "print 'a'\nmap(show, images)\n",
                          "b.py": "print 'b'\n",
                          "c.py": "print 'c'\nmap(show, labels)\n"})
    status, lines = run_migrate(capsys, tmp_path, "--to-python3")
    assert [line for line in lines if "2to3:" in line] == [
        "a.py:2: [check] 2to3: You should use a for loop here",
        "c.py:2: [check] 2to3: You should use a for loop here"]
    assert status == 1


@pytest.mark.parametrize("flags", [("--to-python3",), ("--write",),
                                   ("--write", "--to-python3")])
def test_a_file_without_a_final_newline_is_written_without_one(tmp_path, capsys, flags):
    # Fault: the newline fissix needs at the end of its input left in the output, so a port
    # (or a Python 2 import rewrite) adds a final newline the file did not have.
    family_tree(tmp_path, tester="from module import MutableModule\nprint 'ready'",
                train="from core.module import MutableModule\nprint 'train'")
    run_migrate(capsys, tmp_path, *flags)
    for rel in ("proj/core/tester.py", "proj/train_end2end.py"):
        text = (tmp_path / rel).read_text()
        assert not text.endswith("\n"), (rel, text)
        assert ("print('" in text) == ("--to-python3" in flags)
        assert ("mxpatch_bind.compat" in text) == ("--write" in flags)


@pytest.mark.parametrize("arguments, passed", [
    ("sym, data_names, label_names, logger, ctx", ""),
    ("sym, data_names, label_names, logger, ctx, workload", " with work_load_list"),
    ("sym, data_names, label_names, logger, ctx, workload, max_data",
     " with work_load_list, max_data_shapes"),
    ("sym, data_names, label_names, logger, ctx, workload, max_data, max_label",
     " with work_load_list, max_data_shapes, max_label_shapes"),
    ("sym, data_names, label_names, logger, ctx, workload, max_data, max_label, prefix",
     " with work_load_list, max_data_shapes, max_label_shapes, fixed_param_prefix"),
])
def test_each_positional_argument_of_a_mutable_module_is_read_at_its_position(
        tmp_path, arguments, passed):
    # Fault: an off-by-one in the positions of MutableModule(symbol, data_names, label_names,
    # logger, context, work_load_list, max_data_shapes, max_label_shapes, fixed_param_prefix).
    write_tree(tmp_path, {"train.py": f"""\
        from mxpatch_bind.compat import MutableModule
        mod = MutableModule({arguments})
        """})
    [finding] = [f for f in migrate.scan(tmp_path) if "MutableModule(" in f.message]
    assert finding.message.startswith(f"MutableModule(...){passed}: the drop-in keeps")


@pytest.mark.parametrize("arguments, passed", [
    ("sym, data_names, label_names, logger, ctx", ""),
    ("sym, data_names, label_names, logger, ctx, workload", " with work_load_list"),
    ("sym, data_names, label_names, logger, ctx, workload, fixed",
     " with work_load_list, fixed_param_names"),
])
def test_each_positional_argument_of_a_module_is_read_at_its_position(tmp_path, arguments,
                                                                      passed):
    # Fault: the same off-by-one in Module(symbol, data_names, label_names, logger, context,
    # work_load_list, fixed_param_names).
    write_tree(tmp_path, {"train.py": f"""\
        from mxpatch_bind.compat import Module
        mod = Module({arguments})
        """})
    [finding] = [f for f in migrate.scan(tmp_path) if "Module(" in f.message]
    assert finding.message.startswith(f"Module(...){passed}: the drop-in keeps")


def test_a_keyword_lands_after_the_last_argument_on_a_line_the_port_also_changes(tmp_path,
                                                                                 capsys):
    # Fault: the keyword inserted at the column read before the port, into the ported line
    # (``data.keys()`` becomes ``list(data.keys())`` before the insertion point).
    train = ("from core.module import MutableModule\n"
             "mod = MutableModule(sym, data.keys(), labels.keys(), fixed_param_prefix=prefix)\n"
             "print 'built'\n")
    family_tree(tmp_path, module=copy_source(rule="name.startswith(prefix)"), train=train)
    status, lines = run_migrate(capsys, tmp_path, "--write", "--to-python3")
    assert (tmp_path / "proj" / "train_end2end.py").read_text() == (
        "from mxpatch_bind.compat import MutableModule\n"
        "mod = MutableModule(sym, list(data.keys()), list(labels.keys()), "
        "fixed_param_prefix=prefix, fixed_param_rule='startswith')\n"
        "print('built')\n")
    assert any(line.startswith("proj/train_end2end.py:2: [rewritten]") for line in lines), lines


def test_an_edit_whose_statement_is_not_found_is_a_check_not_done(tmp_path):
    # Fault: an edit counted as rewritten although its statement was not where the scan read
    # it (the file changed in between): nothing is written, and it must say so.
    family_tree(tmp_path)
    findings = migrate.scan(tmp_path)
    train = tmp_path / "proj" / "train_end2end.py"
    train.write_text("# a line added since the scan\n" + train.read_text())
    before = train.read_bytes()
    result = migrate.apply(tmp_path, findings, write=True)
    assert train.read_bytes() == before
    [finding] = [f for f in result if f.path == "proj/train_end2end.py"
                 and f.message.startswith("imports MutableModule")]
    assert finding.action == "check"
    assert finding.message.endswith("; not done: the statement was not found as read")
    assert not any(f.action in ("rewritten", "deleted", "ported") for f in result
                   if f.path == "proj/train_end2end.py")


# --------------------------------------------------------------------------- sample 13's survivors
def test_an_import_under_a_bare_except_is_optional_and_an_unrelated_except_is_not(tmp_path):
    # Fault: a bare ``except:`` not counted among the handlers that catch ImportError, so an
    # optional import the code guards itself is reported as unresolved.
    write_tree(tmp_path, {"train.py": """\
        try:
            import nowhere_to_be_found
        except:
            nowhere_to_be_found = None
        try:
            import nor_this_one
        except KeyError:
            pass
        """})
    assert [(f.line, f.action) for f in migrate.check_imports(tmp_path)] == [(6, "check")]


PACKAGE_TREE = {"run.py": "import pkg.sub.mod\n\nif __name__ == '__main__':\n    pass\n",
                "pkg/__init__.py": "from .impl import compute as solve\n",
                "pkg/impl.py": "def compute():\n    return 1\n",
                "pkg/sub/__init__.py": "",
                "pkg/sub/helpers.py": "def f():\n    return 2\n"}


def test_a_relative_import_two_levels_up_is_checked_though_a_sibling_has_its_name(tmp_path):
    # Fault: an import skipped as Python 2's implicit relative import whatever its dots, so
    # ``from ..helpers import f`` passes because ``helpers`` is beside the file, not above it.
    write_tree(tmp_path, {**PACKAGE_TREE, "pkg/sub/mod.py": "from ..helpers import f\n"})
    assert [(f.path, f.line, f.message) for f in migrate.check_imports(tmp_path)] == [
        ("pkg/sub/mod.py", 1, "'from ..helpers import f' does not resolve: no module ..helpers "
                              "beside pkg/sub/mod.py")]


def test_a_name_a_package_binds_under_another_name_is_importable_from_it(tmp_path):
    # Fault: the ``as`` of ``from .impl import compute as solve`` in the package's __init__
    # ignored, so ``from .. import solve`` is reported as naming nothing.
    write_tree(tmp_path, {**PACKAGE_TREE, "pkg/sub/mod.py": "from .. import solve\n",
                          "pkg/user.py": "from . import solve, impl\n"})
    assert migrate.check_imports(tmp_path) == []
    write_tree(tmp_path, {"pkg/user.py": "from . import compute\n"})
    assert [f.line for f in migrate.check_imports(tmp_path)] == [1]


def test_a_scripts_own_folder_is_searched_before_a_shallower_one(tmp_path):
    # Fault: the folders on sys.path searched shallowest first, so a script's import of the
    # CUDA extension built beside it is taken for a same-named module at the tree's root
    # (and left unguarded).
    write_tree(tmp_path, {
        "main.py": "if __name__ == '__main__':\n    pass\n",
        "gpu_nms.py": "def gpu_nms(dets):\n    return dets\n",
        "lib/nms/setup.py": "from setuptools import Extension\n"
                            "ext = Extension('gpu_nms', ['nms_kernel.cu', 'gpu_nms.pyx'])\n",
        "lib/nms/gpu_nms.pyx": "# cython: language_level=3\n",
        "lib/nms/test_nms.py": "from gpu_nms import gpu_nms\n\n"
                               "if __name__ == '__main__':\n    gpu_nms([])\n"})
    assert [(f.path, f.line, f.action, f.edit) for f in migrate.scan(tmp_path)
            if f.action == "port"] == [("lib/nms/test_nms.py", 1, "port", ("guard", ("gpu_nms",)))]


def test_an_extension_named_by_its_dotted_path_is_found_by_its_last_part(tmp_path):
    # Fault: an ``Extension('nms.cpu_nms', ...)`` taken as a module named ``nms.cpu_nms``,
    # so the import of ``cpu_nms`` beside its setup.py (with no .pyx to see) does not resolve.
    write_tree(tmp_path, {
        "lib/nms/setup.py": "from setuptools import Extension\n"
                            "ext = Extension('nms.cpu_nms', ['cpu_nms.c'])\n",
        "lib/nms/cpu_nms.c": "/* generated */\n",
        "lib/nms/run.py": "from cpu_nms import cpu_nms\n\n"
                          "if __name__ == '__main__':\n    cpu_nms([])\n"})
    assert migrate.check_imports(tmp_path) == []


def test_a_slice_of_a_shape_is_no_integer_and_its_division_is_kept_not_floored(tmp_path):
    # Fault: ``x.shape[1:]`` taken for an integer like ``x.shape[1]``, so its ``/`` becomes
    # ``//`` without a person looking.
    from mxpatch_bind.migrate import traps

    text = "half = x.shape[1:] / 2\nrows = x.shape[0] / 2\n"
    assert traps.fix(text, True) == (
        "from mxpatch_bind.py2 import old_div\n"
        "half = old_div(x.shape[1:], 2)\nrows = x.shape[0] // 2\n", [])


def test_a_marker_lands_on_its_division_when_the_fix_adds_imports_above_it():
    # Fault: the lines the imports added above shift (``import base64``, the helpers') not
    # counted, so the marker of an unproven ``/=`` lands on a line before it.
    from mxpatch_bind.migrate import traps

    text = ("import mxnet as mx\nimport pickle\n"
            "sym = mx.sym.Custom(data=x, cfg=pickle.dumps(cfg), op_type='proposal')\n"
            "scale = a / b\nf()[0] /= b\n")
    assert traps.fix(text, True) == (
        "import base64\nfrom mxpatch_bind.py2 import old_div\nimport mxnet as mx\n"
        "import pickle\n"
        "sym = mx.sym.Custom(data=x, cfg=base64.b64encode(pickle.dumps(cfg)).decode('ascii'), "
        "op_type='proposal')\n"
        f"scale = old_div(a, b)\nf()[0] /= b  {traps.MARKER}\n", [7])


def test_an_import_of_a_copy_two_levels_up_is_rewritten(tmp_path):
    # Fault: ``from ..core.module import`` resolved one folder too high, so the import of the
    # vendored copy is neither reported nor rewritten (and the copy's deletion not blocked).
    family_tree(tmp_path)
    write_tree(tmp_path, {
        "proj/function/__init__.py": "",
        "proj/function/train_rpn.py": "from ..core.module import MutableModule\n"})
    [finding] = [f for f in migrate.scan(tmp_path) if f.path == "proj/function/train_rpn.py"]
    assert (finding.line, finding.action) == (1, "rewrite")
    assert finding.message.startswith("imports MutableModule from the vendored proj/core/module.py")


def test_only_a_next_without_arguments_is_listed_as_python_2s_iterator_next(tmp_path):
    # Fault: every ``.next(...)`` listed, so a method of the code's own that takes arguments
    # (``reader.next(3)``) is reported as Python 2's iterator protocol.
    write_tree(tmp_path, {"loader.py": "print 'reading'\nfirst = batches.next()\n"
                                       "rows = reader.next(3)\n"})
    assert [(f.line, f.message.split(":")[0]) for f in migrate.scan(tmp_path)
            if ".next()" in f.message] == [(2, ".next() at line 2")]


def test_a_division_already_marked_is_not_marked_twice():
    # Fault: the marker written again on a line that has it (or its '/' rewritten under a
    # marker a person has yet to read), so each --to-python3 run of a Python 2 code base grows
    # the same line.
    from mxpatch_bind.migrate import traps

    text = f"scale = a / b  {traps.MARKER}\n"
    assert traps.fix(text, True) == (text, [])


def test_an_operator_registered_in_a_cuda_source_is_found_there(tmp_path):
    # Fault: ``.cu`` files not searched, so an operator the repository defines only in CUDA
    # (the family's GPU-only operators) is said to have no source.
    from mxpatch_bind.migrate import operators

    write_tree(tmp_path, {
        "operator_cxx/psroi.cu": "MXNET_REGISTER_OP_PROPERTY(_contrib_PSROIPool, PSROIProp);\n",
        "operator_cxx/roi.cc": "NNVM_REGISTER_OP(ROIAlignX)\n"})
    assert operators.own_sources(tmp_path) == {"PSROIPool": ["operator_cxx/psroi.cu"],
                                               "ROIAlignX": ["operator_cxx/roi.cc"]}


def test_three_sources_of_an_operator_are_all_named_and_a_fourth_is_counted():
    # Fault: "and 0 more" after exactly three sources (the count's bound off by one).
    from mxpatch_bind.migrate import operators

    three = ["a.cc", "b.cu", "c.h"]
    assert operators.missing_message("mx.sym.contrib.X", "X", "1.9.1", three).endswith(
        "own C++ operator (a.cc, b.cu, c.h) has to be built into MXNet from source")
    assert "(a.cc, b.cu, c.h and 1 more)" in operators.missing_message(
        "mx.sym.contrib.X", "X", "1.9.1", three + ["d.cc"])


def test_a_file_that_became_a_link_outside_the_tree_since_the_scan_is_not_written(tmp_path):
    # Fault: apply() writing a file the walk marks read-only (a symbolic link to a file
    # outside PATH), when the findings it is given still ask for an edit there.
    tree, outside = tmp_path / "tree", tmp_path / "shared.py"
    write_tree(tree, {"old.py": "print 'x'\n"})
    findings = migrate.scan(tree)
    outside.write_text("print 'shared'\n")
    (tree / "old.py").unlink()
    (tree / "old.py").symlink_to(outside)
    [result] = migrate.apply(tree, findings, to_python3=True)
    assert outside.read_text() == "print 'shared'\n" and (tree / "old.py").is_symlink()
    assert result.action == "check"
    assert result.message.endswith(f"a symbolic link to {outside}, outside PATH: not written")
