"""Tests of the loopback launcher: real dist_sync jobs on 127.0.0.1, each under a timeout.

Signals: test_launch_signals.py; the environment: test_launch_env.py; arguments:
test_launch_arguments.py.
"""

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import alive, descendants

from mxpatch_bind.launch import launch
from paths import REPO, TESTS

# Each test runs a ps-lite job of processes: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

REPO = REPO
WORKER = TESTS / "dist_scripts" / "launch_worker.py"
# The launcher names every process it started, with its PID, in one line.
STARTED = re.compile(r"(scheduler|server \d+|worker \d+) \(pid (\d+)\)")
# Generous: a 2-worker dist_sync step takes about 4 s on 2 cores.
JOB_TIMEOUT_S = 60


class Job:
    """What one in-process launch returned and printed."""

    def __init__(self, code, out, err, elapsed):
        self.code = code
        self.out = out
        self.err = err
        self.elapsed = elapsed
        self.pids = {name: int(pid) for name, pid in STARTED.findall(err)}


def run_job(worker_args, num_workers=2, **kwargs):
    kwargs.setdefault("timeout", JOB_TIMEOUT_S)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = launch([sys.executable, str(WORKER), *worker_args], num_workers,
                  stdout=out, stderr=err, **kwargs)
    return Job(code, out.getvalue(), err.getvalue(), time.monotonic() - started)


def cli_environ():
    environ = dict(os.environ)
    search_path = [str(REPO), environ.get("PYTHONPATH")]
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, search_path))
    return environ


def cli(*args):
    return [sys.executable, "-m", "mxpatch_bind.launch", *args]


def test_two_workers_each_pull_the_sum_of_both_pushes():
    job = run_job(["push-pull"])

    assert job.code == 0, job.err
    # Without an updater the server assigns the sum of the workers' pushes: 1 + 2.
    lines = {line for line in job.out.splitlines() if "pulled" in line}
    assert {re.sub(r"^\[worker \d\] ", "", line) for line in lines} == {
        "rank 0 of 2 pulled [3.0]", "rank 1 of 2 pulled [3.0]"}
    assert {line[:len("[worker 0] ")] for line in lines} == {"[worker 0] ", "[worker 1] "}
    assert set(job.pids) == {"scheduler", "server 0", "worker 0", "worker 1"}
    # ps-lite ends the scheduler and server once the workers finalize the kvstore.
    assert "still running" not in job.err
    assert alive(job.pids.values()) == []


class SlowStream(io.StringIO):
    """A consumer slower than the worker: each line takes half a millisecond to write."""

    def write(self, text):
        time.sleep(0.0005)
        return super().write(text)


def test_every_line_a_worker_printed_is_forwarded_before_launch_returns():
    # More than a pipe holds (64 KiB), read more slowly than written: when the worker exits,
    # thousands of its lines (seconds of writing) are still to be forwarded.
    out = SlowStream()
    code = launch([sys.executable, str(WORKER), "flood", "7000"], 1, num_servers=1,
                  timeout=JOB_TIMEOUT_S, grace=0, stdout=out, stderr=io.StringIO())

    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[-1] == "[worker 0] done" and len(lines) == 7001


def test_a_failing_worker_stops_the_job_with_its_exit_code():
    job = run_job(["fail-on", "1", "3"])

    assert job.code == 3  # not the timeout's 124: the failure stopped the job
    assert "mxpatch_bind.launch: worker 1 exited with code 3; stopping 3 other processes" in job.err
    assert "[worker 1] failing on purpose" in job.err
    assert len(job.pids) == 4
    assert alive(job.pids.values()) == []


def test_a_failing_server_stops_the_job(tmp_path):
    # A stand-in for mxnet on the path: the server fails as soon as it starts.
    (tmp_path / "mxnet.py").write_text(
        "import os, sys, time\n"
        "if os.environ['DMLC_ROLE'] == 'server':\n"
        "    sys.exit(5)\n"
        "time.sleep(3600)\n")

    job = run_job(["sleep"], env={"PYTHONPATH": str(tmp_path)})

    assert job.code == 5
    assert "mxpatch_bind.launch: server 0 exited with code 5; stopping 3 other processes" in job.err
    assert alive(job.pids.values()) == []


