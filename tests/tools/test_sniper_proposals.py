"""SNIPER's ``MultiProposal``, ``MultiProposalTarget`` and ``MultiProposalTargetMask`` drop-ins
against the loop reference of ``sniper_reference.py`` (written from SNIPER-mxnet's C++ and
CUDA), including chips with no ground truth, no proposal left, degenerate and padding boxes,
ties and NaN scores. Both sides round every step to float32 the same way: compared exactly.
"""

import ctypes
import ctypes.util

import mxnet as mx
import numpy as np
import pytest
import sniper_reference as reference
from hypothesis import given
from hypothesis import strategies as st
from python_loss import python_loss

from mxpatch_bind._family_ops.crand import PROCESS_RAND, CRand
from mxpatch_bind.compat import (
    MultiProposal,
    MultiProposalTarget,
    MultiProposalTargetMask,
    OperatorArgumentError,
)

ANCHORS = dict(feature_stride=16, ratios=(0.5, 1.0, 2.0), scales=(2.0, 4.0))
LIBC = ctypes.CDLL(ctypes.util.find_library("c"))


def chips(seed, images=2, height=4, width=5, anchors=6, gt_rows=4, tied=False):
    """Inputs for ``images`` chips: softmax-like scores (rounded to tenths for ties), small
    deltas, image sizes, ground truth with SNIPER's -1 padding rows, valid ranges."""
    rng = np.random.RandomState(seed)
    scores = rng.rand(images, 2, anchors * height, width).astype(np.float32)
    if tied:
        scores = np.round(scores, 1)
    deltas = (rng.randn(images, 4 * anchors, height, width) * 0.4).astype(np.float32)
    im_info = np.array([[height * 16 + 5, width * 16 - 3, 1.0]] * images, np.float32)
    gt = np.full((images, gt_rows, 5), -1, np.float32)
    for image in range(images):
        for row in range(rng.randint(1, gt_rows)):
            x1, y1 = rng.uniform(0, 40, 2)
            gt[image, row] = [x1, y1, x1 + rng.uniform(8, 40), y1 + rng.uniform(8, 40),
                              rng.randint(1, 5)]
    ranges = np.array([[0, 10000]] * images, np.float32)
    return [scores, deltas, im_info, gt, ranges]


def run(function, arrays, **params):
    """The drop-in bound as a Symbol on cpu(0), forward in training mode: its outputs."""
    names = ["cls_prob", "bbox_pred", "im_info", "gt_boxes", "valid_ranges"][:len(arrays)]
    symbol = mx.sym.Group(list(function(**{n: mx.sym.Variable(n) for n in names}, **params)))
    executor = symbol.simple_bind(mx.cpu(0), grad_req="write",
                                  **{n: a.shape for n, a in zip(names, arrays)})
    executor.forward(is_train=True, **dict(zip(names, arrays)))
    return [output.asnumpy() for output in executor.outputs], executor


def assert_outputs_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_array_equal(mine, expected)


# -- glibc's rand(), which MultiProposal's padding draws from ----------------------------------

@pytest.mark.parametrize("seed", [1, 0, 7, 12345, 2 ** 31 - 1])
def test_the_generator_returns_what_glibc_rand_returns(seed):
    LIBC.srand(seed)
    ours = CRand(seed)
    assert [ours.rand() for _ in range(2000)] == [LIBC.rand() for _ in range(2000)]


def test_the_size_deltas_go_through_the_c_librarys_expf_and_without_it_exp_in_double(
        monkeypatch):
    from mxpatch_bind._family_ops import proposals
    deltas = np.random.RandomState(19).uniform(-8, 8, 3000).astype(np.float32)
    expected = [reference.LIBM.expf(float(d)) for d in deltas]
    assert proposals.expf(deltas).tolist() == [float(np.float32(e)) for e in expected]
    monkeypatch.setattr(proposals, "_EXPF", None)
    np.testing.assert_array_equal(proposals.expf(deltas),
                                  np.exp(deltas.astype(np.float64)).astype(np.float32))


# -- MultiProposal ------------------------------------------------------------------------------

