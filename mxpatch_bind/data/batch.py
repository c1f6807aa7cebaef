"""The batches the per-device iterators hand out, and the accessors that read them (private)."""

import mxnet as mx
import numpy as np


class CurrentBatchIter(mx.io.DataIter):
    """A ``DataIter`` whose ``next()`` keeps the batch it returns in ``_current``, which the
    stock accessors read (``PerDeviceIter``, ``PerDevicePrefetchingIter``)."""

    _current: mx.io.DataBatch

    def getdata(self):
        """The data arrays of the current batch (one list per device when per device)."""
        return self._current.data

    def getlabel(self):
        """The label arrays of the current batch (one list per device when per device)."""
        return self._current.label

    def getpad(self):
        """Number of filler samples at the end of the current batch."""
        return self._current.pad

    def getindex(self):
        """Dataset indices of the current batch in flat order, filler included."""
        return self._current.index


class PerDeviceBatch(mx.io.DataBatch):
    """A DataBatch whose ``data`` and ``label`` are per-device lists."""

    def __str__(self):
        # DataBatch.__str__ reads ``d.shape`` of each entry and fails on per-device lists.
        def shapes(per_device):
            if per_device is None:
                return None
            return [[array.shape for array in arrays] for arrays in per_device]

        return (f"{type(self).__name__}: data shapes: {shapes(self.data)} label shapes: "
                f"{shapes(self.label)} pad: {self.pad}")


def build(plan, packed, declared, num_data):
    """The loader's per-device arrays as a :class:`PerDeviceBatch`: NDArrays of the declared
    dtypes, with their descs; the first ``num_data`` declared inputs are data, the rest label."""
    arrays = [[_as_declared(array, one.dtype) for one, array in zip(declared, device)]
              for device in packed]
    descs = [[mx.io.DataDesc(one.name, array.shape, dtype=one.dtype, layout=one.layout or "NCHW")
              for one, array in zip(declared, device)] for device in packed]
    has_label = len(declared) > num_data
    return PerDeviceBatch(
        data=[device[:num_data] for device in arrays],
        label=[device[num_data:] for device in arrays] if has_label else None,
        pad=plan.pad, index=np.concatenate(plan.device_indices),
        provide_data=[device[:num_data] for device in descs],
        provide_label=[device[num_data:] for device in descs] if has_label else None)


def _as_declared(array, dtype):
    """``array`` as an NDArray of ``dtype``: numpy ones copied once, narrower ones converted.

    Workers send inputs in their samples' narrower dtype where it converts exactly
    (``inputs.transfer_dtype``); the copy out of shared memory converts them here.
    """
    if not isinstance(array, mx.nd.NDArray):
        return mx.nd.array(array, ctx=mx.cpu(), dtype=dtype)
    if array.dtype == dtype:
        return array
    converted = mx.nd.empty(array.shape, ctx=mx.cpu(), dtype=dtype)
    array.copyto(converted)  # MXNet converts between dtypes as it copies
    return converted
