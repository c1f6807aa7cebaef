"""``python -m mxpatch_bind.launch``: the loopback launcher's command line."""

import sys

from . import main

sys.exit(main())
