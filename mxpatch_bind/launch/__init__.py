"""Run a ``dist_*`` kvstore job on this machine: scheduler, servers and workers on 127.0.0.1.

For first tries and tests on one machine. Real clusters start their nodes with
dmlc-tracker (ssh, mpi, yarn, ...) as usual; this module is not a replacement
for it. MXNet's own ``tools/launch.py`` is not used: it fails on Python 3.11,
and its tracker binds the scheduler to a non-loopback address.

Every process is started in a session of its own, so Ctrl-C in a terminal
reaches only the launcher, which then stops the job itself. When the launcher
stops the job (a process failed, the timeout expired, SIGINT, SIGTERM, SIGHUP or
SIGQUIT arrived), it signals the process groups it created, and nothing else:
SIGTERM, then SIGKILL after a grace period, at once when another signal
arrives meanwhile. Each exited child is reaped only after its group has been
signalled, so its process ID, and with it the group ID, cannot be reused by an
unrelated process in between. Should the launcher itself die (``kill -9``),
the kernel SIGKILLs every child, each of which asked for that with
``prctl(PR_SET_PDEATHSIG)`` (Linux only), and a watchdog process, told every
group the launcher creates, kills those groups with whatever the workers
started in them. A process that leaves its group (``setsid``) escapes. POSIX only.

Command line::

    python -m mxpatch_bind.launch -n 2 -s 1 -- python train.py --kv-store dist_sync

The scheduler and the servers run ``import mxnet`` in the launcher's own
Python (``sys.executable``), which therefore needs MXNet; the launcher itself
does not import it. The children's environment is the launcher's, minus every
variable that could make ps-lite use another address, plus the job's own: see
:func:`launch` for the variables the launcher owns. Output lines are forwarded
with a prefix: ``[scheduler] ``, ``[server 0] ``, ``[worker 1] ``.

Exit status: 0 when every worker exited 0; the failing process's exit code
(128 + N when killed by signal N); 124 when the timeout expired; 128 + N when
the launcher received signal N; 126 or 127 when a command could not be started;
1, quietly, when the reader of its output went away (``| head -1``: the job is stopped);
2 for a bad command line. The first of these events decides; a signal that
arrives while the job is being stopped only makes the stop immediate.
"""

import argparse
import os
import signal
import sys
import time
from typing import List, Mapping, Optional, Sequence, TextIO

from .. import _cli_types
from .._mxnet_env import check_without_importing
from . import args as _launch_args
from . import env as _launch_env
from .env import LOOPBACK
from .nodes import _POLL_S, _PROG, _free_port, _Node, _Output, _SignalFlag, _Watchdog

__all__ = ["launch", "main", "add_arguments", "run"]


# The exit status coreutils' ``timeout`` uses, so that scripts recognise it.
_EXIT_TIMEOUT = 124
# Scheduler and servers are plain MXNet imports: with DMLC_ROLE set, importing
# mxnet starts the node and blocks until the workers finalize.
_PS_NODE_COMMAND = (sys.executable, "-c", "import mxnet")


def _plan(command, num_workers, num_servers, environ):
    """Yield ``(name, argv, environ)`` for every process, scheduler first."""
    node_environ = _launch_env.node_environ
    yield "scheduler", _PS_NODE_COMMAND, node_environ(environ, "scheduler")
    for index in range(num_servers):
        yield f"server {index}", _PS_NODE_COMMAND, node_environ(environ, "server")
    for index in range(num_workers):
        yield f"worker {index}", list(command), node_environ(environ, "worker", index)


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _describe_exit(node, code):
    if code < 0:
        return f"{node.name} was killed by {_signal_name(-code)}"
    return f"{node.name} exited with code {code}"


def _status_of(code):
    return 128 - code if code < 0 else code


