"""A Python loss operator declared after the operator under it, as the family's losses are.

MXNet 1.9.1 keeps one registry-wide set of backward dependencies, those of the Python
operator whose ``declare_backward_dependency`` ran last, and reads every Python operator's
backward arrays through it; a drop-in under such a loss must hold every array that set can
name. The loss passes its input on and gives it ``prediction - target`` as its gradient, with
no gradient from above (mx-maskrcnn's ``MaskOutput`` in shape).
"""

import mxnet as mx

OP_TYPE = "test_python_loss_declared_last"


class _Loss(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], in_data[0] - in_data[1])
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_grad[1].shape))


@mx.operator.register(OP_TYPE)
class _LossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["prediction", "target"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Loss()


def python_loss(prediction, target_name="target"):
    """``prediction`` under the Python loss, its target a new Variable ``target_name``."""
    return mx.sym.Custom(prediction=prediction, target=mx.sym.Variable(target_name),
                         op_type=OP_TYPE)
