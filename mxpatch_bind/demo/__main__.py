"""``python -m mxpatch_bind.demo``: the demo, as ``python -m mxpatch_bind demo`` runs it."""

import sys

from ..__main__ import main

sys.exit(main(["demo", *sys.argv[1:]]))