def _plural(count, noun="process"):
    return f'{count} {noun}{"" if count == 1 else "es"}'


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
                output.say(f'{_describe_exit(node, code)}; stopping '
                           f'{_plural(len(running), "other process")}')
                return _status_of(code)
        if not any(node in running for node in workers):
            return _wait_for_ps_nodes(nodes, grace, output, signals)
        if signals.received is not None:
            return _received(signals, running, output)
        if output.reader_gone:  # quietly: the output went with its reader
            return _cli_types.CLOSED_PIPE_STATUS
        if timeout is not None and time.monotonic() - started > timeout:
            waiting = ", ".join(node.name for node in workers if node in running)
            output.say(f"timed out after {timeout:g} s waiting for {waiting}; stopping "
                       f"{_plural(len(running))}")
            return _EXIT_TIMEOUT
        time.sleep(_POLL_S)


def _received(signals, running, output):
    signals.stopped_the_job = True
    output.say(f"received {_signal_name(signals.received)}; stopping {_plural(len(running))}")
    return 128 + signals.received


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
    # whose workers never created one leaves them waiting. The workers'
    # success decided the status: a signal now only cuts the wait short.
    names = ", ".join(node.name for node in running)
    if signals.received is not None:
        output.say(f"workers succeeded; received {_signal_name(signals.received)}; "
                   f"stopping {names}")
    else:
        output.say(f"workers succeeded; stopping {names}, still running after {grace:g} s")
    return 0


def _stop(nodes, grace, output, signals):
    """Signal every group created, wait up to ``grace`` seconds, then kill and reap.

    A signal that arrives meanwhile ends the wait at once.
    """
    # Counted from the first signal on, not from here, so that a signal arriving just
    # before this line is not taken for the one that made the launcher stop.
    signals_expected = 1 if signals.stopped_the_job else 0
    for node in nodes:
        node.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(node.exit_code() is None for node in nodes):
        if signals.count > signals_expected:
            output.say("received {} while stopping; killing {}".format(
                _signal_name(signals.last), _plural(
                    sum(node.exit_code() is None for node in nodes))))
            break
        time.sleep(_POLL_S)
    # Also reaches whatever an exited child left behind in its group.
    for node in nodes:
        node.signal_group(signal.SIGKILL)
    for node in nodes:
        node.reap()


def _start(command, num_workers, num_servers, environ, output, nodes, signals, watchdog):
    """Start the processes into ``nodes``; return None, or an exit status on failure."""
    for name, argv, node_environ in _plan(command, num_workers, num_servers, environ):
        if signals.received is not None:
            return _received(signals, nodes, output)
        try:
            nodes.append(_Node(name, argv, node_environ, output))
            watchdog.watch(nodes[-1].pid)
        except OSError as error:
            output.say(f"cannot start {name} ({argv[0]!r}): {error.strerror or error}; stopping "
                       f"{_plural(len(nodes))}")
            return 127 if isinstance(error, FileNotFoundError) else 126
    started = ", ".join(f"{node.name} (pid {node.pid})" for node in nodes)
    output.say(f"scheduler on {LOOPBACK}:{environ['DMLC_PS_ROOT_PORT']}; started {started}")
    return None


