"""PerDeviceIter with several named inputs: images, label maps, box lists, fixed inputs, errors."""

import doctest
import importlib

import mxnet as mx
import numpy as np
import pytest

import mxpatch_bind
from mxpatch_bind import DataSpecError, Input, PerDeviceIter

IGNORE = 255
IMAGE = Input("data", size_axes=(1, 2), layout="NCHW")
IM_INFO = Input("im_info")
BOXES = Input("gt_boxes", variable_axes=(0,), pad_value=-1)
SEG_MAP = Input("seg_label", size_axes=(0, 1), pad_value=IGNORE)


def detection_samples(count, seed=0):
    """(image, im_info, boxes): values >= 1 so that pad values can only be padding."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        h, w = (int(v) for v in rng.integers(4, 12, size=2))
        boxes = rng.integers(1, 50, size=(int(rng.integers(0, 5)), 5)).astype(np.float32)
        samples.append((rng.integers(1, 256, size=(3, h, w)).astype(np.float32),
                        np.array([h, w, 1.0], dtype=np.float32), boxes))
    return samples


def segmentation_samples(count, seed=0):
    """{'data': image, 'seg_label': map of the image's size with classes 0..20}."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        h, w = (int(v) for v in rng.integers(4, 12, size=2))
        samples.append({"data": rng.integers(1, 256, size=(3, h, w)).astype(np.float32),
                        "seg_label": rng.integers(0, 21, size=(h, w)).astype(np.float32)})
    return samples


def detection_iter(samples, **kwargs):
    return PerDeviceIter(samples, num_devices=2, batch_per_device=2, inputs=[IMAGE, IM_INFO],
                         label_inputs=[BOXES], **kwargs)


def test_images_are_padded_with_zeros_to_their_device_s_largest_size():
    samples = detection_samples(8)
    it = detection_iter(samples)

    for batch in it:
        for device, indices in zip(batch.data, np.split(batch.index, 2)):
            images = device[0].asnumpy()
            sizes = np.array([samples[i][0].shape[1:] for i in indices])
            assert images.shape == (2, 3) + tuple(sizes.max(axis=0))
            for row, index in zip(images, indices):
                h, w = samples[index][0].shape[1:]
                np.testing.assert_array_equal(row[:, :h, :w], samples[index][0])
                assert not row[:, h:].any() and not row[:, :, w:].any()


def test_box_lists_are_padded_with_rows_of_minus_one_to_the_device_s_largest_count():
    samples = detection_samples(12, seed=1)
    it = detection_iter(samples)

    for batch in it:
        for device, indices in zip(batch.label, np.split(batch.index, 2)):
            boxes = device[0].asnumpy()
            counts = [len(samples[i][2]) for i in indices]
            assert boxes.shape == (2, max(counts), 5)
            for row, index in zip(boxes, indices):
                count = len(samples[index][2])
                np.testing.assert_array_equal(row[:count], samples[index][2])
                assert (row[count:] == -1).all()


def test_fixed_inputs_pass_through_unpadded():
    samples = detection_samples(6, seed=2)
    it = detection_iter(samples)

    for batch in it:
        for device, indices in zip(batch.data, np.split(batch.index, 2)):
            np.testing.assert_array_equal(device[1].asnumpy(),
                                          np.stack([samples[i][1] for i in indices]))


def test_segmentation_maps_are_padded_with_the_ignore_label_to_the_image_s_padded_size():
    samples = segmentation_samples(10, seed=3)
    it = PerDeviceIter(samples, num_devices=2, batch_per_device=2, inputs=[IMAGE],
                       label_inputs=[SEG_MAP])

    for batch in it:
        for data, label in zip(batch.data, batch.label):
            maps = label[0].asnumpy()
            assert maps.shape == (2,) + data[0].shape[2:]
        for device, indices in zip(batch.label, np.split(batch.index, 2)):
            for row, index in zip(device[0].asnumpy(), indices):
                h, w = samples[index]["seg_label"].shape
                np.testing.assert_array_equal(row[:h, :w], samples[index]["seg_label"])
                assert (row[h:] == IGNORE).all() and (row[:, w:] == IGNORE).all()


def test_provide_data_and_label_describe_every_input_of_every_device():
    it = detection_iter(detection_samples(4, seed=4))

    batch = it.next()

    assert [[desc.name for desc in device] for device in batch.provide_data] == \
        [["data", "im_info"]] * 2
    assert batch.provide_data == [[(desc.name, array.shape) for desc, array in zip(descs, arrays)]
                                  for descs, arrays in zip(batch.provide_data, batch.data)]
    assert batch.provide_label == [[("gt_boxes", device[0].shape)] for device in batch.label]


def test_each_input_keeps_its_own_dtype():
    samples = [(np.ones((3, 4, 4)), np.ones((4, 4)) * 7) for _ in range(2)]
    it = PerDeviceIter(samples, num_devices=2, batch_per_device=1,
                       inputs=[Input("data", size_axes=(1, 2), dtype="float16")],
                       label_inputs=[Input("label", size_axes=(0, 1), dtype="int32")])

    batch = it.next()

    assert batch.data[0][0].dtype == np.float16 and batch.label[1][0].dtype == np.int32
    assert batch.provide_label[0][0].dtype == np.int32


def test_dict_and_tuple_samples_give_equal_batches():
    tuples = detection_samples(7, seed=5)
    dicts = [dict(zip(["data", "im_info", "gt_boxes"], sample)) for sample in tuples]

    one, two = detection_iter(tuples), detection_iter(dicts)

    for a, b in zip(one, two):
        for x, y in zip(sum(a.data + a.label, []), sum(b.data + b.label, [])):
            np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_dense_ndarray_samples_are_accepted_like_numpy_ones():
    samples = detection_samples(4, seed=6)
    as_ndarrays = [tuple(mx.nd.array(array) for array in sample) for sample in samples]

    one, two = detection_iter(samples), detection_iter(as_ndarrays)

    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.label[0][0].asnumpy(), b.label[0][0].asnumpy())
        np.testing.assert_array_equal(a.data[1][0].asnumpy(), b.data[1][0].asnumpy())


