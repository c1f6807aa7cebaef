"""FCIS's ``ChannelOperator`` composed of stock MXNet operators (private module; import
``ChannelOperator`` from ``mxpatch_bind.compat``).

FCIS (msracver/FCIS) calls ``mx.contrib.sym.ChannelOperator``, a C++ operator of its own MXNet
build. The functions here compute the same outputs from stock MXNet 1.9.1 operators, so that
FCIS runs on a stock MXNet; the gradient is the composition's own, which equals the one of
FCIS's CUDA kernels wherever those define one (see :func:`ChannelOperator`).
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from ._mxnet_env import import_mxnet

# Through import_mxnet: a broken environment is named with its fix, as compat's import is.
mx = import_mxnet()

__all__ = ["ChannelOperator", "channel_operator_nd", "ChannelOperatorError"]

OP_TYPES = ("Group_Max", "Group_Pick", "Group_Softmax")
PICK_TYPES = ("Label_Pick", "Score_Pick")
# FCIS's kernels start a running maximum at -FLT_MAX and replace it only on a strict '>':
# a NaN, or a value at or below -FLT_MAX, never becomes the maximum there.
_FLT_MAX = float(np.finfo(np.float32).max)


class ChannelOperatorError(ValueError):
    """An argument of :func:`ChannelOperator` is one FCIS's operator would not accept.

    The message names the argument, the value given and the accepted form. It is raised
    before any operator is created.

    Examples
    --------
    >>> from mxpatch_bind._channel_operator import ChannelOperatorError
    >>> issubclass(ChannelOperatorError, ValueError)
    True
    """


def ChannelOperator(data: Any, pick_idx: Any = None, *, group: int, op_type: str,
                    pick_type: str = "Label_Pick", name: Optional[str] = None) -> Any:
    """FCIS's ``mx.contrib.sym.ChannelOperator``, built from stock MXNet operators.

    The channels of ``data`` (N, C, H, W) are split into ``group`` consecutive groups of
    ``C // group`` channels each (in FCIS a group is a class, holding that class's score maps).

    ``'Group_Max'``
        Output (N, group, H, W): at each pixel, the maximum over each group's channels.
        The gradient goes to the channel that held the maximum, the first one on a tie;
        every other channel gets zero. This is FCIS's backward.
    ``'Group_Softmax'``
        Output (N, C, H, W): at each pixel, a softmax over each group's channels.
        The gradient is the softmax's, ``y * (dy - sum(dy * y))`` over each group;
        FCIS's operator has none (its backward aborts: "Not Implemented").
    ``'Group_Pick'``
        Output (N, C // group, H, W): sample ``n``'s channels of one group ``g``, or zeros
        when ``g`` is outside ``[0, group)`` or NaN (which FCIS's C++ leaves undefined).
        With ``pick_type='Label_Pick'``, ``g`` is ``pick_idx``'s ``n``-th value truncated
        toward zero (C's ``int`` conversion); ``pick_idx`` holds N values, e.g. labels
        shaped (N, 1, 1, 1). With ``'Score_Pick'``, ``pick_idx`` holds ``group`` scores per
        sample, e.g. (N, group, 1, 1), and ``g`` is the index of the first highest score,
        class 0 (the background) excluded; scores that are NaN or at most -FLT_MAX never
        count, and with none left (or ``group=1``) the output is zeros. The gradient copies
        the output's gradient into the picked group's channels, zero elsewhere and zero for
        ``pick_idx``: FCIS's backward for ``'Label_Pick'``; for ``'Score_Pick'`` FCIS's
        backward aborts.

    Parameters
    ----------
    data : mxnet.symbol.Symbol
        The feature maps, 4-D (N, C, H, W) as FCIS requires; ``C`` must be a multiple of
        ``group``. Shapes are known only at bind time: a ``group`` that does not divide
        ``C`` fails there, in the operator named ``NAME_groups``, as "Split dims ... do not
        divide original dim C".
    pick_idx : mxnet.symbol.Symbol, optional
        Required with ``op_type='Group_Pick'`` and refused otherwise (FCIS's operator has the
        input only then). Its values are read flat, in the order FCIS's kernels read them.
    group : int
        The number of channel groups (FCIS passes ``num_classes``); at least 1.
    op_type : {'Group_Max', 'Group_Pick', 'Group_Softmax'}
    pick_type : {'Label_Pick', 'Score_Pick'}
        How ``'Group_Pick'`` reads ``pick_idx``; checked, and otherwise unused, for the
        other operations, as in FCIS.
    name : str, optional
        The name of the symbol's output node (its output is ``NAME_output``, as FCIS's is);
        the nodes inside are named ``NAME_<part>``. Without a name, MXNet names every node.

    Returns
    -------
    mxnet.symbol.Symbol
        One output. FCIS's operator also has a hidden second output (``'Group_Max'``: the
        channel of each maximum; ``'Score_Pick'``: the picked group), which no caller can
        reach from its symbol; here there is none.

    Raises
    ------
    ChannelOperatorError
        (a ``ValueError``) for an ``op_type``, ``pick_type`` or ``group`` FCIS's operator
        refuses, or a ``pick_idx`` given where the operation takes none or missing where it
        needs one, before any operator is created.
    TypeError
        When ``data`` or ``pick_idx`` is not a Symbol (for NDArrays, see
        :func:`channel_operator_nd`).

    Notes
    -----
    Where FCIS's C++ differs, it is undefined or a bug, and is not reproduced:

    * ``'Group_Max'`` over a group holding a NaN, or nothing above -FLT_MAX: FCIS's running
      maximum skips NaNs and values at most -FLT_MAX (with nothing left it outputs -FLT_MAX
      and its backward writes outside the sample); here a NaN is the maximum (``argmax``'s
      rule) and -inf an ordinary value.
    * A label outside ``[0, group)``: FCIS's backward also writes zeros into a neighbouring
      sample's gradient (or outside the array); here that sample's gradient is untouched.
    * ``grad_req='add'``: FCIS's backward overwrites the gradient at each picked or maximal
      channel; here it is added, as MXNet asks.
    * ``pick_idx`` with more values than samples: FCIS reads the first ones; here the shapes
      must agree (an error at shape inference).
    * FCIS's CPU build leaves ``'Group_Max'`` and ``'Group_Pick'`` unimplemented (their
      output is never written); these semantics are those of its CUDA kernels.

    Examples
    --------
    FCIS's training-time mask branch: the foreground/background maps of each ROI's class.

    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import ChannelOperator
    >>> maps, label = mx.sym.Variable("maps"), mx.sym.Variable("label")
    >>> seg_pred = ChannelOperator(data=maps, pick_idx=label, group=3, op_type="Group_Pick",
    ...                            pick_type="Label_Pick", name="seg_pred")
    >>> seg_pred.list_outputs()
    ['seg_pred_output']
    >>> seg_pred.infer_shape(maps=(2, 6, 21, 21), label=(2, 1, 1, 1))[1]
    [(2, 2, 21, 21)]
    """
    _check_arguments(pick_idx, group, op_type, pick_type)
    for argument, value in (("data", data), ("pick_idx", pick_idx)):
        if value is not None and not isinstance(value, mx.sym.Symbol):
            raise TypeError("ChannelOperator: %s must be an mx.sym.Symbol (for NDArrays call "
                            "channel_operator_nd), got %r" % (argument, type(value)))
    return _compose(mx.sym, data, pick_idx, group, op_type, pick_type, name)


def channel_operator_nd(data: Any, pick_idx: Any = None, *, group: int, op_type: str,
                        pick_type: str = "Label_Pick") -> Any:
    """:func:`ChannelOperator` on NDArrays, through the same operators (``mx.autograd`` works).

    Takes the arguments of :func:`ChannelOperator` as ``mx.nd.NDArray`` (no ``name``); as the
    shapes are known, also checks before computing anything that ``data`` is 4-D, that
    ``group`` divides its channels and that ``pick_idx`` holds one value (``'Label_Pick'``) or
    ``group`` values (``'Score_Pick'``) per sample, raising :class:`ChannelOperatorError`.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind._channel_operator import channel_operator_nd
    >>> maps = mx.nd.array([[[[1.0]], [[4.0]], [[3.0]], [[2.0]]]])  # (1, 4, 1, 1)
    >>> channel_operator_nd(maps, group=2, op_type="Group_Max").reshape((-1,)).asnumpy()
    array([4., 3.], dtype=float32)
    """
    _check_arguments(pick_idx, group, op_type, pick_type)
    for argument, value in (("data", data), ("pick_idx", pick_idx)):
        if value is not None and not isinstance(value, mx.nd.NDArray):
            raise TypeError("channel_operator_nd: %s must be an mx.nd.NDArray, got %r"
                            % (argument, type(value)))
    _check_shapes(data.shape, None if pick_idx is None else pick_idx.size, group, pick_type)
    return _compose(mx.nd, data, pick_idx, group, op_type, pick_type, None)


def _check_arguments(pick_idx: Any, group: Any, op_type: Any, pick_type: Any) -> None:
    """Refuse what FCIS's operator refuses, before any operator is created."""
    if op_type not in OP_TYPES:
        raise ChannelOperatorError("ChannelOperator: op_type must be one of %s, got %r"
                                   % (", ".join(map(repr, OP_TYPES)), op_type))
    if pick_type not in PICK_TYPES:
        raise ChannelOperatorError("ChannelOperator: pick_type must be one of %s, got %r"
                                   % (", ".join(map(repr, PICK_TYPES)), pick_type))
    if not isinstance(group, numbers.Integral) or isinstance(group, bool) or group < 1:
        raise ChannelOperatorError("ChannelOperator: group must be a positive int (the number "
                                   "of channel groups, e.g. num_classes), got %r" % (group,))
    if op_type == "Group_Pick" and pick_idx is None:
        raise ChannelOperatorError("ChannelOperator: op_type='Group_Pick' needs pick_idx "
                                   "(labels for 'Label_Pick', scores for 'Score_Pick'), got None")
    if op_type != "Group_Pick" and pick_idx is not None:
        raise ChannelOperatorError("ChannelOperator: op_type=%r takes no pick_idx (only "
                                   "'Group_Pick' does), got %r" % (op_type, pick_idx))


