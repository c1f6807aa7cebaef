"""Run a ``dist_*`` kvstore job on this machine: scheduler, servers and workers on 127.0.0.1.

For first tries and tests on one machine. Real clusters start their nodes with
dmlc-tracker (ssh, mpi, yarn, ...) as usual; this module is not a replacement
for it. MXNet's own ``tools/launch.py`` is not used: it fails on Python 3.11,
and its tracker binds the scheduler to a non-loopback address.

Every process is started in a session of its own, so Ctrl-C in a terminal
reaches only the launcher, which then stops the job itself. When the launcher
stops the job (a process failed, the timeout expired, SIGINT or SIGTERM
arrived), it signals the process groups it created, and nothing else: SIGTERM,
then SIGKILL after a grace period. Each exited child is reaped only after its
group has been signalled, so its process ID, and with it the group ID, cannot
be reused by an unrelated process in between. A process that leaves its group
(``setsid``) escapes, and so does everything if the launcher itself is killed
with SIGKILL. POSIX only.

Command line::

    python -m mxpatch_bind.launch -n 2 -s 1 -- python train.py --kv-store dist_sync

The scheduler and the servers run ``import mxnet`` in the launcher's own
Python (``sys.executable``), which therefore needs MXNet; the launcher itself
does not import it. Every process gets ``DMLC_PS_ROOT_URI=127.0.0.1``, ``DMLC_PS_ROOT_PORT`` (a
free port), ``DMLC_NODE_HOST=127.0.0.1``, ``DMLC_NUM_SERVER``,
``DMLC_NUM_WORKER``, ``DMLC_ROLE`` and ``PYTHONUNBUFFERED=1`` (unless already
set), so that output arrives line by line. Workers also get
``MXPATCH_LAUNCH_WORKER_INDEX``, their index in start order; it is not the
kvstore rank, which the scheduler assigns (read ``kv.rank``). Output lines are
forwarded with a prefix: ``[scheduler] ``, ``[server 0] ``, ``[worker 1] ``.

Exit status: 0 when every worker exited 0; the failing process's exit code
(128 + N when killed by signal N); 124 when the timeout expired; 128 + N when
the launcher received signal N; 126 or 127 when a command could not be started.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["launch", "main"]

_PROG = "mxpatch_bind.launch"
_LOOPBACK = "127.0.0.1"
_POLL_S = 0.05
_READER_JOIN_S = 1.0
# The exit status coreutils' ``timeout`` uses, so that scripts recognise it.
_EXIT_TIMEOUT = 124
# Scheduler and servers are plain MXNet imports: with DMLC_ROLE set, importing
# mxnet starts the node and blocks until the workers finalize.
_PS_NODE_COMMAND = (sys.executable, "-c", "import mxnet")


class _Output:
    """The streams output goes to, with one lock so that lines never interleave."""

    def __init__(self, stdout, stderr):
        self.stdout = stdout
        self.stderr = stderr
        self._lock = threading.Lock()

    def write_line(self, stream, line):
        with self._lock:
            stream.write(line + "\n")
            stream.flush()

    def say(self, message):
        self.write_line(self.stderr, "{}: {}".format(_PROG, message))


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
        )
        prefix = "[{}] ".format(name)
        self._readers = [
            _start_reader(self.popen.stdout, prefix, output, output.stdout),
            _start_reader(self.popen.stderr, prefix, output, output.stderr),
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
            # A process that left the group may still hold the pipe open.
            reader.join(_READER_JOIN_S)


def _start_reader(pipe, prefix, output, stream):
    thread = threading.Thread(
        target=_forward_lines, args=(pipe, prefix, output, stream), daemon=True
    )
    thread.start()
    return thread


def _forward_lines(pipe, prefix, output, stream):
    with pipe:
        for raw in iter(pipe.readline, b""):
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            output.write_line(stream, prefix + text)


class _SignalFlag:
    """Turn SIGINT and SIGTERM into a flag the supervising loop polls.

    No exception is raised at an arbitrary point, so a signal cannot cut the
    start-up or the clean-up short. Handlers can only be installed from the
    main thread; elsewhere the flag never rises.
    """

    _SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.received = None
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in self._SIGNALS:
                previous = signal.getsignal(signum)
                # None means a handler installed outside Python: it could not be restored.
                if previous is not None:
                    self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, *exc_info):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False

    def _record(self, signum, frame):
        if self.received is None:
            self.received = signum


def _free_port():
    """Return a TCP port on 127.0.0.1 that was free a moment ago.

    Another process may take it before the scheduler binds it; the scheduler
    then fails, and so does the job, with a message.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        return sock.getsockname()[1]


