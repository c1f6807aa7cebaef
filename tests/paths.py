"""Where the checkout's parts are, for the tests in every folder of ``tests/``."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # tests/: helpers, dist_scripts/, typing/
REPO = TESTS.parent  # the checkout: README.md, docs/, examples/, benchmarks/, mxpatch_bind/
