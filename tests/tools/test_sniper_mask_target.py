"""SNIPER's ``MaskRcnnTarget`` drop-in against a loop reference of its CUDA host code and of
the COCO API's ``rleFrPoly`` + ``rleDecode`` it calls (SNIPER-mxnet's
``src/operator/mask_rcnn_target.cu`` and ``src/coco_api/common/maskApi.c``).

The reference encodes run lengths as the C does (sorted boundary positions, differences, a
zero difference merged into the run before it) and decodes them; the drop-in flips a parity
instead: two independent ways to the same bits. Masks are 0/1, compared exactly.
"""

import math

import mxnet as mx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from python_loss import python_loss

from mxpatch_bind._family_ops.polygons import polygon_mask
from mxpatch_bind.compat import MaskRcnnTarget, OperatorArgumentError

f32 = np.float32


# -- The reference ------------------------------------------------------------------------------

def reference_rle_from_polygon(xy, h, w):
    """rleFrPoly: the run lengths of the polygon ``xy`` (a flat list x0, y0, x1, y1, ...)."""
    k, scale = len(xy) // 2, 5.0
    x = [int(scale * xy[2 * j] + .5) for j in range(k)] + [int(scale * xy[0] + .5)]
    y = [int(scale * xy[2 * j + 1] + .5) for j in range(k)] + [int(scale * xy[1] + .5)]
    u, v = [], []
    for j in range(k):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            s = (ye - ys) / dx if dx else 0.0  # the C divides 0 by 0: its v is never read
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + xs), v.append(int(ys + s * t + .5))
        else:
            s = (xe - xs) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + ys), u.append(int(xs + s * t + .5))
    points = []
    for j in range(1, len(u)):
        if u[j] != u[j - 1]:
            xd = (u[j] if u[j] < u[j - 1] else u[j] - 1)
            xd = (xd + .5) / scale - .5
            if math.floor(xd) != xd or xd < 0 or xd > w - 1:
                continue
            yd = (v[j] if v[j] < v[j - 1] else v[j - 1])
            yd = (yd + .5) / scale - .5
            yd = math.ceil(0 if yd < 0 else h if yd > h else yd)
            points.append(int(xd) * h + int(yd))
    a = sorted(points + [h * w])
    diffs = [a[0]] + [a[j] - a[j - 1] for j in range(1, len(a))]
    runs, j = [diffs[0]], 1
    while j < len(diffs):
        if diffs[j] > 0:
            runs.append(diffs[j])
            j += 1
        else:
            j += 1
            if j < len(diffs):
                runs[-1] += diffs[j]
                j += 1
    return runs


def reference_decode(runs):
    """rleDecode: zeros, ones, zeros, ... of the run lengths (column-major)."""
    bits, value = [], 0
    for run in runs:
        bits += [value] * run
        value = 1 - value
    return bits


