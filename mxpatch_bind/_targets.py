"""Moved to :mod:`mxpatch_bind.patching._targets` (private); this name stays for ``doctor``.

``doctor.py`` imports ``SUPPORTED_VERSIONS`` and ``check_mxnet`` from here; once it imports
them from ``mxpatch_bind.patching._targets`` this module goes.
"""

from .patching._targets import SUPPORTED_VERSIONS, check_mxnet

__all__ = ["SUPPORTED_VERSIONS", "check_mxnet"]
