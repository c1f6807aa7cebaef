"""mx-maskrcnn's ``ROIAlign`` as a NumPy ``CustomOp`` (private module; import ``ROIAlign`` from
``mxpatch_bind.compat``).

TuSimple/mx-maskrcnn compiled ``rcnn/CXX_OP/roi_align.{cc,cu}`` into its MXNet as
``mx.sym.ROIAlign`` / ``mx.nd.ROIAlign``. Its CPU functions are empty (the CPU output stays
-FLT_MAX), so the semantics here are those of its CUDA kernels, computed in float32 with C's
promotions (a ``double`` constant such as ``0.01`` or ``3.0`` makes that step a double one).
Stock MXNet's ``contrib.ROIAlign`` is another computation for every parameter set: it averages
bilinear samples, this takes their maximum (see :func:`ROIAlign`).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._mxnet_env import import_mxnet
from ._arguments import float_in, pair, parse
from ._custom import call, every_array

mx: Any = import_mxnet()

__all__ = ["ROIAlign", "roi_align_forward", "roi_align_backward", "OP_TYPE"]

OP_TYPE = "mxpatch_bind_ROIAlign"
f32 = np.float32
FLT_MAX = f32(np.finfo(np.float32).max)


def ROIAlign(data: Any = None, rois: Any = None, pooled_size: Any = None,
             spatial_scale: Any = None, name: Optional[str] = None) -> Any:
    """mx-maskrcnn's ``mx.sym.ROIAlign`` / ``mx.nd.ROIAlign``, as a NumPy operator on the CPU.

    Each ROI ``[batch_index, x1, y1, x2, y2]`` (image coordinates) is scaled by
    ``spatial_scale``, widened to at least 1 × 1, and split into ``pooled_size`` bins clipped
    to the feature map. In each bin the feature map is sampled bilinearly at the points
    ``start + k·s`` for ``s`` one third of the bin (and ``k`` from 1 while the point stays
    within ``end - s + 0.01``, advancing by ``max(s, 0.01)``): normally the 2 × 2 points at
    the bin's thirds. The output is the largest sample (the first on a tie), or 0 for a bin
    clipped to nothing when no sample exceeds 0; -FLT_MAX where no sample exceeds it.

    The gradient goes to the four pixels around the largest sample, with its bilinear
    weights, as mx-maskrcnn's backward kernel gives it: where two of the four pixels
    coincide (the sample on a pixel row or column), the pixel gets only the weight of the
    first corner naming it (top-left, top-right, bottom-left, bottom-right), so a sample
    exactly on a pixel passes a quarter of the gradient. Pixels more than one pixel outside
    the scaled ROI get none. The ROIs get a zero gradient.

    Parameters
    ----------
    data : Symbol or NDArray
        Feature maps (N, C, H, W), float32.
    rois : Symbol or NDArray
        (R, 5) ``[batch_index, x1, y1, x2, y2]``, float32.
    pooled_size : (int, int)
        ``(h, w)`` of each ROI's output.
    spatial_scale : float
        In [0, 1]: feature map size ÷ image size (``1 / stride``).
    name : str, optional
        The Symbol's name (its output is ``NAME_output``); unused for NDArrays.

    Returns
    -------
    Symbol or NDArray
        (R, C, pooled_h, pooled_w), float32.

    Raises
    ------
    OperatorArgumentError
        (a ``ValueError``) for a ``pooled_size`` or ``spatial_scale`` mx-maskrcnn's
        operator refuses.
    TypeError
        When ``data`` and ``rois`` are not both Symbols or both NDArrays.

    Notes
    -----
    Stock ``mx.sym.contrib.ROIAlign`` takes the *mean* of ``sample_ratio`` × ``sample_ratio``
    bilinear samples (adaptive by default; ``aligned`` shifts by half a pixel): no setting
    of its parameters computes this operator, so ``migrate`` points the calls here.
    Where mx-maskrcnn's kernels are undefined, this operator defines them: an ROI whose
    batch index is negative, at least N or NaN outputs zeros and passes no gradient (the
    kernel reads outside the batch for the last two); the sample loop stops where a float32
    step no longer moves (beyond 2^17 pixels, where the kernel never ends). The kernels'
    arithmetic is followed step by step in float32; nvcc may fuse a multiply and an add,
    so a GPU build can differ in the last bit of a sample position.

    Examples
    --------
    mx-maskrcnn's FPN head pools 14 × 14 per ROI from the stride-16 level:

    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import ROIAlign
    >>> pooled = ROIAlign(name='roi_pool', data=mx.sym.Variable('feat'),
    ...                   rois=mx.sym.Variable('rois'), pooled_size=(14, 14),
    ...                   spatial_scale=1.0 / 16)
    >>> pooled.infer_shape(feat=(1, 256, 38, 50), rois=(512, 5))[1]
    [(512, 256, 14, 14)]
    >>> feat = mx.nd.arange(16).reshape((1, 1, 4, 4))
    >>> ROIAlign(feat, mx.nd.array([[0, 0, 0, 3, 3]]), (1, 1), 1.0).asnumpy().ravel()
    array([10.], dtype=float32)
    """
    size = pair("ROIAlign", "pooled_size", pooled_size)
    scale = float_in("ROIAlign", "spatial_scale", spatial_scale, 0.0, 1.0)
    return call("ROIAlign", OP_TYPE, {"data": data, "rois": rois},
                {"pooled_size": size, "spatial_scale": scale}, name)


# -- The computation ---------------------------------------------------------------------------

def _bin_edges(roi_start, roi_size, pooled, limit):
    """Each bin's clipped ``[start, end]`` along one axis, float32 as the kernel rounds them."""
    bin_size = f32(roi_size / f32(pooled))
    edges = []
    for p in range(pooled):
        start = f32(f32(p) * bin_size)
        end = f32(f32(p + 1) * bin_size)
        edges.append((np.fmin(np.fmax(f32(start + roi_start), f32(0)), f32(limit)),
                      np.fmin(np.fmax(f32(end + roi_start), f32(0)), f32(limit))))
    return edges


