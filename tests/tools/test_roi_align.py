"""mx-maskrcnn's ``ROIAlign`` drop-in against a NumPy reference of its CUDA kernels.

The reference below is written from mx-maskrcnn's ``rcnn/CXX_OP/roi_align.cu`` (its CPU file
leaves both functions empty): one output element at a time for the forward kernel, one input
pixel at a time for the backward kernel, in float32 scalars with C's promotions (a ``double``
constant, ``3.0`` or ``0.01``, makes that step a double one). Drop-in and reference do the
same float32 operations in the same order, so they are compared exactly, forward and backward.
"""

import math

import mxnet as mx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from python_loss import python_loss

from mxpatch_bind.compat import OperatorArgumentError, ROIAlign

f32 = np.float32
FLT_MAX = f32(np.finfo(np.float32).max)


# -- The reference, written from mx-maskrcnn's CUDA kernels ------------------------------------

def reference_image(roi, num_images):
    """The kernel's ``int roi_batch_ind = rois[0]``; None where no image of the batch is meant
    (negative: the kernel writes 0; at least N or NaN: undefined there, defined as 0 here)."""
    if math.isnan(roi[0]):
        return None
    index = int(roi[0])  # Python's int() truncates toward zero, as C's conversion does
    return index if 0 <= index < num_images else None


def cuda_max(a, b):
    """CUDA's max/min on floats are fmaxf/fminf: a NaN operand loses."""
    return f32(b if math.isnan(a) else a if math.isnan(b) else max(a, b))


def cuda_min(a, b):
    return f32(b if math.isnan(a) else a if math.isnan(b) else min(a, b))


def reference_element(data, roi, c, ph, pw, pooled, scale):
    """ROIAlignForwardKernel for one output element: (value, argmax_x, argmax_y)."""
    height, width = data.shape[2:]
    image = reference_image(roi, data.shape[0])
    if image is None:
        return f32(0), f32(-1), f32(-1)
    start_w, start_h = f32(roi[1] * scale), f32(roi[2] * scale)
    end_w, end_h = f32(roi[3] * scale), f32(roi[4] * scale)
    roi_width = cuda_max(f32(end_w - start_w), f32(1))
    roi_height = cuda_max(f32(end_h - start_h), f32(1))
    bin_h, bin_w = f32(roi_height / f32(pooled[0])), f32(roi_width / f32(pooled[1]))
    hstart, wstart = f32(f32(ph) * bin_h), f32(f32(pw) * bin_w)
    hend, wend = f32(f32(ph + 1) * bin_h), f32(f32(pw + 1) * bin_w)
    hstart = cuda_min(cuda_max(f32(hstart + start_h), f32(0)), f32(height))
    hend = cuda_min(cuda_max(f32(hend + start_h), f32(0)), f32(height))
    wstart = cuda_min(cuda_max(f32(wstart + start_w), f32(0)), f32(width))
    wend = cuda_min(cuda_max(f32(wend + start_w), f32(0)), f32(width))
    maxval = f32(0) if (hend <= hstart or wend <= wstart) else -FLT_MAX
    maxidx_x = maxidx_y = f32(-1)
    plane = data[image, c]
    h_stride = f32(float(f32(hend - hstart)) / 3.0)
    w_stride = f32(float(f32(wend - wstart)) / 3.0)
    h = f32(hstart + h_stride)
    while float(h) <= float(f32(hend - h_stride)) + 0.01:
        w = f32(wstart + w_stride)
        while float(w) <= float(f32(wend - w_stride)) + 0.01:
            hlow = min(max(math.floor(h), 0), height - 1)
            hhigh = min(max(math.ceil(h), 0), height - 1)
            wleft = min(max(math.floor(w), 0), width - 1)
            wright = min(max(math.ceil(w), 0), width - 1)
            alpha = f32(0.5) if hlow == hhigh else f32(f32(h - f32(hlow)) / f32(hhigh - hlow))
            beta = f32(0.5) if wleft == wright else f32(f32(w - f32(wleft)) / f32(wright - wleft))
            one = f32(1)
            value = f32(f32(f32(f32(f32(f32(one - alpha) * f32(one - beta)) * plane[hlow, wleft])
                                + f32(f32(alpha * f32(one - beta)) * plane[hhigh, wleft]))
                            + f32(f32(f32(one - alpha) * beta) * plane[hlow, wright]))
                        + f32(f32(alpha * beta) * plane[hhigh, wright]))
            if value > maxval:
                maxval, maxidx_x, maxidx_y = value, w, h
            w = f32(float(w) + max(float(w_stride), 0.01))
        h = f32(float(h) + max(float(h_stride), 0.01))
    return maxval, maxidx_x, maxidx_y