def _job_environ(env, num_workers, num_servers):
    environ = dict(os.environ)
    environ.setdefault("PYTHONUNBUFFERED", "1")
    environ.update(env or {})
    environ.update(
        DMLC_PS_ROOT_URI=_LOOPBACK,
        DMLC_PS_ROOT_PORT=str(_free_port()),
        DMLC_NODE_HOST=_LOOPBACK,
        DMLC_NUM_SERVER=str(num_servers),
        DMLC_NUM_WORKER=str(num_workers),
    )
    # A rank left over from an enclosing job would stop ps-lite from taking the
    # one the scheduler assigns.
    environ.pop("DMLC_RANK", None)
    return environ


def _plan(command, num_workers, num_servers, environ):
    """Yield ``(name, argv, environ)`` for every process, scheduler first."""
    yield "scheduler", _PS_NODE_COMMAND, dict(environ, DMLC_ROLE="scheduler")
    for index in range(num_servers):
        yield "server {}".format(index), _PS_NODE_COMMAND, dict(environ, DMLC_ROLE="server")
    for index in range(num_workers):
        worker_environ = dict(
            environ, DMLC_ROLE="worker", MXPATCH_LAUNCH_WORKER_INDEX=str(index)
        )
        yield "worker {}".format(index), list(command), worker_environ


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal {}".format(signum)


def _describe_exit(node, code):
    if code < 0:
        return "{} was killed by {}".format(node.name, _signal_name(-code))
    return "{} exited with code {}".format(node.name, code)


def _status_of(code):
    return 128 - code if code < 0 else code


def _plural(count, noun="process"):
    return "{} {}{}".format(count, noun, "" if count == 1 else "es")


def _supervise(nodes, workers, timeout, grace, output, signals):
    """Wait for the workers and return the launcher's exit status.

    Leaves the stopping to the caller; returns as soon as the outcome is known.
    """
    started = time.monotonic()
    while True:
        running = [node for node in nodes if node.exit_code() is None]
        for node in nodes:
            code = node.exit_code()
            if code:
                output.say("{}; stopping {}".format(
                    _describe_exit(node, code), _plural(len(running), "other process")))
                return _status_of(code)
        if not any(node in running for node in workers):
            return _wait_for_ps_nodes(nodes, grace, output, signals)
        if signals.received is not None:
            output.say("received {}; stopping {}".format(
                _signal_name(signals.received), _plural(len(running))))
            return 128 + signals.received
        if timeout is not None and time.monotonic() - started > timeout:
            waiting = ", ".join(node.name for node in workers if node in running)
            output.say("timed out after {:g} s waiting for {}; stopping {}".format(
                timeout, waiting, _plural(len(running))))
            return _EXIT_TIMEOUT
        time.sleep(_POLL_S)


def _wait_for_ps_nodes(nodes, grace, output, signals):
    """After every worker succeeded: give scheduler and servers time to exit."""
    deadline = time.monotonic() + grace
    while True:
        running = [node for node in nodes if node.exit_code() is None]
        if not running:
            return 0
        if time.monotonic() >= deadline or signals.received is not None:
            break
        time.sleep(_POLL_S)
    # ps-lite shuts them down when the workers finalize a dist kvstore; a job
    # whose workers never created one leaves them waiting.
    output.say("workers succeeded; stopping {}, still running after {:g} s".format(
        ", ".join(node.name for node in running), grace))
    return 0


def _stop(nodes, grace):
    """Signal every group created, wait up to ``grace`` seconds, then kill and reap."""
    for node in nodes:
        node.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(node.exit_code() is None for node in nodes):
        time.sleep(_POLL_S)
    # Also reaches whatever an exited child left behind in its group.
    for node in nodes:
        node.signal_group(signal.SIGKILL)
    for node in nodes:
        node.reap()


