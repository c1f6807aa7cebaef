"""``migrate`` on hostile files: newlines, BOMs and encodings kept byte for byte, one-line
statement lists, links leaving PATH, FIFOs, dangling links, files nested too deeply, a write
that fails half-way, paths past PATH_MAX; --diff, the progress counter and the exit
statuses."""

import codecs
import errno
import os
import subprocess
import sys

import pytest

from mxpatch_bind import migrate
from mxpatch_bind.migrate import files as _migrate_files
from paths import REPO, TESTS

TESTS = str(TESTS)
REPO = os.path.dirname(TESTS)
COPY = os.path.join(TESTS, "tools", "fork_tree", "rfcn", "core")
OLD = b"from core.module import MutableModule"
NEW = b"from mxpatch_bind.compat import MutableModule"


@pytest.fixture
def root(tmp_path):
    """A tree with the fork's ``core/`` (module.py and its executor group)."""
    core = tmp_path / "core"
    core.mkdir()
    for name in ("module.py", "DataParallelExecutorGroup.py"):
        (core / name).write_bytes(open(os.path.join(COPY, name), "rb").read())
    return tmp_path


def run(capsys, *argv):
    status = migrate.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


@pytest.mark.parametrize("before", [
    b"import os\r\n" + OLD + b"\r\nmod = MutableModule(sym, ['data'], None)\r\n",
    codecs.BOM_UTF8 + b"import os\n" + OLD + b"\nname = '\xc3\xa9'\n",
    b"# -*- coding: latin-1 -*-\n" + OLD + b"\nname = '\xe9t\xe9'\n",
    b"# -*- coding: latin-1 -*-\r\n" + OLD + b"\r\nprint 'caf\xe9'\r\n",
])
def test_only_the_import_changes_byte_for_byte(root, capsys, before):
    script = root / "train.py"
    script.write_bytes(before)
    run(capsys, root, "--write")
    assert script.read_bytes() == before.replace(OLD, NEW)


def test_a_one_line_statement_list_rewrites_only_the_forks_import(root, capsys):
    script = root / "train.py"
    script.write_bytes(OLD + b"; from os.path import join\n")
    run(capsys, root, "--write")
    assert script.read_bytes() == NEW + b"; from os.path import join\n"


def test_the_mode_is_kept(root, capsys):
    script = root / "train.py"
    script.write_bytes(OLD + b"\n")
    script.chmod(0o751)
    run(capsys, root, "--write")
    assert script.read_bytes() == NEW + b"\n"
    assert script.stat().st_mode & 0o777 == 0o751


def test_a_link_leaving_path_is_reported_and_never_written_through(tmp_path, capsys, root):
    outside = tmp_path.parent / (tmp_path.name + "-outside.py")
    outside.write_bytes(OLD + b"\n")
    (root / "linked.py").symlink_to(outside)
    status, lines, _ = run(capsys, root, "--write", "--delete-vendored")
    assert outside.read_bytes() == OLD + b"\n"
    [line] = [line for line in lines if line.startswith("linked.py:1:")]
    assert "[check]" in line and "outside PATH: not written" in line
    assert (root / "core" / "module.py").exists()  # the link still imports it
    assert status == 1


def test_a_fifo_a_dangling_link_and_a_deep_file_are_one_check_each(root):
    os.mkfifo(root / "x.py")
    (root / "gone.py").symlink_to(root / "nowhere.py")
    (root / "deep.py").write_text("x = " + "1 + " * 30000 + "1\n")
    (root / "train.py").write_bytes(OLD + b"\n")
    code = ("import sys; from mxpatch_bind import migrate; "
            "sys.exit(migrate.main([%r, '--write']))" % str(root))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    lines = result.stdout.splitlines()
    assert [line.split(" [")[0] for line in lines if "[check]" in line] == [
        "deep.py:1:", "gone.py:1:", "x.py:1:"]
    assert "not a regular file (a FIFO)" in result.stdout
    assert "dangling symbolic link" in result.stdout
    assert "RecursionError" in result.stdout
    assert "train.py:1: [rewritten]" in result.stdout
    assert lines[-1].startswith("migrate: ")
    assert result.returncode == 1, result.stderr