def test_the_single_input_form_accepts_dense_ndarrays_and_refuses_sparse_ones():
    images = [np.ones((1, 3, 3)), np.ones((1, 2, 4))]

    it = PerDeviceIter([mx.nd.array(image) for image in images], num_devices=2,
                       batch_per_device=1, grouping=False)

    assert [device[0].shape for device in it.next().data] == [(1, 1, 3, 3), (1, 1, 2, 4)]
    sparse = mx.nd.array(np.eye(3)).tostype("csr")
    with pytest.raises(DataSpecError, match="sample 0 is a csr NDArray, expected a dense array"):
        PerDeviceIter([sparse], num_devices=1, batch_per_device=1, layout="NCW")


def test_a_module_trains_on_several_inputs_per_device(contexts):
    """A network reading image and im_info: per-device outputs equal one-context stock ones."""
    samples = detection_samples(4, seed=7)
    it = detection_iter(samples)
    data, info = mx.sym.Variable("data"), mx.sym.Variable("im_info")
    net = mx.sym.broadcast_add(mx.sym.sum(data, axis=(1, 2, 3), keepdims=False),
                               mx.sym.sum(info, axis=1))
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.Variable("gt_boxes"), axis=(1, 2)) * 0 + net)
    batch = it.next()
    with mxpatch_bind.patched():
        module = mx.mod.Module(net, data_names=("data", "im_info"), label_names=("gt_boxes",),
                               context=contexts)
        module.bind(data_shapes=it.provide_data, label_shapes=it.provide_label,
                    for_training=False)
        module.init_params()
        module.forward(batch, is_train=False)
        outputs = [out.asnumpy() for out in module.get_outputs(merge_multi_context=False)[0]]

    for output, indices in zip(outputs, np.split(batch.index, 2)):
        expected = [samples[i][0].sum() + samples[i][1].sum() for i in indices]
        np.testing.assert_allclose(output, expected, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.complex64, np.str_, np.bytes_, object])
def test_samples_of_a_dtype_mxnet_cannot_hold_are_refused_in_the_constructor(dtype):
    image = np.ones((3, 4, 4)).astype(dtype)

    with pytest.raises(DataSpecError, match="sample 0 input 'data' has dtype .*, expected numbers"):
        PerDeviceIter([(image,)], num_devices=1, batch_per_device=1, inputs=[IMAGE])


@pytest.mark.parametrize("dtype", [np.complex64, np.object_])
def test_single_input_samples_of_a_dtype_mxnet_cannot_hold_are_refused(dtype):
    with pytest.raises(DataSpecError, match="sample 0 has dtype .*, expected numbers"):
        PerDeviceIter([np.ones((3, 4, 4)).astype(dtype)], num_devices=1, batch_per_device=1)


def test_ragged_nested_lists_are_refused_as_object_arrays():
    ragged = [[[1.0, 2.0], [3.0]]]

    with pytest.raises(DataSpecError, match="sample 0 has dtype object, expected numbers"):
        PerDeviceIter([np.array(ragged, dtype=object)], num_devices=1, batch_per_device=1)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int64, np.float64])
def test_boolean_integer_and_float_samples_are_converted_to_the_input_dtype(dtype):
    it = PerDeviceIter([(np.ones((1, 2, 2), dtype=dtype),)], num_devices=1, batch_per_device=1,
                       inputs=[IMAGE])

    array = it.next().data[0][0]

    assert array.dtype == np.float32 and array.asnumpy().tolist() == [[[[1, 1], [1, 1]]]]


@pytest.mark.parametrize("dtype", ["complex64", "U1", object])
def test_a_batch_dtype_mxnet_cannot_hold_is_refused(dtype):
    with pytest.raises(DataSpecError, match="dtype must be one MXNet holds .*, got"):
        PerDeviceIter([np.ones((1, 2, 2))], num_devices=1, batch_per_device=1, dtype=dtype)


