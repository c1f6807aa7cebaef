"""``python -m benchmarks [NAME...] [--tiny] [--out DIR]`` from a checkout: side-by-side benchmarks.

Every benchmark compares its cases in one process, interleaved round by round, and reports
medians (and the per-round ratios' median). Each prints a table and writes ``DIR/NAME.json``.
"""

import argparse
import importlib
import os
import sys

from mxpatch_bind._cli_types import Parser, positive_int

from . import common

BENCHMARKS = {
    "overhead": "Step time of stock-form training and bind/reshape dispatch, patched vs not.",
    "stock_path": "Stock-form CNN training under install(): 15 interleaved pairs and a profile.",
    "variable": "Variable-size images: stock padding vs per-device shapes (arrival, grouped).",
    "reshape": "Cost of a shape change: per-device reshape vs shared-module rebind vs bind.",
    "memory": "Resident memory over 1,000 shape changes; oneDNN primitive-cache cap.",
    "lifecycle": "install()+uninstall() and patched() enter+exit.",
    "plugin_cost": "pytest --co of a trivial project: the plugin loaded vs -p no:mxpatch_bind.",
    "decode": "Decoding 400 image files in gluon DataLoader workers: num_workers=2 vs 0.",
    "balanced": "Variable-size images: work-balanced per-device counts vs grouping, window 8.",
    "rounding": "Detection-like sizes with and without pad_to_multiple=32: shapes, padding.",
}


def build_parser():
    """The command line: benchmark names and typed, range-checked options."""
    parser = Parser(
        prog="python -m benchmarks", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="benchmarks:\n" + "\n".join("  %-11s %s" % item for item in BENCHMARKS.items()))
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="benchmarks to run (default: all)")
    parser.add_argument("--tiny", action="store_true",
                        help="a few seconds each: checks that they run, not their figures")
    parser.add_argument("--out", default=os.path.join("bench", "results"), metavar="DIR",
                        help="where the JSON results go (default: ./bench/results)")
    parser.add_argument("--rounds", type=positive_int, default=None,
                        help="rounds per benchmark, >= 1 (default: each benchmark's own)")
    parser.add_argument("--plot", metavar="PNG",
                        help="draw the variable, reshape and memory results in --out "
                             "(matplotlib), after running the named benchmarks")
    parser.add_argument("--no-run", action="store_true",
                        help="run nothing: with --plot, draw results already in --out")
    return parser


def main(argv=None):
    """Run the named benchmarks (all by default); returns the exit status.

    1, with one line on stderr naming the fix, when MXNet is missing or numpy too new for it.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error("unknown benchmark(s) %s; choose from %s"
                     % (", ".join(unknown), ", ".join(BENCHMARKS)))
    names = [] if args.no_run else args.names or list(BENCHMARKS)
    if names:
        from mxpatch_bind._mxnet_env import MXNetEnvironmentError, import_mxnet
        try:
            import_mxnet()  # every result records the MXNet it ran on
        except MXNetEnvironmentError as error:
            print("%s: %s" % (parser.prog, error), file=sys.stderr)
            return 1
    for name in names:
        benchmark = importlib.import_module("benchmarks." + name)
        result = benchmark.run(tiny=args.tiny, rounds=args.rounds)
        path = common.write_json(result, args.out)
        print("== %s: %s\n%s\n(%s; JSON: %s)\n" % (name, BENCHMARKS[name],
                                                  benchmark.format_table(result),
                                                  result["command"], path), flush=True)
    if args.plot:
        from . import chart
        print("chart: %s" % chart.draw(args.out, args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
