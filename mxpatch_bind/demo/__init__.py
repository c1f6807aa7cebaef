"""``python -m mxpatch_bind demo``: train on variable-size images, stock padding vs per device.

A small CNN learns a synthetic task (which colour channel holds a bright square, in images
of random size) on CPU contexts, twice from the same initial parameters: once the stock way,
every batch padded to its largest image, and once with per-device shapes fed by
``PerDeviceIter``, each device padded only to its own images. The two runs take turns, epoch
by epoch: each epoch of the one and the other is a pair, and each pair's ratio of samples/s
one measurement. The speed-up printed is the median of the pairs, with their range; when
the pairs disagree on which run is faster (a busy machine), a plain line says so.
A progress bar per run shows its throughput on its own clock, the figure the final table
gives (tqdm if installed, else MXNet's Speedometer, on stderr; bars only on a terminal, so a
log file gets plain lines); the table compares samples/s, padded pixels and accuracy.
Exit status 1 if either run fails to learn; 2 for a bad option or a missing extra (--plot needs
matplotlib, --progress tqdm needs tqdm: the one line names the pip install).
"""
import argparse
import importlib
from typing import Optional, Sequence

from .._cli_types import (
    Parser,
    UsageError,
    description,
    fraction,
    nonneg_int,
    positive_int,
    run_parsed,
)
from .figures import _count, figure_title, plot, report, speed_up_of, write_json

__all__ = ["main", "run", "build_parser", "add_arguments", "parse_args", "check",
           "command_line", "report", "figure_title", "plot", "speed_up_of"]


