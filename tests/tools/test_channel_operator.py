"""``ChannelOperator``, composed of stock operators, against a NumPy reference of FCIS's kernels.

The reference below is written from FCIS's ``fcis/operator_cxx/channel_operator.cu`` (its CPU
file leaves every kernel but the softmax empty): loop for loop where the kernel's order decides
the result (the running maximum from -FLT_MAX with a strict '>', C's truncating ``int``
conversion, the range check of the picked group). Group_Max and Group_Pick move values without
arithmetic, so they are compared exactly, forward and backward. Group_Softmax is compared with a
tolerance: exp and the sum over a group's channels are computed by MXNet's softmax kernel, which
rounds differently from mshadow's ``Softmax`` and from NumPy.
"""

import mxnet as mx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mxpatch_bind._channel_operator import (
    ChannelOperator,
    ChannelOperatorError,
    channel_operator_nd,
)

FLT_MAX = np.float32(np.finfo(np.float32).max)
# MXNet's softmax kernel (float32) and the float64 reference differ by rounding only: over 30
# seeds of SHAPES through run_autograd, at most 1.4e-7 in the outputs (which lie in [0, 1]) and
# 3.7e-7 in the gradients; the tolerance leaves a margin of about 3 over that.
SOFTMAX_TOLERANCE = dict(rtol=1e-5, atol=1e-6)
# (N, C, H, W), group: one group, one channel per group, FCIS's own 2 channels per class.
CPU0 = mx.cpu(0)
SHAPES = [((2, 6, 3, 4), 3), ((3, 4, 2, 2), 1), ((1, 5, 3, 3), 5), ((4, 8, 5, 5), 4),
          ((2, 12, 1, 7), 6)]


# -- The reference, written from FCIS's CUDA kernels ------------------------------------------

def reference_group_max(data, group):
    """GroupMaxForwardKernel: each group's running maximum from -FLT_MAX, replaced on a strict
    '>', and the channel that set it (-1 where none did)."""
    n, c, h, w = data.shape
    per_group = c // group
    out = np.full((n, group, h, w), -FLT_MAX, data.dtype)
    max_idx = np.full((n, group, h, w), -1)
    for g in range(group):
        for i in range(per_group):
            channel = g * per_group + i
            greater = data[:, channel] > out[:, g]
            out[:, g][greater] = data[:, channel][greater]
            max_idx[:, g][greater] = channel
    return out, max_idx


def reference_group_max_backward(data, group, grad_out):
    """GroupMaxBackwardAccKernel: the input gradient is zero but at each maximum's channel."""
    _, max_idx = reference_group_max(data, group)
    assert (max_idx >= 0).all(), "the kernel writes outside the sample for an index of -1"
    grad_in = np.zeros(data.shape, grad_out.dtype)
    for g in range(group):
        np.put_along_axis(grad_in, max_idx[:, g:g + 1], grad_out[:, g:g + 1], axis=1)
    return grad_in


def reference_picked_groups(pick_idx, n, group, pick_type):
    """The group the pick kernel reads per sample: ``(int) pick_idx[n]`` for Label_Pick, and
    GetMaxIdxKernel's index for Score_Pick (classes 1.. only, from -FLT_MAX, strict '>')."""
    flat = pick_idx.reshape(-1)
    if pick_type == "Label_Pick":
        return [int(flat[sample]) for sample in range(n)]  # int() truncates toward zero, as C
    picked = []
    for sample in range(n):
        scores = flat[sample * group:(sample + 1) * group]
        best, best_score = -1, -FLT_MAX
        for i in range(1, group):
            best = i if scores[i] > best_score else best
            best_score = scores[i] if scores[i] > best_score else best_score
        picked.append(best)
    return picked


def reference_group_pick(data, pick_idx, group, pick_type):
    """GroupPickForwardKernel: sample n's channels of its group, zeros for a group out of range."""
    n, c, h, w = data.shape
    per_group = c // group
    out = np.zeros((n, per_group, h, w), data.dtype)
    for sample, g in enumerate(reference_picked_groups(pick_idx, n, group, pick_type)):
        if 0 <= g < group:
            out[sample] = data[sample, g * per_group:(g + 1) * per_group]
    return out


def reference_group_pick_backward(data, pick_idx, group, pick_type, grad_out):
    """GroupPickBackwardAccKernel, within the sample: the output's gradient in the picked
    group's channels, zero elsewhere; pick_idx's gradient is zero."""
    n, c, _, _ = data.shape
    per_group = c // group
    grad_in = np.zeros(data.shape, grad_out.dtype)
    for sample, g in enumerate(reference_picked_groups(pick_idx, n, group, pick_type)):
        if 0 <= g < group:
            grad_in[sample, g * per_group:(g + 1) * per_group] = grad_out[sample]
    return grad_in