def _check_arguments(command, num_workers, num_servers, timeout, grace):
    if isinstance(command, (str, bytes)) or not command:
        raise ValueError(
            "command must be a non-empty list of arguments such as "
            "['python', 'train.py'], got {!r}".format(command)
        )
    for name, value in (("num_workers", num_workers), ("num_servers", num_servers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("{} must be an int >= 1, got {!r}".format(name, value))
    if timeout is not None and not timeout > 0:
        raise ValueError(
            "timeout must be a number of seconds > 0 or None, got {!r}".format(timeout))
    if not grace >= 0:
        raise ValueError("grace must be a number of seconds >= 0, got {!r}".format(grace))


def launch(command, num_workers, num_servers=1, timeout=300.0, env=None,
           grace=5.0, stdout=None, stderr=None):
    """Run ``command`` as ``num_workers`` workers of a loopback ``dist_*`` kvstore job.

    Starts one scheduler, ``num_servers`` servers and ``num_workers`` workers,
    each in a new session, forwards their output line by line with a
    ``[worker 0] `` style prefix, and waits for the workers. Stops the whole
    job as soon as any process exits non-zero, the timeout expires, or SIGINT
    or SIGTERM arrives (the latter two only when called from the main thread).
    When it returns, every process it started has been reaped.

    Parameters
    ----------
    command : list of str
        The worker command, e.g. ``[sys.executable, 'train.py', '--lr', '0.1']``.
        A single string is refused rather than guessed at.
    num_workers : int
        Number of workers, at least 1.
    num_servers : int, optional
        Number of parameter servers, at least 1.
    timeout : float or None, optional
        Seconds the workers may run in all; None waits for ever.
    env : dict of str to str, optional
        Variables added to ``os.environ`` for every process. The ``DMLC_*``
        variables the launcher sets win over these.
    grace : float, optional
        Seconds to wait for the scheduler and servers to exit by themselves once
        the workers succeeded, and between SIGTERM and SIGKILL when stopping.
    stdout, stderr : file-like, optional
        Where the processes' stdout and stderr lines go; the launcher's own
        messages go to ``stderr``. Default: ``sys.stdout`` and ``sys.stderr``
        at the time of the call.

    Returns
    -------
    int
        0 when every worker exited 0; the failing process's exit code (128 + N
        when killed by signal N); 124 on timeout; 128 + N on signal N; 126 or
        127 when a command could not be started.

    Raises
    ------
    ValueError
        When an argument is outside the accepted range; nothing is started.

    Examples
    --------
    >>> import sys
    >>> from mxpatch_bind.launch import launch
    >>> code = launch([sys.executable, 'train.py', '--kv-store', 'dist_sync'],
    ...               num_workers=2, timeout=120)  # doctest: +SKIP
    [worker 0] ...
    >>> code  # doctest: +SKIP
    0
    """
    _check_arguments(command, num_workers, num_servers, timeout, grace)
    output = _Output(stdout or sys.stdout, stderr or sys.stderr)
    environ = _job_environ(env, num_workers, num_servers)
    nodes = []
    with _SignalFlag() as signals:
        try:
            status = _start(command, num_workers, num_servers, environ, output, nodes)
            if status is None:
                workers = nodes[1 + num_servers:]
                status = _supervise(nodes, workers, timeout, grace, output, signals)
        finally:
            _stop(nodes, grace)
    return status


def _start(command, num_workers, num_servers, environ, output, nodes):
    """Start the processes into ``nodes``; return None, or an exit status on failure."""
    for name, argv, node_environ in _plan(command, num_workers, num_servers, environ):
        try:
            nodes.append(_Node(name, argv, node_environ, output))
        except OSError as error:
            output.say("cannot start {} ({!r}): {}; stopping {}".format(
                name, argv[0], error.strerror or error, _plural(len(nodes))))
            return 127 if isinstance(error, FileNotFoundError) else 126
    output.say("scheduler on {}:{}; started {}".format(
        _LOOPBACK, environ["DMLC_PS_ROOT_PORT"],
        ", ".join("{} (pid {})".format(node.name, node.pid) for node in nodes)))
    return None


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m " + _PROG,
        description="Run a dist_* kvstore job on this machine (127.0.0.1 only): "
                    "one scheduler, the servers, and the workers running COMMAND.",
        epilog="Example: python -m {} -n 2 -s 1 -- python train.py --kv-store dist_sync"
               .format(_PROG),
    )
    parser.add_argument("-n", "--num-workers", type=int, required=True,
                        help="number of workers")
    parser.add_argument("-s", "--num-servers", type=int, default=1,
                        help="number of servers (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds the workers may run, 0 for no limit (default: %(default)g)")
    parser.add_argument("--grace", type=float, default=5.0,
                        help="seconds to let processes exit by themselves (default: %(default)g)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                        help="the worker command, after --")
    return parser


def main(argv=None):
    """Command-line entry point: ``python -m mxpatch_bind.launch -n N [-s S] -- COMMAND``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status :func:`launch` returns.

    Examples
    --------
    >>> from mxpatch_bind.launch import main
    >>> main(['-n', '2', '--timeout', '60', '--', 'python', 'train.py'])  # doctest: +SKIP
    0
    """
    args = _parse_args(argv)
    return launch(args.command, args.num_workers, args.num_servers,
                  timeout=args.timeout or None, grace=args.grace)


def _parse_args(argv):
    """Parse and check the command line; exit with status 2 on a bad one, as argparse does."""
    parser = _parser()
    args = parser.parse_args(argv)
    # argparse keeps the separator in front of a REMAINDER argument.
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("a worker command is required, e.g. -- python train.py")
    for flag, value in (("-n/--num-workers", args.num_workers),
                        ("-s/--num-servers", args.num_servers)):
        if value < 1:
            parser.error("{} must be >= 1, got {!r}".format(flag, value))
    for flag, value in (("--timeout", args.timeout), ("--grace", args.grace)):
        if value < 0:
            parser.error("{} must be >= 0, got {!r}".format(flag, value))
    return args


if __name__ == "__main__":
    sys.exit(main())
