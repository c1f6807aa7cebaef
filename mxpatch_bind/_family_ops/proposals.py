"""Anchors, decoded proposals and greedy NMS as SNIPER's operators compute them (private module).

Facts from SNIPER-mxnet's ``src/operator/multi_proposal*.{cc,cu}``, computed in float32 with
C's promotions: a ``double`` constant (``1.0``, ``0.5``, ``0.7``) makes that step a double one,
rounded to float32 where the C code stores a ``float``. Two rule sets differ between the files:
the CPU code's (``std::min`` / ``std::max``, a box narrower *or* lower than 3 pixels widened
by 1.5 each side, areas with ``+ 1``) and the CUDA kernels' (``fminf`` / ``fmaxf``, a box
narrower *and* lower than 3 widened by 1, areas without ``+ 1``, a valid-range filter).
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

__all__ = ["generate_anchors", "anchor_boxes", "decode", "filter_small_cpu", "filter_cuda",
           "areas_cpu", "greedy_nms", "std_max", "std_min", "proposal_layout", "f32", "f64",
           "expf"]


def f32(value):
    """``value`` rounded to float32, as C stores a ``float`` (an array stays an array)."""
    return np.asarray(value, np.float32)


def f64(value):
    """``value`` as a double, as C promotes a ``float`` next to a ``double``."""
    return np.asarray(value, np.float64)


def _c_expf():
    """The C library's ``expf``, or None where ctypes cannot load it."""
    try:
        function = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").expf
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_float, [ctypes.c_float]
    return function


_EXPF = _c_expf()


def expf(values) -> np.ndarray:
    """C's ``exp`` of floats (``expf``), which SNIPER's C++ calls on the size deltas.

    The C library's own function where it loads: NumPy's float32 ``exp`` differs from
    glibc 2.36's ``expf`` in 117,798 of 300,000 deltas (by up to 2 units in the last place)
    and ``exp`` in double rounded to float in 370 of 600,000, which moves box corners.
    Elsewhere, ``exp`` in double, rounded.
    """
    values = f32(values)
    if _EXPF is None:
        return f32(np.exp(f64(values)))
    return np.array([_EXPF(v) for v in values.ravel().tolist()],
                    np.float32).reshape(values.shape)


# SNIPER's NMS threshold, fixed in every file (the ``threshold`` parameter is never read).
NMS_THRESHOLD = 0.7


def std_max(a, b):
    """``std::max(a, b)``: ``a < b ? b : a`` (a NaN ``a`` stays, a NaN ``b`` loses)."""
    return np.where(a < b, b, a)


def std_min(a, b):
    """``std::min(a, b)``: ``b < a ? b : a``."""
    return np.where(b < a, b, a)


def generate_anchors(feature_stride: int, ratios: tuple, scales: tuple) -> np.ndarray:
    """The anchors (len(ratios) · len(scales), 4) float32, ratio by ratio, scale by scale."""
    side = f32(f32(feature_stride - 1.0) - f32(0)) + f32(1)
    center = f32(f64(0) + 0.5 * (f64(side) - 1.0))
    anchors = []
    for ratio in (f32(r) for r in ratios):
        for scale in (f32(s) for s in scales):
            size_ratios = np.floor(f32(f32(side * side) / ratio))
            new_w = f32(np.floor(f32(np.sqrt(size_ratios) + f32(0.5))) * scale)
            new_h = f32(np.floor(f32(f32(new_w / scale) * ratio) + f32(0.5)) * scale)
            half_w = f32(f32(0.5) * f32(new_w - f32(1)))
            half_h = f32(f32(0.5) * f32(new_h - f32(1)))
            anchors.append([f32(center - half_w), f32(center - half_h), f32(center + half_w),
                            f32(center + half_h)])
    return np.array(anchors, np.float32)


def anchor_boxes(anchors: np.ndarray, height: int, width: int, stride: int) -> np.ndarray:
    """Every anchor at every position, (A·H·W, 4) float32 in the operators' order (a, h, w)."""
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    shift = np.stack([cols * stride, rows * stride] * 2, -1).reshape(1, -1, 4)
    return (anchors[:, None, :] + shift.astype(np.float32)).reshape(-1, 4).astype(np.float32)


