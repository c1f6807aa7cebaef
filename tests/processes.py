"""Process helpers shared by the launcher and distributed tests."""

import os


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