def multi_proposal_reference(arrays, post):
    LIBC.srand(1)
    scores, deltas, im_info = arrays
    return reference.multi_proposal(scores, deltas, im_info, post, ANCHORS["feature_stride"],
                                    ANCHORS["ratios"], ANCHORS["scales"], LIBC.rand)


@pytest.mark.parametrize("seed, post, tied", [(0, 20, False), (1, 150, False), (2, 30, True)])
def test_multi_proposal_equals_the_cpu_code_padding_included(seed, post, tied):
    arrays = chips(seed, tied=tied)[:3]
    arrays[0] = arrays[0].reshape(2, 12, 4, 5)  # SNIPER's rpn_cls_prob_reshape (N, 2A, H, W)
    PROCESS_RAND.seed(1)
    ours, _ = run(MultiProposal, arrays, rpn_post_nms_top_n=post, **ANCHORS)
    assert_outputs_equal(ours, multi_proposal_reference(arrays, post))
    assert ours[1].shape == (2 * post,)


def test_multi_proposal_with_every_box_too_small_is_all_padding_scored_zero():
    arrays = chips(3)[:3]
    arrays[1][:] = -8.0  # exp(-8): every box shrinks below 3 pixels
    PROCESS_RAND.seed(1)
    (rois, scores), _ = run(MultiProposal, arrays, rpn_post_nms_top_n=5, **ANCHORS)
    assert not scores.any() and (rois[:, 3] >= 200).all()
    assert_outputs_equal([rois, scores], multi_proposal_reference(arrays, 5))


def test_stock_contrib_multi_proposal_is_another_operator():
    cls_prob, bbox_pred, im_info = (mx.nd.array(a) for a in chips(4)[:3])
    cls_prob = cls_prob.reshape((2, 12, 4, 5))
    with pytest.raises(mx.base.MXNetError, match="batch_size"):
        mx.nd.contrib.MultiProposal(cls_prob, bbox_pred, im_info, batch_size=2, **ANCHORS)
    stock = mx.nd.contrib.MultiProposal(cls_prob, bbox_pred, im_info, output_score=True,
                                        rpn_post_nms_top_n=20, **ANCHORS)
    ours = MultiProposal(cls_prob, bbox_pred, im_info, rpn_post_nms_top_n=20, **ANCHORS)
    assert stock[1].shape == (40, 1) and ours[1].shape == (40,)
    assert not np.array_equal(stock[0].asnumpy(), ours[0].asnumpy())


# -- MultiProposalTarget ------------------------------------------------------------------------

@pytest.mark.parametrize("seed, post, tied", [(5, 40, False), (6, 12, True), (7, 300, False)])
def test_multi_proposal_target_equals_the_cuda_code(seed, post, tied):
    arrays = chips(seed, tied=tied)
    ours, _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=post, **ANCHORS)
    assert_outputs_equal(ours, reference.multi_proposal_target(arrays, post, **_reference_args()))


def _reference_args():
    return dict(stride=ANCHORS["feature_stride"], ratios=ANCHORS["ratios"],
                scales=ANCHORS["scales"])


def test_a_chip_without_ground_truth_has_background_labels_and_no_box_weights():
    arrays = chips(8)
    arrays[3][1] = -1  # chip 1: padding rows only
    (rois, label, target, weight), _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=30,
                                           **ANCHORS)
    assert not label[30:].any() and not weight[30:].any() and (target[30:] == 1).all()
    assert label[:30].any()  # chip 0's ground truth is among its rois
    assert_outputs_equal([rois, label, target, weight],
                         reference.multi_proposal_target(arrays, 30, **_reference_args()))


def test_a_row_of_class_minus_one_among_the_counted_ones_gives_the_ignore_label():
    arrays = chips(9, images=1)
    arrays[3][0] = -1
    arrays[3][0, 0] = [10, 10, 60, 50, -1]  # counted as padding, but read: SNIPER counts the
    arrays[3][0, 1] = [5, 5, 40, 40, 2]     # rows of a class, then reads that many first rows
    outputs, _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=25, **ANCHORS)
    labels = outputs[1].ravel()
    assert outputs[0][-1, 1:].tolist() == [10, 10, 60, 50] and labels[-1] == -1
    assert set(labels.tolist()) <= {0.0, -1.0}
    assert_outputs_equal(outputs, reference.multi_proposal_target(arrays, 25,
                                                                  **_reference_args()))


