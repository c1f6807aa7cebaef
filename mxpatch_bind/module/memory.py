"""Bound oneDNN's primitive cache when a module first binds per device (private).

MXNet's oneDNN (MKLDNN) backend caches a primitive per operator and input shape, with no
limit by default (``MXNET_MKLDNN_CACHE_NUM=-1``). Per-device shapes bring many more shapes
than stock training, and resident memory grows with every new shape; a cap of 16 entries
keeps it nearly flat (``python -m benchmarks memory``; figures in docs/performance.md).

MXNet 1.9.1 reads the variable once per operator source file, when that file's first
primitive is cached (a function-local ``static`` in ``mkldnn_base-inl.h``), so a value set in
``os.environ`` holds for every operator that has not run on oneDNN yet: the first per-device
bind comes before the first forward, which is early enough unless stock modules already ran.

Policy, checked at every per-device bind:

* ``MXNET_MKLDNN_CACHE_NUM`` already set (by the user, or by an earlier bind): left alone,
  after checking that MXNet can use it.
* ``MXPATCH_BIND_MKLDNN_CACHE_NUM=keep``: left unset (MXNet's unbounded default).
* ``MXPATCH_BIND_MKLDNN_CACHE_NUM=N``: ``MXNET_MKLDNN_CACHE_NUM`` set to N.
* otherwise: set to :data:`DEFAULT_CACHE_NUM`.

How MXNet reads ``MXNET_MKLDNN_CACHE_NUM`` (``dmlc::GetEnv<int>``, tried on 1.9.1): unset or
empty means -1; otherwise a decimal ``int`` with an optional sign and surrounding C
whitespace (``' 16 '``, ``'+5'``, ``'0016'``); anything else (``'0x10'``, ``'1e3'``,
``'5.0'``, ``'1_000'``, a value beyond 32 bits) fails the first oneDNN operator with
"Invalid Parameter format". -1 is unbounded and N >= 0 keeps at most N + 1 entries per
operator (0: one); below -1 MXNet crashes (segmentation fault) at its first cached primitive.
Both variables are checked here against that grammar, so a bad value is reported at the bind
that reads it, by name, rather than later inside MXNet.

The GPU counterpart is cuDNN autotuning, which runs once per new input shape; set
``MXNET_CUDNN_AUTOTUNE_DEFAULT=0`` to turn it off when shapes rarely repeat.
"""

import logging
import os
import re
from typing import Optional

__all__ = ["cap_mkldnn_cache", "DEFAULT_CACHE_NUM", "MXNET_VARIABLE", "POLICY_VARIABLE"]

logger = logging.getLogger(__name__)

MXNET_VARIABLE = "MXNET_MKLDNN_CACHE_NUM"
POLICY_VARIABLE = "MXPATCH_BIND_MKLDNN_CACHE_NUM"
# 16 kept memory nearly flat at no measurable cost; 8 cost speed (docs/performance.md).
DEFAULT_CACHE_NUM = 16

_INT_MAX = 2 ** 31 - 1  # MXNet reads the variable into a C int
# What ``std::istream >> int`` accepts, plus the trailing whitespace dmlc allows: C isspace
# only, ASCII digits only (Python's int() would also take '1_000' and non-ASCII digits).
_C_INT = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)[ \t\n\v\f\r]*")

_MXNET_ACCEPTS = ("-1 (unbounded) or a cache size from 0 to %d, as a decimal integer"
                  % _INT_MAX)
_POLICY_ACCEPTS = ("'keep' (MXNet's unbounded default) or a cache size from 1 to %d, as a "
                   "decimal integer, e.g. %d" % (_INT_MAX, DEFAULT_CACHE_NUM))


def cap_mkldnn_cache() -> Optional[str]:
    """Set ``MXNET_MKLDNN_CACHE_NUM`` for this process as the policy above says.

    Returns
    -------
    str or None
        The value now in force, or ``None`` when it is left unbounded.

    Raises
    ------
    ValueError
        ``MXNET_MKLDNN_CACHE_NUM`` holds a value MXNet cannot read or crashes on, or
        ``MXPATCH_BIND_MKLDNN_CACHE_NUM`` is neither ``keep`` nor a positive cache size;
        the message names the variable, its value and what is accepted. Nothing is set.
    """
    users = os.environ.get(MXNET_VARIABLE, "")
    if users:  # empty counts as unset, as in MXNet
        _check_mxnet_value(users)
        return users
    choice = _cache_size_chosen()
    if choice is None:
        return None
    os.environ[MXNET_VARIABLE] = choice
    logger.info("mxpatch_bind set %s=%s for this process (per-device shapes; %s=keep "
                "leaves it unbounded)", MXNET_VARIABLE, choice, POLICY_VARIABLE)
    return choice


def _c_int(text):
    """``text`` as MXNet's ``dmlc::GetEnv<int>`` reads it, or ``None`` where that fails."""
    match = _C_INT.fullmatch(text)
    if match is None or not -_INT_MAX - 1 <= int(match.group(1)) <= _INT_MAX:
        return None
    return int(match.group(1))


def _check_mxnet_value(text):
    value = _c_int(text)
    if value is None:
        raise ValueError("%s=%r is not a number MXNet can read (its first oneDNN operator "
                         "would fail with 'Invalid Parameter format'); accepted: %s"
                         % (MXNET_VARIABLE, text, _MXNET_ACCEPTS))
    if value < -1:
        raise ValueError("%s=%r: MXNet 1.9.1 crashes (segmentation fault) at its first oneDNN "
                         "primitive with a value below -1; accepted: %s"
                         % (MXNET_VARIABLE, text, _MXNET_ACCEPTS))


def _cache_size_chosen():
    """The cap :data:`POLICY_VARIABLE` asks for, canonical (``'16'``), or ``None`` to keep."""
    text = os.environ.get(POLICY_VARIABLE, "")
    if not text.strip():
        return str(DEFAULT_CACHE_NUM)
    if text.strip().lower() == "keep":
        return None
    value = _c_int(text)
    if value is None or value < 1:
        hint = {0: "; 0 would keep a single entry per operator and rebuild a primitive on "
                   "nearly every new shape",
                -1: "; for MXNet's unbounded cache say 'keep'"}.get(value, "")
        raise ValueError("%s=%r is not a cache size%s; accepted: %s"
                         % (POLICY_VARIABLE, text, hint, _POLICY_ACCEPTS))
    return str(value)
