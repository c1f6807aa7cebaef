"""``python -m mxpatch_bind.migrate PATH``: the same as ``python -m mxpatch_bind migrate``."""

import sys

from .command import main

sys.exit(main())
