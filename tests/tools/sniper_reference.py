"""A loop-by-loop NumPy reference of SNIPER-mxnet's proposal operators, written from its C++ and
CUDA (``src/operator/multi_proposal.cc``, ``multi_proposal_target.cu``,
``multi_proposal_target_mask.cu``), for the drop-ins' tests.

One anchor, one box, one ground-truth row at a time, in float32 scalars with C's promotions:
``f32(...)`` where the C code stores a ``float``, Python floats where it computes in double.
The CUDA kernels' NMS is written as the kernel runs it, a selection of the best remaining box
at each step (ties to the lower anchor index, which the drop-in defines); the CPU code's as it
runs, a sort and a pass. A NaN score counts as dropped, as the drop-ins define it.
"""

import ctypes
import ctypes.util
import math

import numpy as np

f32 = np.float32
# C's exp of a float is the C library's expf, which SNIPER's C++ calls.
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
LIBM.expf.restype, LIBM.expf.argtypes = ctypes.c_float, [ctypes.c_float]


def anchors(stride, ratios, scales):
    """GenerateAnchors / _Transform / _MakeAnchor."""
    base = [f32(0), f32(0), f32(stride - 1.0), f32(stride - 1.0)]
    w = f32(f32(base[2] - base[0]) + f32(1))
    h = f32(f32(base[3] - base[1]) + f32(1))
    x_ctr = f32(float(base[0]) + 0.5 * float(f32(w - f32(1))))
    y_ctr = f32(float(base[1]) + 0.5 * float(f32(h - f32(1))))
    found = []
    for ratio in ratios:
        for scale in scales:
            ratio, scale = f32(ratio), f32(scale)
            size_ratios = f32(math.floor(f32(f32(w * h) / ratio)))
            new_w = f32(f32(math.floor(f32(np.sqrt(size_ratios) + f32(0.5)))) * scale)
            new_h = f32(f32(math.floor(f32(f32(f32(new_w / scale) * ratio) + f32(0.5)))) * scale)
            half_w = f32(f32(0.5) * f32(new_w - f32(1)))
            half_h = f32(f32(0.5) * f32(new_h - f32(1)))
            found.append([f32(x_ctr - half_w), f32(y_ctr - half_h), f32(x_ctr + half_w),
                          f32(y_ctr + half_h)])
    return found


def c_max(a, b):
    return b if a < b else a


def c_min(a, b):
    return b if b < a else a


def cuda_max(a, b):
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def cuda_min(a, b):
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def chip_boxes(cls_prob, bbox_pred, im_info, image, stride, ratios, scales, cuda):
    """Every anchor of one chip decoded and clipped: lists of [x1, y1, x2, y2] and scores."""
    _, channels, height, width = bbox_pred.shape
    count = channels // 4
    flat_scores = cls_prob.reshape(-1)
    boxes, scores = [], []
    for a, anchor in enumerate(anchors(stride, ratios, scales)):
        for h in range(height):
            for w in range(width):
                box = [f32(anchor[0] + f32(w * stride)), f32(anchor[1] + f32(h * stride)),
                       f32(anchor[2] + f32(w * stride)), f32(anchor[3] + f32(h * stride))]
                offset = image * count * 2 * height * width
                scores.append(flat_scores[offset + ((count + a) * height + h) * width + w])
                deltas = [bbox_pred[image, a * 4 + k, h, w] for k in range(4)]
                boxes.append(decode(box, deltas, im_info[image], cuda))
    return boxes, scores


def decode(box, deltas, info, cuda):
    """BBoxTransformInv for one box."""
    width = f32(float(f32(box[2] - box[0])) + 1.0)
    height = f32(float(f32(box[3] - box[1])) + 1.0)
    ctr_x = f32(float(box[0]) + 0.5 * (float(width) - 1.0))
    ctr_y = f32(float(box[1]) + 0.5 * (float(height) - 1.0))
    dx, dy, dw, dh = (f32(d) for d in deltas)
    pred_ctr_x, pred_ctr_y = f32(f32(dx * width) + ctr_x), f32(f32(dy * height) + ctr_y)
    pred_w = f32(f32(LIBM.expf(float(dw))) * width)
    pred_h = f32(f32(LIBM.expf(float(dh))) * height)
    corners = [f32(float(pred_ctr_x) - 0.5 * (float(pred_w) - 1.0)),
               f32(float(pred_ctr_y) - 0.5 * (float(pred_h) - 1.0)),
               f32(float(pred_ctr_x) + 0.5 * (float(pred_w) - 1.0)),
               f32(float(pred_ctr_y) + 0.5 * (float(pred_h) - 1.0))]
    limits = [f32(info[1] - f32(1)), f32(info[0] - f32(1))] * 2
    low, high = (cuda_max, cuda_min) if cuda else (c_max, c_min)
    return [f32(low(high(c, limit), f32(0))) for c, limit in zip(corners, limits)]


