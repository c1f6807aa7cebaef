"""Worker command for tests/launch/test_launch.py; the first argument picks what it does.

``push-pull``
    Join a dist_sync kvstore, push ``ones * (rank + 1)`` and print what it pulls.
``fail-on INDEX CODE``
    The worker the launcher numbered INDEX imports mxnet and exits with CODE
    before touching the kvstore; the others wait for it in ``push-pull`` for ever.
``sleep``
    Sleep for an hour.
``steps RELEASE``
    Join a dist_sync kvstore, print ``ready``, then push and pull one small array
    every 0.1 s until a worker sees the file RELEASE, and exit 0.
``spawn``
    Start a child process that sleeps for an hour, print its PID, and sleep too.
``ignore-term``
    Ignore SIGTERM, say so, and sleep for an hour: only SIGKILL ends it.
``flood COUNT``
    Print COUNT numbered lines as fast as it can, then ``done``, and exit 0 without a kvstore.
``show ARGS...``
    Print ARGS and the launcher's environment variables, then exit 0 without a kvstore.
"""

import os
import signal
import sys
import time


def push_pull():
    import mxnet as mx

    kv = mx.kv.create("dist_sync")
    kv.init(3, mx.nd.zeros((2, 3)))
    kv.push(3, mx.nd.ones((2, 3)) * (kv.rank + 1))
    pulled = mx.nd.zeros((2, 3))
    kv.pull(3, out=pulled)
    print("rank {} of {} pulled {}".format(
        kv.rank, kv.num_workers, sorted(set(pulled.asnumpy().ravel().tolist()))))


def steps(release):
    import mxnet as mx

    kv = mx.kv.create("dist_sync")
    kv.init(0, mx.nd.zeros((1,)))
    print("ready rank {} pid {}".format(kv.rank, os.getpid()))
    pulled = mx.nd.zeros((1,))
    # Every step pushes whether this worker saw RELEASE; without an updater the
    # server keeps the sum, so all workers stop after the same step.
    while True:
        kv.push(0, mx.nd.array([float(os.path.exists(release))]))
        kv.pull(0, out=pulled)
        if pulled.asscalar() > 0:
            return
        time.sleep(0.1)


def main(mode, *args):
    index = os.environ["MXPATCH_LAUNCH_WORKER_INDEX"]
    if mode == "push-pull":
        push_pull()
    elif mode == "fail-on":
        failing_index, code = args
        if index == failing_index:
            import mxnet  # noqa: F401  (takes long enough for the others to wait in the kvstore)

            print("failing on purpose", file=sys.stderr)
            sys.exit(int(code))
        push_pull()
    elif mode == "sleep":
        print("sleeping")
        time.sleep(3600)
    elif mode == "steps":
        steps(*args)
    elif mode == "spawn":
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        print("spawned pid {}".format(child.pid))
        time.sleep(3600)
    elif mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring SIGTERM")
        time.sleep(3600)
    elif mode == "flood":
        (count,) = args
        sys.stdout.write("".join("line {}\n".format(i) for i in range(int(count))) + "done\n")
    elif mode == "show":
        print("argv {!r}".format(list(args)))
        for name in sorted(os.environ):
            if name.startswith(("DMLC_", "MXPATCH_LAUNCH_")):
                print("{}={}".format(name, os.environ[name]))
    else:
        sys.exit("unknown mode {!r}".format(mode))


if __name__ == "__main__":
    main(*sys.argv[1:])