def reference_forward(data, rois, pooled, scale):
    shape = (len(rois), data.shape[1]) + pooled
    out, arg_x, arg_y = (np.zeros(shape, np.float32) for _ in range(3))
    for index in np.ndindex(*shape):
        r, c, ph, pw = index
        out[index], arg_x[index], arg_y[index] = reference_element(data, rois[r], c, ph, pw,
                                                                   pooled, f32(scale))
    return out, arg_x, arg_y


def reference_pixel_gradient(rois, grad_out, arg_x, arg_y, n, c, h, w, shape, scale):
    """ROIAlignBackwardAccKernel for one input pixel: the sum over ROIs and bins, from 0."""
    height, width = shape[2:]
    gradient = f32(0)
    for roi_n, roi in enumerate(rois):
        if reference_image(roi, shape[0]) != n:
            continue
        start_w, start_h = f32(roi[1] * scale), f32(roi[2] * scale)
        end_w, end_h = f32(roi[3] * scale), f32(roi[4] * scale)
        if not (w > float(start_w) - 1.0 and w < float(end_w) + 1.0
                and h > float(start_h) - 1.0 and h < float(end_h) + 1.0):
            continue
        for ph, pw in np.ndindex(*grad_out.shape[2:]):
            a_x, a_y = arg_x[roi_n, c, ph, pw], arg_y[roi_n, c, ph, pw]
            top = grad_out[roi_n, c, ph, pw]
            hlow = min(max(math.floor(a_y), 0), height - 1)
            hhigh = min(max(math.ceil(a_y), 0), height - 1)
            wleft = min(max(math.floor(a_x), 0), width - 1)
            wright = min(max(math.ceil(a_x), 0), width - 1)
            alpha = f32(0.5) if hlow == hhigh else f32(f32(a_y - f32(hlow)) / f32(hhigh - hlow))
            beta = f32(0.5) if wleft == wright else f32(f32(a_x - f32(wleft)) / f32(wright - wleft))
            one = f32(1)
            if h == hlow and w == wleft:
                gradient = f32(gradient + f32(f32(top * f32(one - alpha)) * f32(one - beta)))
            elif h == hlow and w == wright:
                gradient = f32(gradient + f32(f32(top * f32(one - alpha)) * beta))
            elif h == hhigh and w == wleft:
                gradient = f32(gradient + f32(f32(top * alpha) * f32(one - beta)))
            elif h == hhigh and w == wright:
                gradient = f32(gradient + f32(f32(top * alpha) * beta))
    return gradient


def reference_backward(data, rois, grad_out, pooled, scale):
    _, arg_x, arg_y = reference_forward(data, rois, pooled, scale)
    grad = np.zeros(data.shape, np.float32)
    for n, c, h, w in np.ndindex(*data.shape):
        grad[n, c, h, w] = reference_pixel_gradient(rois, grad_out, arg_x, arg_y, n, c, h, w,
                                                    data.shape, f32(scale))
    return grad


# -- Running the drop-in -----------------------------------------------------------------------

def run_symbol(data, rois, pooled, scale, grad_out=None, context=mx.cpu(0), grad_req="write"):
    """Forward and backward of the Symbol on ``context``: (output, data grad, rois grad)."""
    symbol = ROIAlign(data=mx.sym.Variable("data"), rois=mx.sym.Variable("rois"),
                      pooled_size=pooled, spatial_scale=scale, name="roi_pool")
    executor = symbol.simple_bind(context, grad_req=grad_req, data=data.shape, rois=rois.shape)
    executor.forward(is_train=True, data=data, rois=rois)
    output = executor.outputs[0].asnumpy()
    grad_out = np.ones(output.shape, np.float32) if grad_out is None else grad_out
    executor.backward(out_grads=[mx.nd.array(grad_out, context)])
    return (output, executor.grad_dict["data"].asnumpy(), executor.grad_dict["rois"].asnumpy())


