"""SNIPER's ``MaskRcnnTarget`` as a NumPy ``CustomOp`` (private module; import it from
``mxpatch_bind.compat``).

SNIPER-mxnet's ``src/operator/mask_rcnn_target.cu`` (its CPU forward is empty): each mask roi's
ground-truth polygons, rasterized into the roi at ``mask_size × mask_size`` with the COCO
API's ``rleFrPoly``, and the class of the object in every pixel.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._mxnet_env import import_mxnet
from ._arguments import int_at_least, parse, positive_int
from ._custom import assign_zero_gradients, call, every_array
from .polygons import polygon_mask
from .proposals import f32, f64

mx: Any = import_mxnet()

__all__ = ["MaskRcnnTarget", "mask_rcnn_target_forward", "OP_TYPE", "roi_polygon_mask"]

OP_TYPE = "mxpatch_bind_MaskRcnnTarget"


def MaskRcnnTarget(rois: Any = None, mask_polys: Any = None, mask_ids: Any = None, *,
                   batch_size: int = 10, mask_size: int = 28, ignore_label: int = -1,
                   num_proposals: int = 50, max_polygon_len: int = 500,
                   max_num_gts: int = 100, num_classes: int = 80, workspace: int = 512,
                   name: Optional[str] = None) -> Any:
    """SNIPER's ``mx.sym.MaskRcnnTarget``, as a NumPy operator on the CPU.

    For each roi ``r`` (image ``rois[r, 0]``) whose ``mask_ids[r]`` is not -1, the
    polygon row ``mask_polys[image, mask_ids[r]]`` — ``[class, n, len_1 … len_n, x, y, x, y,
    …]`` — is drawn into the roi: each of its ``n`` polygons scaled by
    ``mask_size / max(1, x2 - x1)`` (and likewise in y), rasterized as the COCO API does,
    and united. The mask target is 1 inside, 0 outside; the class output is the row's class
    in every pixel. A roi with id -1 gets ``ignore_label`` everywhere and class 0.

    Parameters
    ----------
    rois : Symbol or NDArray
        (N · num_proposals, 5) ``[image, x1, y1, x2, y2]`` (``MultiProposalTargetMask``'s
        ``mask_rois``).
    mask_polys : Symbol or NDArray
        (N, max_num_gts, max_polygon_len) polygon rows.
    mask_ids : Symbol or NDArray
        N · num_proposals values: each roi's polygon row, or -1.
    mask_size : int
        Default 28.
    ignore_label : int
        Default -1.
    num_proposals : int
        Rois per image (default 50).
    batch_size, max_polygon_len, max_num_gts, num_classes, workspace
        Checked and otherwise unused: the sizes come from the inputs' shapes (SNIPER's CUDA
        operator trusted ``batch_size``, ``max_polygon_len`` and ``max_num_gts`` to match).
    name : str, optional
        Outputs ``NAME_mask_targets`` and ``NAME_mask_cls``.

    Returns
    -------
    Symbol or NDArray
        mask_targets and mask_cls, each (N · num_proposals, mask_size, mask_size).

    Notes
    -----
    Where SNIPER's operator reads outside its inputs, this one defines the result: an id
    outside ``[0, max_num_gts)`` or an image outside the batch counts as -1; a polygon
    row whose lengths run past its end, or are negative, gives an empty mask (its class
    still set); a polygon of fewer than one vertex draws nothing.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxpatch_bind.compat import MaskRcnnTarget
    >>> targets, classes = MaskRcnnTarget(rois=mx.sym.Variable('mask_rois'),
    ...                                   mask_polys=mx.sym.Variable('gt_masks'),
    ...                                   mask_ids=mx.sym.Variable('mask_ids'),
    ...                                   batch_size=2, mask_size=28, num_proposals=50)
    >>> targets.infer_shape(mask_rois=(100, 5), gt_masks=(2, 100, 500),
    ...                     mask_ids=(100, 1))[1]
    [(100, 28, 28)]
    """
    op = "MaskRcnnTarget"
    for what, value in (("batch_size", batch_size), ("max_polygon_len", max_polygon_len),
                        ("max_num_gts", max_num_gts), ("num_classes", num_classes)):
        positive_int(op, what, value)
    int_at_least(op, "workspace", workspace, 0)
    int_at_least(op, "ignore_label", ignore_label, -2 ** 31)
    params = {"mask_size": positive_int(op, "mask_size", mask_size),
              "ignore_label": int(ignore_label),
              "num_proposals": positive_int(op, "num_proposals", num_proposals)}
    return call(op, OP_TYPE, {"rois": rois, "mask_polys": mask_polys, "mask_ids": mask_ids},
                params, name)


def _polygons(row):
    """The polygons of one row as (k, 2) float32 (x, y) arrays, or None for a row whose
    header does not fit it."""
    count = int(row[1]) if np.isfinite(row[1]) else -1
    lengths = row[2:2 + max(count, 0)]
    if count < 0 or len(lengths) < count or not np.isfinite(lengths).all():
        return None
    lengths = np.trunc(lengths).astype(np.int64)  # C's int of each length
    if (lengths < 0).any():
        return None
    offsets = 2 + count + np.concatenate([[0], np.cumsum(lengths)])
    if offsets[-1] > len(row):
        return None
    return [row[start:start + 2 * (length // 2)].reshape(-1, 2)
            for start, length in zip(offsets[:-1], lengths)]


def roi_polygon_mask(roi: np.ndarray, row: np.ndarray, size: int) -> np.ndarray:
    """One roi's (size, size) mask of one polygon row, rows y, columns x (float32 0 / 1)."""
    polygons = _polygons(row)
    mask = np.zeros(size * size, np.uint8)
    if polygons is None:
        return mask.reshape(size, size).astype(np.float32)
    width = f32(roi[3] - roi[1])
    height = f32(roi[4] - roi[2])
    width = np.where(f32(1) < width, width, f32(1))  # std::max(1.0f, w): a NaN gives 1
    height = np.where(f32(1) < height, height, f32(1))
    for points in polygons:
        # SNIPER hands COCO (y, x) pairs: COCO's column-major mask is then row-major (y, x).
        ys = f32(f32(f32(points[:, 1] - roi[2]) * f32(size)) / height)
        xs = f32(f32(f32(points[:, 0] - roi[1]) * f32(size)) / width)
        mask |= polygon_mask(np.stack([f64(ys), f64(xs)], 1), size, size)
    return mask.reshape(size, size).astype(np.float32)


