"""``migrate --diff`` is a patch, and the report comes before the writes.

git and GNU patch are the reference: ``git apply`` and ``patch -p1`` of what ``--diff`` prints,
on a copy of the tree, must leave it byte for byte (and mode for mode) as ``--write`` leaves
the tree itself, on a hand-written tree of hostile files: no final newline, CRLF, a latin-1
file with its coding line, a form feed, a BOM, an executable, a non-ASCII name with a space,
and vendored copies deleted (one of them CRLF without a final newline).
"""

import os
import shutil
import stat
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mxpatch_bind import migrate
from mxpatch_bind.migrate import files as migrate_files
from mxpatch_bind.migrate.patch import file_patch, lines
from paths import REPO, TESTS

FORK_TREE = TESTS / "tools" / "fork_tree"
MIGRATION = ["--write", "--delete-vendored", "--to-python3"]
TOOLS = {"git apply": ["git", "apply", "-"], "patch -p1": ["patch", "-p1", "--batch", "--quiet"]}
needs_tools = pytest.mark.skipif(not (shutil.which("git") and shutil.which("patch")),
                                 reason="git and GNU patch are the reference")

HOSTILE = {
    "py2/no_newline.py": b"print 'no final newline'",
    "py2/crlf.py": b"import os\r\nprint 'crlf', os.sep\r\n",
    "py2/latin.py": b"# -*- coding: latin-1 -*-\nprint 'caf\xe9'\n",
    "py2/form_feed.py": b"print 'page one'\n\x0c\nprint 'page two'\n",
    "py2/bom.py": b"\xef\xbb\xbfprint 'bom'\n",
    "py2/run.py": b"#!/usr/bin/env python\nprint 'run'\n",
    "py2/r\u00e9seau x.py": b"print 'name'\n",
    "rfcn/crlf_train.py": b"from core.module import MutableModule\r\nprint(MutableModule)",
}


def hostile_tree(root):
    """The fork tree at ``root``, its executor group copy in CRLF without a final newline, and
    the hostile files."""
    shutil.copytree(FORK_TREE, root)
    group = root / "rfcn" / "core" / "DataParallelExecutorGroup.py"
    group.write_bytes(group.read_bytes().replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    for rel, data in HOSTILE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "py2" / "run.py").chmod(0o755)
    return root


@pytest.fixture
def tree(tmp_path):
    """A hostile tree of this test's own."""
    return hostile_tree(tmp_path / "tree")


class Migration:
    """One tree, migrated as a user would: ``--diff`` first, then ``--write``; what each
    printed, and the tree before, after the diff and after the write."""

    def __init__(self, root):
        self.pristine = hostile_tree(root / "pristine")  # never migrated: a patch's target
        self.root = shutil.copytree(self.pristine, root / "tree")
        self.before = snapshot(self.root)
        self.diff = migrate_command(self.root, *MIGRATION, "--diff")
        self.after_diff = snapshot(self.root)
        self.written = migrate_command(self.root, *MIGRATION)
        self.after = snapshot(self.root)


@pytest.fixture(scope="module")
def migration(tmp_path_factory):
    """The migration the diff, report and write tests read (two runs of the command in all,
    rather than two per test)."""
    return Migration(tmp_path_factory.mktemp("migration"))


