"""The environment of a loopback job's processes: which variables the launcher owns (private).

ps-lite (MXNet 1.9.1's copy, read from ``libmxnet.so``'s strings and ps-lite's
``van.cc`` / ``zmq_van.h`` / ``postoffice.cc``) chooses its addresses from
environment variables: an inherited ``DMLC_USE_KUBERNETES=1`` makes the
scheduler listen on ``0.0.0.0``, ``DMLC_INTERFACE`` picks a network card's
address, ``PORT`` fixes a node's port. So the launcher does not trust what it
inherits: every ``DMLC_*`` variable is set or removed here, except the few that
only tune ps-lite and select no address, and ``PORT`` is removed.
"""

from typing import Dict, Mapping, Optional

LOOPBACK = "127.0.0.1"

# Set for every process, with the reason.
SET_FOR_EVERY_PROCESS = {
    "DMLC_PS_ROOT_URI": "the scheduler's address: 127.0.0.1",
    "DMLC_PS_ROOT_PORT": "the scheduler's port: a port free on 127.0.0.1 when the job starts",
    "DMLC_NODE_HOST": "the address each node binds and announces: 127.0.0.1",
    "DMLC_NUM_SERVER": "the number of servers",
    "DMLC_NUM_WORKER": "the number of workers",
    "DMLC_ROLE": "scheduler, server or worker",
}
SET_FOR_WORKERS = {
    "MXPATCH_LAUNCH_WORKER_INDEX": "the worker's index in start order (not the kvstore rank); "
                                   "removed from the scheduler and the servers",
}
# Inherited ``DMLC_*`` variables the children keep: ps-lite tuning, no addresses.
PASSED_THROUGH = {
    "DMLC_PS_WATER_MARK": "ps-lite's limit on outstanding messages",
    "DMLC_LOG_STACK_TRACE_DEPTH": "dmlc-core's stack trace depth in error messages",
}
# Removed when inherited, with the reason. Every other ``DMLC_*`` variable is removed too:
# dmlc trackers and cluster managers (``DMLC_TRACKER_URI``, ``DMLC_JOB_CLUSTER``, ...)
# name hosts and ports this job must not reach.
REMOVED = {
    "DMLC_INTERFACE": "selects the network interface whose address a node uses",
    "DMLC_USE_KUBERNETES": "makes the scheduler listen on 0.0.0.0",
    "DMLC_LOCAL": "replaces TCP on 127.0.0.1 by ipc:///tmp/<port> sockets shared by name",
    "DMLC_PS_VAN_TYPE": "selects the transport (ibverbs, p3, ...); the launcher runs "
                        "ps-lite's default zmq over TCP",
    "DMLC_RANK": "a rank left from an enclosing job stops ps-lite from taking the one the "
                 "scheduler assigns",
    "PORT": "ps-lite takes a node's own port from it",
}
OWNED_PREFIX = "DMLC_"
OWNED_SUMMARY = "every DMLC_* variable except {}, and {}".format(
    " and ".join(sorted(PASSED_THROUGH)),
    " and ".join(sorted(name for name in {**SET_FOR_WORKERS, **REMOVED}
                        if not name.startswith(OWNED_PREFIX))))


def is_owned(name: str) -> bool:
    """Whether the launcher decides ``name``: a caller's ``env`` may not set it."""
    return (name in SET_FOR_EVERY_PROCESS or name in SET_FOR_WORKERS or name in REMOVED
            or (name.startswith(OWNED_PREFIX) and name not in PASSED_THROUGH))


def job_environ(inherited: Mapping[str, str], extra: Optional[Mapping[str, str]],
                num_workers: int, num_servers: int, port: int) -> Dict[str, str]:
    """The environment every process of the job shares, before its role is added.

    ``extra`` must not hold owned variables (the caller checked that).
    """
    environ = {name: value for name, value in inherited.items() if not is_owned(name)}
    # Output line by line, unless the caller chose otherwise.
    environ.setdefault("PYTHONUNBUFFERED", "1")
    environ.update(extra or {})
    environ.update(
        DMLC_PS_ROOT_URI=LOOPBACK,
        DMLC_PS_ROOT_PORT=str(port),
        DMLC_NODE_HOST=LOOPBACK,
        DMLC_NUM_SERVER=str(num_servers),
        DMLC_NUM_WORKER=str(num_workers),
    )
    return environ


def node_environ(environ: Mapping[str, str], role: str,
                 worker_index: Optional[int] = None) -> Dict[str, str]:
    """``environ`` for one process: its ``DMLC_ROLE``, and a worker's index."""
    node = dict(environ, DMLC_ROLE=role)
    if worker_index is not None:
        node["MXPATCH_LAUNCH_WORKER_INDEX"] = str(worker_index)
    return node

