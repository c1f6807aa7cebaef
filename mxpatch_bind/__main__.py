"""``mxpatch-bind COMMAND`` or ``python -m mxpatch_bind COMMAND``: demo, doctor, migrate, launch.

One argparse parser with a subcommand per entry of :data:`COMMANDS`, each built the same
way from its module: the module's ``add_arguments(parser)`` adds its options, its docstring
(without markup) is its ``--help`` text, and its ``run(args)`` runs it, through
:func:`mxpatch_bind._cli_types.run_parsed`, which reports every error in one form,
``PROG: error: ...``. The program name is the one the user typed (``mxpatch-bind`` or
``python -m mxpatch_bind``). No command module imports MXNet or wrapt at the top, so
``--help`` and ``--version`` answer at once.
"""

import argparse
import importlib
import os
import sys
from typing import Dict, NamedTuple, Optional, Sequence

from ._cli_types import Parser, console, description, report_error, run_parsed
from .version import __version__

__all__ = ["main", "COMMANDS", "build_parser"]


class Command(NamedTuple):
    """One subcommand: the module with ``add_arguments`` and ``run``, and its one-line help."""

    module: str
    summary: str


COMMANDS: Dict[str, Command] = {
    "demo": Command("mxpatch_bind.demo",
                    "train on variable-size images: stock padding vs per-device shapes"),
    "doctor": Command("mxpatch_bind.doctor",
                      "check Python, numpy, wrapt, MXNet and the devices; run a self-test"),
    "migrate": Command("mxpatch_bind.migrate",
                       "report (and rewrite) code written for the Deformable-ConvNets fork"),
    "launch": Command("mxpatch_bind.launch",
                      "run a dist_* kvstore job on this machine (also: python -m "
                      "mxpatch_bind.launch)"),
}


def build_parser(prog: str = "python -m mxpatch_bind") -> Parser:
    """The whole command line: ``--help``, ``--version`` and a subparser per command.

    Parameters
    ----------
    prog : str
        The program name shown in usage, help and errors.

    Returns
    -------
    Parser
        Parsing gives ``command`` (the name), ``run`` (the command's ``run(args)``) and the
        command's own options.

    Raises
    ------
    ImportError
        A command's module is not in this installation (:func:`main` reports it).

    Examples
    --------
    >>> args = build_parser().parse_args(["demo", "--epochs", "2"])
    >>> args.command, args.epochs
    ('demo', 2)
    """
    parser = Parser(prog=prog, description="Per-device input shapes for stock MXNet Module.",
                    epilog=f"Each command has its own options: {prog} COMMAND --help")
    parser.add_argument("--version", action="version", version=f"mxpatch_bind {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, command in COMMANDS.items():
        module = importlib.import_module(command.module)
        subparser = commands.add_parser(
            name, prog=f"{prog} {name}", help=command.summary,
            description=description(module.__doc__),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(subparser)
        subparser.set_defaults(run=module.run, parser=subparser)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``COMMAND`` with its options; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The command's exit status: 0 on success, 1 when it failed or cannot run here
        (MXNet missing, numpy too new: one line on stderr names the fix), 1 too, quietly,
        when the reader of its output went away (``| head -1``). Characters the output
        encoding cannot show are escaped (``PYTHONIOENCODING=ascii``: ``\\xe9``). A usage error
        exits with status 2 and one line on stderr, ``PROG: error: ...``.

    Examples
    --------
    ::

        $ mxpatch-bind --version
        mxpatch_bind 0.1.0
        $ mxpatch-bind --bogus
        mxpatch-bind: error: unrecognized arguments: --bogus (see mxpatch-bind --help)
        $ mxpatch-bind demo --epochs 0
        mxpatch-bind demo: error: argument --epochs: expected an integer >= 1, got '0' \
(see mxpatch-bind demo --help)
    """
    args = list(sys.argv[1:] if argv is None else argv)
    prog = _prog()
    with console():  # as run_parsed does: for the parser's own errors too
        try:
            parser = build_parser(prog)
        except ModuleNotFoundError as error:
            if error.name not in {command.module for command in COMMANDS.values()}:
                raise
            report_error(prog, f"not available: this installation of mxpatch_bind "
                               f"{__version__} has no {error.name} module")
            return 1
        _refuse_what_precedes_the_command(parser, args)
        return run_parsed(parser, args)


def _refuse_what_precedes_the_command(parser: Parser, args: Sequence[str]) -> None:
    """An unknown option before the command is named as such, not as "COMMAND required"."""
    for arg in args:
        if arg in ("-h", "--help", "--version"):
            return
        if not arg.startswith("-"):
            if arg not in COMMANDS:
                parser.error(f'invalid command {arg!r} (choose from {", ".join(COMMANDS)})')
            return
        parser.error(f"unrecognized arguments: {arg}")
    parser.error(f'a command is required: one of {", ".join(COMMANDS)}')


def _prog() -> str:
    """The program name as the user typed it: the console script, or ``python -m``."""
    script = os.path.basename(sys.argv[0])
    return script if script == "mxpatch-bind" else "python -m mxpatch_bind"


if __name__ == "__main__":
    sys.exit(main())