def _samples(start, end):
    """The kernel's sample positions in one bin along one axis (float32 each)."""
    stride = f32(float(f32(end - start)) / 3.0)
    step = max(float(stride), 0.01)
    bound = float(f32(end - stride)) + 0.01  # the kernel compares in double
    position, found = f32(start + stride), []
    while float(position) <= bound:
        found.append(position)
        advanced = f32(float(position) + step)
        if advanced == position:  # no float32 step left: the kernel would loop for ever
            break
        position = advanced
    return found


def _axis(roi_start, roi_size, pooled, limit):
    """Per bin along one axis: sample positions padded to one length, a mask of the real
    ones, the clipped edges, and each sample's two pixels and bilinear weight."""
    edges = _bin_edges(roi_start, roi_size, pooled, limit)
    lists = [_samples(start, end) for start, end in edges]
    count = max(1, max(len(found) for found in lists))
    positions = np.zeros((pooled, count), np.float32)
    real = np.zeros((pooled, count), bool)
    for p, found in enumerate(lists):
        positions[p, :len(found)] = found
        real[p, :len(found)] = True
    low, high, weight = _neighbours(positions, int(limit))
    return positions, real, np.array(edges, np.float32), low, high, weight


def _neighbours(positions, size):
    """The pixels below and above each position (clamped to the map) and the weight of the
    one above: 0.5 where they coincide, as both kernels compute it."""
    low = np.clip(np.floor(positions).astype(np.int64), 0, size - 1)
    high = np.clip(np.ceil(positions).astype(np.int64), 0, size - 1)
    weight = np.where(low == high, f32(0.5), (positions - low.astype(np.float32)))
    return low, high, weight.astype(np.float32)


def _batch_index(value, num_images):
    """C's ``int`` of the ROI's first column, or None where no image is meant."""
    if not np.isfinite(value) or abs(value) >= 2 ** 31:
        return None
    index = int(np.trunc(value))
    return index if 0 <= index < num_images else None


def _scaled_roi(roi, scale):
    return [f32(roi[k] * scale) for k in range(1, 5)]


