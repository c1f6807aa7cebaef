"""``python -m mxpatch_bind COMMAND`` or ``mxpatch-bind COMMAND``: demo, doctor, migrate.

Each command lives in its own module, imported only when it runs, and parses its own
options (``python -m mxpatch_bind demo --help``); this dispatcher imports neither MXNet nor
wrapt, so ``--help`` and ``--version`` answer at once.
"""

import importlib
import os
import sys
from typing import List, Optional, Sequence

from ._cli_types import Parser
from .version import __version__

__all__ = ["main", "COMMANDS"]

# name -> (module with main(argv) -> int, one-line help)
COMMANDS = {
    "demo": ("mxpatch_bind.demo",
             "train on variable-size images: stock padding vs per-device shapes"),
    "doctor": ("mxpatch_bind.doctor",
               "check Python, numpy, wrapt, MXNet and the devices; run a self-test"),
    "migrate": ("mxpatch_bind.migrate",
                "rewrite code written for the Deformable-ConvNets fork"),
}


def build_parser(prog: str = "python -m mxpatch_bind") -> Parser:
    """The top-level parser: ``--help``, ``--version`` and the command's name.

    Parameters
    ----------
    prog : str
        The program name shown in help and errors.

    Returns
    -------
    Parser
        A parser of ``[--version] COMMAND``; the command's own options are not its business.

    Examples
    --------
    >>> build_parser().parse_args(["doctor"]).command
    'doctor'
    """
    parser = Parser(prog=prog, description="Per-device input shapes for stock MXNet Module.",
                    epilog="Each command has its own options: %s COMMAND --help" % prog)
    parser.add_argument("--version", action="version", version="mxpatch_bind %s" % __version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                     required=True)
    for name, (_, text) in COMMANDS.items():
        # add_help=False: "demo --help" belongs to the demo's own parser.
        commands.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``COMMAND`` with the arguments after it; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The command's exit status: 0 on success, 1 when it failed or cannot run here
        (MXNet missing, numpy too new: one line on stderr names the fix).

    Examples
    --------
    ::

        $ python -m mxpatch_bind --version
        mxpatch_bind 0.1.0
        $ python -m mxpatch_bind demo --epochs 0
        python -m mxpatch_bind demo: error: argument --epochs: expected an integer >= 1, \
got '0' (see python -m mxpatch_bind demo --help)
    """
    args = list(sys.argv[1:] if argv is None else argv)
    prog = _prog()
    # The top level has no option that takes a value: the first word is the command, and
    # everything after it is the command's own.
    split = next((index + 1 for index, arg in enumerate(args) if not arg.startswith("-")),
                 len(args))
    command = build_parser(prog).parse_args(args[:split]).command
    return run_command(command, args[split:], "%s %s" % (prog, command))


def run_command(name: str, argv: List[str], prog: str) -> int:
    """Import command ``name``'s module and run its ``main(argv)``; returns the exit status.

    A command whose module is not in this installation, and one that finds MXNet unusable
    (:class:`~mxpatch_bind._mxnet_env.MXNetEnvironmentError`), print one line on stderr
    and return 1.

    Examples
    --------
    ::

        $ python -m mxpatch_bind demo       # with numpy 1.24 installed
        python -m mxpatch_bind demo: MXNet 1.9.1 cannot be imported with numpy 1.24.4: numpy \
1.24 removed np.bool, which MXNet 1.x uses; fix: pip install "numpy<1.24"
    """
    module_name = COMMANDS[name][0]
    try:
        command = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        print("%s: not available: this installation of mxpatch_bind %s has no %s module"
              % (prog, __version__, module_name), file=sys.stderr)
        return 1
    from ._mxnet_env import MXNetEnvironmentError
    try:
        return int(command.main(argv))
    except MXNetEnvironmentError as error:
        print("%s: %s" % (prog, error), file=sys.stderr)
        return 1


def _prog() -> str:
    script = os.path.basename(sys.argv[0])
    return script if script == "mxpatch-bind" else "python -m mxpatch_bind"


if __name__ == "__main__":
    sys.exit(main())
