"""Process and socket helpers shared by the launcher and distributed tests, read from /proc."""

import os
import signal
import socket
import struct
import time
from pathlib import Path

PROC = Path("/proc")
# /proc/net/tcp's state column: 0A is TCP_LISTEN.
TCP_LISTEN = "0A"


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


def _stat_fields(pid):
    """``/proc/<pid>/stat`` after the command name, or None when there is no such process."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is in parentheses and may itself contain ") ".
    return text[text.rindex(")") + 2:].split()


def identify(pids):
    """``{pid: start time}`` of the processes among ``pids`` that exist now.

    The start time tells a process from a later one that got the same PID.
    """
    identities = {}
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            identities[pid] = fields[19]  # field 22 of proc(5): starttime
    return identities


def running(identities):
    """The PIDs of ``identities`` whose process still exists and is not a zombie."""
    left = []
    for pid, started in identities.items():
        fields = _stat_fields(pid)
        if fields is not None and fields[19] == started and fields[0] != "Z":
            left.append(pid)
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
    """The PIDs of every process below ``root`` in the parent tree, found by scanning /proc."""
    children = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def socket_inodes(pid):
    """The inodes of the sockets process ``pid`` holds open."""
    inodes = set()
    try:
        fds = list((PROC / str(pid) / "fd").iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return inodes
    for fd in fds:
        try:
            target = os.readlink(str(fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def parse_address(text):
    """``(host, port)`` from /proc/net/tcp's ``HEX_ADDRESS:HEX_PORT`` (IPv4 or IPv6).

    The address is printed as 32-bit words in the machine's byte order.
    """
    hex_address, hex_port = text.split(":")
    words = [int(hex_address[i:i + 8], 16) for i in range(0, len(hex_address), 8)]
    packed = b"".join(struct.pack("=I", word) for word in words)
    family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, packed), int(hex_port, 16)


def tcp_sockets():
    """``{inode: (local (host, port), remote (host, port), state)}`` of every TCP socket."""
    sockets = {}
    for table in ("tcp", "tcp6"):
        lines = (PROC / "net" / table).read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            sockets[inode] = (parse_address(local), parse_address(remote), state)
    return sockets


def listening_addresses(pids):
    """``{pid: [(host, port), ...]}``: where each of ``pids`` listens for TCP connections."""
    sockets = tcp_sockets()
    listening = {}
    for pid in pids:
        listening[pid] = sorted(
            sockets[inode][0] for inode in socket_inodes(pid)
            if inode in sockets and sockets[inode][2] == TCP_LISTEN)
    return listening


def tcp_peers(pids):
    """``(local, remote)`` of every TCP socket ``pids`` hold that is not listening."""
    sockets = tcp_sockets()
    return sorted(sockets[inode][:2] for pid in pids for inode in socket_inodes(pid)
                  if inode in sockets and sockets[inode][2] != TCP_LISTEN)