GOOD = dict(data=detection_samples(2), num_devices=2, batch_per_device=1,
            inputs=[IMAGE, IM_INFO], label_inputs=[BOXES])


@pytest.mark.parametrize("changes, message", [
    (dict(inputs=[]), "inputs is empty"),
    (dict(inputs="data"), "inputs must be a list of mxpatch_bind.Input, got 'data'"),
    (dict(inputs=[IMAGE, IM_INFO], label_inputs=[Input("data")]),
     r"input names must be unique, got \['data'\]"),
    (dict(inputs=[IM_INFO], label_inputs=[BOXES], data=[(np.ones(3), np.ones((1, 5)))]),
     "no input declares size_axes"),
    (dict(label_inputs=[Input("m", size_axes=(0,))]),
     r"inputs declare different numbers of size axes: 'data' \(1, 2\), 'm' \(0,\)"),
    (dict(label=[1, 2]), "label is for the single-input form"),
    (dict(data=[(np.ones((3, 4, 4)), np.ones(3))]),
     r"sample 0 has 2 entries, expected 3 \(one per input \['data', 'im_info', 'gt_boxes'\]\)"),
    (dict(data=[{"data": np.ones((3, 4, 4))}]),
     r"sample 0 has keys \['data'\], expected the declared inputs"),
    (dict(data=[np.ones((3, 4, 4))]), "sample 0 is a ndarray, expected a tuple or dict"),
    (dict(data=[(np.ones((4, 4)), np.ones(3), np.ones((1, 5)))]),
     r"sample 0 input 'data' has shape \(4, 4\), too few axes for size_axes \(1, 2\)"),
    (dict(data=[(np.ones((3, 4, 4)), np.ones(3), np.ones((1, 5))),
                (np.ones((3, 4, 4)), np.ones(4), np.ones((1, 5)))]),
     r"sample 1 input 'im_info' has shape \(4,\), expected \(3,\) on its fixed axes"),
    (dict(data=[(np.ones((3, 4, 4)), np.ones(3), np.ones((1, 5))),
                (np.ones((3, 4, 4)), np.ones(3), np.ones((1, 4)))]),
     r"sample 1 input 'gt_boxes' has shape \(1, 4\), expected \(1, 5\) on its fixed axes"),
    (dict(data=[(np.ones((3, 0, 4)), np.ones(3), np.ones((1, 5)))]),
     r"sample 0 input 'data' has an empty size axis: shape \(3, 0, 4\)"),
    (dict(label_inputs=[SEG_MAP], data=[(np.ones((3, 4, 4)), np.ones(3), np.ones((4, 5)))]),
     r"sample 0: input 'seg_label' has size \(4, 5\) on its size axes, input 'data' has \(4, 4\)"),
    (dict(data=[]), "data is empty"),
    (dict(data=5), "data must be a sequence or dataset"),
    (dict(pad_to_multiple=0), "pad_to_multiple must be an integer >= 1 and <= 2147483647 .*, got 0"),
    (dict(num_workers=-1), "num_workers must be an integer >= 0, got -1"),
    (dict(prefetch=1.5), r"prefetch must be an integer >= 0, got 1\.5"),
])
def test_bad_samples_and_declarations_raise_data_spec_errors_naming_them(changes, message):
    with pytest.raises(DataSpecError, match=message):
        PerDeviceIter(**dict(GOOD, **changes))


@pytest.mark.parametrize("kwargs, message", [
    (dict(name=""), "an input's name must be a non-empty str, got ''"),
    (dict(name="x", size_axes=(1, 1)), r"input 'x': size_axes must be a tuple of distinct axis"),
    (dict(name="x", variable_axes=(-1,)), r"variable_axes must be a tuple .*, got \(-1,\)"),
    (dict(name="x", size_axes=1), "size_axes must be a tuple .*, got 1"),
    (dict(name="x", size_axes=(0,), variable_axes=(0,)), r"size_axes \(0,\) and variable_axes"),
    (dict(name="x", pad_value="255"), "input 'x': pad_value must be a number, got '255'"),
    (dict(name="x", dtype="complex64"), "input 'x': dtype must be one MXNet holds"),
])
def test_bad_input_declarations_raise_data_spec_errors(kwargs, message):
    with pytest.raises(DataSpecError, match=message):
        Input(**kwargs)


def test_data_spec_error_is_a_value_error_of_this_package():
    assert issubclass(DataSpecError, ValueError)
    assert issubclass(DataSpecError, mxpatch_bind.PatchError)


@pytest.mark.parametrize("module", ["inputs", "planning", "loading"])
def test_docstring_examples_of_the_data_modules_run(module):
    assert doctest.testmod(importlib.import_module("mxpatch_bind.data." + module)).failed == 0


@pytest.mark.parametrize("changes", [dict(sizes=[[4, 4]]), dict(label_inputs=[BOXES])])
def test_lazy_and_label_options_without_inputs_are_refused(changes):
    with pytest.raises(DataSpecError, match="sizes and label_inputs go with inputs="):
        PerDeviceIter([np.ones((3, 4, 4))], num_devices=1, batch_per_device=1, **changes)
