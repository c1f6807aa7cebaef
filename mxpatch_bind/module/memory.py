"""Bound oneDNN's primitive cache when a module first binds per device (private).

MXNet's oneDNN (MKLDNN) backend caches a primitive per operator and input shape, with no
limit by default (``MXNET_MKLDNN_CACHE_NUM=-1``). Per-device shapes bring many more shapes
than stock training, and resident memory grows with every new shape; a small cap keeps it
nearly flat (``python -m benchmarks memory``; the figures are in docs/performance.md).
MXNet reads the variable when an operator's first primitive is cached, so a value set in
``os.environ`` at the first per-device bind holds for every operator that has not run yet.

Policy, at every per-device bind: ``MXNET_MKLDNN_CACHE_NUM`` already set (by the user or an
earlier bind) is left as it is, for MXNet to read; ``MXPATCH_BIND_MKLDNN_CACHE_NUM=keep``
leaves it unset; ``MXPATCH_BIND_MKLDNN_CACHE_NUM=N`` sets it to N; otherwise it is set to
:data:`DEFAULT_CACHE_NUM`.
"""

import logging
import os
from typing import Optional

from ..errors import SettingsError

__all__ = ["cap_mkldnn_cache", "DEFAULT_CACHE_NUM", "MXNET_VARIABLE", "POLICY_VARIABLE"]

logger = logging.getLogger(__name__)

MXNET_VARIABLE = "MXNET_MKLDNN_CACHE_NUM"
POLICY_VARIABLE = "MXPATCH_BIND_MKLDNN_CACHE_NUM"
DEFAULT_CACHE_NUM = 16  # kept memory nearly flat at no measurable cost (docs/performance.md)
_INT_MAX = 2 ** 31 - 1  # MXNet reads the variable into a C int


def cap_mkldnn_cache() -> Optional[str]:
    """Set ``MXNET_MKLDNN_CACHE_NUM`` for this process as the policy above says.

    Returns
    -------
    str or None
        The value now in force, or ``None`` when it is left unbounded.

    Raises
    ------
    SettingsError
        ``MXPATCH_BIND_MKLDNN_CACHE_NUM`` is neither ``keep`` nor a cache size from 1 to
        ``2**31 - 1`` in decimal digits; the message names the variable, its value and what
        is accepted. Nothing is set.
    """
    if os.environ.get(MXNET_VARIABLE, ""):  # empty counts as unset, as in MXNet
        return os.environ[MXNET_VARIABLE]
    choice = os.environ.get(POLICY_VARIABLE, "").strip() or str(DEFAULT_CACHE_NUM)
    if choice.lower() == "keep":
        return None
    # ASCII digits only: int() would also take '1_000' and other scripts' digits.
    if not (choice.isascii() and choice.isdigit() and 1 <= int(choice) <= _INT_MAX):
        raise SettingsError(f"{POLICY_VARIABLE}={os.environ[POLICY_VARIABLE]!r} is not a cache "
                            "size; accepted: 'keep' (MXNet's unbounded default) or a cache "
                            f"size from 1 to {_INT_MAX} in decimal digits, e.g. "
                            f"{DEFAULT_CACHE_NUM}")
    os.environ[MXNET_VARIABLE] = str(int(choice))
    logger.info("mxpatch_bind set %s=%s for this process (per-device shapes; %s=keep "
                "leaves it unbounded)", MXNET_VARIABLE, os.environ[MXNET_VARIABLE],
                POLICY_VARIABLE)
    return os.environ[MXNET_VARIABLE]