def _check_shapes(data_shape: tuple, pick_size: Optional[int], group: int,
                  pick_type: str) -> None:
    """Refuse shapes the operator cannot split, where the shapes are known."""
    if len(data_shape) != 4:
        raise ChannelOperatorError("ChannelOperator: data must be 4-D (N, C, H, W), got shape "
                                   "%r" % (data_shape,))
    if data_shape[1] % group:
        raise ChannelOperatorError("ChannelOperator: group=%r does not divide data's %d "
                                   "channels (shape %r)" % (group, data_shape[1], data_shape))
    per_sample = group if pick_type == "Score_Pick" else 1
    if pick_size is not None and pick_size != data_shape[0] * per_sample:
        raise ChannelOperatorError("ChannelOperator: pick_idx must hold %d value(s) per sample "
                                   "for pick_type=%r, %d in all, got %d"
                                   % (per_sample, pick_type, data_shape[0] * per_sample,
                                      pick_size))


def _part(name: Optional[str], part: str) -> Optional[str]:
    """The name of an inner node: ``NAME_part``, or None to let MXNet name it."""
    return None if name is None else "%s_%s" % (name, part)


def _compose(F: Any, data: Any, pick_idx: Any, group: int, op_type: str, pick_type: str,
             name: Optional[str]) -> Any:
    """The operation on ``F`` (``mx.sym`` or ``mx.nd``), whose operators share their names."""
    # (N, C, H, W) -> (N, group, C // group, H, W): -4 splits the channel axis in two.
    grouped = F.reshape(data, shape=(0, -4, group, -1, -2), name=_part(name, "groups"))
    if op_type == "Group_Max":
        # argmax takes the first of equal maxima, as the kernel's strict '>' does, and pick
        # sends the gradient to that channel alone (a max reduction would send it to each tie).
        first_max = F.argmax(grouped, axis=2, name=_part(name, "max_idx"))
        return F.pick(grouped, first_max, axis=2, name=name)
    if op_type == "Group_Softmax":
        probabilities = F.softmax(grouped, axis=2, name=_part(name, "softmax"))
        return F.reshape(probabilities, shape=(0, -3, -2), name=name)
    if pick_type == "Label_Pick":
        picked_group = F.trunc(F.reshape(pick_idx, shape=(-1,)), name=_part(name, "label"))
    else:
        picked_group = _best_scored_group(F, pick_idx, group, name)
    return _pick_group(F, grouped, picked_group, group, name)