@pytest.mark.parametrize("case", ["no proposal left", "ranges exclude every box",
                                  "degenerate ground truth", "more ground truth than rois",
                                  "nan scores"])
def test_the_odd_chips_equal_the_cuda_code(case):
    arrays = chips(10, gt_rows=6)
    post = 8
    if case == "no proposal left":
        arrays[1][:] = -8.0
    elif case == "ranges exclude every box":
        arrays[4][:] = [[5000, 6000], [0, 2]]
    elif case == "degenerate ground truth":
        arrays[3][:, :3] = [[20, 20, 20, 20, 1], [30, 40, 10, 5, 2], [0, 0, 0, 30, 3]]
    elif case == "more ground truth than rois":
        post = 3
        arrays[3][:, :, :] = [[8 * k, 8 * k, 8 * k + 30, 8 * k + 30, 1] for k in range(6)]
    else:
        arrays[0][0, 1, ::2] = np.nan
    ours, _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=post, **ANCHORS)
    assert_outputs_equal(ours, reference.multi_proposal_target(arrays, post,
                                                               **_reference_args()))


def anchors_in_place(images=1):
    """Zero deltas: each proposal is its anchor, clipped; ratio 1, scale 2: 32 x 32 anchors,
    whose area without the + 1 is 31 * 31 = 961."""
    arrays = chips(16, images=images, anchors=2)
    arrays[1][:] = 0
    arrays[2][:] = [[200, 200, 1]] * images
    return arrays


BOUNDARY = dict(feature_stride=16, ratios=(1.0,), scales=(2.0, 4.0))


def test_a_box_whose_area_is_the_upper_bound_squared_is_dropped_and_the_lower_kept():
    arrays = anchors_in_place()
    arrays[3][:] = -1

    def areas(valid_range):
        arrays[4][:] = [valid_range]
        (rois, _, _, _), _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=40, **BOUNDARY)
        return ((rois[:, 3] - rois[:, 1]) * (rois[:, 4] - rois[:, 2])).tolist()

    assert 961.0 in areas([31, 61])  # [961, 3721): the whole scale-2 anchors are in
    assert 961.0 not in areas([0, 31])  # [0, 961): now out


@pytest.mark.parametrize("function, placed", [(MultiProposalTarget, True),
                                              (MultiProposalTargetMask, False)])
def test_ground_truth_of_area_exactly_the_upper_bound_squared_is_placed_by_one_operator_only(
        function, placed):
    # MultiProposalTarget's host code keeps area <= hi², MultiProposalTargetMask's area < hi².
    arrays = anchors_in_place()
    arrays[3][:] = -1
    arrays[3][0, 0] = [100, 100, 131, 131, 1]  # area 31 * 31
    arrays[4][:] = [[0, 31]]
    outputs, _ = run(function, arrays, rpn_post_nms_top_n=5, **BOUNDARY,
                     **({"max_gts": 4} if function is MultiProposalTargetMask else {}))
    assert (outputs[0][-1, 1:].tolist() == [100, 100, 131, 131]) == placed


def test_of_two_ground_truth_boxes_overlapping_a_roi_equally_the_first_gives_its_label():
    arrays = chips(17, images=1)
    arrays[3][:] = -1
    arrays[3][0, :2] = [[10, 10, 60, 50, 3], [10, 10, 60, 50, 4]]  # the same box, two classes
    outputs, _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=30, **ANCHORS)
    labels = outputs[1].ravel()
    assert 3 in labels and 4 not in labels