def snapshot(root):
    """{relative path: (bytes, permission bits)} of every file."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in root.rglob("*") if p.is_file()}


def migrate_command(*args):
    return subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", *map(str, args)],
                          capture_output=True, timeout=300, check=False,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def apply_patch(tool, root, patch):
    applied = subprocess.run(TOOLS[tool], cwd=root, input=patch, capture_output=True,
                             timeout=120, check=False)
    assert applied.returncode == 0, applied.stdout + applied.stderr


@pytest.mark.slow  # migrate, git and patch run as processes
@needs_tools
@pytest.mark.parametrize("tool", TOOLS)
def test_the_diff_applied_to_a_copy_makes_exactly_what_the_write_makes(migration, tmp_path,
                                                                      tool):
    copy = shutil.copytree(migration.pristine, tmp_path / "copy")
    assert migration.after_diff == migration.before  # --diff writes nothing
    apply_patch(tool, copy, migration.diff.stdout)
    assert snapshot(copy) == migration.after
    # and the migration did what the hostile files are here for
    before, after = migration.before, migration.after
    assert "rfcn/core/module.py" not in after and "rfcn/core/DataParallelExecutorGroup.py" \
        not in after
    changed = {rel for rel in HOSTILE if after[rel] != before[rel]}
    assert changed == set(HOSTILE), set(HOSTILE) - changed
    assert after["py2/latin.py"][0] == b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n"
    assert after["py2/no_newline.py"][0] == b"print('no final newline')"
    assert after["py2/run.py"][1] == 0o755
    # the fork tree's [check]s
    assert migration.diff.returncode == migration.written.returncode == 1, (
        migration.written.stdout)


@pytest.mark.slow  # migrate runs as a child Python (the migration fixture)
def test_the_diff_is_the_patch_alone_and_the_report_goes_to_stderr(migration):
    diff = migration.diff
    report = diff.stderr.decode().splitlines()
    assert report[-1].startswith("migrate: ") and "to delete (--delete-vendored)" in report[-1]
    assert "rfcn/core/module.py:1: [delete] vendored copy" in diff.stderr.decode()
    assert diff.stdout.startswith(b"diff --git ")
    assert b"[delete]" not in diff.stdout and b"migrate: " not in diff.stdout


@pytest.mark.slow  # migrate runs as a child Python (the migration fixture)
def test_a_deleted_copy_is_a_full_hunk_of_its_every_line(migration):
    old = (migration.pristine / "rfcn" / "core" / "DataParallelExecutorGroup.py").read_bytes()
    diff = migration.diff.stdout
    start = diff.index(b"diff --git a/rfcn/core/DataParallelExecutorGroup.py ")
    end = diff.find(b"diff --git ", start + 1)
    section = lines(diff[start:end if end > 0 else len(diff)])
    assert section[1] == b"deleted file mode 100644\n" and section[2].startswith(b"index ")
    assert section[3:6] == [b"--- a/rfcn/core/DataParallelExecutorGroup.py\n",
                            b"+++ /dev/null\n", b"@@ -1,%d +0,0 @@\n" % len(lines(old))]
    removed = section[6:]
    assert removed[-1] == b"\\ No newline at end of file\n"  # CRLF, no final newline
    assert b"".join(line[1:] for line in removed[:-1]) == old + b"\n"


@pytest.mark.slow  # migrate runs as a child Python (the migration fixture)
def test_the_report_before_the_writes_is_the_report_of_the_write_run(migration):
    pending = {"rewritten": "rewrite", "deleted": "delete", "ported": "port"}
    as_done = [line.replace(f"[{done}]", f"[{todo}]") for line in
               migration.written.stdout.decode().splitlines() for done, todo in pending.items()
               if f"[{done}]" in line]
    assert as_done and set(as_done) <= set(migration.diff.stderr.decode().splitlines())


# --------------------------------------------------------------------------- the patch itself
CONTENTS = st.lists(st.sampled_from([b"a", b"b\r", b"\x0c", b"", b"caf\xe9", b" c", b"\\"]),
                    max_size=8).map(b"\n".join) | st.binary(max_size=40).filter(
                        lambda data: b"\0" not in data)


@needs_tools
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=CONTENTS, new=CONTENTS | st.none())
def test_every_pair_of_contents_patches_to_the_new_bytes(tmp_path_factory, old, new):
    # the pair as git and patch see it: a file that changes, or is deleted (new=None)
    if old == new:
        return
    for tool in TOOLS:
        root = tmp_path_factory.mktemp("p")
        (root / "f.py").write_bytes(old)
        apply_patch(tool, root, file_patch("f.py", old, new, 0o100644))
        assert ((root / "f.py").read_bytes() if (root / "f.py").exists() else None) == new, tool


@needs_tools
@pytest.mark.parametrize("tool", TOOLS)
def test_an_empty_file_is_deleted_by_its_header_alone(tmp_path, tool):
    (tmp_path / "empty.py").write_bytes(b"")
    patch = file_patch("empty.py", b"", None, 0o100644)
    assert b"@@" not in patch and b"deleted file mode 100644\n" in patch
    apply_patch(tool, tmp_path, patch)
    assert not (tmp_path / "empty.py").exists()


@needs_tools
@pytest.mark.parametrize("tool", TOOLS)
def test_names_git_quotes_are_quoted(tmp_path, tool):
    name = 'r\u00e9seau "x" \\ y.py'
    (tmp_path / name).write_bytes(b"x = 1\n")
    patch = file_patch(name, b"x = 1\n", b"x = 2\n", 0o100644)
    assert b'--- "a/r\\303\\251seau \\"x\\" \\\\ y.py"\n' in patch
    apply_patch(tool, tmp_path, patch)
    assert (tmp_path / name).read_bytes() == b"x = 2\n"


# --------------------------------------------------------------------------- report first
def test_the_whole_report_is_printed_before_the_first_write(tree, capsys, monkeypatch):
    printed_before = []
    for name in ("write_atomically", "delete"):
        real = getattr(migrate_files, name)

        def recorded(*args, real=real):
            printed_before.append(capsys.readouterr().out)
            return real(*args)

        monkeypatch.setattr(migrate_files, name, recorded)
    status = migrate.main([str(tree), *MIGRATION])
    printed_after = capsys.readouterr().out
    report = printed_before[0].splitlines()
    assert len(printed_before) > 10  # a write or deletion for each of the files changed
    assert printed_before[1:] == [""] * (len(printed_before) - 1) and printed_after == ""
    assert report[-1].startswith("migrate: ") and "2 deleted" in report[-1]
    assert "rfcn/core/module.py:1: [deleted] vendored copy of the fork's module.py: delete it " \
           "(stock MXNet with mxpatch_bind replaces it)" in report
    assert any(line.startswith("py2/crlf.py:2: [ported] Python 2 code") for line in report)
    assert status == 1  # the fork tree's two findings a person has to look at


def test_the_import_check_in_the_report_is_of_the_tree_the_writes_leave(tree, capsys):
    # Once ported, a Python 2 file's imports are checked: before its write, on its planned
    # text. A script reaching a vendored copy through the sys.path it sets up itself: the
    # planned deletion (if the copy is deleted) leaves its import dangling.
    (tree / "py2" / "helpers.py").write_bytes(b"import not_a_module_anywhere\nprint 'h'\n")
    (tree / "tools").mkdir()
    (tree / "tools" / "use_core.py").write_text(
        "import os\nimport sys\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'rfcn', 'core'))\n"
        "import DataParallelExecutorGroup\n")
    migrate.main([str(tree), *MIGRATION])
    report = capsys.readouterr().out.splitlines()
    reference = {str(f) for f in migrate.check_imports(tree)}  # the disk, after the writes
    assert any(line.startswith("py2/helpers.py:1: [check]") for line in reference)
    assert {line for line in report if line in reference} == reference
    imports = {line for line in report if "[check]" in line and "import" in line
               and line.split(":")[0] in {"py2/helpers.py", "tools/use_core.py"}}
    assert imports == {line for line in reference
                       if line.split(":")[0] in {"py2/helpers.py", "tools/use_core.py"}}


@pytest.mark.skipif(not shutil.which("diff"), reason="GNU diff is the reference")
@pytest.mark.parametrize("old, new", [(b"", b"x\n"), (b"x\ny\n", b""), (b"a\n", b"b\n"),
                                      (b"1\n2\n3\n4\n5\n6\n7\n8\n9\n", b"1\n2\n3\n4\n6\n7\n8\n9\n")])
def test_hunk_ranges_are_written_as_diff_writes_them(tmp_path, old, new):
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    unified = subprocess.run(["diff", "-u", "old", "new"], cwd=tmp_path, capture_output=True,
                             timeout=60, check=False).stdout
    ours = file_patch("f.py", old, new, 0o100644)
    assert [line for line in lines(ours) if line.startswith(b"@@")] == [
        line for line in lines(unified) if line.startswith(b"@@")]