def build_parser(prog: str = "python -m mxpatch_bind demo") -> Parser:
    """The demo's parser (what ``python -m mxpatch_bind.demo`` parses with).

    Parameters
    ----------
    prog : str
        The program name in usage and errors.

    Returns
    -------
    Parser
        Bad values (``--epochs 0``, ``--devices -1``, ``--min-accuracy nan``) are usage
        errors: one line on stderr, exit status 2.

    Examples
    --------
    >>> build_parser().parse_args(["--epochs", "2"]).epochs
    2
    """
    parser = Parser(prog=prog, description=description(__doc__),
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the demo's options, each with its type and range, to ``parser``.

    Examples
    --------
    >>> parser = Parser(prog="demo")
    >>> add_arguments(parser)
    >>> parser.parse_args(["--devices", "3"]).devices
    3
    """
    parser.add_argument("--epochs", type=positive_int, default=3,
                        help="epochs per run (default 3)")
    parser.add_argument("--devices", type=positive_int, default=2,
                        help="CPU contexts (default 2)")
    parser.add_argument("--per-device", type=positive_int, default=4, metavar="N",
                        help="images per device per batch (default 4)")
    parser.add_argument("--sizes", type=_sizes, default=(32, 128), metavar="MIN,MAX",
                        help="image side lengths in pixels (default 32,128)")
    parser.add_argument("--samples", type=positive_int, default=512,
                        help="training images (default 512; a quarter as many validate)")
    parser.add_argument("--group-window", type=positive_int, default=8, metavar="BATCHES",
                        help="PerDeviceIter's grouping window: batches whose images are "
                             "grouped by size together (default 8; 1 only arranges each "
                             "batch across the devices)")
    parser.add_argument("--seed", type=nonneg_int, default=0,
                        help="data and initialisation seed")
    parser.add_argument("--min-accuracy", type=fraction, default=0.85, metavar="FRACTION",
                        help="validation accuracy each run must reach, 0 to 1 (default 0.85)")
    parser.add_argument("--plot", metavar="PNG", help="draw throughput and padding (matplotlib)")
    parser.add_argument("--json", metavar="PATH",
                        help="write the command, the day, the machine's load, both runs and "
                             "every pair's ratio as JSON")
    parser.add_argument("--progress", choices=["auto", "tqdm", "speedometer", "none"],
                        default="auto", help="progress display on stderr (default auto: a "
                        "tqdm bar on a terminal when tqdm is installed, else Speedometer's "
                        "plain log lines, also to a file or a pipe)")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Parse and cross-check the options: at least one batch of training images.

    Examples
    --------
    >>> parse_args(["--samples", "16", "--devices", "2", "--per-device", "4"]).samples
    16
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check(args)
    except UsageError as error:
        parser.error(str(error))
    return args


# The optional extras the options need: option -> (module, the setup.cfg extra).
EXTRAS = {"--plot": ("matplotlib", "plot"), "--progress tqdm": ("tqdm", "progress")}


def check(args: argparse.Namespace) -> None:
    """Raise :class:`~mxpatch_bind._cli_types.UsageError` unless ``args`` hold one batch and
    the extras the options ask for are installed (before any work, naming the fix).

    Examples
    --------
    >>> check(build_parser().parse_args(["--samples", "8"]))
    """
    if args.samples < args.devices * args.per_device:
        raise UsageError(f"--samples {args.samples} is less than one batch of "
                         f"{args.devices * args.per_device} images (--devices {args.devices} x "
                         f"--per-device {args.per_device})")
    asked = {"--plot": args.plot, "--progress tqdm": args.progress == "tqdm"}
    for option, (module, extra) in EXTRAS.items():
        try:
            if asked[option]:
                importlib.import_module(module)  # not find_spec: a broken install fails too
        except ImportError as error:
            raise UsageError(f"{option} needs {module} ({error}): pip install \".[{extra}]\" in "
                             "the mxpatch_bind checkout") from None


def command_line(args: argparse.Namespace) -> str:
    """The command that runs the demo ``args`` describe: the options that differ from their
    defaults, in the order ``--help`` lists them.

    Examples
    --------
    >>> command_line(parse_args(["--seed", "2", "--sizes", "16,64", "--epochs", "3"]))
    'python -m mxpatch_bind demo --sizes 16,64 --seed 2'
    """
    defaults = vars(build_parser().parse_args([]))
    words = ["python -m mxpatch_bind demo"]
    for name, default in defaults.items():
        value = getattr(args, name)
        if value != default:
            shown = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            words += ["--" + name.replace("_", "-"), shown]
    return " ".join(words)


def _sizes(text: str) -> tuple:
    try:
        low, high = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN,MAX in pixels, e.g. 32,128; got {text!r}") from None
    if not 8 <= low <= high:
        raise argparse.ArgumentTypeError(f"expected 8 <= MIN <= MAX; got {text!r}")
    return low, high


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run both trainings, print the comparison; 0 if both reach ``--min-accuracy``.

    Parameters
    ----------
    argv : sequence of str, optional
        The options after ``demo`` (see ``python -m mxpatch_bind demo --help``).

    Returns
    -------
    int
        0 when both runs learned, 1 when one did not, or when MXNet is missing or numpy too
        new for it (one line on stderr names the fix); a usage error exits with status 2.

    Examples
    --------
    ::

        $ python -m mxpatch_bind demo --epochs 1 > log.txt
    """
    return run_parsed(build_parser(), argv, run)


def run(args: argparse.Namespace) -> int:
    """Run the demo ``args`` describe (from a parser :func:`add_arguments` filled).

    Returns
    -------
    int
        0 when both runs learned, 1 when one did not.

    Raises
    ------
    mxpatch_bind._cli_types.UsageError
        Fewer ``--samples`` than one batch.
    mxpatch_bind._mxnet_env.MXNetEnvironmentError
        MXNet is missing or numpy too new for it.

    Examples
    --------
    >>> run(build_parser().parse_args(["--epochs", "1"]))  # doctest: +SKIP
    0
    """
    check(args)
    from .._mxnet_env import import_mxnet, quiet_subgraph_log
    from .training import run_both
    quiet_subgraph_log()  # its lines would break the progress bars
    import_mxnet()
    # First, before anything the training logs (a broken environment says only its fix).
    print(f"Training a small CNN on {args.samples} images of {args.sizes[0]}-{args.sizes[1]} px "
          f"for {_count(args.epochs, 'epoch')} on {_count(args.devices, 'CPU context')}, twice "
          "from the same start, epoch by epoch in turn: stock (every batch padded to its "
          "largest image) and per device (PerDeviceIter: each device padded to its own "
          "images).", flush=True)
    results = run_both(args)
    learned = report(results, args)
    if args.plot:
        plot(results, args, args.plot)
        print(f"chart: {args.plot}")
    if args.json:
        write_json(results, args, command_line(args), args.json)
        print(f"results: {args.json}")
    print("Next: docs/quickstart.rst, whose complete script (python examples/quickstart.py) "
          "trains per device in a few seconds; python -m mxpatch_bind doctor checks this "
          "machine; README.md, 'Migrating from the Deformable-ConvNets fork'.")
    return 0 if learned else 1