def test_the_timeout_stops_a_job_that_hangs():
    job = run_job(["sleep"], num_workers=1, timeout=3)

    assert job.code == 124
    assert job.elapsed >= 3  # a lower bound only (no machine can make it flake): not early
    assert "timed out after 3 s waiting for worker 0; stopping 3 processes" in job.err
    assert "[worker 0] sleeping" in job.out
    assert alive(job.pids.values()) == []


def test_a_worker_command_that_cannot_start_stops_the_job():
    err = io.StringIO()
    children_before = set(descendants(os.getpid()))

    code = launch(["/nonexistent/worker"], 1, timeout=JOB_TIMEOUT_S,
                  stdout=io.StringIO(), stderr=err)

    assert code == 127
    assert "cannot start worker 0 ('/nonexistent/worker'): No such file or directory; " \
        "stopping 2 processes" in err.getvalue()
    # The scheduler and the server it had started are reaped: no child is left.
    assert set(descendants(os.getpid())) - children_before == set()


def test_the_cli_passes_everything_after_the_separator_to_the_workers():
    result = subprocess.run(
        cli("-n", "2", "-s", "2", "--timeout", "30", "--grace", "0.5",
            "--", sys.executable, str(WORKER), "show", "-n", "5", "--", "--timeout"),
        env=cli_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=JOB_TIMEOUT_S)

    assert result.returncode == 0, result.stderr
    for index in (0, 1):
        prefix = "[worker {}] ".format(index)
        for line in ("argv ['-n', '5', '--', '--timeout']",
                     "DMLC_ROLE=worker", "DMLC_NUM_WORKER=2", "DMLC_NUM_SERVER=2",
                     "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_NODE_HOST=127.0.0.1",
                     "MXPATCH_LAUNCH_WORKER_INDEX={}".format(index)):
            assert prefix + line in result.stdout.splitlines()
    ports = set(re.findall(r"DMLC_PS_ROOT_PORT=(\d+)", result.stdout))
    assert len(ports) == 1 and "scheduler on 127.0.0.1:{}".format(*ports) in result.stderr
    # These workers never created a kvstore, so nothing told the servers to stop.
    assert "workers succeeded; stopping scheduler, server 0, server 1" in result.stderr
    assert alive(int(pid) for _, pid in STARTED.findall(result.stderr)) == []


def test_the_launcher_exits_while_a_detached_process_still_holds_a_workers_pipe(tmp_path):
    # A worker starts a process in a session of its own (it leaves the worker's group, so the
    # launcher neither signals nor waits for it) that keeps the worker's stdout open. The
    # launcher stops reading after a short join and must then exit: its reader threads may
    # not keep the interpreter alive until that process closes the pipe.
    pid_file = tmp_path / "detached.pid"
    worker = ("import subprocess, sys\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
              " start_new_session=True)\n"
              "open(%r, 'w').write(str(child.pid))\n"
              "print('worker done', flush=True)\n" % str(pid_file))
    try:
        result = subprocess.run(
            cli("-n", "1", "--timeout", "60", "--grace", "0.5", "--",
                sys.executable, "-c", worker),
            env=cli_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=100)  # the detached process lives 120 s
        assert result.returncode == 0, result.stderr
        assert "[worker 0] worker done" in result.stdout.splitlines()
    finally:
        if pid_file.exists():
            detached = int(pid_file.read_text())
            if alive([detached]):
                os.kill(detached, 9)


def test_a_worker_killed_by_a_signal_is_named_by_it_and_the_job_exits_128_plus_it(tmp_path):
    worker = tmp_path / "killed.py"
    worker.write_text("import os, signal\n"
                      "if os.environ['MXPATCH_LAUNCH_WORKER_INDEX'] == '0':\n"
                      "    os.kill(os.getpid(), signal.SIGKILL)\n")
    out, err = io.StringIO(), io.StringIO()
    code = launch([sys.executable, str(worker)], 2, timeout=JOB_TIMEOUT_S, grace=0.5,
                  stdout=out, stderr=err)
    assert code == 128 + 9, err.getvalue()
    assert "worker 0 was killed by SIGKILL" in err.getvalue()
