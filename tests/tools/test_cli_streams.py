"""The command line's streams, as pip and ruff treat them: a reader that went away, an
output encoding that cannot show a file name.

Each command runs in a subprocess whose stdout is a real pipe: its read end closed before the
command starts, the case of ``| head -1`` once ``head`` has its line (deterministic, unlike
racing a reader that closes after some output).
"""

import os
import shutil
import subprocess
import sys

import pytest

from mxpatch_bind._cli_types import CLOSED_PIPE_STATUS
from paths import REPO, TESTS

FORK_TREE = TESTS / "tools" / "fork_tree"


def _env(**extra):
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **extra)


def _into_a_closed_pipe(args, cwd=None):
    """Run ``python ARGS`` with stdout a pipe nobody reads: (exit status, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = subprocess.run([sys.executable] + args, stdout=write_end,
                                   stderr=subprocess.PIPE, text=True, env=_env(), cwd=cwd,
                                   timeout=300, check=False)
    finally:
        os.close(write_end)
    return completed.returncode, completed.stderr


@pytest.fixture()
def tree(tmp_path):
    """The fork tree, with one of its training scripts copied under a non-ASCII name."""
    copy = tmp_path / "tree"
    shutil.copytree(FORK_TREE, copy)
    script = copy / "rfcn" / "train_end2end.py"
    shutil.copy(script, copy / "rfcn" / "r\u00e9seau_\u7f51.py")
    return copy


def test_migrate_into_a_closed_pipe_ends_quietly_with_pips_status(tree):
    status, stderr = _into_a_closed_pipe(["-m", "mxpatch_bind", "migrate", str(tree)])
    assert stderr == ""
    assert status == CLOSED_PIPE_STATUS == 1


@pytest.mark.parametrize("args", [
    ["-m", "mxpatch_bind", "--help"],
    ["-m", "mxpatch_bind", "--version"],
    ["-m", "mxpatch_bind", "demo", "--help"],
    ["-m", "mxpatch_bind", "migrate", "--help"],
    ["-m", "mxpatch_bind", "launch", "--help"],
    ["-m", "mxpatch_bind.launch", "--help"],
])
def test_help_and_version_into_a_closed_pipe_print_no_traceback(args):
    # argparse itself ignores an OSError while printing help: status 0, as pip's --help.
    status, stderr = _into_a_closed_pipe(args)
    assert (status, stderr) == (0, "")


def test_doctor_into_a_closed_pipe_ends_quietly():
    status, stderr = _into_a_closed_pipe(["-m", "mxpatch_bind", "doctor"])
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == CLOSED_PIPE_STATUS


def test_a_usage_error_into_a_closed_pipe_still_names_the_error_on_stderr():
    status, stderr = _into_a_closed_pipe(["-m", "mxpatch_bind", "demo", "--epochs", "0"])
    assert status == 2
    assert stderr.startswith("python -m mxpatch_bind demo: error: argument --epochs")


@pytest.mark.parametrize("encoding, shown", [
    ("ascii", "r\\xe9seau_\\u7f51.py"),
    ("latin-1", "r\u00e9seau_\\u7f51.py"),
])
def test_a_file_name_the_output_encoding_cannot_show_is_escaped(tree, encoding, shown):
    utf8 = subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", str(tree)],
                          capture_output=True, env=_env(PYTHONIOENCODING="utf-8"),
                          timeout=300, check=False)
    completed = subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", str(tree)],
                               capture_output=True, env=_env(PYTHONIOENCODING=encoding),
                               timeout=300, check=False)
    assert b"Traceback" not in completed.stderr, completed.stderr
    assert completed.returncode == utf8.returncode
    out = completed.stdout.decode(encoding)
    assert f"rfcn/{shown}:" in out
    # Everything else the report says is the same, line for line.
    expected = utf8.stdout.decode("utf-8").replace("r\u00e9seau_\u7f51.py",
                                                   "r\u00e9seau_\\u7f51.py")
    if encoding == "ascii":
        expected = expected.replace("r\u00e9seau_", "r\\xe9seau_")
    assert out == expected
