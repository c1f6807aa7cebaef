"""The launcher stops the whole job whatever ends it: each stop signal, and its own SIGKILL.

Each test runs ``python -m mxpatch_bind.launch`` with one tiny worker, sends a signal at
start-up (the processes just started), mid-step (the worker pushes and pulls on a
dist_sync kvstore) or during shutdown (a worker that ignores SIGTERM keeps the launcher in
its grace period), and checks through /proc that no process of the job is left.
"""

import io
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from processes import descendants, identify, kill_running, running, wait_until_gone

import mxpatch_bind.launch as launch_module
from paths import REPO, TESTS

# Each test runs a ps-lite job of processes: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

REPO = REPO
WORKER = TESTS / "dist_scripts" / "launch_worker.py"
STARTED = re.compile(r"(scheduler|server \d+|worker \d+) \(pid (\d+)\)")
# Limits on hangs, not measurements: a 1-worker job is ready in a few seconds.
WAIT_S = 90
STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT]
# Longer than WAIT_S: a stop which waited it out would make finish() raise TimeoutExpired.
LONG_GRACE_S = 120


def default_stop_signals():
    """In the launcher's child: the stop signals at their default dispositions, whatever the
    test run inherited (under ``nohup`` SIGHUP arrives ignored, and the launcher keeps an
    inherited ignore, as it should)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


class Launcher:
    """A launcher process whose output lines are collected as they arrive."""

    def __init__(self, worker_args, grace=5.0, preexec_fn=default_stop_signals):
        environ = dict(os.environ)
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO),
                                                              environ.get("PYTHONPATH")]))
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "mxpatch_bind.launch", "-n", "1", "--timeout", str(WAIT_S),
             "--grace", str(grace), "--", sys.executable, str(WORKER), *worker_args],
            env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, start_new_session=True, preexec_fn=preexec_fn)
        _STARTED_HERE.append(self)
        self.known = {}
        self.lines = []
        self._arrivals = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            self._arrivals.put(line.rstrip("\n"))
        self._arrivals.put(None)

    def wait_for(self, text):
        """Wait for a line containing ``text``; return it."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self._arrivals.get(timeout=deadline - time.monotonic())
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError("no line with {!r}; got:\n{}".format(text, "\n".join(self.lines)))

    def job(self):
        """Identities of the launcher's processes: the ones it named, and all below it.

        Taken while the launcher runs (it reaps its children only at its end, so
        their PIDs cannot have been reused); added to those seen before.
        """
        if self.popen.poll() is None:
            named = [int(pid) for line in self.lines for _, pid in STARTED.findall(line)]
            self.known.update(identify(set(named) | set(descendants(self.popen.pid))))
        return dict(self.known)

    def finish(self):
        """The launcher's exit status and its remaining output; kill it (by PID) if it hangs."""
        try:
            self.popen.wait(timeout=WAIT_S)
        finally:
            if self.popen.poll() is None:
                self.popen.kill()
                self.popen.wait()
        while True:
            line = self._arrivals.get(timeout=WAIT_S)
            if line is None:
                return self.popen.returncode, "\n".join(self.lines)
            self.lines.append(line)


_STARTED_HERE = []


@pytest.fixture(autouse=True)
def _nothing_left_behind():
    """Whatever a test asserted: kill, by PID, its launchers and their jobs left running."""
    yield
    while _STARTED_HERE:
        launcher = _STARTED_HERE.pop()
        job = launcher.job()
        if launcher.popen.poll() is None:
            launcher.popen.kill()
            launcher.popen.wait()
        kill_running(job)


@pytest.fixture
def release(tmp_path):
    """A file the ``steps`` workers never see: they keep stepping until stopped."""
    return str(tmp_path / "never")


def start_up(release):
    launcher = Launcher(["steps", release])
    launcher.wait_for("started scheduler")
    return launcher


def mid_step(release):
    launcher = Launcher(["steps", release])
    launcher.wait_for("[worker 0] ready")
    return launcher


def shutdown(release):
    """A launcher already stopping, kept in its grace period by a worker that ignores SIGTERM."""
    launcher = Launcher(["ignore-term"], grace=LONG_GRACE_S)
    launcher.wait_for("ignoring SIGTERM")
    launcher.popen.send_signal(signal.SIGTERM)
    launcher.wait_for("received SIGTERM; stopping 3 processes")
    return launcher


PHASES = {"start-up": start_up, "mid-step": mid_step, "shutdown": shutdown}