def test_a_write_that_fails_leaves_the_file_as_it_was_and_the_walk_goes_on(root, capsys,
                                                                           monkeypatch):
    first, second = root / "a.py", root / "b.py"
    first.write_bytes(OLD + b"\n")
    big = OLD + b"\n" + (b"x = '" + b"a" * 1000 + b"'\n") * 110  # over 100,000 bytes
    second.write_bytes(big)
    real_fsync = os.fsync

    def full_disk(fd):
        if os.fstat(fd).st_size > 100000:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(_migrate_files.os, "fsync", full_disk)
    status, lines, _ = run(capsys, root, "--write")
    assert second.read_bytes() == big
    assert first.read_bytes() == NEW + b"\n"
    assert sorted(p.name for p in root.iterdir()) == ["a.py", "b.py", "core"]
    # The report came first, with both rewrites as planned; the failed write adds one line.
    assert "a.py:1: [rewritten]" in lines[0] and "b.py:1: [rewritten]" in lines[1]
    assert lines[-2].startswith("migrate: ") and "2 rewritten" in lines[-2]
    assert lines[-1].startswith("b.py:1: [check] imports MutableModule")
    assert lines[-1].endswith("; write failed, the file is unchanged: No space left on device")
    assert status == 2


def test_after_a_failed_write_no_copy_is_deleted(root, capsys, monkeypatch):
    script = root / "train.py"
    script.write_bytes(OLD + b"\n")

    def full_disk(path, data):
        raise _migrate_files.FileProblem("write failed, the file is unchanged: No space left "
                                         "on device", io_error=True)

    monkeypatch.setattr(_migrate_files, "write_atomically", full_disk)
    status, lines, _ = run(capsys, root, "--write", "--delete-vendored")
    assert script.read_bytes() == OLD + b"\n"
    # the copy train.py still imports, and the executor group that copy imports
    assert sorted(p.name for p in (root / "core").iterdir()) == [
        "DataParallelExecutorGroup.py", "module.py"]
    # after the report (which planned the deletions), one line each
    assert lines[-4].startswith("migrate: ") and "2 deleted" in lines[-4]
    assert [line.split(" [")[0] for line in lines[-3:]] == [
        "core/DataParallelExecutorGroup.py:1:", "core/module.py:1:", "train.py:1:"]
    assert all(line.endswith("; not deleted: the write of train.py failed")
               for line in lines[-3:-1])
    assert lines[-1].startswith("train.py:1: [check] imports MutableModule")
    assert status == 2


def test_diff_shows_the_change_and_writes_nothing(root, capsys):
    script = root / "train.py"
    script.write_bytes(OLD + b"\n")
    status, lines, _ = run(capsys, root, "--write", "--delete-vendored", "--diff")
    assert script.read_bytes() == OLD + b"\n"
    assert (root / "core" / "module.py").exists()
    assert "-" + OLD.decode() in lines and "+" + NEW.decode() in lines
    assert status == 1


def test_progress_is_counted_on_a_terminal_only(root, capsys, monkeypatch):
    (root / "train.py").write_bytes(OLD + b"\n")
    _, _, err = run(capsys, root)
    assert err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    _, _, err = run(capsys, root)
    assert "migrate: read 3/3 files" in err


def test_exit_0_when_nothing_is_left_1_when_a_person_is_needed(root, capsys):
    (root / "train.py").write_bytes(OLD + b"\n")
    assert run(capsys, root)[0] == 1
    assert run(capsys, root, "--write", "--delete-vendored")[0] == 0
    assert run(capsys, root)[0] == 0