def _pool_one(plane, roi, pooled, scale):
    """One ROI's output (C, ph, pw) and its arg-max positions (x, y), -1 where none."""
    _, height, width = plane.shape
    x1, y1, x2, y2 = _scaled_roi(roi, scale)
    roi_w = np.fmax(f32(x2 - x1), f32(1))
    roi_h = np.fmax(f32(y2 - y1), f32(1))
    ys, y_real, y_edges, top, bottom, alpha = _axis(y1, roi_h, pooled[0], height)
    xs, x_real, x_edges, left, right, beta = _axis(x1, roi_w, pooled[1], width)
    # (C, ph, ky, pw, kx): every channel's samples, the bin's y samples before its x samples.
    a, b = alpha[:, :, None, None], beta[None, None, :, :]
    one = f32(1)
    value = (((one - a) * (one - b)) * plane[:, top[:, :, None, None], left[None, None]]
             + (a * (one - b)) * plane[:, bottom[:, :, None, None], left[None, None]]
             + ((one - a) * b) * plane[:, top[:, :, None, None], right[None, None]]
             + (a * b) * plane[:, bottom[:, :, None, None], right[None, None]])
    real = y_real[:, :, None, None] & x_real[None, None]
    channels = plane.shape[0]
    value = value.transpose(0, 1, 3, 2, 4).reshape(channels, pooled[0], pooled[1], -1)
    real = np.broadcast_to(real.transpose(0, 2, 1, 3).reshape(pooled[0], pooled[1], -1),
                           value.shape)
    empty = ((y_edges[:, 1] <= y_edges[:, 0])[:, None]
             | (x_edges[:, 1] <= x_edges[:, 0])[None, :])
    start = np.where(empty, f32(0), -FLT_MAX)[None]
    candidates = np.where(real & ~np.isnan(value), value, -np.inf).astype(np.float32)
    best = candidates.max(axis=-1)
    taken = best > start
    first = np.argmax(candidates == best[..., None], axis=-1)
    ky, kx = first // xs.shape[1], first % xs.shape[1]
    rows, cols = np.arange(pooled[0])[None, :, None], np.arange(pooled[1])[None, None, :]
    arg_y = np.where(taken, ys[rows, ky], f32(-1))
    arg_x = np.where(taken, xs[cols, kx], f32(-1))
    return np.where(taken, best, start).astype(np.float32), arg_x, arg_y


def roi_align_forward(data: np.ndarray, rois: np.ndarray, pooled_size: tuple,
                      spatial_scale: float) -> tuple:
    """The forward kernel on NumPy arrays: (output, arg-max x, arg-max y), each
    (R, C, ph, pw) float32; the arg-max is -1 where nothing was pooled."""
    data = np.asarray(data, np.float32)
    rois = np.asarray(rois, np.float32)
    shape = (rois.shape[0], data.shape[1]) + tuple(pooled_size)
    out = np.zeros(shape, np.float32)
    arg_x, arg_y = np.full(shape, f32(-1)), np.full(shape, f32(-1))
    scale = f32(spatial_scale)
    for r, roi in enumerate(rois):
        image = _batch_index(roi[0], data.shape[0])
        if image is not None:
            out[r], arg_x[r], arg_y[r] = _pool_one(data[image], roi, pooled_size, scale)
    return out, arg_x, arg_y


def _corner_weights(grad, alpha, beta):
    """The four corners' gradients in the kernel's order and rounding."""
    one = f32(1)
    return [(grad * (one - alpha)) * (one - beta), (grad * (one - alpha)) * beta,
            (grad * alpha) * (one - beta), (grad * alpha) * beta]


def _scatter_one(total, image, roi, scale, grad, arg_x, arg_y):
    """Add one ROI's gradient into ``total`` (N·C·H·W float32, flat)."""
    _, channels, height, width = image
    top, bottom, alpha = _neighbours(arg_y, height)
    left, right, beta = _neighbours(arg_x, width)
    x1, y1, x2, y2 = (float(v) for v in _scaled_roi(roi, scale))
    corners = [(top, left), (top, right), (bottom, left), (bottom, right)]
    first = [np.ones(top.shape, bool), right != left, bottom != top,
             (bottom != top) & (right != left)]  # a pixel takes the first corner naming it
    rows, cols, weights, keep = [], [], [], []
    for (row, col), weight, is_first in zip(corners, _corner_weights(grad, alpha, beta), first):
        inside = (col > x1 - 1.0) & (col < x2 + 1.0) & (row > y1 - 1.0) & (row < y2 + 1.0)
        rows.append(row), cols.append(col), weights.append(weight), keep.append(is_first & inside)
    # Contributions ordered (channel, bin, corner): for any one pixel, the kernel's order.
    rows, cols, weights, keep = (np.stack(v, axis=-1) for v in (rows, cols, weights, keep))
    channel = np.arange(channels).reshape(-1, 1, 1, 1)
    flat = ((image[0] * channels + channel) * height + rows) * width + cols
    np.add.at(total, flat[keep], weights[keep])