def reference_group_softmax(data, group):
    """mshadow's 3-D Softmax on data viewed as (N * group, C // group, H * W), in float64."""
    n, c, h, w = data.shape
    energy = data.reshape(n * group, c // group, h * w).astype(np.float64)
    largest = energy[:, 0]
    for i in range(1, energy.shape[1]):
        largest = np.where(largest < energy[:, i], energy[:, i], largest)
    exp = np.exp(energy - largest[:, None])
    return (exp / exp.sum(axis=1, keepdims=True)).reshape(data.shape)


def reference_group_softmax_backward(data, group, grad_out):
    """The softmax's gradient over each group's channels (FCIS's backward has none)."""
    n, c, h, w = data.shape
    out = reference_group_softmax(data, group).reshape(n * group, c // group, h * w)
    dy = grad_out.reshape(out.shape).astype(np.float64)
    return (out * (dy - (dy * out).sum(axis=1, keepdims=True))).reshape(data.shape)


# -- Running ours -----------------------------------------------------------------------------

def run_symbol(data, group, op_type, pick_idx=None, pick_type="Label_Pick", grad_out=None,
               context=CPU0):
    """Forward and backward of ChannelOperator bound on ``context``: (output, input gradients)."""
    pick = None if pick_idx is None else mx.sym.Variable("pick")
    symbol = ChannelOperator(data=mx.sym.Variable("data"), pick_idx=pick, group=group,
                             op_type=op_type, pick_type=pick_type, name="op")
    shapes = {"data": data.shape}
    if pick_idx is not None:
        shapes["pick"] = pick_idx.shape
    executor = symbol.simple_bind(context, grad_req="write", **shapes)
    executor.forward(is_train=True, data=data, **({} if pick_idx is None else {"pick": pick_idx}))
    output = executor.outputs[0].asnumpy()
    if grad_out is None:
        grad_out = np.ones(output.shape, np.float32)
    executor.backward(out_grads=[mx.nd.array(grad_out, context)])
    return output, {name: grad.asnumpy() for name, grad in executor.grad_dict.items()}


def run_autograd(data, group, op_type, pick_idx=None, pick_type="Label_Pick", grad_out=None):
    """channel_operator_nd under mx.autograd: (output, data's gradient, pick_idx's gradient)."""
    data_nd = mx.nd.array(data, dtype=data.dtype)
    data_nd.attach_grad()
    pick_nd = None
    if pick_idx is not None:
        pick_nd = mx.nd.array(pick_idx, dtype=pick_idx.dtype)
        pick_nd.attach_grad()
    with mx.autograd.record():
        output = channel_operator_nd(data_nd, pick_nd, group=group, op_type=op_type,
                                     pick_type=pick_type)
    output.backward(mx.nd.array(grad_out, dtype=data.dtype))
    return (output.asnumpy(), data_nd.grad.asnumpy(),
            None if pick_nd is None else pick_nd.grad.asnumpy())


def random_case(rng, shape, group, tied=False):
    """Data (small integers where ties are wanted), labels in and out of range, scores."""
    n = shape[0]
    data = (rng.randint(-2, 3, shape) if tied else rng.randn(*shape)).astype(np.float32)
    labels = rng.randint(-1, group + 1, (n, 1, 1, 1)).astype(np.float32)
    scores = rng.rand(n, group, 1, 1).astype(np.float32)
    return data, labels, scores


# -- Forward and backward against the reference -----------------------------------------------

@pytest.mark.parametrize("shape, group", SHAPES)
@pytest.mark.parametrize("tied", [False, True])
def test_group_max_and_its_gradient_equal_the_kernels(shape, group, tied):
    data, _, _ = random_case(np.random.RandomState(0), shape, group, tied)
    grad_out = np.random.RandomState(1).randn(shape[0], group, *shape[2:]).astype(np.float32)
    output, grads = run_symbol(data, group, "Group_Max", grad_out=grad_out)
    np.testing.assert_array_equal(output, reference_group_max(data, group)[0])
    np.testing.assert_array_equal(grads["data"],
                                  reference_group_max_backward(data, group, grad_out))


@pytest.mark.parametrize("shape, group", SHAPES)
def test_label_pick_and_its_gradient_equal_the_kernels(shape, group):
    data, labels, _ = random_case(np.random.RandomState(2), shape, group)
    grad_out = np.random.RandomState(3).randn(shape[0], shape[1] // group,
                                              *shape[2:]).astype(np.float32)
    output, grads = run_symbol(data, group, "Group_Pick", labels, "Label_Pick", grad_out)
    np.testing.assert_array_equal(output,
                                  reference_group_pick(data, labels, group, "Label_Pick"))
    np.testing.assert_array_equal(
        grads["data"], reference_group_pick_backward(data, labels, group, "Label_Pick", grad_out))
    np.testing.assert_array_equal(grads["pick"], np.zeros(labels.shape))


@pytest.mark.parametrize("shape, group", SHAPES)
def test_score_pick_and_its_gradient_equal_the_reference(shape, group):
    data, _, scores = random_case(np.random.RandomState(4), shape, group)
    grad_out = np.random.RandomState(5).randn(shape[0], shape[1] // group,
                                              *shape[2:]).astype(np.float32)
    output, grads = run_symbol(data, group, "Group_Pick", scores, "Score_Pick", grad_out)
    np.testing.assert_array_equal(output,
                                  reference_group_pick(data, scores, group, "Score_Pick"))
    np.testing.assert_array_equal(
        grads["data"], reference_group_pick_backward(data, scores, group, "Score_Pick", grad_out))
    np.testing.assert_array_equal(grads["pick"], np.zeros(scores.shape))


@pytest.mark.parametrize("shape, group", SHAPES)
def test_group_softmax_and_its_gradient_match_the_reference(shape, group):
    data = (np.random.RandomState(6).randn(*shape) * 4).astype(np.float32)
    grad_out = np.random.RandomState(7).randn(*shape).astype(np.float32)
    output, grads = run_symbol(data, group, "Group_Softmax", grad_out=grad_out)
    np.testing.assert_allclose(output, reference_group_softmax(data, group), **SOFTMAX_TOLERANCE)
    np.testing.assert_allclose(grads["data"],
                               reference_group_softmax_backward(data, group, grad_out),
                               **SOFTMAX_TOLERANCE)


@st.composite
def cases(draw):
    """A shape, a group, an operation and a seed for its values."""
    group = draw(st.integers(1, 4))
    shape = (draw(st.integers(1, 3)), group * draw(st.integers(1, 3)),
             draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    operation = draw(st.sampled_from([("Group_Max", "Label_Pick"), ("Group_Softmax", "Label_Pick"),
                                      ("Group_Pick", "Label_Pick"), ("Group_Pick", "Score_Pick")]))
    return shape, group, operation, draw(st.integers(0, 2 ** 31 - 1)), draw(st.booleans())


@given(cases())
def test_the_ndarray_function_agrees_with_the_reference_under_autograd(case):
    shape, group, (op_type, pick_type), seed, tied = case
    rng = np.random.RandomState(seed)
    data, labels, scores = random_case(rng, shape, group, tied)
    pick_idx = None if op_type != "Group_Pick" else (labels if pick_type == "Label_Pick"
                                                      else scores)
    if op_type == "Group_Max":
        expected = reference_group_max(data, group)[0]
    elif op_type == "Group_Softmax":
        expected = reference_group_softmax(data, group)
    else:
        expected = reference_group_pick(data, pick_idx, group, pick_type)
    grad_out = rng.randn(*expected.shape).astype(np.float32)
    output, grad_data, grad_pick = run_autograd(data, group, op_type, pick_idx, pick_type,
                                                grad_out)
    if op_type == "Group_Softmax":
        np.testing.assert_allclose(output, expected, **SOFTMAX_TOLERANCE)
        np.testing.assert_allclose(grad_data,
                                   reference_group_softmax_backward(data, group, grad_out),
                                   **SOFTMAX_TOLERANCE)
        return
    np.testing.assert_array_equal(output, expected)
    if op_type == "Group_Max":
        np.testing.assert_array_equal(grad_data,
                                      reference_group_max_backward(data, group, grad_out))
    else:
        np.testing.assert_array_equal(
            grad_data, reference_group_pick_backward(data, pick_idx, group, pick_type, grad_out))
        np.testing.assert_array_equal(grad_pick, np.zeros(pick_idx.shape))


# -- The kernels' details, one each -----------------------------------------------------------

def test_the_gradient_of_a_tied_maximum_goes_to_the_first_channel_only():
    data = np.array([[[[1.0]], [[3.0]], [[3.0]], [[0.0]]]], np.float32)  # one group, tied 1 & 2
    output, grads = run_symbol(data, 1, "Group_Max", grad_out=np.full((1, 1, 1, 1), 5.0))
    assert output.reshape(-1).tolist() == [3.0]
    assert grads["data"].reshape(-1).tolist() == [0.0, 5.0, 0.0, 0.0]


def test_a_label_is_truncated_toward_zero_as_cs_int_conversion_does():
    data = np.arange(2 * 6, dtype=np.float32).reshape(2, 6, 1, 1)
    labels = np.array([-0.7, 1.9], np.float32).reshape(2, 1, 1, 1)  # groups 0 and 1
    output, _ = run_symbol(data, 3, "Group_Pick", labels, "Label_Pick")
    assert output.reshape(2, 2).tolist() == [[0.0, 1.0], [8.0, 9.0]]


@pytest.mark.parametrize("label", [-1.0, 3.0, 1e9, -1e9, np.nan])
def test_a_label_outside_the_groups_picks_zeros_and_passes_no_gradient(label):
    data = np.random.RandomState(8).randn(2, 6, 2, 2).astype(np.float32)
    labels = np.array([label, 2.0], np.float32).reshape(2, 1, 1, 1)
    output, grads = run_symbol(data, 3, "Group_Pick", labels, "Label_Pick")
    assert not output[0].any() and (output[1] == data[1, 4:6]).all()
    assert not grads["data"][0].any()


def test_an_inf_in_a_sample_that_picks_no_group_does_not_reach_the_output():
    data = np.ones((2, 4, 1, 1), np.float32)
    data[:, :2] = np.inf  # group 0, whose channels an index out of range would stand in for
    labels = np.array([-1.0, 1.0], np.float32).reshape(2, 1, 1, 1)
    output, grads = run_symbol(data, 2, "Group_Pick", labels, "Label_Pick")
    assert output.reshape(2, 2).tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert grads["data"].reshape(2, 4).tolist() == [[0.0] * 4, [0.0, 0.0, 1.0, 1.0]]


def test_score_pick_never_picks_the_background_class():
    scores = np.array([0.9, 0.05, 0.05], np.float32).reshape(1, 3, 1, 1)
    data = np.arange(6, dtype=np.float32).reshape(1, 6, 1, 1)
    output, _ = run_symbol(data, 3, "Group_Pick", scores, "Score_Pick")
    assert output.reshape(-1).tolist() == [2.0, 3.0]  # class 1, the first of the tied maxima


@pytest.mark.parametrize("scores", [[0.2, np.nan, 0.1, np.nan], [0.2, -np.inf, -FLT_MAX, 0.0]])
def test_score_pick_ignores_nan_and_scores_at_most_minus_flt_max(scores):
    scores = np.array(scores, np.float32).reshape(1, 4, 1, 1)
    data = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    output, _ = run_symbol(data, 4, "Group_Pick", scores, "Score_Pick")
    assert output.tolist() == reference_group_pick(data, scores, 4, "Score_Pick").tolist()
    assert output.reshape(-1).tolist() == ([4.0, 5.0] if np.isnan(scores).any() else [6.0, 7.0])


@pytest.mark.parametrize("group, scores", [(1, [0.7]), (3, [0.5, np.nan, -np.inf])])
def test_score_pick_with_no_class_that_counts_outputs_zeros(group, scores):
    data = np.random.RandomState(9).randn(1, 2 * group, 2, 2).astype(np.float32)
    scores = np.array(scores, np.float32).reshape(1, group, 1, 1)
    output, grads = run_symbol(data, group, "Group_Pick", scores, "Score_Pick")
    assert output.shape == (1, 2, 2, 2) and not output.any() and not grads["data"].any()


def test_the_gradient_accumulates_under_grad_req_add():
    # FCIS's kernels assign where MXNet asks them to add; the stock operators add.
    data = np.random.RandomState(10).randn(2, 4, 2, 2).astype(np.float32)
    symbol = ChannelOperator(mx.sym.Variable("data"), group=2, op_type="Group_Max")
    executor = symbol.simple_bind(mx.cpu(0), data=data.shape, grad_req="add")
    executor.grad_dict["data"][:] = 1.0
    executor.forward(is_train=True, data=data)
    executor.backward(out_grads=[mx.nd.ones((2, 2, 2, 2))])
    expected = 1.0 + reference_group_max_backward(data, 2, np.ones((2, 2, 2, 2), np.float32))
    np.testing.assert_array_equal(executor.grad_dict["data"].asnumpy(), expected)


def test_the_result_is_the_same_on_a_second_cpu_context():
    data, labels, _ = random_case(np.random.RandomState(11), (2, 6, 3, 3), 3)
    first = run_symbol(data, 3, "Group_Pick", labels, context=mx.cpu(0))
    second = run_symbol(data, 3, "Group_Pick", labels, context=mx.cpu(1))
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1]["data"], second[1]["data"])


# -- The symbol FCIS builds -------------------------------------------------------------------

def test_fciss_calls_build_symbols_with_fciss_output_names_and_shapes():
    maps, label, score = (mx.sym.Variable(name) for name in ("maps", "label", "score"))
    built = {
        "psroipool_cls": ChannelOperator(name="psroipool_cls", data=maps, group=81,
                                         op_type="Group_Max"),
        "seg_pred": ChannelOperator(name="seg_pred", data=maps, pick_idx=label, group=81,
                                    op_type="Group_Pick", pick_type="Label_Pick"),
        "seg_softmax": ChannelOperator(name="seg_softmax", data=maps, group=81,
                                       op_type="Group_Softmax"),
        "seg_pick": ChannelOperator(name="seg_pick", data=maps, pick_idx=score, group=81,
                                    op_type="Group_Pick", pick_type="Score_Pick"),
    }
    shapes = {"maps": (128, 162, 21, 21), "label": (128, 1, 1, 1), "score": (128, 81, 1, 1)}
    expected = {"psroipool_cls": (128, 81, 21, 21), "seg_pred": (128, 2, 21, 21),
                "seg_softmax": (128, 162, 21, 21), "seg_pick": (128, 2, 21, 21)}
    for name, symbol in built.items():
        assert symbol.list_outputs() == [name + "_output"]
        arguments = {key: shapes[key] for key in symbol.list_arguments()}
        assert symbol.infer_shape(**arguments)[1] == [expected[name]]


def test_unnamed_operators_take_the_name_managers_names():
    with mx.name.Prefix("net_"):
        symbol = ChannelOperator(mx.sym.Variable("data"), group=2, op_type="Group_Max")
        named = ChannelOperator(mx.sym.Variable("data"), group=2, op_type="Group_Max",
                                name="cls")
    assert symbol.list_outputs() == ["net_pick0_output"]
    assert named.list_outputs() == ["net_cls_output"]
    assert "net_cls_groups_output" in named.get_internals().list_outputs()


# -- Refusals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("arguments, named", [
    (dict(group=2, op_type="Group_Mean"), "'Group_Mean'"),
    (dict(group=2, op_type="Group_Max", pick_type="Label"), "'Label'"),
    (dict(group=0, op_type="Group_Max"), "got 0"),
    (dict(group=2.5, op_type="Group_Max"), "got 2.5"),
    (dict(group="81", op_type="Group_Max"), "got '81'"),
    (dict(group=True, op_type="Group_Max"), "got True"),
    (dict(group=2, op_type="Group_Pick"), "needs pick_idx"),
    (dict(group=2, op_type="Group_Softmax", pick_idx=mx.sym.Variable("p")), "takes no pick_idx"),
])
def test_arguments_fciss_operator_refuses_are_refused_with_the_value(arguments, named):
    with pytest.raises(ChannelOperatorError, match=named):
        ChannelOperator(mx.sym.Variable("data"), **arguments)


