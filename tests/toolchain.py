"""What this machine can build: the C compiler the extension tests need.

setuptools compiles with ``$CC`` when it is set, else with the compiler Python was built with
(``sysconfig``'s ``CC``); a test that builds an extension skips, saying which compiler it
looked for, where that compiler is not installed.
"""

import os
import shlex
import shutil
import sysconfig

import pytest


def c_compiler():
    """The command setuptools would compile C with (``gcc``, ``cc -pthread``, ...)."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


def has_c_compiler():
    """Whether the compiler :func:`c_compiler` names is an executable on ``PATH``."""
    words = shlex.split(c_compiler())
    return bool(words) and shutil.which(words[0]) is not None


needs_c_compiler = pytest.mark.skipif(
    not has_c_compiler(),
    reason=f"builds a C extension: no C compiler here ({c_compiler()!r}, from $CC or the "
           "compiler Python was built with, is not on PATH)")