# ROIs of every kind the kernels treat apart, for a (2, C, 9, 11) map at scale 0.5.
ODD_ROIS = np.array([
    [0, 2, 3, 15, 13],      # an ordinary box
    [1, -6, -4, 8, 30],     # partly outside the map
    [0, 7, 7, 7, 7],        # a point: widened to 1 x 1
    [1, 12, 10, 4, 2],      # inverted corners: widened to 1 x 1 too
    [0, 40, 40, 60, 60],    # entirely past the map: every bin clipped to nothing
    [-1, 2, 2, 8, 8],       # a negative batch index: zeros, no gradient
    [2, 2, 2, 8, 8],        # a batch index past the batch (undefined in the kernel)
    [-0.5, 1, 1, 5, 5],     # truncated toward zero: image 0
    [1, 0.3, 0.7, 2.2, 1.9],  # smaller than a bin: many samples, on and off pixel rows
], np.float32)


@pytest.mark.parametrize("pooled", [(1, 1), (2, 3), (4, 4)])
def test_forward_and_backward_equal_the_kernels_for_every_kind_of_roi(pooled):
    rng = np.random.RandomState(sum(pooled))
    data = rng.randn(2, 2, 9, 11).astype(np.float32)
    grad_out = rng.randn(len(ODD_ROIS), 2, *pooled).astype(np.float32)
    output, grad_data, grad_rois = run_symbol(data, ODD_ROIS, pooled, 0.5, grad_out)
    np.testing.assert_array_equal(output, reference_forward(data, ODD_ROIS, pooled, 0.5)[0])
    np.testing.assert_array_equal(grad_data,
                                  reference_backward(data, ODD_ROIS, grad_out, pooled, 0.5))
    assert not grad_rois.any()


def test_tied_samples_give_the_first_one_the_gradient():
    data = np.random.RandomState(3).randint(0, 2, (1, 3, 8, 8)).astype(np.float32)
    rois = np.array([[0, 0, 0, 7, 7], [0, 1.5, 0.5, 6.5, 7]], np.float32)
    output, grad_data, _ = run_symbol(data, rois, (3, 3), 1.0)
    np.testing.assert_array_equal(output, reference_forward(data, rois, (3, 3), 1.0)[0])
    np.testing.assert_array_equal(
        grad_data, reference_backward(data, rois, np.ones((2, 3, 3, 3), np.float32), (3, 3), 1.0))


def test_a_sample_on_a_pixel_passes_a_quarter_of_the_gradient_as_the_kernel_does():
    data = np.zeros((1, 1, 4, 4), np.float32)
    data[0, 0, 2, 2] = 5.0  # the largest of the samples at (1, 1), (1, 2), (2, 1), (2, 2)
    output, grad_data, _ = run_symbol(data, np.array([[0, 0, 0, 3, 3]], np.float32), (1, 1),
                                      1.0, np.full((1, 1, 1, 1), 8.0, np.float32))
    assert output.ravel().tolist() == [5.0]
    assert grad_data[0, 0, 2, 2] == 2.0 and grad_data.sum() == 2.0


def test_a_bin_clipped_to_nothing_outputs_the_largest_positive_sample_or_zero():
    data = np.full((1, 1, 3, 3), -1.0, np.float32)
    data[0, 0, 2, 2] = 4.0
    rois = np.array([[0, 10, 10, 20, 20]], np.float32)  # past the map: samples at its edge
    assert run_symbol(data, rois, (1, 1), 1.0)[0].ravel().tolist() == [4.0]
    assert run_symbol(-data, rois, (1, 1), 1.0)[0].ravel().tolist() == [0.0]


