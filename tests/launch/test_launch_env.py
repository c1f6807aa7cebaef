"""Loopback enforced: the launcher builds its children's environment, whatever it inherits."""

import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from processes import (
    descendants,
    identify,
    kill_running,
    listening_addresses,
    tcp_peers,
    wait_until_gone,
)

from mxpatch_bind.launch import env as _launch_env
from paths import REPO, TESTS

# Each test runs a ps-lite job of processes: left out of the inner loop, `pytest -m "not slow"`.
pytestmark = pytest.mark.slow

REPO = REPO
WORKER = TESTS / "dist_scripts" / "launch_worker.py"
WAIT_S = 90
# Non-loopback values are only environment values here: the launcher must override or
# remove each one, and no connection may ever be attempted to them.
NOWHERE = "10.255.255.1"
STARTED = re.compile(r"(scheduler|server \d+|worker \d+) \(pid (\d+)\)")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hostile_environ(port):
    """The launcher's environment with every address-selecting variable pointing away."""
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        DMLC_INTERFACE="eth0", DMLC_NODE_HOST=NOWHERE, DMLC_PS_ROOT_URI=NOWHERE,
        DMLC_PS_ROOT_PORT="9", DMLC_USE_KUBERNETES="1", DMLC_LOCAL="1",
        DMLC_PS_VAN_TYPE="ibverbs", DMLC_NUM_WORKER="7", DMLC_NUM_SERVER="7",
        DMLC_ROLE="server", DMLC_RANK="5", DMLC_TRACKER_URI=NOWHERE, DMLC_TRACKER_PORT="9091",
        DMLC_JOB_CLUSTER="yarn", PORT=str(port), MXPATCH_LAUNCH_WORKER_INDEX="9",
        DMLC_PS_WATER_MARK="1000", PS_VERBOSE="0")


def cli(*args):
    return [sys.executable, "-m", "mxpatch_bind.launch", *args]


def test_the_job_environment_sets_or_removes_every_owned_variable():
    inherited = hostile_environ(4242)

    environ = _launch_env.job_environ(inherited, {"EXTRA": "1"}, num_workers=2, num_servers=3,
                                      port=5555)
    worker = _launch_env.node_environ(environ, "worker", 1)
    server = _launch_env.node_environ(environ, "server")

    assert {name: value for name, value in worker.items()
            if name.startswith("DMLC_") or name in ("PORT", "MXPATCH_LAUNCH_WORKER_INDEX")} == {
        "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": "5555",
        "DMLC_NODE_HOST": "127.0.0.1", "DMLC_NUM_SERVER": "3", "DMLC_NUM_WORKER": "2",
        "DMLC_ROLE": "worker", "MXPATCH_LAUNCH_WORKER_INDEX": "1",
        "DMLC_PS_WATER_MARK": "1000"}
    assert "MXPATCH_LAUNCH_WORKER_INDEX" not in server and server["DMLC_ROLE"] == "server"
    assert worker["EXTRA"] == "1" and worker["PS_VERBOSE"] == "0"
    assert worker["PATH"] == os.environ["PATH"]


def test_the_socket_reader_sees_loopback_listeners_as_the_kernel_reports_them():
    # The reference: sockets this test binds itself, on IPv4 and IPv6 loopback.
    with socket.socket() as ipv4, socket.socket(socket.AF_INET6) as ipv6:
        ipv4.bind(("127.0.0.1", 0))
        ipv6.bind(("::1", 0))
        ipv4.listen()
        ipv6.listen()

        found = listening_addresses([os.getpid()])[os.getpid()]

        assert ("127.0.0.1", ipv4.getsockname()[1]) in found
        assert ("::1", ipv6.getsockname()[1]) in found


def test_the_workers_see_the_launchers_values_not_the_inherited_ones():
    result = subprocess.run(
        cli("-n", "1", "--timeout", str(WAIT_S), "--grace", "0",
            "--", sys.executable, str(WORKER), "show"),
        env=hostile_environ(free_port()), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=WAIT_S)

    assert result.returncode == 0, result.stderr
    shown = sorted(line for line in result.stdout.splitlines() if "=" in line)
    port = result.stderr.split("scheduler on 127.0.0.1:")[1].split(";")[0]
    assert shown == sorted("[worker 0] " + line for line in [
        "DMLC_NODE_HOST=127.0.0.1", "DMLC_NUM_SERVER=1", "DMLC_NUM_WORKER=1",
        "DMLC_PS_ROOT_PORT=" + port, "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_PS_WATER_MARK=1000",
        "DMLC_ROLE=worker", "MXPATCH_LAUNCH_WORKER_INDEX=0"])


class RunningJob:
    """A CLI launch under ``environ`` whose workers step until RELEASE exists."""

    def __init__(self, environ, release):
        self.popen = subprocess.Popen(
            cli("-n", "2", "--timeout", str(WAIT_S), "--",
                sys.executable, str(WORKER), "steps", str(release)),
            env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, start_new_session=True)
        self.lines = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))
            if sum("] ready rank" in seen for seen in self.lines) == 2:
                self.ready.set()

    def nodes(self):
        """The scheduler's, the server's and the workers' PIDs, as the launcher named them."""
        return [int(pid) for line in self.lines for _, pid in STARTED.findall(line)]

    def job(self):
        """Every process below the launcher (its watchdog too), identified."""
        return identify(descendants(self.popen.pid))

    def stop(self):
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def test_every_listening_socket_of_a_job_under_a_hostile_environment_is_on_loopback(tmp_path):
    port = free_port()
    release = tmp_path / "release"
    job = RunningJob(hostile_environ(port), release)
    identities = {}
    try:
        assert job.ready.wait(WAIT_S), "\n".join(job.lines)
        identities = job.job()
        nodes = job.nodes()
        listening = listening_addresses(nodes)
        peers = tcp_peers(identities)
        release.touch()
        code = job.popen.wait(timeout=WAIT_S)
        left = wait_until_gone(identities)
    finally:
        job.stop()
        kill_running(identities)

    # scheduler, server and two workers: each one ps-lite node listening on its own port.
    assert len(nodes) == 4 and set(nodes) <= set(identities)
    assert all(len(found) == 1 for found in listening.values()), listening
    assert {host for found in listening.values() for host, _ in found} == {"127.0.0.1"}
    assert port not in {number for found in listening.values() for _, number in found}
    assert peers and {host for pair in peers for host, _ in pair} == {"127.0.0.1"}
    assert code == 0, "\n".join(job.lines)
    assert left == []