def send_and_finish(launcher, signum):
    job = launcher.job()
    assert len(job) >= 3, launcher.lines  # scheduler, server, worker at least
    launcher.popen.send_signal(signum)
    code, output = launcher.finish()
    return code, output, wait_until_gone(job)


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda signum: signum.name)
@pytest.mark.parametrize("phase", ["start-up", "mid-step"])
def test_a_stop_signal_ends_the_job_with_128_plus_its_number(phase, signum, release):
    launcher = PHASES[phase](release)

    code, output, left = send_and_finish(launcher, signum)

    assert code == 128 + signum, output
    assert "received {}; stopping 3 processes".format(signum.name) in output
    assert left == []


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda signum: signum.name)
def test_a_signal_during_shutdown_kills_at_once_and_keeps_the_first_status(signum, release):
    launcher = shutdown(release)

    # finish() waits WAIT_S at most, less than LONG_GRACE_S: the kill came at once.
    code, output, left = send_and_finish(launcher, signum)

    assert code == 128 + signal.SIGTERM, output
    assert re.search(r"received {} while stopping; killing [123] process".format(signum.name),
                     output)
    assert left == []


@pytest.mark.parametrize("phase", list(PHASES))
def test_killing_the_launcher_takes_the_whole_job_with_it(phase, release):
    launcher = PHASES[phase](release)

    code, _, left = send_and_finish(launcher, signal.SIGKILL)

    assert code == -signal.SIGKILL
    assert left == []


def test_killing_the_launcher_also_ends_what_a_worker_started(release):
    launcher = Launcher(["spawn"])
    grandchild = int(launcher.wait_for("spawned pid").split()[-1])

    code, _, left = send_and_finish(launcher, signal.SIGKILL)

    assert code == -signal.SIGKILL
    assert grandchild in launcher.job() and left == []


@pytest.fixture
def default_disposition(request):
    """The test's signal at its default disposition in this process for the test, as a
    terminal gives it (a run under ``nohup`` inherits SIGHUP ignored, which launch() keeps)."""
    signum = request.getfixturevalue("signum")
    previous = signal.signal(signum, signal.SIG_DFL)
    yield
    signal.signal(signum, previous)


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda signum: signum.name)
@pytest.mark.usefixtures("default_disposition")
def test_a_signal_while_the_processes_start_stops_starting_them(signum, monkeypatch):
    # In this process (pytest's main thread): the signal arrives right after the
    # scheduler started, before the server would.
    started = []

    def node_then_signal(name, *args):
        started.append(real_node(name, *args))
        signal.raise_signal(signum)
        return started[-1]

    real_node = launch_module._Node
    monkeypatch.setattr(launch_module, "_Node", node_then_signal)
    handler_before = signal.getsignal(signum)
    err = io.StringIO()

    code = launch_module.launch([sys.executable, str(WORKER), "sleep"], 1, stdout=io.StringIO(),
                                stderr=err, timeout=WAIT_S)

    assert code == 128 + signum
    assert [node.name for node in started] == ["scheduler"]
    assert "received {}; stopping 1 process".format(signum.name) in err.getvalue()
    assert started[0].popen.returncode == -signal.SIGTERM
    assert signal.getsignal(signum) == handler_before


def ignore_sighup():
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_a_launcher_started_ignoring_sighup_keeps_the_job_running(release):
    launcher = Launcher(["steps", release], preexec_fn=ignore_sighup)
    launcher.wait_for("[worker 0] ready")
    job = launcher.job()

    launcher.popen.send_signal(signal.SIGHUP)
    time.sleep(1)
    still_running = sorted(running(job))
    launcher.popen.send_signal(signal.SIGTERM)
    code, output = launcher.finish()
    left = wait_until_gone(job)

    assert still_running == sorted(job)
    assert "SIGHUP" not in output
    assert code == 128 + signal.SIGTERM
    assert left == []


def test_a_child_whose_launcher_died_before_it_set_the_death_signal_kills_itself():
    # The hook is made in the top process, the launcher. Its child runs the hook and
    # lives on; a grandchild, whose parent is not the launcher (as for a child whose
    # launcher died between fork and prctl), runs it and dies by SIGKILL.
    script = (
        "import os, signal\n"
        "from mxpatch_bind.launch.nodes import _die_with_launcher\n"
        "hook = _die_with_launcher()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    hook()\n"
        "    grandchild = os.fork()\n"
        "    if grandchild == 0:\n"
        "        hook()\n"
        "        os._exit(0)\n"
        "    status = os.waitpid(grandchild, 0)[1]\n"
        "    os._exit(0 if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else 1)\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))\n")
    result = subprocess.run(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, universal_newlines=True,
        timeout=WAIT_S, env=dict(os.environ, PYTHONPATH=str(REPO)))

    assert result.stdout.split() == ["0"]