def test_nan_samples_never_win_and_a_bin_of_nothing_else_stays_at_minus_flt_max():
    data = np.full((1, 1, 4, 4), np.nan, np.float32)
    output, grad_data, _ = run_symbol(data, np.array([[0, 0, 0, 3, 3]], np.float32), (1, 1), 1.0)
    assert output.ravel().tolist() == [-FLT_MAX]
    # No sample won: the kernel's arg-max of -1 clamps to pixel (0, 0), a quarter again.
    assert grad_data[0, 0, 0, 0] == 0.25 and np.count_nonzero(grad_data) == 1


@pytest.mark.parametrize("x1, gets", [(1.0, 0.0), (0.5, 0.25)])
def test_a_bin_without_a_winner_passes_pixel_0_0_a_quarter_only_within_a_pixel_of_the_roi(
        x1, gets):
    # The kernel's arg-max of -1 clamps to pixel (0, 0), whose gradient it then adds only
    # where 0 > x1 - 1 (strictly): a ROI from x = 1 leaves it out, one from 0.5 does not.
    data = np.full((1, 1, 4, 4), np.nan, np.float32)
    rois = np.array([[0, x1, 0.5, 3, 3]], np.float32)
    _, grad_data, _ = run_symbol(data, rois, (1, 1), 1.0)
    assert grad_data[0, 0, 0, 0] == gets and np.count_nonzero(grad_data) == (gets > 0)
    np.testing.assert_array_equal(
        grad_data, reference_backward(data, rois, np.ones((1, 1, 1, 1), np.float32), (1, 1), 1.0))


def test_the_gradient_accumulates_under_grad_req_add():
    data = np.random.RandomState(4).randn(1, 2, 6, 6).astype(np.float32)
    rois = np.array([[0, 1, 1, 4, 5]], np.float32)
    symbol = ROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), (2, 2), 1.0)
    executor = symbol.simple_bind(mx.cpu(0), grad_req="add", data=data.shape, rois=rois.shape)
    executor.grad_dict["data"][:] = 1.0
    executor.grad_dict["rois"][:] = 3.0
    for _ in range(2):
        executor.forward(is_train=True, data=data, rois=rois)
        executor.backward(out_grads=[mx.nd.ones((1, 2, 2, 2))])
    once = reference_backward(data, rois, np.ones((1, 2, 2, 2), np.float32), (2, 2), 1.0)
    np.testing.assert_array_equal(executor.grad_dict["data"].asnumpy(), f32(1.0) + once + once)
    assert (executor.grad_dict["rois"].asnumpy() == 3.0).all()


@pytest.mark.parametrize("second_is_train", [True, False])
def test_the_backward_is_the_gradient_at_the_inputs_of_the_last_forward(second_is_train):
    # The operator keeps a training forward's arg-max for its backward; a forward on other
    # inputs after it must not leave the backward the first one's.
    rng = np.random.RandomState(12)
    first, second = (rng.randn(1, 2, 6, 6).astype(np.float32) for _ in range(2))
    rois = np.array([[0, 0, 0, 5, 5], [0, 1, 2, 4, 5]], np.float32)
    symbol = ROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), (2, 2), 1.0)
    executor = symbol.simple_bind(mx.cpu(0), data=first.shape, rois=rois.shape)
    executor.forward(is_train=True, data=first, rois=rois)
    executor.forward(is_train=second_is_train, data=second, rois=rois)
    executor.backward(out_grads=[mx.nd.ones((2, 2, 2, 2))])
    np.testing.assert_array_equal(
        executor.grad_dict["data"].asnumpy(),
        reference_backward(second, rois, np.ones((2, 2, 2, 2), np.float32), (2, 2), 1.0))


def test_the_result_is_the_same_on_a_second_cpu_context():
    data = np.random.RandomState(5).randn(2, 2, 9, 11).astype(np.float32)
    first = run_symbol(data, ODD_ROIS, (2, 2), 0.5, context=mx.cpu(0))
    second = run_symbol(data, ODD_ROIS, (2, 2), 0.5, context=mx.cpu(1))
    for ours, theirs in zip(first, second):
        np.testing.assert_array_equal(ours, theirs)