def test_mask_rois_leave_out_the_rois_labelled_to_be_ignored():
    arrays = chips(18, images=1)
    arrays[3][:] = -1
    # Two rows of a class: SNIPER reads the first two, the first of which has the ignore label.
    arrays[3][0, :3] = [[10, 10, 60, 50, -1], [100, 100, 150, 140, 2], [5, 100, 40, 140, 3]]
    (_, label, _, _, mask_rois, mask_ids), _ = run(
        MultiProposalTargetMask, arrays, rpn_post_nms_top_n=30, max_gts=4, max_masks=30,
        **ANCHORS)
    assert (label == -1).any() and (label == 2).any()
    assert set(mask_ids.ravel().tolist()) == {1.0, -1.0}
    assert (mask_ids != -1).sum() == (label == 2).sum()


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_no_gradient_flows_back_through_the_targets(grad_req):
    arrays = chips(11)
    symbol = mx.sym.Group(list(MultiProposalTarget(
        *(mx.sym.Variable(n) for n in "abcde"), rpn_post_nms_top_n=10, **ANCHORS)))
    executor = symbol.simple_bind(mx.cpu(0), grad_req=grad_req,
                                  **{n: a.shape for n, a in zip("abcde", arrays)})
    for grad in executor.grad_arrays:
        grad[:] = 2.0
    executor.forward(is_train=True, **dict(zip("abcde", arrays)))
    executor.backward([mx.nd.ones(o.shape) for o in executor.outputs])
    expected = 0.0 if grad_req == "write" else 2.0
    assert all((grad.asnumpy() == expected).all() for grad in executor.grad_arrays)


@st.composite
def small_chips(draw):
    return (draw(st.integers(0, 2 ** 31 - 1)), draw(st.integers(1, 3)), draw(st.integers(1, 4)),
            draw(st.integers(1, 4)), draw(st.integers(1, 50)), draw(st.booleans()))


@given(small_chips())
def test_both_target_operators_agree_with_the_cuda_code_on_any_small_batch(case):
    seed, images, height, width, post, tied = case
    arrays = chips(seed, images, height, width, tied=tied)
    ours, _ = run(MultiProposalTarget, arrays, rpn_post_nms_top_n=post, **ANCHORS)
    assert_outputs_equal(ours, reference.multi_proposal_target(arrays, post,
                                                               **_reference_args()))
    ours, _ = run(MultiProposalTargetMask, arrays, rpn_post_nms_top_n=post, max_gts=4,
                  max_masks=3, **ANCHORS)
    assert_outputs_equal(ours, reference.multi_proposal_target(
        arrays, post, mask=True, max_masks=3, **_reference_args()))


# -- MultiProposalTargetMask ---------------------------------------------------------------------

@pytest.mark.parametrize("seed, post, max_masks", [(12, 40, 5), (13, 300, 50), (14, 6, 1)])
def test_multi_proposal_target_mask_equals_the_cuda_code(seed, post, max_masks):
    arrays = chips(seed)
    ours, _ = run(MultiProposalTargetMask, arrays, rpn_post_nms_top_n=post, max_gts=4,
                  max_masks=max_masks, **ANCHORS)
    assert_outputs_equal(ours, reference.multi_proposal_target(
        arrays, post, mask=True, max_masks=max_masks, **_reference_args()))


def test_mask_rois_are_the_batchs_foreground_rois_with_their_ground_truth_rows():
    arrays = chips(15)
    (rois, label, _, _, mask_rois, mask_ids), _ = run(
        MultiProposalTargetMask, arrays, rpn_post_nms_top_n=20, max_gts=4, max_masks=50,
        **ANCHORS)
    foreground = np.flatnonzero(label.ravel() > 0)
    np.testing.assert_array_equal(mask_rois[:len(foreground)], rois[foreground])
    assert (mask_ids[len(foreground):] == -1).all()
    assert mask_rois[len(foreground):, 0].tolist() == [
        k % 2 for k in range(len(foreground), 100)]


# -- The symbols SNIPER builds --------------------------------------------------------------------

def test_snipers_symbol_calls_unpack_into_its_named_outputs():
    inputs = {n: mx.sym.Variable(n) for n in
              ["cls_prob", "bbox_pred", "im_info", "gt_boxes", "valid_ranges"]}
    rois, label, bbox_target, bbox_weight = MultiProposalTarget(
        **inputs, batch_size=2, name="multi_proposal_target")
    assert label.list_outputs() == ["multi_proposal_target_label"]
    outputs = MultiProposalTargetMask(**inputs, batch_size=2, name="mptm")
    assert [o.list_outputs()[0] for o in outputs][4:] == ["mptm_mask_rois", "mptm_mask_ids"]
    rois, scores = MultiProposal(**{k: inputs[k] for k in ("cls_prob", "bbox_pred", "im_info")},
                                 name="rois", batch_size=1, rpn_pre_nms_top_n=6000,
                                 rpn_post_nms_top_n=300, rpn_min_size=0, threshold=0.7,
                                 ratios=(0.5, 1, 2), scales=(2, 4, 7, 10, 13, 16, 24))
    assert rois.list_outputs() == ["rois_output"] and scores.list_outputs() == ["rois_score"]