def iou(box, area, other, other_area, cuda):
    low, high = (cuda_max, cuda_min) if cuda else (c_max, c_min)
    w = c_max(f32(0), f32(f32(high(box[2], other[2]) - low(box[0], other[0])) + f32(1)))
    h = c_max(f32(0), f32(f32(high(box[3], other[3]) - low(box[1], other[1])) + f32(1)))
    inter = f32(w * h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return f32(inter / f32(f32(area + other_area) - inter))


# -- MultiProposal: the CPU code --------------------------------------------------------------

def multi_proposal(cls_prob, bbox_pred, im_info, post, stride, ratios, scales, rand):
    """MultiProposal's CPU forward; ``rand()`` draws the padding."""
    rois, out_scores = [], []
    for image in range(bbox_pred.shape[0]):
        boxes, scores = chip_boxes(cls_prob, bbox_pred, im_info, image, stride, ratios, scales,
                                   cuda=False)
        for box, k in ((b, i) for i, b in enumerate(boxes)):  # FilterBox(3.0f)
            if f32(f32(box[2] - box[0]) + f32(1)) < 3 or f32(f32(box[3] - box[1]) + f32(1)) < 3:
                box[0], box[1] = f32(box[0] - f32(1.5)), f32(box[1] - f32(1.5))
                box[2], box[3] = f32(box[2] + f32(1.5)), f32(box[3] + f32(1.5))
                scores[k] = f32(-1)
        areas = [f32(f32(f32(b[2] - b[0]) + f32(1)) * f32(f32(b[3] - b[1]) + f32(1)))
                 for b in boxes]
        order = sorted(range(len(boxes)), key=lambda i: (-scores[i] if scores[i] == scores[i]
                                                         else math.inf, i))[:12000]
        live = {i: scores[i] != -1 and scores[i] == scores[i] for i in order}
        kept = []
        for position, i in enumerate(order):
            if len(kept) >= post:
                break
            if not live[i]:
                continue
            kept.append(i)
            for j in order[position + 1:]:
                if live[j] and iou(boxes[i], areas[i], boxes[j], areas[j], False) > 0.7:
                    live[j] = False
        for i in kept:
            rois.append([image] + boxes[i])
            out_scores.append(scores[i])
        for _ in range(post - len(kept)):
            rois.append([image, rand() % 100, rand() % 100, 200 + rand() % 200,
                         200 + rand() % 200])
            out_scores.append(0)
    return np.array(rois, np.float32), np.array(out_scores, np.float32)


# -- MultiProposalTarget(Mask): the CUDA kernels and their host code ---------------------------

def cuda_chip(cls_prob, bbox_pred, im_info, valid_ranges, image, stride, ratios, scales):
    """getProps for one chip: boxes, scores and areas after its filters."""
    boxes, scores = chip_boxes(cls_prob, bbox_pred, im_info, image, stride, ratios, scales,
                               cuda=True)
    low, high = valid_ranges[image]
    areas = []
    for k, box in enumerate(boxes):
        if f32(box[3] - box[1]) < 3 and f32(box[2] - box[0]) < 3:
            box[0], box[1] = f32(box[0] - f32(1)), f32(box[1] - f32(1))
            box[2], box[3] = f32(box[2] + f32(1)), f32(box[3] + f32(1))
            scores[k] = f32(-1)
        area = f32(f32(box[2] - box[0]) * f32(box[3] - box[1]))
        if area >= f32(high * high) or area < f32(low * low):
            scores[k] = f32(-1)
        areas.append(area)
    return boxes, scores, areas


def select_nms(boxes, scores, areas, post, candidates=None):
    """The CUDA NMS: the best remaining box each step, until none but -1 is left."""
    indices = sorted(range(len(boxes)), key=lambda i: (-scores[i] if scores[i] == scores[i]
                                                       else math.inf, i))[:candidates]
    score = {i: (scores[i] if scores[i] == scores[i] else f32(-1)) for i in indices}
    kept = []
    while len(kept) < post and indices:
        best = max(indices, key=lambda i: (score[i], -i))
        if score[best] == -1:
            break
        kept.append(best)
        indices.remove(best)
        for other in indices:
            if score[other] != -1 and iou(boxes[best], areas[best], boxes[other],
                                          areas[other], True) > 0.7:
                score[other] = f32(-1)
    return kept


def targets(rois, gt):
    """The host code's labels, targets, weights and matched gt row of one chip's rois."""
    labels = [f32(0)] * len(rois)
    box_targets = [[f32(1)] * 4 for _ in rois]
    weights = [[f32(0)] * 4 for _ in rois]
    matched = [-1] * len(rois)
    best = [f32(0)] * len(rois)
    count = sum(1 for row in gt if row[4] != -1)
    for i in range(count):
        x1, y1, x2, y2, label = (f32(v) for v in gt[i])
        gt_area = f32(f32(x2 - x1) * f32(y2 - y1))
        for j, roi in enumerate(rois):
            inter_w = c_max(f32(0), f32(f32(c_min(x2, roi[2]) - c_max(x1, roi[0])) + f32(1)))
            inter_h = c_max(f32(0), f32(f32(c_min(y2, roi[3]) - c_max(y1, roi[1])) + f32(1)))
            roi_area = f32(f32(roi[2] - roi[0]) * f32(roi[3] - roi[1]))
            inter = f32(inter_w * inter_h)
            with np.errstate(divide="ignore", invalid="ignore"):
                overlap = f32(inter / f32(f32(gt_area + roi_area) - inter))
            if overlap > best[j] and overlap > 0.5:
                best[j], matched[j], labels[j] = overlap, i, label
    for j, roi in enumerate(rois):
        if matched[j] >= 0:
            g = [f32(v) for v in gt[matched[j]]]
            gw, gh = f32(f32(g[2] - g[0]) + f32(1)), f32(f32(g[3] - g[1]) + f32(1))
            gcx, gcy = f32(float(g[0]) + float(gw) * 0.5), f32(float(g[1]) + float(gh) * 0.5)
            pw, ph = f32(f32(roi[2] - roi[0]) + f32(1)), f32(f32(roi[3] - roi[1]) + f32(1))
            pcx = f32(float(roi[0]) + float(f32(pw - f32(1))) * 0.5)
            pcy = f32(float(roi[1]) + float(f32(ph - f32(1))) * 0.5)
            box_targets[j] = [f32(float(f32(f32(10) * f32(gcx - pcx))) / (float(pw) + 1e-7)),
                              f32(float(f32(f32(10) * f32(gcy - pcy))) / (float(ph) + 1e-7)),
                              f32(5 * math.log(float(gw) / (float(pw) + 1e-7))),
                              f32(5 * math.log(float(gh) / (float(ph) + 1e-7)))]
            weights[j] = [f32(1)] * 4
    return labels, box_targets, weights, matched


def multi_proposal_target(inputs, post, stride, ratios, scales, mask=False, max_masks=None):
    """MultiProposalTarget's CUDA forward (``mask=False``) or MultiProposalTargetMask's."""
    cls_prob, bbox_pred, im_info, gt_boxes, valid_ranges = inputs
    chip_anchors = bbox_pred.shape[1] // 4 * bbox_pred.shape[2] * bbox_pred.shape[3]
    out = [[], [], [], [], []]
    for image in range(bbox_pred.shape[0]):
        boxes, scores, areas = cuda_chip(cls_prob, bbox_pred, im_info, valid_ranges, image,
                                         stride, ratios, scales)
        kept = select_nms(boxes, scores, areas, post, 6000 if mask else None)
        rois = [list(boxes[i]) for i in kept]
        for row in range(len(kept), post):
            k = row if mask else image * chip_anchors + row
            rois.append([f32(k % 100), f32(k % 100), f32(k % 100 + 200), f32(k % 100 + 200)])
        gt, (low, high) = gt_boxes[image], valid_ranges[image]
        if mask:
            for t in range(min(post, len(gt))):
                area = f32(f32(gt[t][2] - gt[t][0]) * f32(gt[t][3] - gt[t][1]))
                if gt[t][4] != -1 and f32(low * low) <= area < f32(high * high):
                    rois[post - t - 1] = list(gt[t][:4])
        else:
            count = sum(1 for row in gt if row[4] != -1)
            for j in range(count):
                area = f32(f32(gt[j][2] - gt[j][0]) * f32(gt[j][3] - gt[j][1]))
                if post - count + j >= 0 and f32(low * low) <= area <= f32(high * high):
                    rois[post - count + j] = list(gt[j][:4])
        labels, box_targets, weights, matched = targets(rois, gt)
        out[0] += [[image] + roi for roi in rois]
        out[1] += [[label] for label in labels]
        out[2] += box_targets
        out[3] += weights
        out[4] += matched
    result = [np.array(part, np.float32) for part in out[:4]]
    if not mask:
        return tuple(result)
    images = bbox_pred.shape[0]
    mask_rois, mask_ids = [], []
    for i, label in enumerate(out[1]):
        if label[0] > 0 and len(mask_rois) < images * max_masks:
            mask_rois.append(out[0][i])
            mask_ids.append([out[4][i]])
    for i in range(len(mask_rois), images * max_masks):
        mask_rois.append([i % images, i % 200, i % 200, i % 200 + 100, i % 200 + 100])
        mask_ids.append([-1])
    return tuple(result) + (np.array(mask_rois, np.float32), np.array(mask_ids, np.float32))
