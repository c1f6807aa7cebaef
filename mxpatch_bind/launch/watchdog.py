"""Kill a loopback job's process groups when its launcher dies (private; run as a script).

The launcher starts this script first, in a session of its own, with a pipe as
its stdin, and writes the process group ID of every process it starts, one per
line, then ``done`` once it has stopped and reaped the job itself. End of file
without ``done`` means the launcher died (``kill -9``, say): the kernel's
parent-death signal ends the launcher's own children, and this ends whatever
they started in their groups. A group whose processes have all ended by then
may in principle have had its ID reused; Linux hands PIDs out in turn up to
``pid_max``, so that would take the whole range being used up within the
moment between the launcher's death and the kill. Standard library only: it
runs without the package on the path.
"""

import os
import signal
import sys

DONE = "done"


def _ignore_stop_signals():
    # Only the launcher's end, or SIGKILL, may end the watchdog.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)


def _groups_until_end(lines):
    """The group IDs read, or None when the launcher said it is done."""
    groups = []
    for line in lines:
        word = line.strip()
        if word == DONE:
            return None
        groups.append(int(word))
    return groups


def main():
    _ignore_stop_signals()
    groups = _groups_until_end(sys.stdin)
    for group in groups or ():
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    main()
