"""The job's processes, their output and the launcher's safety nets (private to launch).

A node is one process of the job in a session of its own (:class:`_Node`), its output is
forwarded line by line with the node's prefix (:class:`_Reader`, :class:`_Output`), the
signals that stop the launcher are caught (:class:`_SignalFlag`), and should the launcher die,
``prctl(PR_SET_PDEATHSIG)`` and a watchdog process take the job with it
(:func:`_die_with_launcher`, :class:`_Watchdog`).
"""

import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

from .._cli_types import discard_output
from . import watchdog as _launch_watchdog
from .env import LOOPBACK

_PROG = "mxpatch_bind.launch"
_POLL_S = 0.05
# Every signal that ends a process by default and can be caught, short of the
# job-control and timer ones: what a terminal, a session manager or ``kill`` sends.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# After a process exits, how long its output may stay silent before the launcher stops
# waiting for the rest (a process that left the group may hold the pipe open for ever).
_READER_IDLE_S = 1.0
_READER_DRAIN_S = 30.0
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class _Output:
    """The streams output goes to, with one lock so that lines never interleave.

    A stream whose reader went away (``| head -1``) is pointed at ``os.devnull`` and
    ``reader_gone`` set, for the supervisor to stop the job as a closed pipe stops a command;
    a ``BrokenPipeError`` left to a forwarding thread would print a traceback and leave that
    child's pipe undrained (the child blocks once it fills).
    """

    def __init__(self, stdout, stderr):
        self.stdout = stdout
        self.stderr = stderr
        self.reader_gone = False
        self._lock = threading.Lock()

    def write_line(self, stream, line):
        with self._lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except BrokenPipeError:
                discard_output(stream)
                self.reader_gone = True

    def say(self, message):
        self.write_line(self.stderr, f"{_PROG}: {message}")


@functools.lru_cache(maxsize=None)
def _load_prctl():
    """libc's ``prctl``, or None where there is none (not Linux); looked up once."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with_launcher() -> Optional[Callable[[], None]]:
    """A ``preexec_fn`` that has the kernel SIGKILL the child when the launcher dies.

    The parent-death signal fires when the *thread* that forked the child ends:
    the thread that calls :func:`launch` starts every process and waits for
    them all, so it outlives them. The launcher may die between the fork and
    the ``prctl``; the child then has a new parent already and kills itself.
    Where ``prctl`` fails (a sandbox refusing it), the watchdog still covers.
    Everything is looked up here, in the launcher: the forked child only calls.
    """
    prctl = _load_prctl()
    if prctl is None:
        return None
    launcher_pid = os.getpid()

    def set_parent_death_signal():
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != launcher_pid:
            os.kill(os.getpid(), signal.SIGKILL)

    return set_parent_death_signal


class _Watchdog:
    """The process that kills the job's groups if the launcher dies: see ``_launch_watchdog``.

    The kernel's parent-death signal ends the launcher's children; the
    watchdog also ends what they started, in their process groups.
    """

    def __init__(self):
        self.popen = subprocess.Popen(
            [sys.executable, "-I", _launch_watchdog.__file__], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def watch(self, group):
        self._send(str(group))

    def close(self):
        """Tell the watchdog the job is over, and reap it."""
        self._send(_launch_watchdog.DONE)
        try:
            self.popen.stdin.close()
        except OSError:
            pass
        self.popen.wait()

    def _send(self, word):
        try:
            self.popen.stdin.write((word + "\n").encode())
            self.popen.stdin.flush()
        except OSError:
            # Killed by someone: the parent-death signal still ends the children.
            pass


class _Node:
    """One process of the job: its name in messages and the ``Popen`` running it."""

    def __init__(self, name, argv, environ, output):
        self.name = name
        self.popen = subprocess.Popen(
            argv,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Own session and process group: the terminal's Ctrl-C goes to the
            # launcher only, and the group can be signalled as a whole.
            start_new_session=True,
            preexec_fn=_die_with_launcher(),
        )
        prefix = f"[{name}] "
        self._readers = [
            _Reader(self.popen.stdout, prefix, output, output.stdout),
            _Reader(self.popen.stderr, prefix, output, output.stderr),
        ]

    @property
    def pid(self):
        return self.popen.pid

    def exit_code(self):
        """Return the exit code like ``Popen.returncode``, or None while running.

        Does not reap the process: while it is a zombie its ID stays reserved,
        so signalling its process group cannot reach anyone else's.
        """
        if self.popen.returncode is not None:
            return self.popen.returncode
        try:
            state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # Reaped behind our back (a SIGCHLD handler in the caller, say).
            return self.popen.poll()
        if state is None:
            return None
        if state.si_code == os.CLD_EXITED:
            return state.si_status
        return -state.si_status

    def signal_group(self, signum):
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            pass

    def reap(self):
        self.popen.wait()
        for reader in self._readers:
            reader.finish()


class _Reader:
    """A thread forwarding one pipe's lines; it notes when it forwarded the last one."""

    def __init__(self, pipe, prefix, output, stream):
        self.last_line_at = time.monotonic()
        self._thread = threading.Thread(target=self._forward,
                                        args=(pipe, prefix, output, stream), daemon=True)
        self._thread.start()

    def finish(self):
        """Wait for the pipe's end while lines still come: give up after ``_READER_IDLE_S``
        without one, or ``_READER_DRAIN_S`` in all (a process that left the group may still
        hold the pipe open, and write to it)."""
        started = time.monotonic()
        while self._thread.is_alive():
            self._thread.join(_POLL_S)
            now = time.monotonic()
            if (now - max(self.last_line_at, started) > _READER_IDLE_S
                    or now - started > _READER_DRAIN_S):
                return

    def _forward(self, pipe, prefix, output, stream):
        with pipe:
            for raw in iter(pipe.readline, b""):
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                output.write_line(stream, prefix + text)
                self.last_line_at = time.monotonic()


class _SignalFlag:
    """Turn the stop signals into a flag the supervising loop polls.

    No exception is raised at an arbitrary point, so a signal cannot cut the
    start-up or the clean-up short. Handlers can only be installed from the
    main thread; elsewhere the flag never rises. A signal the launcher was
    started ignoring stays ignored, so that ``nohup`` keeps working.
    """

    def __init__(self):
        self.received = None
        self.last = None
        self.count = 0
        # Whether the first signal decided the exit status; set by the supervisor.
        self.stopped_the_job = False
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in _STOP_SIGNALS:
                previous = signal.getsignal(signum)
                # None means a handler installed outside Python: it could not be restored.
                if previous is not None and previous != signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, *exc_info):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False

    def _record(self, signum, frame):
        if self.received is None:
            self.received = signum
        self.last = signum
        self.count += 1


def _free_port():
    """Return a TCP port on 127.0.0.1 that was free a moment ago.

    Another process may take it before the scheduler binds it; the scheduler
    then fails, and so does the job, with a message.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]