@st.composite
def cases(draw):
    """A small map, a few ROIs in and around it, a pooled size, a scale and a seed."""
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 7)),
             draw(st.integers(1, 7)))
    pooled = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    scale = draw(st.sampled_from([1.0, 0.5, 0.25, 1.0 / 3]))
    return shape, draw(st.integers(1, 4)), pooled, scale, draw(st.integers(0, 2 ** 31 - 1))


@given(cases())
def test_the_ndarray_call_agrees_with_the_kernels_under_autograd(case):
    shape, count, pooled, scale, seed = case
    rng = np.random.RandomState(seed)
    data = rng.randint(-3, 4, shape).astype(np.float32) / 2  # ties and exact values
    corners = rng.uniform(-4, 4 + max(shape[2:]) / scale, (count, 4))
    rois = np.concatenate([rng.randint(-1, shape[0] + 1, (count, 1)), corners], 1).astype('f')
    grad_out = rng.randn(count, shape[1], *pooled).astype(np.float32)
    data_nd = mx.nd.array(data)
    data_nd.attach_grad()
    with mx.autograd.record():
        output = ROIAlign(data_nd, mx.nd.array(rois), pooled, scale)
    output.backward(mx.nd.array(grad_out))
    np.testing.assert_array_equal(output.asnumpy(), reference_forward(data, rois, pooled, scale)[0])
    np.testing.assert_array_equal(data_nd.grad.asnumpy(),
                                  reference_backward(data, rois, grad_out, pooled, scale))


# -- Stock contrib.ROIAlign is another operator ------------------------------------------------

@pytest.mark.parametrize("sample_ratio", [-1, 1, 2, 3, 4, 6])
@pytest.mark.parametrize("aligned", [False, True])
def test_no_setting_of_stock_contrib_roi_align_computes_mx_maskrcnns_operator(sample_ratio,
                                                                             aligned):
    # On a ramp, stock's mean of a sample grid symmetric about the bin's centre is the ramp at
    # the centre (half a pixel lower with aligned=True); mx-maskrcnn's is the ramp at its
    # largest sample, the one at two thirds of the bin: (10/3, 10/3) -> 6 * 10/3 + 10/3.
    settings = dict(sample_ratio=sample_ratio)
    if aligned:
        if "aligned" not in mx.nd.contrib.ROIAlign.__doc__:
            pytest.skip(f"MXNet {mx.__version__}'s contrib.ROIAlign has no 'aligned' setting")
        settings["aligned"] = True
    data = mx.nd.arange(36).reshape((1, 1, 6, 6))
    rois = mx.nd.array([[0, 0, 0, 5, 5]])
    ours = ROIAlign(data, rois, (1, 1), 1.0).asnumpy()
    stock = mx.nd.contrib.ROIAlign(data, rois, pooled_size=(1, 1), spatial_scale=1.0,
                                   **settings).asnumpy()
    np.testing.assert_array_equal(
        ours, reference_forward(data.asnumpy(), rois.asnumpy(), (1, 1), 1.0)[0])
    assert ours.ravel()[0] == pytest.approx(70 / 3)
    assert stock.ravel()[0] == pytest.approx(14.0 if aligned else 17.5, abs=0.2)


# -- The symbol mx-maskrcnn builds, and the calls it makes ------------------------------------

def test_mx_maskrcnns_symbol_call_builds_its_output_name_and_shape():
    pooled = ROIAlign(name="roi_pool", data=mx.sym.Variable("feat"),
                      rois=mx.sym.Variable("rois_stride16"), pooled_size=(14, 14),
                      spatial_scale=1.0 / 16)
    assert pooled.list_outputs() == ["roi_pool_output"]
    assert pooled.list_arguments() == ["feat", "rois_stride16"]
    assert pooled.infer_shape(feat=(1, 256, 38, 50), rois_stride16=(512, 5))[1] == \
        [(512, 256, 14, 14)]


