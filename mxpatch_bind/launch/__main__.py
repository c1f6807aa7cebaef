"""``python -m mxpatch_bind.launch``: the loopback launcher's command line."""

import sys

from .._cli_types import console
from . import main

with console():
    status = main()
sys.exit(status)
