"""Edges of ``migrate.patch`` (issue 36, item 10), git as the oracle: for each kind of change
(CRLF lines, a last line without a newline before or after, changes far apart and near
enough to share a hunk, every line removed, a file emptied or deleted, an executable's and a
symbolic link's deletion, a name with a space, a non-ASCII name, a name git quotes), the
patch :func:`patch.file_patch` writes must be byte for byte what ``git diff --full-index``
writes for the same change."""

import os
import re
import shutil
import subprocess

import pytest

from mxpatch_bind.migrate import patch

if shutil.which("git") is None:
    pytest.skip("git is not installed", allow_module_level=True)

LINES = b"".join(b"line %d\n" % i for i in range(1, 21))
CHANGES = {  # name: (old bytes, new bytes, or None for a deletion)
    "crlf.py": (b"a = 1\r\nb = 2\r\n", b"a = 1\r\nb = 3\r\n"),
    "no_newline_before.py": (b"a = 1\nb = 2", b"a = 1\nb = 2\n"),
    "no_newline_after.py": (b"a = 1\nb = 2\n", b"a = 1\nb = 3"),
    "far.py": (LINES, LINES.replace(b"line 2\n", b"two\n").replace(b"line 10\n", b"ten\n")),
    "near.py": (LINES, LINES.replace(b"line 2\n", b"two\n").replace(b"line 9\n", b"nine\n")),
    "first_and_last.py": (LINES, LINES.replace(b"line 1\n", b"one\n")
                          .replace(b"line 20\n", b"twenty\n")),
    "emptied.py": (b"a = 1\nb = 2\n", b""),
    "filled.py": (b"", b"a = 1\n"),
    "one_line.py": (b"x = 1\n", b"x = 2\n"),
    "inserted.py": (LINES, LINES.replace(b"line 5\n", b"line 5\nnew\n")),
    "deleted.py": (b"a = 1\n", None),
    "deleted_empty.py": (b"", None),
    "my file.py": (b"a = 1\n", b"a = 2\n"),
    "caf\u00e9.py": (b"a = 1\n", b"a = 2\n"),
    "quote\"d.py": (b"a = 1\n", b"a = 2\n"),
    "run.sh": (b"echo 1\n", None),
}


def git(root, *args):
    out = subprocess.run(["git", "-c", "core.quotepath=true", "-c", "diff.noprefix=false",
                          *args], cwd=root, capture_output=True, check=True).stdout
    # git names the line above each hunk after its '@@' (a guess at the function): diff -u
    # and the patch name none
    return re.sub(rb"^(@@ [^@]* @@).*$", rb"\1", out, flags=re.MULTILINE)


def test_each_patch_is_what_git_writes_for_the_same_change(tmp_path):
    git(tmp_path, "init", "-q")
    for name, (old, _) in CHANGES.items():
        (tmp_path / name).write_bytes(old)
    os.chmod(tmp_path / "run.sh", 0o755)
    os.symlink("crlf.py", tmp_path / "link.py")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "old")
    for name, (_, new) in CHANGES.items():
        if new is None:
            (tmp_path / name).unlink()
        else:
            (tmp_path / name).write_bytes(new)
    (tmp_path / "link.py").unlink()
    git(tmp_path, "add", "-A")
    for name, (old, new) in CHANGES.items():
        mode = os.lstat(tmp_path / name).st_mode if new is not None else (
            0o100755 if name == "run.sh" else 0o100644)
        expected = git(tmp_path, "diff", "--cached", "--full-index", "--no-renames",
                       "--no-color", "--", name)
        # a change's index line names no mode: patch(1) would set it (a 0664 file to 0644)
        expected = re.sub(rb"^(index \w+\.\.\w+) 100[67][0-9]{2}\n", rb"\1\n", expected,
                          flags=re.MULTILINE)
        assert patch.file_patch(name, old, new, mode) == expected, name
    expected = git(tmp_path, "diff", "--cached", "--full-index", "--no-color", "--", "link.py")
    assert patch.file_patch("link.py", b"crlf.py", None, 0o120777) == expected
