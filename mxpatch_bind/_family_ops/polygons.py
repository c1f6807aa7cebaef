"""A polygon rasterized as the COCO API's ``rleFrPoly`` rasterizes it (private module).

SNIPER's ``MaskRcnnTarget`` turns each ground-truth polygon into its mask with the COCO API's
C function (``maskApi.c``). The facts of that function: the vertices are scaled by 5 and
rounded (C's ``int`` of ``5·v + 0.5``); every edge is walked pixel by pixel along its longer
axis at that scale; wherever the walk changes column, the point between the two columns, back
at scale 1, is a boundary if it falls on a whole column inside the mask, at the row
``ceil(min(y) scaled back)`` clipped to ``[0, h]``; the mask, read column by column, flips
at every boundary (two at one place cancel).
"""

from __future__ import annotations

import numpy as np

__all__ = ["polygon_mask"]

SCALE = 5.0


def _c_int(values):
    """C's conversion of a double to ``int``: truncation toward zero."""
    return np.trunc(values).astype(np.int64)


def _walk_edge(xs, ys, xe, ye):
    """The points (u, v) of one edge at the upsampled scale, from its start to its end."""
    dx, dy = abs(xe - xs), abs(ys - ye)
    flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
    if flip:
        xs, xe, ys, ye = xe, xs, ye, ys
    if dx >= dy:
        slope = (ye - ys) / dx if dx else 0.0  # a repeated vertex: one point, at itself
        steps = np.arange(dx + 1)
        t = dx - steps if flip else steps
        return t + xs, _c_int(ys + slope * t + 0.5)
    slope = (xe - xs) / dy
    steps = np.arange(dy + 1)
    t = dy - steps if flip else steps
    return _c_int(xs + slope * t + 0.5), t + ys


def _boundaries(u, v, height, width):
    """The flat (column-major) positions where the mask flips."""
    changed = np.flatnonzero(u[1:] != u[:-1]) + 1
    column = np.where(u[changed] < u[changed - 1], u[changed], u[changed] - 1)
    column = (column + 0.5) / SCALE - 0.5
    inside = (np.floor(column) == column) & (column >= 0) & (column <= width - 1)
    row = (np.minimum(v[changed], v[changed - 1]) + 0.5) / SCALE - 0.5
    row = np.ceil(np.clip(row, 0, height))
    return (column[inside].astype(np.int64) * height + row[inside].astype(np.int64))


def polygon_mask(xy: np.ndarray, height: int, width: int) -> np.ndarray:
    """The COCO rasterization of the polygon ``xy`` (k, 2) (float64 ``x, y`` pairs), as a
    flat uint8 array of ``height · width`` values read column by column (COCO's order).

    Examples
    --------
    >>> import numpy as np
    >>> from mxpatch_bind._family_ops.polygons import polygon_mask
    >>> square = np.array([[1, 1], [3, 1], [3, 3], [1, 3]], float)  # corners on pixel centres
    >>> polygon_mask(square, 5, 5).reshape(5, 5).T  # rows: y, columns: x
    array([[0, 0, 0, 0, 0],
           [0, 1, 1, 0, 0],
           [0, 1, 1, 0, 0],
           [0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0]], dtype=uint8)
    """
    mask = np.zeros(height * width, np.uint8)
    if len(xy) == 0:
        return mask
    x = _c_int(SCALE * xy[:, 0] + 0.5)
    y = _c_int(SCALE * xy[:, 1] + 0.5)
    x, y = np.append(x, x[0]), np.append(y, y[0])
    walked = [_walk_edge(int(x[j]), int(y[j]), int(x[j + 1]), int(y[j + 1]))
              for j in range(len(xy))]
    u = np.concatenate([edge[0] for edge in walked])
    v = np.concatenate([edge[1] for edge in walked])
    flips = np.bincount(_boundaries(u, v, height, width), minlength=height * width + 1)
    return (np.cumsum(flips[:height * width]) % 2).astype(np.uint8)
