"""SNIPER's ``MultiProposalTarget`` as a NumPy ``CustomOp`` (private module; import it from
``mxpatch_bind.compat``), and the target assignment it shares with ``MultiProposalTargetMask``.

SNIPER-mxnet's ``src/operator/multi_proposal_target.{cc,cu}``: RPN proposals for a batch of
chips, greedy NMS, the chips' ground-truth boxes put in place of the last proposals, and the
Fast R-CNN labels and box targets of every proposal. There is no sampling: every proposal
is a training ROI.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._mxnet_env import import_mxnet
from . import proposals
from ._arguments import int_at_least, parse
from ._custom import assign_zero_gradients, call, every_array
from .multi_proposal import RATIOS, SCALES, check_proposal_shapes, proposal_params
from .proposals import f32, f64

mx: Any = import_mxnet()

__all__ = ["MultiProposalTarget", "multi_proposal_target_forward", "cuda_proposals",
           "assign_targets", "OP_TYPE", "check_target_shapes"]

OP_TYPE = "mxpatch_bind_MultiProposalTarget"

# A proposal is an object's when it overlaps its box by more than this (fixed in SNIPER).
FOREGROUND_OVERLAP = 0.5
IGNORED_GT = -1


def MultiProposalTarget(cls_prob: Any = None, bbox_pred: Any = None, im_info: Any = None,
                        gt_boxes: Any = None, valid_ranges: Any = None, *,
                        rpn_pre_nms_top_n: int = 6000, rpn_post_nms_top_n: int = 300,
                        threshold: float = 0.7, rpn_min_size: int = 4, batch_size: int = 16,
                        bbox_scale: float = 1.0, workspace: int = 128,
                        scales: tuple = SCALES, ratios: tuple = RATIOS,
                        feature_stride: int = 16, name: Optional[str] = None) -> Any:
    """SNIPER's ``mx.sym.MultiProposalTarget``, as a NumPy operator on the CPU.

    Per chip ``i``: anchors moved by their deltas and clipped to ``im_info``; a box narrower
    *and* lower than 3 pixels, or whose area ``(x2-x1)·(y2-y1)`` lies outside
    ``[lo², hi²)`` for ``valid_ranges[i] = [lo, hi]``, is dropped; greedy NMS (best score
    first, IoU above 0.7 suppressed, areas without ``+ 1``) keeps up to
    ``rpn_post_nms_top_n``; the rest of the rows are ``[k % 100, k % 100, k % 100 + 200,
    k % 100 + 200]`` for ``k = i · A·H·W + row``. The chip's ground truth counts the rows of
    ``gt_boxes[i]`` whose class is not -1; that many *first* rows replace the last rois,
    in order, each only when its area lies in ``[lo², hi²]``.

    Labels: each roi takes the class of the first of those ground-truth rows that overlaps
    it best by more than 0.5 (IoU with areas without ``+ 1``, intersection with ``+ 1``), else
    0. A ground-truth row of class -1 among them (SNIPER's padding) gives -1, the label
    SNIPER's softmax ignores. Box targets of a labelled roi are ``10·dx, 10·dy, 5·log(dw),
    5·log(dh)`` with its weights 1, else targets 1 and weights 0.

    Parameters
    ----------
    cls_prob : Symbol or NDArray
        RPN softmax, (N, 2, A·H, W) as SNIPER's symbols give it (read as flat memory).
    bbox_pred : Symbol or NDArray
        (N, 4A, H, W).
    im_info : Symbol or NDArray
        (N, 3) ``[height, width, scale]``.
    gt_boxes : Symbol or NDArray
        (N, G, 5) ``[x1, y1, x2, y2, class]``, rows of class -1 are padding.
    valid_ranges : Symbol or NDArray
        (N, 2) ``[lo, hi]``: the chip's valid object sizes (square roots of areas).
    rpn_post_nms_top_n : int
        Rois per chip (default 300).
    scales, ratios, feature_stride
        The anchors, as :func:`MultiProposal`'s.
    rpn_pre_nms_top_n, threshold, rpn_min_size, batch_size, bbox_scale, workspace
        Checked and unused, as in SNIPER's CUDA operator.
    name : str, optional
        Output names ``NAME_rois``, ``NAME_label``, ``NAME_bbox_target``, ``NAME_bbox_weight``.

    Returns
    -------
    Symbol or NDArray
        Four outputs: rois (N·post, 5), label (N·post, 1), bbox_target (N·post, 4),
        bbox_weight (N·post, 4). No gradient flows back.

    Notes
    -----
    These are the semantics of SNIPER's CUDA build, the one its training ran and the one its
    checkpoint's box means and deviations (0.1, 0.1, 0.2, 0.2) agree with. SNIPER's CPU
    build differs: it scales the targets by ``bbox_scale · (5, 5, 10, 10)``, pads with
    ``[0, 0, 100, 100]``, drops boxes narrower *or* lower than 3 (widened by 1.5), measures
    areas with ``+ 1`` and NMS-es the best 6000 only. Where the CUDA build is undefined this
    operator defines it: equal scores keep the lower anchor index first (the kernel's thread
    layout decides there), a NaN score counts as dropped, and ground truth that would land
    before the chip's first row (more boxes than rois) is not placed. ``exp`` is the C
    library's ``expf``; CUDA's may differ from it in the last bits of a box corner.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import MultiProposalTarget
    >>> rois, label, bbox_target, bbox_weight = MultiProposalTarget(
    ...     cls_prob=mx.sym.Variable('cls'), bbox_pred=mx.sym.Variable('bbox'),
    ...     im_info=mx.sym.Variable('im_info'), gt_boxes=mx.sym.Variable('gt_boxes'),
    ...     valid_ranges=mx.sym.Variable('valid_ranges'), batch_size=2,
    ...     name='multi_proposal_target')
    >>> label.infer_shape(cls=(2, 2, 21 * 8, 8), bbox=(2, 84, 8, 8), im_info=(2, 3),
    ...                   gt_boxes=(2, 100, 5), valid_ranges=(2, 2))[1]
    [(600, 1)]
    """
    params = proposal_params("MultiProposalTarget", rpn_pre_nms_top_n, rpn_post_nms_top_n,
                             threshold, rpn_min_size, batch_size, bbox_scale, scales, ratios,
                             feature_stride)
    int_at_least("MultiProposalTarget", "workspace", workspace, 0)
    return call("MultiProposalTarget", OP_TYPE,
                {"cls_prob": cls_prob, "bbox_pred": bbox_pred, "im_info": im_info,
                 "gt_boxes": gt_boxes, "valid_ranges": valid_ranges}, params, name)


def cuda_proposals(cls_prob, bbox_pred, im_info, valid_ranges, params) -> list:
    """Per chip, (boxes, scores, areas) after the CUDA getProps kernel."""
    _, _, height, width = bbox_pred.shape
    anchors = proposals.anchor_boxes(
        proposals.generate_anchors(params["feature_stride"], params["ratios"], params["scales"]),
        height, width, params["feature_stride"])
    scores, deltas = proposals.proposal_layout(cls_prob, bbox_pred)
    found = []
    for image in range(bbox_pred.shape[0]):
        boxes = proposals.decode(anchors, deltas[image], im_info[image], cuda=True)
        chip_scores = scores[image].copy()
        areas = proposals.filter_cuda(boxes, chip_scores, valid_ranges[image])
        found.append((boxes, chip_scores, areas))
    return found


def _overlaps(gt, rois):
    """SNIPER's overlap of one ground-truth box with each roi: areas without ``+ 1``, the
    intersection with ``+ 1`` (``std::max`` / ``std::min``)."""
    x1, y1, x2, y2 = (f32(v) for v in gt[:4])
    gt_area = f32(f32(x2 - x1) * f32(y2 - y1))
    xx1, yy1 = proposals.std_max(x1, rois[:, 0]), proposals.std_max(y1, rois[:, 1])
    xx2, yy2 = proposals.std_min(x2, rois[:, 2]), proposals.std_min(y2, rois[:, 3])
    w = proposals.std_max(f32(0), f32(f32(xx2 - xx1) + f32(1)))
    h = proposals.std_max(f32(0), f32(f32(yy2 - yy1) + f32(1)))
    areas = f32(f32(rois[:, 2] - rois[:, 0]) * f32(rois[:, 3] - rois[:, 1]))
    inter = f32(w * h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return f32(inter / f32(f32(gt_area + areas) - inter))


def _box_targets(gt, rois):
    """``10·dx, 10·dy, 5·log(dw), 5·log(dh)`` of rois (P, 4) toward gt (P, 4), as SNIPER
    rounds them (its gt centre lies half a pixel past the roi's convention)."""
    gw = f32(f32(gt[:, 2] - gt[:, 0]) + f32(1))
    gh = f32(f32(gt[:, 3] - gt[:, 1]) + f32(1))
    gcx, gcy = f32(f64(gt[:, 0]) + f64(gw) * 0.5), f32(f64(gt[:, 1]) + f64(gh) * 0.5)
    pw = f32(f32(rois[:, 2] - rois[:, 0]) + f32(1))
    ph = f32(f32(rois[:, 3] - rois[:, 1]) + f32(1))
    pcx = f32(f64(rois[:, 0]) + f64(f32(pw - f32(1))) * 0.5)
    pcy = f32(f64(rois[:, 1]) + f64(f32(ph - f32(1))) * 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack([f32(f64(f32(f32(10) * f32(gcx - pcx))) / (f64(pw) + 1e-7)),
                         f32(f64(f32(f32(10) * f32(gcy - pcy))) / (f64(ph) + 1e-7)),
                         f32(5 * np.log(f64(gw) / (f64(pw) + 1e-7))),
                         f32(5 * np.log(f64(gh) / (f64(ph) + 1e-7)))], 1)


def assign_targets(rois: np.ndarray, gt_boxes: np.ndarray) -> tuple:
    """One chip's (labels (P,), targets (P, 4), weights (P, 4), matched gt row or -1 (P,))
    for its rois (P, 4) and ground truth (G, 5)."""
    count = len(rois)
    labels = np.zeros(count, np.float32)
    targets = np.ones((count, 4), np.float32)
    weights = np.zeros((count, 4), np.float32)
    matched = np.full(count, -1)
    best = np.zeros(count, np.float32)
    # SNIPER counts the rows of a class other than -1 and then reads that many first rows.
    for row in range(int(np.sum(gt_boxes[:, 4] != IGNORED_GT))):
        overlap = _overlaps(gt_boxes[row], rois)
        better = (overlap > best) & (f64(overlap) > FOREGROUND_OVERLAP)
        best[better], matched[better], labels[better] = overlap[better], row, gt_boxes[row, 4]
    positive = matched >= 0
    targets[positive] = _box_targets(gt_boxes[matched[positive], :4], rois[positive])
    weights[positive] = 1
    return labels, targets, weights, matched


def _padding(count, first):
    """SNIPER's CUDA padding rows for positions ``first, first + 1, ...``: ``k % 100`` twice,
    then ``k % 100 + 200`` twice."""
    k = (np.arange(count) + first) % 100
    return np.stack([k, k, k + 200, k + 200], 1).astype(np.float32)


def _place_gt_first_rows(rois, gt_boxes, valid_range):
    """MultiProposalTarget's host code: the first ``count`` gt rows over the last rois."""
    count = int(np.sum(gt_boxes[:, 4] != IGNORED_GT))
    low, high = f32(valid_range[0]), f32(valid_range[1])
    for row in range(count):
        position = len(rois) - count + row
        x1, y1, x2, y2 = gt_boxes[row, :4]
        area = f32(f32(x2 - x1) * f32(y2 - y1))
        if position >= 0 and f32(low * low) <= area <= f32(high * high):
            rois[position] = gt_boxes[row, :4]


def multi_proposal_target_forward(cls_prob, bbox_pred, im_info, gt_boxes, valid_ranges,
                                  params) -> tuple:
    """The operator on NumPy arrays: (rois, label, bbox_target, bbox_weight), float32."""
    post = params["rpn_post_nms_top_n"]
    chip_anchors = bbox_pred.shape[1] // 4 * bbox_pred.shape[2] * bbox_pred.shape[3]
    outputs: tuple[list, list, list, list] = ([], [], [], [])
    for image, (boxes, scores, areas) in enumerate(
            cuda_proposals(cls_prob, bbox_pred, im_info, valid_ranges, params)):
        kept = proposals.greedy_nms(boxes, scores, areas, post, None, cuda=True)
        rois = _padding(post, image * chip_anchors)
        rois[:len(kept)] = boxes[kept]
        _place_gt_first_rows(rois, gt_boxes[image], valid_ranges[image])
        labels, targets, weights, _ = assign_targets(rois, gt_boxes[image])
        outputs[0].append(np.concatenate([np.full((post, 1), image, np.float32), rois], 1))
        outputs[1].append(labels[:, None])
        outputs[2].append(targets)
        outputs[3].append(weights)
    return tuple(np.concatenate(parts).astype(np.float32) for parts in outputs)


def check_target_shapes(op, shapes, anchors):
    """Refuse the inputs' shapes the operator would read outside of, naming them."""
    cls_prob, bbox_pred, im_info, gt_boxes, valid_ranges = (tuple(s) for s in shapes)
    check_proposal_shapes(op, cls_prob, bbox_pred, im_info, anchors)
    if len(gt_boxes) != 3 or gt_boxes[0] != bbox_pred[0] or gt_boxes[2] != 5 \
            or valid_ranges != (bbox_pred[0], 2):
        raise ValueError(f"{op}: expected gt_boxes (N, G, 5) and valid_ranges (N, 2) for "
                         f"N = {bbox_pred[0]}; got {gt_boxes} and {valid_ranges}")


class _MultiProposalTargetOp(mx.operator.CustomOp):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def forward(self, is_train, req, in_data, out_data, aux):
        results = multi_proposal_target_forward(*(a.asnumpy() for a in in_data), self.params)
        for index, value in enumerate(results):
            self.assign(out_data[index], req[index], mx.nd.array(value, out_data[index].context))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assign_zero_gradients(self, req, in_grad)


@mx.operator.register(OP_TYPE)
class _MultiProposalTargetProp(mx.operator.CustomOpProp):
    def __init__(self, **params):
        super().__init__(need_top_grad=False)
        self.params = {key: parse(value) for key, value in params.items()}

    def list_arguments(self):
        return ["cls_prob", "bbox_pred", "im_info", "gt_boxes", "valid_ranges"]

    def list_outputs(self):
        return ["rois", "label", "bbox_target", "bbox_weight"]

    def infer_shape(self, in_shape):
        check_target_shapes("MultiProposalTarget", in_shape,
                            len(self.params["scales"]) * len(self.params["ratios"]))
        rows = in_shape[1][0] * self.params["rpn_post_nms_top_n"]
        return in_shape, [(rows, 5), (rows, 1), (rows, 4), (rows, 4)], []

    def infer_type(self, in_type):
        return [np.float32] * 5, [np.float32] * 4, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return every_array(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _MultiProposalTargetOp(self.params)