def proposal_layout(cls_prob: np.ndarray, bbox_pred: np.ndarray) -> tuple:
    """Per image, the foreground scores (A·H·W,) and deltas (A·H·W, 4), read from flat memory
    as the operators read them (``cls_prob`` may be (N, 2, A·H, W) or (N, 2A, H, W))."""
    images, channels, height, width = bbox_pred.shape
    count = channels // 4 * height * width
    scores = cls_prob.reshape(images, 2, count)[:, 1].astype(np.float32)
    deltas = bbox_pred.reshape(images, channels // 4, 4, height * width)
    return scores, deltas.transpose(0, 1, 3, 2).reshape(images, count, 4).astype(np.float32)


def decode(boxes: np.ndarray, deltas: np.ndarray, im_info: np.ndarray, cuda: bool) -> np.ndarray:
    """BBoxTransformInv: anchors moved by the deltas, clipped to the image (one image)."""
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    width = f32(f64(f32(x2 - x1)) + 1.0)
    height = f32(f64(f32(y2 - y1)) + 1.0)
    ctr_x = f32(f64(x1) + 0.5 * (f64(width) - 1.0))
    ctr_y = f32(f64(y1) + 0.5 * (f64(height) - 1.0))
    dx, dy, dw, dh = (deltas[:, k] for k in range(4))
    pred_ctr_x, pred_ctr_y = f32(f32(dx * width) + ctr_x), f32(f32(dy * height) + ctr_y)
    pred_w, pred_h = f32(expf(dw) * width), f32(expf(dh) * height)
    half_w, half_h = 0.5 * (f64(pred_w) - 1.0), 0.5 * (f64(pred_h) - 1.0)
    corners = [f32(f64(pred_ctr_x) - half_w), f32(f64(pred_ctr_y) - half_h),
               f32(f64(pred_ctr_x) + half_w), f32(f64(pred_ctr_y) + half_h)]
    last_x, last_y = f32(f32(im_info[1]) - f32(1)), f32(f32(im_info[0]) - f32(1))
    upper, lower = (np.fmin, np.fmax) if cuda else (std_min, std_max)
    limits = [last_x, last_y, last_x, last_y]
    return np.stack([lower(upper(c, limit), f32(0)) for c, limit in zip(corners, limits)],
                    1).astype(np.float32)


def filter_small_cpu(boxes: np.ndarray, scores: np.ndarray) -> None:
    """The CPU FilterBox (min size 3.0f): a box narrower or lower than 3 is widened by 1.5
    each side and scored -1 (in place)."""
    narrow = f32(f32(boxes[:, 2] - boxes[:, 0]) + f32(1)) < 3
    low = f32(f32(boxes[:, 3] - boxes[:, 1]) + f32(1)) < 3
    small = narrow | low
    boxes[small] += np.array([-1.5, -1.5, 1.5, 1.5], np.float32)
    scores[small] = -1


def filter_cuda(boxes: np.ndarray, scores: np.ndarray, valid_range: np.ndarray) -> np.ndarray:
    """getProps's filter (in place): a box narrower *and* lower than 3 widened by 1 each side
    and scored -1; then a box whose area (no ``+ 1``) is outside ``[lo², hi²)`` scored -1.
    Returns the areas, which the CUDA NMS uses."""
    small = (f32(boxes[:, 3] - boxes[:, 1]) < 3) & (f32(boxes[:, 2] - boxes[:, 0]) < 3)
    boxes[small] += np.array([-1, -1, 1, 1], np.float32)
    scores[small] = -1
    areas = f32(f32(boxes[:, 2] - boxes[:, 0]) * f32(boxes[:, 3] - boxes[:, 1]))
    low, high = f32(valid_range[0]), f32(valid_range[1])
    scores[(areas >= f32(high * high)) | (areas < f32(low * low))] = -1
    return areas


def areas_cpu(boxes: np.ndarray) -> np.ndarray:
    """The CPU NMS's areas: ``(x2 - x1 + 1) * (y2 - y1 + 1)``."""
    return f32(f32(f32(boxes[:, 2] - boxes[:, 0]) + f32(1))
               * f32(f32(boxes[:, 3] - boxes[:, 1]) + f32(1)))


def _overlap(box, area, boxes, areas, cuda):
    """IoU of one kept box with others, in the NMS's rounding (intersection with ``+ 1``)."""
    upper, lower = (np.fmin, np.fmax) if cuda else (std_min, std_max)
    xx1, yy1 = lower(box[0], boxes[:, 0]), lower(box[1], boxes[:, 1])
    xx2, yy2 = upper(box[2], boxes[:, 2]), upper(box[3], boxes[:, 3])
    w = lower(f32(0), f32(f32(xx2 - xx1) + f32(1)))
    h = lower(f32(0), f32(f32(yy2 - yy1) + f32(1)))
    inter = f32(w * h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return f32(inter / f32(f32(area + areas) - inter))


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, areas: np.ndarray, keep_at_most: int,
               candidates: int | None, cuda: bool) -> list:
    """Indices of the kept boxes, best first: boxes by descending score (ties: lower index
    first), only the first ``candidates`` of that order when given, each kept unless scored
    -1 or NaN or overlapping a kept one by more than 0.7, until ``keep_at_most`` are kept."""
    key = np.where(np.isnan(scores), -np.inf, scores)
    order = np.argsort(-key, kind="stable")[:candidates]
    alive = (scores[order] != -1) & ~np.isnan(scores[order])
    kept: list[int] = []
    for position, index in enumerate(order):
        if len(kept) >= keep_at_most:
            break
        if not alive[position]:
            continue
        kept.append(int(index))
        rest = order[position + 1:]
        overlap = _overlap(boxes[index], areas[index], boxes[rest], areas[rest], cuda)
        alive[position + 1:] &= ~(f64(overlap) > NMS_THRESHOLD)
    return kept
