"""The command line's streams, as pip and ruff treat them: a reader that went away, a closed
stdout or stderr, an output encoding that cannot show a file name.

Each command runs in a subprocess. A reader that went away is a stdout pipe whose read end is
closed before the command starts: the case of ``| head -1`` once ``head`` has its line
(deterministic, unlike racing a reader that closes after some output). A closed stream is
bash's ``>&-`` / ``2>&-``. Where the pipe breaks depends on the buffering (with
``PYTHONUNBUFFERED=1`` at the first write, without it at a flush), and a user's machine does
not set it: every test here runs the command both ways. The inner loop (``pytest -m "not
slow"``) runs the user's way only, and only the commands that import no MXNet (help, version,
usage errors): each migrate and doctor case is a child process that imports MXNet, a process
test as setup.cfg's slow marker says, run by the whole suite.
"""

import os
import shutil
import subprocess
import sys

import pytest

from mxpatch_bind._cli_types import CLOSED_PIPE_STATUS
from paths import REPO, TESTS

FORK_TREE = TESTS / "tools" / "fork_tree"
SCRIPT = shutil.which("mxpatch-bind", path=os.path.dirname(sys.executable))
needs_script = pytest.mark.skipif(SCRIPT is None, reason="the mxpatch-bind console script is "
                                  "not installed beside this Python")
PYTHON_M = [sys.executable, "-m"]
# Every way in: the package's command, its console script, and the modules run by themselves.
MIGRATE = {
    "python -m mxpatch_bind migrate": PYTHON_M + ["mxpatch_bind", "migrate"],
    "python -m mxpatch_bind.migrate": PYTHON_M + ["mxpatch_bind.migrate"],
    "mxpatch-bind migrate": pytest.param([SCRIPT, "migrate"], marks=needs_script),
}
HELP_AND_VERSION = [
    PYTHON_M + ["mxpatch_bind", "--help"],
    PYTHON_M + ["mxpatch_bind", "--version"],
    PYTHON_M + ["mxpatch_bind", "demo", "--help"],
    PYTHON_M + ["mxpatch_bind", "doctor", "--help"],
    PYTHON_M + ["mxpatch_bind", "migrate", "--help"],
    PYTHON_M + ["mxpatch_bind", "launch", "--help"],
    PYTHON_M + ["mxpatch_bind.migrate", "--help"],
    PYTHON_M + ["mxpatch_bind.launch", "--help"],
    PYTHON_M + ["mxpatch_bind.demo", "--help"],
    pytest.param([SCRIPT, "--help"], marks=needs_script),
    pytest.param([SCRIPT, "--version"], marks=needs_script),
]


# Unset, a user's default, in the inner loop; both ways in the whole suite (each case runs a
# command in a subprocess: a process test, as setup.cfg's slow marker says).
@pytest.fixture(params=[pytest.param("PYTHONUNBUFFERED=1", marks=pytest.mark.slow),
                        "PYTHONUNBUFFERED unset"])
def buffering(request):
    """The child's buffering, set either way whatever this machine exports."""
    return request.param


