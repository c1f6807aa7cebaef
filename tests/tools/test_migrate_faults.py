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
