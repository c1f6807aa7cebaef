"""How large an array MXNet holds, and the check of planned batches against it (private).

A pip-installed MXNet 1.x is built without large tensor support: an NDArray holds at most
``2**31 - 1`` elements, and a larger one fails in ``mx.nd.array`` with a message that names
no argument. Planned sizes are checked here instead, before an epoch starts.
"""

import math

from .._mxnet_env import max_array_elements
from ..errors import DataSpecError

__all__ = ["max_array_elements", "check_plan"]

def device_shape(one, count, size, reference_shape):
    """The shape of a device's array of input ``one``, variable axes counted as 1."""
    shape = [1 if axis in one.variable_axes else extent
             for axis, extent in enumerate(reference_shape)]
    for axis, extent in zip(one.size_axes, size):
        shape[axis] = int(extent)
    return (count,) + tuple(shape)


def check_plan(plans, declared, reference_shapes, multiple):
    """Raise DataSpecError naming the first planned array larger than MXNet holds."""
    limit = max_array_elements()
    for batch, plan in enumerate(plans):
        for device, (indices, size) in enumerate(zip(plan.device_indices, plan.device_sizes)):
            for one, reference in zip(declared, reference_shapes):
                shape = device_shape(one, len(indices), size, reference)
                # math.prod on Python ints: numpy's product would wrap around silently.
                elements = math.prod(shape)
                if elements > limit:
                    raise DataSpecError(
                        f"batch {batch} device {device}: input {one.name!r} would be an array of "
                        f"shape {shape} ({elements} elements), more than the {limit} one MXNet "
                        f"array holds: the samples' sizes or pad_to_multiple={multiple} are too "
                        "large")