def _env(buffering, **extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **extra)
    env.pop("PYTHONUNBUFFERED", None)
    if buffering == "PYTHONUNBUFFERED=1":
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _into_a_closed_pipe(argv, buffering, timeout=300):
    """Run ``argv`` with stdout a pipe nobody reads: (exit status, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, text=True,
                                   env=_env(buffering), timeout=timeout, check=False)
    finally:
        os.close(write_end)
    return completed.returncode, completed.stderr


def _with_closed(redirection, argv, buffering):
    """Run ``argv`` with bash's ``redirection`` (``>&-``, ``2>&-``): (status, out, err) of the
    streams left open (``b""`` for a closed one)."""
    completed = subprocess.run(["bash", "-c", f'exec "$@" {redirection}', "bash", *argv],
                               capture_output=True, env=_env(buffering), timeout=300,
                               check=False)
    return completed.returncode, completed.stdout, completed.stderr


@pytest.fixture()
def tree(tmp_path):
    """The fork tree, with one of its training scripts copied under a non-ASCII name."""
    copy = tmp_path / "tree"
    shutil.copytree(FORK_TREE, copy)
    script = copy / "rfcn" / "train_end2end.py"
    shutil.copy(script, copy / "rfcn" / "r\u00e9seau_\u7f51.py")
    return copy


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}


# --------------------------------------------------------------------------- a reader gone
@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
@pytest.mark.parametrize("migrate", MIGRATE.values(), ids=MIGRATE.keys())
def test_migrate_into_a_closed_pipe_ends_quietly_with_pips_status(tree, buffering, migrate):
    status, stderr = _into_a_closed_pipe(migrate + [str(tree)], buffering)
    assert stderr == ""
    assert status == CLOSED_PIPE_STATUS == 1


@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
def test_the_diff_into_a_closed_pipe_ends_quietly_with_pips_status(tree, buffering):
    status, stderr = _into_a_closed_pipe(MIGRATE["python -m mxpatch_bind.migrate"] + [
        str(tree), "--write", "--delete-vendored", "--diff"], buffering)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == CLOSED_PIPE_STATUS


@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
def test_a_write_whose_report_nobody_can_read_writes_nothing(tree, buffering):
    # The report comes before the writes; when it cannot be delivered, the run ends there,
    # as a program killed by SIGPIPE would.
    before = _snapshot(tree)
    status, stderr = _into_a_closed_pipe(MIGRATE["python -m mxpatch_bind migrate"] + [
        str(tree), "--write", "--delete-vendored"], buffering)
    assert (status, stderr) == (CLOSED_PIPE_STATUS, "")
    assert _snapshot(tree) == before


@pytest.mark.parametrize("argv", HELP_AND_VERSION)
def test_help_and_version_into_a_closed_pipe_print_no_traceback(argv, buffering):
    # argparse itself ignores an OSError while printing help: status 0, as pip's --help,
    # whether the pipe broke there or at the last flush.
    status, stderr = _into_a_closed_pipe(argv, buffering)
    assert (status, stderr) == (0, "")


def test_doctor_into_a_closed_pipe_ends_quietly(buffering):
    status, stderr = _into_a_closed_pipe(PYTHON_M + ["mxpatch_bind", "doctor"], buffering)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == CLOSED_PIPE_STATUS


def test_a_usage_error_into_a_closed_pipe_still_names_the_error_on_stderr(buffering):
    status, stderr = _into_a_closed_pipe(PYTHON_M + ["mxpatch_bind", "demo", "--epochs", "0"],
                                         buffering)
    assert status == 2
    assert stderr.startswith("python -m mxpatch_bind demo: error: argument --epochs")


@pytest.mark.slow  # a ps-lite job: scheduler, server and worker import MXNet
@pytest.mark.parametrize("launch", [["mxpatch_bind", "launch"], ["mxpatch_bind.launch"]],
                         ids=["python -m mxpatch_bind launch", "python -m mxpatch_bind.launch"])
def test_launch_into_a_closed_pipe_stops_the_job_quietly(buffering, launch):
    # The worker prints a line, then would run for ten minutes: the launcher stops it once
    # its output has no reader, instead of a traceback in the forwarding thread and a job
    # blocked on its undrained pipe.
    worker = "import time; print('step 1', flush=True); time.sleep(600)"
    status, stderr = _into_a_closed_pipe(PYTHON_M + launch + [
        "-n", "1", "--grace", "1", "--", sys.executable, "-c", worker], buffering, timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == CLOSED_PIPE_STATUS


# --------------------------------------------------------------------------- closed streams
@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
@pytest.mark.parametrize("migrate", MIGRATE.values(), ids=MIGRATE.keys())
def test_migrate_with_stdout_closed_runs_with_its_own_status(tree, buffering, migrate):
    status, _, stderr = _with_closed(">&-", migrate + [str(tree)], buffering)
    assert (status, stderr) == (1, b"")


@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
def test_a_write_with_stdout_closed_is_made(tree, buffering):
    status, _, stderr = _with_closed(">&-", MIGRATE["python -m mxpatch_bind migrate"] + [
        str(tree), "--write", "--delete-vendored"], buffering)
    assert stderr == b""
    assert not (tree / "rfcn" / "core" / "module.py").exists()
    assert b"mxpatch_bind.compat" in (tree / "rfcn" / "train_end2end.py").read_bytes()
    assert status == 1  # the fork tree keeps two findings a person has to look at


@pytest.mark.parametrize("argv", HELP_AND_VERSION)
def test_help_and_version_with_stdout_closed_print_nothing(argv, buffering):
    assert _with_closed(">&-", argv, buffering) == (0, b"", b"")


@pytest.mark.parametrize("argv", [
    pytest.param(PYTHON_M + ["mxpatch_bind", "doctor"], marks=pytest.mark.slow),  # MXNet
    PYTHON_M + ["mxpatch_bind.launch", "-n", "1"],
    PYTHON_M + ["mxpatch_bind", "demo", "--epochs", "0"],
], ids=["doctor", "launch without a command", "a usage error"])
def test_every_command_with_stdout_or_stderr_closed_keeps_its_status(argv, buffering):
    expected = subprocess.run(argv, capture_output=True, env=_env(buffering), timeout=300,
                              check=False)
    for redirection in (">&-", "2>&-", ">&- 2>&-"):
        status, out, err = _with_closed(redirection, argv, buffering)
        assert status == expected.returncode, redirection
        assert b"Traceback" not in err and b"Traceback" not in out, redirection
        assert out == (b"" if ">&-" in redirection.split() else expected.stdout), redirection
        assert err == (b"" if "2>&-" in redirection.split() else expected.stderr), redirection


@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
def test_the_report_with_stderr_closed_is_whole_on_stdout(tree, buffering):
    argv = MIGRATE["python -m mxpatch_bind migrate"] + [str(tree)]
    expected = subprocess.run(argv, capture_output=True, env=_env(buffering), timeout=300,
                              check=False)
    assert expected.stdout.splitlines()[-1].startswith(b"migrate: ")
    assert _with_closed("2>&-", argv, buffering) == (expected.returncode, expected.stdout, b"")


# --------------------------------------------------------------------------- encodings
@pytest.mark.slow  # migrate over the fork tree in a child process that imports MXNet
@pytest.mark.parametrize("encoding, shown", [
    ("ascii", "r\\xe9seau_\\u7f51.py"),
    ("latin-1", "r\u00e9seau_\\u7f51.py"),
])
def test_a_file_name_the_output_encoding_cannot_show_is_escaped(tree, buffering, encoding,
                                                                 shown):
    argv = PYTHON_M + ["mxpatch_bind", "migrate", str(tree)]
    utf8 = subprocess.run(argv, capture_output=True, env=_env(buffering,
                                                              PYTHONIOENCODING="utf-8"),
                          timeout=300, check=False)
    completed = subprocess.run(argv, capture_output=True,
                               env=_env(buffering, PYTHONIOENCODING=encoding), timeout=300,
                               check=False)
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


KEEPS_ITS_FILE = """
import sys
log = open(sys.argv[1], "w")  # opened before the command runs, with stdout closed: fd 1
assert log.fileno() == 1
from mxpatch_bind._cli_types import console
with console():
    print("discarded")
    log.write("kept\\n")
    log.flush()