def _best_scored_group(F: Any, scores: Any, group: int, name: Optional[str]) -> Any:
    """Per sample, the index of the first highest score past class 0, or -1 where none counts."""
    per_sample = F.reshape(scores, shape=(-1, group), name=_part(name, "scores"))
    if group == 1:  # nothing past the background: the kernel's index stays -1
        return F.zeros_like(F.reshape(per_sample, shape=(-1,))) - 1
    candidates = F.slice_axis(per_sample, axis=1, begin=1, end=None)
    counted = candidates > -_FLT_MAX  # False for NaN too
    masked = F.where(counted, candidates, F.zeros_like(candidates) - np.inf)
    best = F.argmax(masked, axis=1, name=_part(name, "argmax_data")) + 1
    return F.where(F.max(counted, axis=1), best, F.zeros_like(best) - 1)


def _pick_group(F: Any, grouped: Any, picked_group: Any, group: int,
                name: Optional[str]) -> Any:
    """Sample n's channels of group ``picked_group[n]``; zeros where that is outside the groups."""
    in_range = (picked_group >= 0) * (picked_group < group)  # False for NaN too
    # pick clips its index, but a NaN converted to an integer is undefined in C++: give it a
    # defined one; the rows it stands for are zeroed below.
    safe_group = F.where(in_range, picked_group, F.zeros_like(picked_group))
    per_element = F.broadcast_like(F.reshape(safe_group, shape=(-1, 1, 1, 1)), grouped,
                                   lhs_axes=(1, 2, 3), rhs_axes=(2, 3, 4))
    picked = F.pick(grouped, per_element, axis=1, name=_part(name, "pick"))
    # where, not a product with the mask: an inf or NaN in an unpicked row stays out of it.
    return F.where(in_range, picked, F.zeros_like(picked), name=name)