def mask_rcnn_target_forward(rois, mask_polys, mask_ids, params) -> tuple:
    """The operator on NumPy arrays: (mask_targets, mask_cls), float32."""
    size = params["mask_size"]
    count = len(rois)
    targets = np.full((count, size, size), params["ignore_label"], np.float32)
    classes = np.zeros((count, size, size), np.float32)
    ids = np.asarray(mask_ids, np.float32).reshape(-1)
    for r in range(count):
        if not (np.isfinite(ids[r]) and np.isfinite(rois[r, 0])):
            continue
        polygon_row, image = int(ids[r]), int(rois[r, 0])  # C's int: toward zero
        if polygon_row == -1 or not 0 <= polygon_row < mask_polys.shape[1] \
                or not 0 <= image < mask_polys.shape[0]:
            continue
        row = mask_polys[image, polygon_row]
        targets[r] = roi_polygon_mask(rois[r], row, size)
        classes[r] = row[0]
    return targets, classes


class _MaskRcnnTargetOp(mx.operator.CustomOp):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def forward(self, is_train, req, in_data, out_data, aux):
        results = mask_rcnn_target_forward(*(a.asnumpy() for a in in_data), self.params)
        for index, value in enumerate(results):
            self.assign(out_data[index], req[index], mx.nd.array(value, out_data[index].context))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assign_zero_gradients(self, req, in_grad)


@mx.operator.register(OP_TYPE)
class _MaskRcnnTargetProp(mx.operator.CustomOpProp):
    def __init__(self, **params):
        super().__init__(need_top_grad=False)
        self.params = {key: parse(value) for key, value in params.items()}

    def list_arguments(self):
        return ["rois", "mask_polys", "mask_ids"]

    def list_outputs(self):
        return ["mask_targets", "mask_cls"]

    def infer_shape(self, in_shape):
        rois, polys, ids = (tuple(s) for s in in_shape)
        rows = polys[0] * self.params["num_proposals"] if len(polys) == 3 else None
        if rows is None or rois != (rows, 5) or int(np.prod(ids)) != rows:
            raise ValueError("MaskRcnnTarget: expected mask_polys (N, G, L), rois "
                             "(N · num_proposals, 5) and N · num_proposals mask_ids for "
                             f"num_proposals = {self.params['num_proposals']}; got rois "
                             f"{rois}, mask_polys {polys}, mask_ids {ids}")
        size = self.params["mask_size"]
        return in_shape, [(rows, size, size), (rows, size, size)], []

    def infer_type(self, in_type):
        return [np.float32] * 3, [np.float32] * 2, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return every_array(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _MaskRcnnTargetOp(self.params)
