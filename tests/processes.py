"""Process and socket helpers shared by the launcher and distributed tests, through psutil."""

import os
import signal
import time

import psutil


def alive(pids):
    """The PIDs among ``pids`` that still name a process (zombies included)."""
    found = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        found.append(pid)
    return found


def identify(pids):
    """``{pid: start time}`` of the processes among ``pids`` that exist now.

    The start time tells a process from a later one that got the same PID.
    """
    identities = {}
    for pid in pids:
        try:
            identities[pid] = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            continue
    return identities


def running(identities):
    """The PIDs of ``identities`` whose process still exists and is not a zombie."""
    left = []
    for pid, started in identities.items():
        try:
            process = psutil.Process(pid)
            if process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            continue
    return left


def wait_until_gone(identities, timeout_s=30.0):
    """Poll until no process of ``identities`` runs; return those still running at the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = running(identities)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def kill_running(identities):
    """SIGKILL, by PID, the processes of ``identities`` still running: a failed test's leftovers."""
    for pid in running(identities):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def descendants(root):
    """The PIDs of every process below ``root`` in the parent tree."""
    try:
        return [child.pid for child in psutil.Process(root).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _tcp_sockets(pid):
    """The TCP sockets (IPv4 and IPv6) process ``pid`` holds open; none once it has gone."""
    try:
        return psutil.Process(pid).net_connections(kind="tcp")
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return []


def listening_addresses(pids):
    """``{pid: [(host, port), ...]}``: where each of ``pids`` listens for TCP connections."""
    return {pid: sorted(tuple(sock.laddr) for sock in _tcp_sockets(pid)
                        if sock.status == psutil.CONN_LISTEN)
            for pid in pids}


def tcp_peers(pids):
    """``(local, remote)`` of every TCP socket ``pids`` hold that is not listening."""
    return sorted((tuple(sock.laddr), tuple(sock.raddr)) for pid in pids
                  for sock in _tcp_sockets(pid) if sock.status != psutil.CONN_LISTEN)