def test_a_keyword_is_written_only_where_its_import_was_rewritten():
    # The keyword is compat's: a construction whose import stays the vendored one's must not
    # get it. The second construction's import key names no statement of the file.
    text = ("from core.module import MutableModule\n"
            "from lib.module import MutableModule as Other\n"
            "a = MutableModule(sym, fixed_param_prefix=['conv'])\n"
            "b = Other(sym, fixed_param_prefix=['conv'])\n")
    rule = ", fixed_param_rule='startswith'"

    def keyword(line, import_key):
        column = text.splitlines()[line - 1].rindex(")")
        return migrate.Finding("a.py", line, migrate.command.REWRITE, "", edit=("keyword", line, column,
                                                                        rule, import_key))

    chosen = [keyword(3, ("import", 1, 0, "core.module")),
              keyword(4, ("import", 9, 0, "lib.module"))]

    new, made, _ = migrate.command._edited(text, chosen, "a.py")

    assert new == ("from mxpatch_bind.compat import MutableModule\n"
                   "from lib.module import MutableModule as Other\n"
                   "a = MutableModule(sym, fixed_param_prefix=['conv']%s)\n"
                   "b = Other(sym, fixed_param_prefix=['conv'])\n" % rule)
    assert made == {("import", 1, 0, "core.module"), chosen[0].edit}


# --------------------------------------------------------------------------- paths over PATH_MAX
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")  # 4096 on Linux


def _deep(root, length, files):
    """Folders of 200-character names under ``root`` until the last one's absolute path is
    ``length`` characters or longer, then ``files`` ({name: bytes}) in it; returns that
    folder relative to ``root``. Built through directory descriptors, which PATH_MAX does
    not limit."""
    fd, path, parts = os.open(root, os.O_RDONLY), str(root.resolve()), []
    try:
        while len(path) < length:
            name = f"d{len(parts):02d}" + "x" * max(1, min(200, length - len(path) - 4))
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd, path = inner, f"{path}/{name}"
            parts.append(name)
        for name, data in files.items():
            handle = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(handle, data)
            os.close(handle)
    finally:
        os.close(fd)
    return "/".join(parts)


def test_a_folder_past_path_max_is_one_check_and_the_run_goes_on(root, capsys):
    (root / "train.py").write_bytes(OLD + b"\n")
    deep = _deep(root, PATH_MAX + 100, {"hidden.py": OLD + b"\n"})
    status, lines, err = run(capsys, root, "--write")
    [check] = [line for line in lines if "[check]" in line]
    where, _, message = check.partition(":1: [check] ")
    assert message == "cannot list directory: File name too long"
    # the first folder the walk cannot list; nothing below it is reached
    assert (deep + "/").startswith(where + "/")
    assert len(str(root.resolve() / where)) >= PATH_MAX > len(str((root.resolve() / where).parent))
    assert any(line.startswith("train.py:1: [rewritten]") for line in lines)
    assert (root / "train.py").read_bytes() == NEW + b"\n"
    assert lines[-1].startswith("migrate: ") and err == ""
    assert status == 1


def test_an_import_looked_up_past_path_max_is_unresolved_not_a_traceback(root, capsys):
    # The folder itself fits PATH_MAX; the names the import check looks for beside the file
    # (folder/name/__init__.py) do not.
    deep = _deep(root, PATH_MAX - 12, {"m.py": b"import not_a_module_anywhere\n"})
    status, lines, _ = run(capsys, root)
    [check] = [line for line in lines if line.startswith(deep + "/m.py:1:")]
    assert "[check]" in check and "not_a_module_anywhere" in check
    assert status == 1


def test_a_config_past_path_max_is_left_out_like_an_unreadable_one(root, capsys):
    # read for the FIXED_PARAMS lists the vendored copies' freezing rule is measured on
    _deep(root, PATH_MAX - 30, {"y" * 100 + ".yaml": b"FIXED_PARAMS: [conv1]\n"})
    (root / "train.py").write_bytes(OLD + b"\n")
    status, lines, _ = run(capsys, root, "--write")
    assert any(line.startswith("train.py:1: [rewritten]") for line in lines)
    assert status == 1


def test_a_file_whose_name_nearly_fills_name_max_is_written(root, capsys):
    script = root / ("t" * 250 + ".py")  # a temporary named after it would not fit
    script.write_bytes(OLD + b"\n")
    status, lines, _ = run(capsys, root, "--write", "--delete-vendored")
    assert script.read_bytes() == NEW + b"\n"
    assert sorted(p.name for p in root.iterdir()) == ["core", script.name]
    assert status == 0, lines