def launch(command: Sequence[str], num_workers: int, num_servers: int = 1,
           timeout: Optional[float] = 300.0, env: Optional[Mapping[str, str]] = None,
           grace: float = 5.0, stdout: Optional[TextIO] = None,
           stderr: Optional[TextIO] = None) -> int:
    """Run ``command`` as ``num_workers`` workers of a loopback ``dist_*`` kvstore job.

    Starts one scheduler, ``num_servers`` servers and ``num_workers`` workers,
    each in a new session, forwards their output line by line with a
    ``[worker 0] `` style prefix, and waits for the workers. Stops the whole
    job as soon as any process exits non-zero, the timeout expires, or SIGINT,
    SIGTERM, SIGHUP or SIGQUIT arrives (handled only when called from the main
    thread; one the process ignores, as under ``nohup``, stays ignored). When
    it returns, every process it started has been reaped and its output
    forwarded to the end (a pipe that a process outside the group still holds
    open is given up after one second without a line). Should the
    launcher die (``kill -9``), the kernel SIGKILLs its children (Linux) and a
    watchdog process kills their process groups.

    Every argument is checked before anything starts.

    The launcher owns these environment variables of its children (the
    children's environment is the caller's ``os.environ`` and ``env`` otherwise):

    - set for every process: ``DMLC_PS_ROOT_URI=127.0.0.1``,
      ``DMLC_PS_ROOT_PORT`` (a port free on 127.0.0.1), ``DMLC_NODE_HOST=127.0.0.1``
      (the address each node listens on and announces), ``DMLC_NUM_SERVER``,
      ``DMLC_NUM_WORKER``, ``DMLC_ROLE``;
    - set for workers only: ``MXPATCH_LAUNCH_WORKER_INDEX``, the index in start
      order (it is not the kvstore rank, which the scheduler assigns: read
      ``kv.rank``);
    - removed: ``DMLC_INTERFACE`` (picks a network card's address),
      ``DMLC_USE_KUBERNETES`` (the scheduler would listen on 0.0.0.0),
      ``DMLC_LOCAL`` (``ipc:///tmp`` sockets instead of TCP),
      ``DMLC_PS_VAN_TYPE`` (another transport than zmq over TCP), ``DMLC_RANK``
      (would stop ps-lite from taking its assigned rank), ``PORT`` (ps-lite's
      per-node port), and every other ``DMLC_*`` variable (trackers and cluster
      managers), except ``DMLC_PS_WATER_MARK`` and
      ``DMLC_LOG_STACK_TRACE_DEPTH``, which pass through;
    - ``PYTHONUNBUFFERED=1`` unless set, so that output arrives line by line.

    ``PS_VERBOSE`` and ps-lite's other ``PS_*`` settings pass through.

    Parameters
    ----------
    command : sequence of str
        The worker command, e.g. ``[sys.executable, 'train.py', '--lr', '0.1']``.
        A single string is refused rather than guessed at.
    num_workers : int
        Number of workers, at least 1. numpy integers are accepted.
    num_servers : int, optional
        Number of parameter servers, at least 1.
    timeout : float or None, optional
        Seconds the workers may run in all, finite and > 0; None waits for ever.
    env : dict of str to str, optional
        Variables added to ``os.environ`` for every process. Setting one the
        launcher owns is refused.
    grace : float, optional
        Seconds (finite, >= 0) to wait for the scheduler and servers to exit by
        themselves once the workers succeeded, and between SIGTERM and SIGKILL
        when stopping.
    stdout, stderr : file-like, optional
        Where the processes' stdout and stderr lines go; the launcher's own
        messages go to ``stderr``. Default: ``sys.stdout`` and ``sys.stderr``
        at the time of the call.

    Returns
    -------
    int
        0 when every worker exited 0; the failing process's exit code (128 + N
        when killed by signal N); 124 on timeout; 128 + N on signal N; 126 or
        127 when a command could not be started. The first of these events
        decides; a signal during the stop only makes it immediate.

    Raises
    ------
    TypeError
        When an argument has the wrong type (a count that is not an integer,
        a command element or an ``env`` entry that is not a str); nothing is started.
    ValueError
        When an argument is outside the accepted range, or ``env`` sets a
        variable the launcher owns; nothing is started.
    mxpatch_bind._mxnet_env.MXNetEnvironmentError
        When this Python has no MXNet, or a numpy MXNet cannot import, so the
        scheduler and servers could not start (an ``ImportError`` whose
        message ends with the fix); nothing is started.

    Examples
    --------
    >>> import sys
    >>> from mxpatch_bind.launch import launch
    >>> launch([sys.executable, 'train.py'], num_workers=0)
    Traceback (most recent call last):
        ...
    ValueError: num_workers must be an integer >= 1, got 0
    >>> code = launch([sys.executable, 'train.py', '--kv-store', 'dist_sync'],
    ...               num_workers=2, timeout=120)  # doctest: +SKIP
    [worker 0] ...
    >>> code  # doctest: +SKIP
    0
    """
    command = _launch_args.check_command(command)
    num_workers = _launch_args.count("num_workers", num_workers, 1)
    num_servers = _launch_args.count("num_servers", num_servers, 1)
    if timeout is not None:
        timeout = _launch_args.seconds("timeout", timeout, 0, inclusive=False,
                                       none_means="no limit")
    grace = _launch_args.seconds("grace", grace, 0, inclusive=True)
    extra_env = _launch_args.check_env(env)
    # The scheduler and servers run ``import mxnet`` in this Python: say why they cannot
    # before starting them, rather than forward each one's traceback.
    check_without_importing()
    output = _Output(stdout or sys.stdout, stderr or sys.stderr)
    environ = _launch_env.job_environ(os.environ, extra_env, num_workers, num_servers,
                                      _free_port())
    nodes: List[_Node] = []
    with _SignalFlag() as signals:
        watchdog = _Watchdog()
        try:
            status = _start(command, num_workers, num_servers, environ, output, nodes, signals,
                            watchdog)
            if status is None:
                workers = nodes[1 + num_servers:]
                status = _supervise(nodes, workers, timeout, grace, output, signals)
        finally:
            _stop(nodes, grace, output, signals)
            watchdog.close()
    return status