class _FPNStylePool(mx.operator.CustomOp):
    """A Python operator calling ROIAlign on NDArrays inside its forward, positionally, as
    mx-maskrcnn's ``fpn_roi_pooling`` does."""

    def forward(self, is_train, req, in_data, out_data, aux):
        pooled = ROIAlign(in_data[0], in_data[1], (2, 2), 1.0 / 4)
        self.assign(out_data[0], req[0], pooled)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass


@mx.operator.register("test_roi_align_fpn_style_pool")
class _FPNStylePoolProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["feat", "rois"]

    def infer_shape(self, in_shape):
        return in_shape, [[in_shape[1][0], in_shape[0][1], 2, 2]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _FPNStylePool()


def test_the_ndarray_call_works_inside_another_python_operators_forward():
    data = np.random.RandomState(6).randn(1, 3, 8, 8).astype(np.float32)
    rois = np.array([[0, 3, 3, 20, 25], [0, 0, 0, 31, 31]], np.float32)
    out = mx.nd.Custom(mx.nd.array(data), mx.nd.array(rois),
                       op_type="test_roi_align_fpn_style_pool").asnumpy()
    np.testing.assert_array_equal(out, reference_forward(data, rois, (2, 2), 0.25)[0])


@pytest.mark.parametrize("arguments, named", [
    (dict(pooled_size=(0, 7), spatial_scale=0.5), "pooled_size.*got \\(0, 7\\)"),
    (dict(pooled_size=7, spatial_scale=0.5), "pooled_size.*got 7"),
    (dict(pooled_size=(7, 7, 7), spatial_scale=0.5), "pair"),
    (dict(pooled_size=(7, 7), spatial_scale=1.5), "spatial_scale.*got 1.5"),
    (dict(pooled_size=(7, 7), spatial_scale=-0.1), "spatial_scale"),
    (dict(pooled_size=(7, 7)), "spatial_scale.*got None"),
])
def test_parameters_mx_maskrcnns_operator_refuses_are_refused_with_the_value(arguments, named):
    with pytest.raises(OperatorArgumentError, match=named):
        ROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), **arguments)


def test_inputs_of_two_kinds_are_refused_naming_the_input():
    with pytest.raises(TypeError, match="ROIAlign: rois"):
        ROIAlign(mx.sym.Variable("data"), mx.nd.zeros((1, 5)), (2, 2), 1.0)


def test_rois_of_the_wrong_shape_fail_at_shape_inference_naming_the_shapes(capfd):
    symbol = ROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), (2, 2), 1.0)
    with pytest.raises(mx.base.MXNetError, match="custom"):
        symbol.infer_shape(data=(1, 3, 8, 8), rois=(4, 4))
    # MXNet prints the Python exception of a custom operator's shape inference (on stdout).
    printed = capfd.readouterr()
    assert "rois (R, 5); got (1, 3, 8, 8) and (4, 4)" in printed.out + printed.err


def test_the_backward_runs_under_a_python_loss_that_takes_no_gradient_from_above():
    # MXNet keeps one registry-wide set of the backward dependencies a Python operator
    # declared last and applies it to every Python operator's backward: under mx-maskrcnn's
    # MaskOutput (declared after it) an output of ROIAlign's it had not declared was read
    # as an array of no storage type ("unknown storage type: -1") and training stopped.
    rng = np.random.RandomState(8)
    data = rng.randn(1, 2, 6, 6).astype(np.float32)
    target = rng.randn(2, 2, 2, 2).astype(np.float32)
    rois = np.array([[0, 0, 0, 5, 5], [0, 1, 2, 4, 5]], np.float32)
    pooled = ROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), (2, 2), 1.0)
    loss = python_loss(pooled)
    executor = loss.simple_bind(mx.cpu(0), grad_req={"data": "write", "rois": "null",
                                                     "target": "null"},
                                data=data.shape, rois=rois.shape, target=target.shape)
    executor.forward(is_train=True, data=data, rois=rois, target=target)
    executor.backward()
    output = reference_forward(data, rois, (2, 2), 1.0)[0]
    np.testing.assert_array_equal(executor.grad_dict["data"].asnumpy(),
                                  reference_backward(data, rois, output - target, (2, 2), 1.0))
