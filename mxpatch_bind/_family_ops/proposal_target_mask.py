"""SNIPER's ``MultiProposalTargetMask`` as a NumPy ``CustomOp`` (private module; import it from
``mxpatch_bind.compat``).

SNIPER-mxnet's ``src/operator/multi_proposal_target_mask.cu`` (its CPU forward is empty):
``MultiProposalTarget`` with other NMS and ground-truth rules, plus the rois of the batch's
foreground proposals and the ground-truth row each matched, for ``MaskRcnnTarget``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._mxnet_env import import_mxnet
from . import proposals
from ._arguments import int_at_least, parse, positive_int
from ._custom import assign_zero_gradients, call, every_array
from .multi_proposal import RATIOS, SCALES, proposal_params
from .proposal_target import IGNORED_GT, assign_targets, check_target_shapes, cuda_proposals
from .proposals import f32

mx: Any = import_mxnet()

__all__ = ["MultiProposalTargetMask", "multi_proposal_target_mask_forward", "OP_TYPE"]

OP_TYPE = "mxpatch_bind_MultiProposalTargetMask"
# The CUDA NMS reads the best 6000 boxes of a chip.
CANDIDATES = 6000


def MultiProposalTargetMask(cls_prob: Any = None, bbox_pred: Any = None, im_info: Any = None,
                            gt_boxes: Any = None, valid_ranges: Any = None, *,
                            rpn_pre_nms_top_n: int = 6000, rpn_post_nms_top_n: int = 300,
                            threshold: float = 0.7, rpn_min_size: int = 4,
                            batch_size: int = 16, bbox_scale: float = 1.0,
                            workspace: int = 128, scales: tuple = SCALES,
                            ratios: tuple = RATIOS, feature_stride: int = 16,
                            max_masks: int = 50, max_gts: int = 100, max_crowd: int = 10,
                            name: Optional[str] = None) -> Any:
    """SNIPER's ``mx.sym.MultiProposalTargetMask``, as a NumPy operator on the CPU.

    As :func:`MultiProposalTarget`, with these differences, all SNIPER's: NMS reads the
    best 6000 boxes of a chip only; unfilled rows are ``[r % 100, r % 100, r % 100 + 200,
    r % 100 + 200]`` for the row ``r`` of the chip; ground-truth row ``t`` (every row of
    class other than -1, among the first ``rpn_post_nms_top_n``) replaces roi
    ``post - 1 - t`` when its area lies in ``[lo², hi²)``.

    Two more outputs: the rois whose label is above 0, over the whole batch in order, at
    most ``N · max_masks`` of them, with the ground-truth row each matched; the remaining
    rows are ``[k % N, k % 200, k % 200, k % 200 + 100, k % 200 + 100]`` with id -1.

    Parameters
    ----------
    cls_prob, bbox_pred, im_info, gt_boxes, valid_ranges
        As :func:`MultiProposalTarget`'s; ``gt_boxes`` is (N, max_gts, 5).
    rpn_post_nms_top_n, scales, ratios, feature_stride
        As :func:`MultiProposalTarget`'s.
    max_masks : int
        Mask rois per chip (default 50).
    max_gts : int
        Ground-truth rows per chip (default 100): ``gt_boxes``'s second axis.
    rpn_pre_nms_top_n, threshold, rpn_min_size, batch_size, bbox_scale, workspace, max_crowd
        Checked and unused, as in SNIPER's CUDA operator.
    name : str, optional
        Outputs ``NAME_rois``, ``NAME_label``, ``NAME_bbox_target``, ``NAME_bbox_weight``,
        ``NAME_mask_rois``, ``NAME_mask_ids``.

    Returns
    -------
    Symbol or NDArray
        Six outputs: rois (N·post, 5), label (N·post, 1), bbox_target (N·post, 4),
        bbox_weight (N·post, 4), mask_rois (N·max_masks, 5), mask_ids (N·max_masks, 1).

    Notes
    -----
    SNIPER's CUDA operator hard-codes 300 rois per chip for its mask outputs and 6000 NMS
    candidates (reading past the chip when it has fewer anchors); both follow the actual
    sizes here. Its ground-truth rows and its own kept rows are written by racing threads;
    here the ground truth wins. Ties and NaN scores as :func:`MultiProposalTarget`'s.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import MultiProposalTargetMask
    >>> outputs = MultiProposalTargetMask(
    ...     cls_prob=mx.sym.Variable('cls'), bbox_pred=mx.sym.Variable('bbox'),
    ...     im_info=mx.sym.Variable('im_info'), gt_boxes=mx.sym.Variable('gt_boxes'),
    ...     valid_ranges=mx.sym.Variable('valid_ranges'), batch_size=2,
    ...     name='multi_proposal_target_mask')
    >>> rois, label, bbox_target, bbox_weight, mask_rois, mask_ids = outputs
    >>> mask_rois.infer_shape(cls=(2, 2, 21 * 8, 8), bbox=(2, 84, 8, 8), im_info=(2, 3),
    ...                       gt_boxes=(2, 100, 5), valid_ranges=(2, 2))[1]
    [(100, 5)]
    """
    op = "MultiProposalTargetMask"
    params = proposal_params(op, rpn_pre_nms_top_n, rpn_post_nms_top_n, threshold,
                             rpn_min_size, batch_size, bbox_scale, scales, ratios,
                             feature_stride)
    int_at_least(op, "workspace", workspace, 0)
    int_at_least(op, "max_crowd", max_crowd, 0)
    params.update(max_masks=positive_int(op, "max_masks", max_masks),
                  max_gts=positive_int(op, "max_gts", max_gts))
    return call(op, OP_TYPE,
                {"cls_prob": cls_prob, "bbox_pred": bbox_pred, "im_info": im_info,
                 "gt_boxes": gt_boxes, "valid_ranges": valid_ranges}, params, name)


def _padding(count):
    """The CUDA NMS kernel's rows for positions 0, 1, ...: ``r % 100`` twice, then + 200."""
    r = np.arange(count) % 100
    return np.stack([r, r, r + 200, r + 200], 1).astype(np.float32)