# -- command line ------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the launcher's options to ``parser`` (``python -m mxpatch_bind.launch`` and the
    ``mxpatch-bind launch`` subcommand build theirs with it).

    Examples
    --------
    >>> import argparse
    >>> from mxpatch_bind.launch import add_arguments
    >>> parser = argparse.ArgumentParser(prog="launch")
    >>> add_arguments(parser)
    >>> parser.parse_args(["-n", "2", "--", "python", "train.py"]).num_workers
    2
    """
    parser.add_argument("-n", "--num-workers", type=_launch_args.count_flag, required=True,
                        help="number of workers")
    parser.add_argument("-s", "--num-servers", type=_launch_args.count_flag, default=1,
                        help="number of servers (default: %(default)s)")
    parser.add_argument("--timeout", type=_launch_args.timeout_flag, default=300.0,
                        help="seconds the workers may run, 0 for no limit (default: %(default)g)")
    parser.add_argument("--grace", type=_launch_args.seconds_flag, default=5.0,
                        help="seconds to let processes exit by themselves (default: %(default)g)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                        help="the worker command, after --")


def _parser():
    parser = _cli_types.Parser(prog="python -m " + _PROG,
                               description=_cli_types.description(__doc__),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command-line entry point: ``python -m mxpatch_bind.launch -n N [-s S] -- COMMAND``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status :func:`launch` returns; 1 with one line on stderr, naming
        the fix, when this Python has no usable MXNet. A bad command line exits
        with status 2 and one line on stderr before anything starts.

    Examples
    --------
    >>> from mxpatch_bind.launch import main
    >>> main(['-n', '2', '--timeout', '60', '--', 'python', 'train.py'])  # doctest: +SKIP
    0
    """
    return _cli_types.run_parsed(_parser(), argv, run)


def run(args: argparse.Namespace) -> int:
    """Launch the job the parsed command line ``args`` describes; returns the exit status.

    Parameters
    ----------
    args : argparse.Namespace
        From a parser :func:`add_arguments` filled.

    Returns
    -------
    int
        As :func:`main`.

    Raises
    ------
    mxpatch_bind._cli_types.UsageError
        No worker command after ``--``.

    Examples
    --------
    >>> import argparse
    >>> from mxpatch_bind import launch
    >>> parser = argparse.ArgumentParser(prog="launch")
    >>> launch.add_arguments(parser)
    >>> launch.run(parser.parse_args(["-n", "2", "--", "python", "train.py"]))  # doctest: +SKIP
    0
    """
    # argparse keeps the separator in front of a REMAINDER argument.
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise _cli_types.UsageError("a worker command is required, e.g. -- python train.py")
    return launch(command, args.num_workers, args.num_servers,
                  timeout=args.timeout or None, grace=args.grace)