def test_a_group_that_does_not_divide_the_channels_fails_at_bind_in_the_groups_node():
    symbol = ChannelOperator(mx.sym.Variable("data"), group=4, op_type="Group_Max", name="cls")
    with pytest.raises(mx.base.MXNetError, match="cls_groups.*do not divide original dim 6"):
        symbol.infer_shape(data=(2, 6, 3, 3))


@pytest.mark.parametrize("shape, pick_shape, pick_type, named", [
    ((2, 6, 3, 3), None, "Label_Pick", "group=4 does not divide data's 6 channels"),
    ((2, 8, 3), None, "Label_Pick", "must be 4-D"),
    ((2, 8, 3, 3), (3, 1, 1, 1), "Label_Pick", "1 value.*2 in all, got 3"),
    ((2, 8, 3, 3), (2, 1, 1, 1), "Score_Pick", "4 value.*8 in all, got 2"),
])
def test_the_ndarray_function_refuses_shapes_before_computing(shape, pick_shape, pick_type,
                                                              named):
    op_type = "Group_Max" if pick_shape is None else "Group_Pick"
    pick_idx = None if pick_shape is None else mx.nd.zeros(pick_shape)
    with pytest.raises(ChannelOperatorError, match=named):
        channel_operator_nd(mx.nd.zeros(shape), pick_idx, group=4, op_type=op_type,
                            pick_type=pick_type)


def test_an_ndarray_given_to_the_symbol_function_is_refused_naming_the_ndarray_function():
    with pytest.raises(TypeError, match="channel_operator_nd"):
        ChannelOperator(mx.nd.zeros((1, 2, 1, 1)), group=2, op_type="Group_Max")