"""


def test_a_file_that_took_the_closed_stdout_s_descriptor_keeps_what_is_written_to_it(tmp_path):
    path = tmp_path / "log.txt"

    status, _, err = _with_closed(">&-", [sys.executable, "-c", KEEPS_ITS_FILE, str(path)],
                                  "PYTHONUNBUFFERED unset")

    assert (status, err) == (0, b"")
    assert path.read_text() == "kept\n"


def test_a_usage_error_into_a_stderr_pipe_nobody_reads_exits_with_its_own_status(buffering):
    # argparse ignores the broken pipe while it writes; what it could not write stays
    # buffered, and a flush at the interpreter's exit would fail again (status 120).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = subprocess.run(PYTHON_M + ["mxpatch_bind", "--no-such-option"],
                                   stdout=subprocess.PIPE, stderr=write_end, env=_env(buffering),
                                   timeout=300, check=False)
    finally:
        os.close(write_end)

    assert (completed.returncode, completed.stdout) == (2, b"")


OPENS_A_FILE_INSIDE = """\
import os, sys
from mxpatch_bind._cli_types import console
with console():
    print("discarded")
    print("discarded too", file=sys.stderr)
    with open(sys.argv[1], "w") as log:  # opened by the command: must not take 1 or 2
        log.write(str(log.fileno()))
    devnull = os.stat(os.devnull)
    held = [os.path.samestat(os.fstat(fd), devnull) for fd in (1, 2) if fd != {open_fd}]
os.write({open_fd}, str(held).encode())
"""


@pytest.mark.parametrize("redirection, open_fd", [("<&- >&-", 2), ("2>&-", 1)],
                         ids=["stdin and stdout closed", "stderr closed"])
def test_a_file_the_command_opens_never_takes_a_closed_standard_descriptor(tmp_path,
                                                                          redirection,
                                                                          open_fd):
    path = tmp_path / "log.txt"
    script = OPENS_A_FILE_INSIDE.replace("{open_fd}", str(open_fd))

    status, out, err = _with_closed(redirection, [sys.executable, "-c", script, str(path)],
                                    "PYTHONUNBUFFERED unset")

    assert status == 0, (out, err)
    assert int(path.read_text()) not in (1, 2)
    assert (out if open_fd == 1 else err).endswith(b"[True]")  # devnull holds the closed one