@pytest.mark.parametrize("function, arguments, named", [
    (MultiProposal, dict(rpn_post_nms_top_n=0), "rpn_post_nms_top_n.*got 0"),
    (MultiProposal, dict(scales=()), "scales.*got \\(\\)"),
    (MultiProposal, dict(ratios=(1.0, -2.0)), "ratios"),
    (MultiProposal, dict(feature_stride=16.5), "feature_stride.*16.5"),
    (MultiProposalTarget, dict(batch_size=True), "batch_size.*True"),
    (MultiProposalTarget, dict(threshold="0.7"), "threshold.*'0.7'"),
    (MultiProposalTargetMask, dict(max_masks=0), "max_masks.*got 0"),
    (MultiProposalTargetMask, dict(max_gts=None), "max_gts.*None"),
])
def test_parameters_snipers_operators_refuse_are_refused_with_the_value(function, arguments,
                                                                       named):
    inputs = [mx.sym.Variable(n) for n in "abcde"][:3 if function is MultiProposal else 5]
    with pytest.raises(OperatorArgumentError, match=named):
        function(*inputs, **arguments)


def test_inputs_that_do_not_fit_the_anchors_fail_at_shape_inference_naming_them(capfd):
    symbol = MultiProposalTarget(*(mx.sym.Variable(n) for n in "abcde"), **ANCHORS)
    with pytest.raises(mx.base.MXNetError):
        symbol[0].infer_shape(a=(1, 2, 28, 5), b=(1, 28, 4, 5), c=(1, 3), d=(1, 4, 5),
                              e=(1, 2))
    printed = capfd.readouterr()
    assert "A = 6 anchors" in printed.out + printed.err


@pytest.mark.parametrize("function, params", [
    (MultiProposal, dict(rpn_post_nms_top_n=6)),
    (MultiProposalTarget, dict(rpn_post_nms_top_n=6)),
    (MultiProposalTargetMask, dict(rpn_post_nms_top_n=6, max_gts=4, max_masks=6)),
], ids=["MultiProposal", "MultiProposalTarget", "MultiProposalTargetMask"])
def test_the_backward_runs_under_a_python_loss_declared_after_the_operator(function, params):
    # MXNet reads every Python operator's backward arrays through the dependencies the last
    # declared one gave: with none declared here, the loss's made this backward fail with
    # 'unknown storage type: -1'. Its rois reach the loss, and no gradient flows back.
    arrays = chips(5)
    names = ["cls_prob", "bbox_pred", "im_info", "gt_boxes", "valid_ranges"]
    if function is MultiProposal:
        arrays, names = [arrays[0].reshape(2, 12, 4, 5)] + arrays[1:3], names[:3]
    outputs = function(**{n: mx.sym.Variable(n) for n in names}, **params, **ANCHORS)
    loss = python_loss(outputs[0])
    shapes = {n: a.shape for n, a in zip(names, arrays)}
    executor = loss.simple_bind(mx.cpu(0), grad_req="write", target=(12, 5), **shapes)
    for grad in executor.grad_arrays:
        grad[:] = 2.0
    executor.forward(is_train=True, target=np.zeros((12, 5), np.float32),
                     **dict(zip(names, arrays)))
    executor.backward()
    # Read before the next bind: that declares the operator again, and the backward runs late.
    gradients = [executor.grad_dict[n].asnumpy() for n in names]
    rois = executor.outputs[0].asnumpy()
    assert all((gradient == 0).all() for gradient in gradients)
    np.testing.assert_array_equal(rois, run(function, arrays, **params, **ANCHORS)[0][0])
