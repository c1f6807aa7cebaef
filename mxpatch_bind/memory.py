"""Bound oneDNN's primitive cache when a module first binds per device (private).

MXNet's oneDNN (MKLDNN) backend caches a primitive per operator and input shape, with no
limit by default (``MXNET_MKLDNN_CACHE_NUM=-1``). Per-device shapes bring many more shapes
than stock training, and resident memory grew 2.6x over 1,000 random shapes on two CPU
contexts; with 16 entries it stays within a few percent (docs/performance.md). MXNet reads
the variable again at every insert, so setting it in ``os.environ`` takes effect at once,
for the whole process.

Policy, checked at every per-device bind:

* ``MXNET_MKLDNN_CACHE_NUM`` already set (by the user, or by an earlier bind): left alone.
* ``MXPATCH_BIND_MKLDNN_CACHE_NUM=keep``: left unset (MXNet's unbounded default).
* ``MXPATCH_BIND_MKLDNN_CACHE_NUM=N``: ``MXNET_MKLDNN_CACHE_NUM`` set to N.
* otherwise: set to :data:`DEFAULT_CACHE_NUM`.

The GPU counterpart is cuDNN autotuning, which runs once per new input shape; set
``MXNET_CUDNN_AUTOTUNE_DEFAULT=0`` to turn it off when shapes rarely repeat.
"""

import logging
import os

__all__ = ["cap_mkldnn_cache", "DEFAULT_CACHE_NUM", "MXNET_VARIABLE", "POLICY_VARIABLE"]

logger = logging.getLogger(__name__)

MXNET_VARIABLE = "MXNET_MKLDNN_CACHE_NUM"
POLICY_VARIABLE = "MXPATCH_BIND_MKLDNN_CACHE_NUM"
# 16 kept growth near 5% over 1,000 random shapes at no measurable cost; 8 cost speed.
DEFAULT_CACHE_NUM = 16


def cap_mkldnn_cache():
    """Set ``MXNET_MKLDNN_CACHE_NUM`` for this process as the policy above says.

    Returns
    -------
    str or None
        The value now in force, or ``None`` when it is left unbounded.

    Raises
    ------
    ValueError
        ``MXPATCH_BIND_MKLDNN_CACHE_NUM`` is neither ``keep`` nor a positive integer.
    """
    if MXNET_VARIABLE in os.environ:
        return os.environ[MXNET_VARIABLE]
    choice = os.environ.get(POLICY_VARIABLE, "").strip()
    if choice.lower() == "keep":
        return None
    if not choice:
        choice = str(DEFAULT_CACHE_NUM)
    elif not (choice.isdigit() and int(choice) > 0):
        raise ValueError("%s=%r; expected 'keep' or a positive number of cache entries, e.g. "
                         "%d" % (POLICY_VARIABLE, os.environ[POLICY_VARIABLE],
                                 DEFAULT_CACHE_NUM))
    os.environ[MXNET_VARIABLE] = choice
    logger.info("mxpatch_bind set %s=%s for this process (per-device shapes; %s=keep "
                "leaves it unbounded)", MXNET_VARIABLE, choice, POLICY_VARIABLE)
    return choice
