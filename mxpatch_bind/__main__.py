"""``python -m mxpatch_bind COMMAND``: demo, doctor (each in its own module)."""

import importlib
import sys

COMMANDS = {
    "demo": "Train a small CNN on variable-size images: stock padding vs per-device shapes.",
    "doctor": "Check MXNet, wrapt and the patch on this machine; run a 2-context self-test.",
}


def main(argv=None):
    """Dispatch to ``mxpatch_bind.<command>.main(rest_of_argv)``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        width = max(map(len, COMMANDS))
        lines = ["usage: python -m mxpatch_bind {%s} [options]" % ",".join(COMMANDS), ""]
        lines += ["  %-*s  %s" % (width, name, text) for name, text in COMMANDS.items()]
        print("\n".join(lines), file=sys.stderr if argv else sys.stdout)
        return 2 if argv else 0
    command = importlib.import_module("mxpatch_bind." + argv[0])
    return command.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