def reference_targets(rois, polys, ids, size, ignore):
    """MaskRcnnTargetGPUOp::Forward's host loop with convertPoly2Mask."""
    count = len(rois)
    targets = np.full((count, size, size), ignore, np.float32)
    classes = np.zeros((count, size, size), np.float32)
    for i in range(count):
        mask_id = int(ids.reshape(-1)[i])
        if mask_id == -1:
            continue
        roi, poly = rois[i], polys[int(rois[i][0]), mask_id]
        w = max(f32(1), f32(roi[3] - roi[1]))
        h = max(f32(1), f32(roi[4] - roi[2]))
        n_seg, offset, union = int(poly[1]), 2 + int(poly[1]), [0] * size * size
        for seg in range(n_seg):
            length = int(poly[seg + 2])
            xys = []
            for j in range(length):
                if j % 2 == 0:  # SNIPER puts y first: COCO's column-major mask is then (y, x)
                    xys.append(float(f32(f32(f32(poly[offset + j + 1] - roi[2]) * size) / h)))
                else:
                    xys.append(float(f32(f32(f32(poly[offset + j - 1] - roi[1]) * size) / w)))
            bits = reference_decode(reference_rle_from_polygon(xys[:length // 2 * 2], size,
                                                               size))
            union = [a or b for a, b in zip(union, bits)] if length >= 2 else union
            offset += length
        targets[i] = np.array(union, np.float32).reshape(size, size)
        classes[i] = poly[0]
    return targets, classes


# -- The rasterizer --------------------------------------------------------------------------------

@given(st.integers(1, 24), st.integers(1, 24), st.lists(
    st.tuples(st.floats(-6, 30), st.floats(-6, 30)), min_size=1, max_size=9),
    st.booleans())
def test_the_rasterizer_gives_the_coco_apis_bits(h, w, vertices, half_pixels):
    xy = np.array(vertices, np.float64)
    if half_pixels:
        xy = np.round(xy * 2) / 2  # vertices on pixel centres and edges, where rounding bites
    expected = reference_decode(reference_rle_from_polygon(xy.ravel().tolist(), h, w))
    assert polygon_mask(xy, h, w).tolist() == expected


def test_a_square_on_pixel_centres_covers_the_pixels_cocos_rule_gives():
    square = np.array([[1.0, 1.0], [4.0, 1.0], [4.0, 4.0], [1.0, 4.0]])
    mask = polygon_mask(square, 6, 6).reshape(6, 6).T  # COCO's columns first: rows are y
    assert mask.sum() == 9 and mask[1:4, 1:4].all()


# -- The operator ------------------------------------------------------------------------------------

def polygon_rows():
    """Polygon rows [class, n, len..., coords...]: one and two polygons, a repeated vertex."""
    rows = np.zeros((2, 3, 40), np.float32)
    rows[0, 0, :11] = [3, 1, 8, 10, 12, 30, 14, 28, 30, 8, 26]           # a quadrilateral
    rows[0, 1, :16] = [5, 2, 6, 6, 0, 0, 20, 0, 0, 20, 30, 30, 40, 30, 30, 40]  # two triangles
    rows[1, 0, :9] = [2, 1, 6, 20, 20, 20, 20, 35, 20]                 # a repeated vertex
    rows[1, 2, :10] = [7, 1, 7, 10, 10, 25, 12, 18, 30, 5]            # an odd length: 3 points
    return rows


def run(rois, polys, ids, **params):
    symbol = mx.sym.Group(list(MaskRcnnTarget(mx.sym.Variable("rois"), mx.sym.Variable("polys"),
                                              mx.sym.Variable("ids"), **params)))
    executor = symbol.simple_bind(mx.cpu(0), rois=rois.shape, polys=polys.shape, ids=ids.shape)
    executor.forward(is_train=True, rois=rois, polys=polys, ids=ids)
    return [output.asnumpy() for output in executor.outputs]


ROIS = np.array([[0, 5, 5, 35, 30], [0, 0, 0, 45, 45], [1, 15, 15, 40, 25], [1, 8, 6, 8, 6],
                 [0, -10, 3, 20, 50], [1, 0, 0, 30, 30]], np.float32)
IDS = np.array([[0], [1], [0], [0], [-1], [2]], np.float32)


@pytest.mark.parametrize("size", [7, 28])
def test_the_targets_equal_the_cuda_host_code(size):
    polys = polygon_rows()
    ours = run(ROIS, polys, IDS, mask_size=size, num_proposals=3, batch_size=2)
    expected = reference_targets(ROIS, polys, IDS, size, -1)
    for mine, theirs in zip(ours, expected):
        np.testing.assert_array_equal(mine, theirs)
    assert ours[0][:4].max() == 1 and ours[0][:4].sum() > 0


def test_a_roi_without_a_mask_is_ignored_everywhere_with_class_zero():
    targets, classes = run(ROIS, polygon_rows(), IDS, mask_size=5, ignore_label=-2,
                           num_proposals=3)
    assert (targets[4] == -2).all() and not classes[4].any()
    assert (classes[0] == 3).all() and (classes[1] == 5).all()


@pytest.mark.parametrize("row", [
    [4, 3, 6, 6],                   # three polygons announced, two lengths fit, none drawn
    [4, 1, 200, 0, 0, 9, 9, 0, 9],  # a length past the row
    [4, 1, -6, 0, 0, 9, 0, 9, 9],   # a negative length
])
def test_a_malformed_polygon_row_gives_an_empty_mask_of_its_class(row):
    polys = np.zeros((1, 1, 40), np.float32)
    polys[0, 0, :len(row)] = row
    polys[0, 0, len(row):] = 1e9 if row[1] == 3 else 0  # lengths past the header
    targets, classes = run(np.array([[0, 0, 0, 10, 10]], np.float32), polys,
                           np.zeros((1, 1), np.float32), mask_size=4, num_proposals=1)
    assert not targets.any() and (classes == 4).all()


@pytest.mark.parametrize("mask_id, image", [(3, 0), (5, 0), (-3, 0), (0, 2), (1, 1),
                                            (np.nan, 0)])
def test_an_id_or_image_outside_the_inputs_counts_as_no_mask(mask_id, image):
    targets, classes = run(np.array([[image, 0, 0, 10, 10]], np.float32), polygon_rows()[:1],
                           np.array([[mask_id]], np.float32), mask_size=4, num_proposals=1)
    assert (targets == -1).all() and not classes.any()


def test_no_gradient_flows_back_through_the_targets():
    symbol = mx.sym.Group(list(MaskRcnnTarget(*(mx.sym.Variable(n) for n in "abc"),
                                              mask_size=4, num_proposals=3)))
    executor = symbol.simple_bind(mx.cpu(0), a=(6, 5), b=(2, 3, 40), c=(6, 1))
    executor.forward(is_train=True, a=ROIS, b=polygon_rows(), c=IDS)
    executor.backward([mx.nd.ones(o.shape) for o in executor.outputs])
    assert not any(grad.asnumpy().any() for grad in executor.grad_arrays)


def test_snipers_call_builds_its_outputs_and_shapes():
    targets, classes = MaskRcnnTarget(rois=mx.sym.Variable("mask_rois"),
                                      mask_polys=mx.sym.Variable("gt_masks"),
                                      mask_ids=mx.sym.Variable("mask_ids"), batch_size=2,
                                      mask_size=28, num_proposals=50, max_polygon_len=500,
                                      max_num_gts=100, num_classes=80, name="mask_target")
    assert classes.list_outputs() == ["mask_target_mask_cls"]
    assert classes.infer_shape(mask_rois=(100, 5), gt_masks=(2, 100, 500),
                               mask_ids=(100, 1))[1] == [(100, 28, 28)]


def test_shapes_that_do_not_match_num_proposals_fail_at_shape_inference(capfd):
    symbol = MaskRcnnTarget(*(mx.sym.Variable(n) for n in "abc"), num_proposals=50)
    with pytest.raises(mx.base.MXNetError):
        symbol[0].infer_shape(a=(60, 5), b=(2, 100, 500), c=(60, 1))
    printed = capfd.readouterr()
    assert "num_proposals = 50; got rois (60, 5)" in printed.out + printed.err


@pytest.mark.parametrize("arguments, named", [
    (dict(mask_size=0), "mask_size.*got 0"), (dict(num_proposals=2.0), "num_proposals.*2.0"),
    (dict(ignore_label=0.5), "ignore_label.*0.5"), (dict(max_num_gts=-1), "max_num_gts"),
])
def test_parameters_snipers_operator_refuses_are_refused_with_the_value(arguments, named):
    with pytest.raises(OperatorArgumentError, match=named):
        MaskRcnnTarget(*(mx.sym.Variable(n) for n in "abc"), **arguments)


def test_the_backward_runs_under_a_python_loss_declared_after_the_operator():
    # MXNet reads every Python operator's backward arrays through the dependencies the last
    # declared one gave: with none declared here, the loss's made this backward fail with
    # 'unknown storage type: -1'. The targets reach the loss, and no gradient flows back.
    polys = polygon_rows()
    params = dict(mask_size=7, num_proposals=3, batch_size=2)
    inputs = dict(rois=ROIS, polys=polys, ids=IDS)
    targets = MaskRcnnTarget(*(mx.sym.Variable(n) for n in inputs), **params)
    loss = python_loss(targets[0])
    executor = loss.simple_bind(mx.cpu(0), grad_req="write", target=(6, 7, 7),
                                **{n: a.shape for n, a in inputs.items()})
    for grad in executor.grad_arrays:
        grad[:] = 2.0
    executor.forward(is_train=True, target=np.zeros((6, 7, 7), np.float32), **inputs)
    executor.backward()
    # Read before the next bind: that declares the operator again, and the backward runs late.
    gradients = [executor.grad_dict[n].asnumpy() for n in inputs]
    masks = executor.outputs[0].asnumpy()
    assert all((gradient == 0).all() for gradient in gradients)
    np.testing.assert_array_equal(masks, run(ROIS, polys, IDS, **params)[0])