def _place_gt_from_the_end(rois, gt_boxes, valid_range):
    """Ground-truth row ``t`` of class other than -1 over roi ``post - 1 - t``."""
    low, high = f32(valid_range[0]), f32(valid_range[1])
    for row in range(min(len(rois), len(gt_boxes))):
        x1, y1, x2, y2, label = gt_boxes[row]
        area = f32(f32(x2 - x1) * f32(y2 - y1))
        if label != IGNORED_GT and f32(low * low) <= area < f32(high * high):
            rois[len(rois) - 1 - row] = gt_boxes[row, :4]


def _mask_outputs(rois, labels, matched, images, max_masks):
    """The foreground rois of the batch in order, padded as SNIPER pads them."""
    count = images * max_masks
    positive = np.flatnonzero(labels > 0)[:count]
    k = np.arange(count)
    mask_rois = np.stack([k % images, k % 200, k % 200, k % 200 + 100, k % 200 + 100],
                         1).astype(np.float32)
    mask_ids = np.full((count, 1), -1, np.float32)
    mask_rois[:len(positive)] = rois[positive]
    mask_ids[:len(positive), 0] = matched[positive]
    return mask_rois, mask_ids


def multi_proposal_target_mask_forward(cls_prob, bbox_pred, im_info, gt_boxes, valid_ranges,
                                       params) -> tuple:
    """The operator on NumPy arrays: its six outputs, float32."""
    post = params["rpn_post_nms_top_n"]
    parts: tuple[list, list, list, list, list] = ([], [], [], [], [])
    for image, (boxes, scores, areas) in enumerate(
            cuda_proposals(cls_prob, bbox_pred, im_info, valid_ranges, params)):
        kept = proposals.greedy_nms(boxes, scores, areas, post, CANDIDATES, cuda=True)
        rois = _padding(post)
        rois[:len(kept)] = boxes[kept]
        _place_gt_from_the_end(rois, gt_boxes[image], valid_ranges[image])
        labels, targets, weights, matched = assign_targets(rois, gt_boxes[image])
        parts[0].append(np.concatenate([np.full((post, 1), image, np.float32), rois], 1))
        for part, value in zip(parts[1:], (labels, targets, weights, matched)):
            part.append(value)
    rois, labels, targets, weights, matched = (np.concatenate(p) for p in parts)
    mask_rois, mask_ids = _mask_outputs(rois, labels, matched, bbox_pred.shape[0],
                                        params["max_masks"])
    return tuple(np.asarray(value, np.float32) for value in
                 (rois, labels[:, None], targets, weights, mask_rois, mask_ids))


class _MultiProposalTargetMaskOp(mx.operator.CustomOp):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def forward(self, is_train, req, in_data, out_data, aux):
        results = multi_proposal_target_mask_forward(*(a.asnumpy() for a in in_data),
                                                     self.params)
        for index, value in enumerate(results):
            self.assign(out_data[index], req[index], mx.nd.array(value, out_data[index].context))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assign_zero_gradients(self, req, in_grad)


@mx.operator.register(OP_TYPE)
class _MultiProposalTargetMaskProp(mx.operator.CustomOpProp):
    def __init__(self, **params):
        super().__init__(need_top_grad=False)
        self.params = {key: parse(value) for key, value in params.items()}

    def list_arguments(self):
        return ["cls_prob", "bbox_pred", "im_info", "gt_boxes", "valid_ranges"]

    def list_outputs(self):
        return ["rois", "label", "bbox_target", "bbox_weight", "mask_rois", "mask_ids"]

    def infer_shape(self, in_shape):
        check_target_shapes("MultiProposalTargetMask", in_shape,
                            len(self.params["scales"]) * len(self.params["ratios"]))
        if in_shape[3][1] != self.params["max_gts"]:
            raise ValueError(f"MultiProposalTargetMask: gt_boxes must hold max_gts = "
                             f"{self.params['max_gts']} rows per chip; got {tuple(in_shape[3])}")
        rows = in_shape[1][0] * self.params["rpn_post_nms_top_n"]
        masks = in_shape[1][0] * self.params["max_masks"]
        return in_shape, [(rows, 5), (rows, 1), (rows, 4), (rows, 4), (masks, 5), (masks, 1)], []

    def infer_type(self, in_type):
        return [np.float32] * 5, [np.float32] * 6, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return every_array(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _MultiProposalTargetMaskOp(self.params)