def roi_align_backward(data: np.ndarray, rois: np.ndarray, grad_out: np.ndarray,
                       pooled_size: tuple, spatial_scale: float,
                       arg_max: Optional[tuple] = None) -> np.ndarray:
    """The backward kernel: the gradient of ``data`` (float32), summed per pixel over the
    ROIs and bins in the kernel's order, from zero. ``arg_max``: the forward's (x, y)
    arg-max for these inputs, when kept; else computed again."""
    data = np.asarray(data, np.float32)
    rois = np.asarray(rois, np.float32)
    if arg_max is None:
        arg_max = roi_align_forward(data, rois, pooled_size, spatial_scale)[1:]
    arg_x, arg_y = arg_max
    total = np.zeros(data.size, np.float32)
    scale = f32(spatial_scale)
    grad_out = np.asarray(grad_out, np.float32)
    for r, roi in enumerate(rois):
        image = _batch_index(roi[0], data.shape[0])
        if image is not None:
            _scatter_one(total, (image,) + data.shape[1:], roi, scale, grad_out[r],
                         arg_x[r], arg_y[r])
    return total.reshape(data.shape)


# -- The operator ------------------------------------------------------------------------------

class _ROIAlignOp(mx.operator.CustomOp):
    def __init__(self, pooled_size, spatial_scale):
        super().__init__()
        self.pooled_size, self.spatial_scale = pooled_size, spatial_scale
        self.last_forward = None  # (data, rois, arg-max x, arg-max y) of a training forward

    def forward(self, is_train, req, in_data, out_data, aux):
        data, rois = in_data[0].asnumpy(), in_data[1].asnumpy()
        out, arg_x, arg_y = roi_align_forward(data, rois, self.pooled_size, self.spatial_scale)
        # The backward needs the arg-max again: a third of its time at mx-maskrcnn's sizes.
        self.last_forward = (data, rois, arg_x, arg_y) if is_train else None
        self.assign(out_data[0], req[0], mx.nd.array(out, out_data[0].context))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        data, rois = in_data[0].asnumpy(), in_data[1].asnumpy()
        kept = self.last_forward
        same = kept is not None and np.array_equal(kept[0], data, equal_nan=True) \
            and np.array_equal(kept[1], rois, equal_nan=True)
        grad = roi_align_backward(data, rois, out_grad[0].asnumpy(), self.pooled_size,
                                  self.spatial_scale, kept[2:] if same else None)
        self.assign(in_grad[0], req[0], mx.nd.array(grad, in_grad[0].context))
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_grad[1].shape, in_grad[1].context))


@mx.operator.register(OP_TYPE)
class _ROIAlignProp(mx.operator.CustomOpProp):
    def __init__(self, pooled_size, spatial_scale):
        super().__init__(need_top_grad=True)
        self.pooled_size, self.spatial_scale = parse(pooled_size), parse(spatial_scale)

    def list_arguments(self):
        return ["data", "rois"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        data, rois = in_shape
        if len(data) != 4 or len(rois) != 2 or rois[1] != 5:
            raise ValueError(f"ROIAlign: data must be (N, C, H, W) and rois (R, 5); got "
                             f"{tuple(data)} and {tuple(rois)}")
        return in_shape, [(rois[0], data[1]) + tuple(self.pooled_size)], []

    def infer_type(self, in_type):
        return [np.float32, np.float32], [np.float32], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return every_array(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _ROIAlignOp(self.pooled_size, self.spatial_scale)
