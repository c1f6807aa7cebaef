"""SNIPER's ``MultiProposal`` as a NumPy ``CustomOp`` (private module; import ``MultiProposal``
from ``mxpatch_bind.compat``).

SNIPER-mxnet's ``src/operator/multi_proposal.cc`` registers ``MultiProposal`` (``mx.sym``, not
``contrib``): RPN proposals per image, greedy NMS, padded to a fixed count. Stock
``contrib.MultiProposal`` is another operator (its parameters are read, its threshold and
minimum size honoured, its score output optional and (N·post, 1)).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._mxnet_env import import_mxnet
from . import proposals
from ._arguments import float_tuple, int_at_least, number, parse, positive_int
from ._custom import assign_zero_gradients, call, every_array
from .crand import PROCESS_RAND

mx: Any = import_mxnet()

__all__ = ["MultiProposal", "multi_proposal_forward", "check_proposal_shapes", "OP_TYPE",
           "SCALES", "RATIOS", "proposal_params"]

OP_TYPE = "mxpatch_bind_MultiProposal"
SCALES = (2.0, 4.0, 7.0, 10.0, 13.0, 16.0, 24.0)
RATIOS = (0.5, 1.0, 2.0)
# The CPU NMS looks at the best 12000 boxes of an image at most.
CANDIDATES = 12000


def MultiProposal(cls_prob: Any = None, bbox_pred: Any = None, im_info: Any = None, *,
                  rpn_pre_nms_top_n: int = 6000, rpn_post_nms_top_n: int = 300,
                  threshold: float = 0.7, rpn_min_size: int = 4, batch_size: int = 16,
                  bbox_scale: float = 1.0, scales: tuple = SCALES, ratios: tuple = RATIOS,
                  feature_stride: int = 16, roi_iou_thresh: float = 0.3,
                  name: Optional[str] = None) -> Any:
    """SNIPER's ``mx.sym.MultiProposal``, as a NumPy operator on the CPU.

    Per image: each anchor (``ratios`` × ``scales`` at each feature position, ``feature_stride``
    apart) is moved by its deltas and clipped to the image; a box narrower or lower than 3
    pixels is dropped; the others, best score first (the first 12000), are kept greedily
    unless one kept already overlaps them by more than 0.7 (IoU with ``+ 1`` areas), until
    ``rpn_post_nms_top_n`` are kept. Fewer are padded with ``[i, rand() % 100,
    rand() % 100, 200 + rand() % 200, 200 + rand() % 200]`` and score 0.

    Parameters
    ----------
    cls_prob : Symbol or NDArray
        (N, 2A, H, W) softmax scores (the foreground's in the second half of the channels).
    bbox_pred : Symbol or NDArray
        (N, 4A, H, W) box deltas.
    im_info : Symbol or NDArray
        (N, 3) ``[height, width, scale]``.
    rpn_post_nms_top_n : int
        Proposals per image (default 300).
    scales, ratios : tuple of float
        Anchor scales and aspect ratios; ``A = len(ratios) * len(scales)``.
    feature_stride : int
        Default 16.
    rpn_pre_nms_top_n, threshold, rpn_min_size, batch_size, bbox_scale, roi_iou_thresh
        Accepted and checked as SNIPER's operator declares them, and unused, as there: its
        NMS keeps at most 12000 candidates, suppresses above 0.7 and drops boxes under 3.
    name : str, optional
        The Symbol's name: its outputs are ``NAME_output`` and ``NAME_score``.

    Returns
    -------
    Symbol or NDArray
        Two outputs: rois (N · post, 5) ``[image, x1, y1, x2, y2]`` and scores (N · post,).

    Notes
    -----
    These are SNIPER's CPU semantics. Its CUDA build gave every anchor of index ``i`` with
    ``(i + 4) % 7 == 0`` or ``(i + 2) % 7 == 0`` a score of -1 and ran an approximate NMS
    from a table of anchor overlaps cached from its first call (a speed device for its
    21-anchor configuration), which this operator does not reproduce. The padding follows
    glibc's ``rand()`` from the state a process starts with, in one sequence over the images
    in order; the fork shared that state with any other C code of the process and drew it
    from OpenMP threads, so its padding is comparable only in a process where nothing else
    called ``rand()``, one image at a time. Scores are compared as SNIPER's code compares
    them; equal scores keep the lower anchor index first, and a NaN score counts as dropped
    (``std::sort`` leaves both unspecified). ``exp`` is the C library's ``expf``, as the C++
    calls it.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import MultiProposal
    >>> rois, scores = MultiProposal(cls_prob=mx.sym.Variable('cls'),
    ...                              bbox_pred=mx.sym.Variable('bbox'),
    ...                              im_info=mx.sym.Variable('im_info'), name='rois',
    ...                              rpn_post_nms_top_n=50, scales=(8.0,), ratios=(1.0,))
    >>> rois.infer_shape(cls=(2, 2, 4, 4), bbox=(2, 4, 4, 4), im_info=(2, 3))[1]
    [(100, 5)]
    """
    params = proposal_params("MultiProposal", rpn_pre_nms_top_n, rpn_post_nms_top_n,
                             threshold, rpn_min_size, batch_size, bbox_scale, scales, ratios,
                             feature_stride)
    number("MultiProposal", "roi_iou_thresh", roi_iou_thresh)
    return call("MultiProposal", OP_TYPE,
                {"cls_prob": cls_prob, "bbox_pred": bbox_pred, "im_info": im_info},
                params, name)


def proposal_params(op: str, pre_nms: Any, post_nms: Any, threshold: Any, min_size: Any,
                    batch_size: Any, bbox_scale: Any, scales: Any, ratios: Any,
                    feature_stride: Any) -> dict:
    """The parameters every SNIPER proposal operator declares, checked; the ones the
    computation reads, returned."""
    int_at_least(op, "rpn_pre_nms_top_n", pre_nms, 0)
    int_at_least(op, "rpn_min_size", min_size, 0)
    positive_int(op, "batch_size", batch_size)
    number(op, "threshold", threshold)
    number(op, "bbox_scale", bbox_scale)
    return {"rpn_post_nms_top_n": positive_int(op, "rpn_post_nms_top_n", post_nms),
            "scales": float_tuple(op, "scales", scales),
            "ratios": float_tuple(op, "ratios", ratios),
            "feature_stride": positive_int(op, "feature_stride", feature_stride)}


def multi_proposal_forward(cls_prob, bbox_pred, im_info, post_nms: int, scales: tuple,
                           ratios: tuple, feature_stride: int, rand=PROCESS_RAND) -> tuple:
    """The CPU operator on NumPy arrays: (rois (N·post, 5), scores (N·post,)) float32."""
    images, _, height, width = bbox_pred.shape
    anchors = proposals.anchor_boxes(proposals.generate_anchors(feature_stride, ratios, scales),
                                     height, width, feature_stride)
    scores, deltas = proposals.proposal_layout(np.asarray(cls_prob), np.asarray(bbox_pred))
    rois = np.zeros((images, post_nms, 5), np.float32)
    out_scores = np.zeros((images, post_nms), np.float32)
    for image in range(images):
        boxes = proposals.decode(anchors, deltas[image], np.asarray(im_info)[image], cuda=False)
        image_scores = scores[image].copy()
        proposals.filter_small_cpu(boxes, image_scores)
        kept = proposals.greedy_nms(boxes, image_scores, proposals.areas_cpu(boxes), post_nms,
                                    CANDIDATES, cuda=False)
        rois[image, :, 0] = image
        rois[image, :len(kept), 1:] = boxes[kept]
        out_scores[image, :len(kept)] = image_scores[kept]
        for row in range(len(kept), post_nms):
            rois[image, row, 1:] = [rand.rand() % 100, rand.rand() % 100,
                                    200 + rand.rand() % 200, 200 + rand.rand() % 200]
    return rois.reshape(-1, 5), out_scores.reshape(-1)


def check_proposal_shapes(op: str, cls_prob: tuple, bbox_pred: tuple, im_info: tuple,
                          anchors: int) -> None:
    """Refuse input shapes the operator would read outside of, naming them."""
    expected_scores = 2 * int(np.prod(bbox_pred)) // 4
    if len(bbox_pred) != 4 or bbox_pred[1] != 4 * anchors or im_info != (bbox_pred[0], 3) \
            or not cls_prob or cls_prob[0] != bbox_pred[0] \
            or int(np.prod(cls_prob)) != expected_scores:
        raise ValueError(f"{op}: expected bbox_pred (N, 4A, H, W) with A = {anchors} anchors, "
                         "cls_prob holding (N, 2A, H, W) values and im_info (N, 3); got "
                         f"cls_prob {cls_prob}, bbox_pred {bbox_pred}, im_info {im_info}")


class _MultiProposalOp(mx.operator.CustomOp):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def forward(self, is_train, req, in_data, out_data, aux):
        rois, scores = multi_proposal_forward(
            *(array.asnumpy() for array in in_data), self.params["rpn_post_nms_top_n"],
            self.params["scales"], self.params["ratios"], self.params["feature_stride"])
        for index, value in enumerate((rois, scores)):
            self.assign(out_data[index], req[index], mx.nd.array(value, out_data[index].context))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assign_zero_gradients(self, req, in_grad)


@mx.operator.register(OP_TYPE)
class _MultiProposalProp(mx.operator.CustomOpProp):
    def __init__(self, **params):
        super().__init__(need_top_grad=False)
        self.params = {key: parse(value) for key, value in params.items()}

    def list_arguments(self):
        return ["cls_prob", "bbox_pred", "im_info"]

    def list_outputs(self):
        return ["output", "score"]

    def infer_shape(self, in_shape):
        anchors = len(self.params["scales"]) * len(self.params["ratios"])
        check_proposal_shapes("MultiProposal", *(tuple(s) for s in in_shape), anchors)
        rows = in_shape[1][0] * self.params["rpn_post_nms_top_n"]
        return in_shape, [(rows, 5), (rows,)], []

    def infer_type(self, in_type):
        return [np.float32] * 3, [np.float32] * 2, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return every_array(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _MultiProposalOp(self.params)
