"""Tests of PerDeviceIter: per-device shapes, padding, order, filler and bad input."""

import doctest
import itertools
import math

import mxnet as mx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mxpatch_bind
import mxpatch_bind.data.io
from mxpatch_bind import PerDeviceIter
from samples import make_images, random_sizes

CONTEXTS = [mx.cpu(0), mx.cpu(1)]


def all_batches(it):
    return list(it)


def flat_rows(batches, key):
    """What Module.predict() merges: per batch, device 0's rows then device 1's, less the pad."""
    rows = []
    for batch in batches:
        merged = np.concatenate([device[0].asnumpy() for device in getattr(batch, key)])
        rows.append(merged[:len(merged) - batch.pad])
    return np.concatenate(rows)


def batch_maximum_pixels(it, sizes):
    """Per batch, the pixels when every sample is padded to the batch's largest extent."""
    pixels = []
    for batch in it.batch_indices:
        indices = np.concatenate(batch)
        pixels.append(len(indices) * int(np.prod(sizes[indices].max(axis=0))))
    return pixels


def test_each_device_is_padded_to_its_own_largest_sample():
    images = make_images([(10, 12), (8, 14), (20, 5), (3, 3)])
    it = PerDeviceIter(images, num_devices=len(CONTEXTS), batch_per_device=2, grouping=False)

    batch = it.next()

    shapes = [[array.shape for array in device] for device in batch.data]
    assert shapes == [[(2, 3, 10, 14)], [(2, 3, 20, 5)]]


def test_provide_data_is_a_per_device_list_of_data_descs():
    images = make_images([(10, 12), (8, 14), (20, 5), (3, 3)])
    it = PerDeviceIter(images, num_devices=2, batch_per_device=2, grouping=False, layout="NCHW")

    descs = it.provide_data

    assert descs == [[("data", (2, 3, 10, 14))], [("data", (2, 3, 20, 5))]]
    assert all(isinstance(device[0], mx.io.DataDesc) for device in descs)
    assert all(device[0].layout == "NCHW" and device[0].dtype == np.float32 for device in descs)


def test_real_pixels_equal_the_sample_and_padding_is_zero():
    sizes = random_sizes(37, seed=1)
    images = make_images(sizes)
    it = PerDeviceIter(images, num_devices=2, batch_per_device=3)

    for batch in it:
        for device, indices in zip(batch.data, np.split(batch.index, 2)):
            array = device[0].asnumpy()
            assert array.shape[2:] == tuple(sizes[indices].max(axis=0))
            for row, index in zip(array, indices):
                h, w = sizes[index]
                np.testing.assert_array_equal(row[:, :h, :w], images[index])
                assert not row[:, h:, :].any() and not row[:, :, w:].any()


def test_labels_follow_their_samples_on_every_device():
    sizes = random_sizes(21, seed=2)
    images = make_images(sizes)
    it = PerDeviceIter(images, label=np.arange(21) * 10, num_devices=2, batch_per_device=4)

    for batch in it:
        for data, label in zip(batch.data, batch.label):
            for row, value in zip(data[0].asnumpy(), label[0].asnumpy()):
                index = int(value) // 10
                h, w = sizes[index]
                np.testing.assert_array_equal(row[:, :h, :w], images[index])


def test_per_sample_label_arrays_keep_their_shape():
    images = make_images(random_sizes(6))
    labels = [np.array([i, -i]) for i in range(6)]
    it = PerDeviceIter(images, label=labels, num_devices=2, batch_per_device=3)

    batch = it.next()

    assert it.provide_label == [[("softmax_label", (3, 2))], [("softmax_label", (3, 2))]]
    np.testing.assert_array_equal(np.concatenate([device[0].asnumpy() for device in batch.label]),
                                  np.stack(labels)[batch.index])


def test_batch_carries_its_own_per_device_shapes():
    it = PerDeviceIter(make_images(random_sizes(8)), label=range(8), num_devices=2,
                       batch_per_device=2)

    for batch in it:
        assert batch.provide_data == [[("data", device[0].shape)] for device in batch.data]
        assert batch.provide_label == [[("softmax_label", (2,))]] * 2


def test_filler_completes_the_last_batch_at_its_end():
    images = make_images(random_sizes(11, seed=3))
    it = PerDeviceIter(images, label=range(11), num_devices=2, batch_per_device=4)

    batches = all_batches(it)

    assert [batch.pad for batch in batches] == [0, 5]
    last = batches[-1].index
    assert len(set(last[:3])) == 3 and set(last[3:]) == {last[2]}


def test_devices_with_only_filler_repeat_the_last_real_sample():
    it = PerDeviceIter(make_images([(5, 7), (4, 4)]), num_devices=3, batch_per_device=2,
                       grouping=False)

    batch = it.next()

    assert batch.pad == 4
    assert it.batch_indices == [[[0, 1], [1, 1], [1, 1]]]
    assert batch.data[2][0].shape == (2, 3, 4, 4)


def test_dropping_pad_rows_leaves_every_sample_once_in_sample_order():
    labels = np.arange(13)
    it = PerDeviceIter(make_images(random_sizes(13, seed=4)), label=labels, num_devices=2,
                       batch_per_device=3, shuffle=True, seed=5)

    rows = flat_rows(all_batches(it), "label")

    np.testing.assert_array_equal(rows, labels[it.sample_order])
    assert sorted(it.sample_order.tolist()) == list(range(13))
    np.testing.assert_array_equal(rows[np.argsort(it.sample_order)], labels)


@pytest.mark.parametrize("num_samples", [1, 7, 8, 9, 31])
def test_an_epoch_has_ceil_samples_over_batch_size_batches(num_samples):
    it = PerDeviceIter(make_images(random_sizes(num_samples)), num_devices=2, batch_per_device=4)

    count = len(all_batches(it))

    assert count == it.num_batches == math.ceil(num_samples / 8)


def test_arrival_order_keeps_the_dataset_order():
    it = PerDeviceIter(make_images(random_sizes(10)), num_devices=2, batch_per_device=2,
                       grouping=False)

    assert it.sample_order.tolist() == list(range(10))


def test_grouping_with_a_window_of_one_keeps_each_batch_s_samples():
    it = PerDeviceIter(make_images(random_sizes(20)), num_devices=2, batch_per_device=2)

    members = [sorted(np.concatenate(batch).tolist()) for batch in it.batch_indices]

    assert members == [list(range(start, start + 4)) for start in range(0, 20, 4)]


def test_reset_repeats_the_unshuffled_epoch():
    it = PerDeviceIter(make_images(random_sizes(9)), label=range(9), num_devices=2,
                       batch_per_device=2)
    first = [batch.index.tolist() for batch in it]

    it.reset()

    assert [batch.index.tolist() for batch in it] == first
    assert it.epoch == 1


def test_equal_seeds_shuffle_alike_epoch_after_epoch():
    images = make_images(random_sizes(30))
    one = PerDeviceIter(images, num_devices=2, batch_per_device=3, shuffle=True, seed=11)
    two = PerDeviceIter(images, num_devices=2, batch_per_device=3, shuffle=True, seed=11)
    orders = []
    for _ in range(3):
        assert one.batch_indices == two.batch_indices
        orders.append(one.sample_order.tolist())
        one.reset()
        two.reset()

    assert orders[0] != orders[1] != orders[2]


def test_different_seeds_shuffle_differently():
    images = make_images(random_sizes(30))
    one = PerDeviceIter(images, num_devices=2, batch_per_device=3, shuffle=True, seed=1)
    two = PerDeviceIter(images, num_devices=2, batch_per_device=3, shuffle=True, seed=2)

    assert one.batch_indices != two.batch_indices


def test_shuffle_keeps_the_short_batch_last():
    it = PerDeviceIter(make_images(random_sizes(29)), num_devices=2, batch_per_device=2,
                       shuffle=True, group_window=3)

    for _ in range(4):
        assert [batch.pad for batch in it] == [0] * 7 + [3]
        it.reset()


def test_provide_data_describes_the_batch_next_returns():
    it = PerDeviceIter(make_images(random_sizes(12, seed=6)), num_devices=2, batch_per_device=2,
                       grouping=False)
    upcoming = it.provide_data

    for batch in it:
        assert batch.provide_data == upcoming
        upcoming = it.provide_data

    assert upcoming == batch.provide_data


def test_it_works_as_an_mxnet_data_iter():
    it = PerDeviceIter(make_images(random_sizes(5)), label=range(5), num_devices=2,
                       batch_per_device=2)

    assert isinstance(it, mx.io.DataIter)
    assert it.batch_size == 4
    assert iter(it) is it
    assert isinstance(next(it), mx.io.DataBatch)
    assert it.iter_next()
    assert (it.getpad(), len(it.getindex())) == (3, 4)
    assert it.getdata()[0][0].context == mx.cpu() and it.getlabel()[1][0].shape == (2,)
    with pytest.raises(StopIteration):
        it.next()


def test_without_labels_batches_have_no_label():
    it = PerDeviceIter(make_images(random_sizes(4)), num_devices=2, batch_per_device=2)

    batch = it.next()

    assert it.provide_label is None and batch.label is None and batch.provide_label is None


def test_dtype_and_a_one_dimensional_layout_are_honoured():
    signals = [np.ones((2, length)) for length in (5, 3, 9, 4)]
    it = PerDeviceIter(signals, label=range(4), num_devices=2, batch_per_device=2,
                       dtype="float16", layout="NCW", grouping=False)

    batch = it.next()

    assert [device[0].shape for device in batch.data] == [(2, 2, 5), (2, 2, 9)]
    assert {device[0].dtype for device in batch.data + batch.label} == {np.float16}
    assert it.provide_data[0][0].layout == "NCW"


def test_a_batch_prints_its_per_device_shapes():
    it = PerDeviceIter(make_images([(2, 3), (4, 1)]), num_devices=2, batch_per_device=1,
                       grouping=False)

    assert "[[(1, 3, 2, 3)], [(1, 3, 4, 1)]]" in str(it.next())


def test_grouping_pads_less_than_arrival_order_and_the_batch_maximum():
    """Padding of 200 random images (H, W uniform in 16..64, seed 0) on 2 devices x 4.

    Measured by this test (``python -m pytest tests/data/test_io.py -k grouping_pads``);
    padding pixels, padding fraction, step pixels (busiest device, summed over batches):

    - every sample padded to its batch's largest extent: 379,417  52.6%  360,360
    - arrival order, padded per device:                  293,613  46.2%  346,752
    - grouped, window of 1 batch (default unshuffled):   197,121  36.6%  342,616
    - grouped, window of 4 batches:                      119,581  25.9%  252,060
    """
    sizes = random_sizes(200)
    images = make_images(sizes, channels=1)
    arrival = PerDeviceIter(images, num_devices=2, batch_per_device=4, grouping=False)
    grouped = PerDeviceIter(images, num_devices=2, batch_per_device=4)
    windowed = PerDeviceIter(images, num_devices=2, batch_per_device=4, group_window=4)
    batch_maximum = batch_maximum_pixels(arrival, sizes)

    stats = [it.padding_stats() for it in (arrival, grouped, windowed)]

    padding = [sum(batch_maximum) - stats[0].real_pixels] + [s.padding_pixels for s in stats]
    steps = [sum(batch_maximum) // 2] + [s.step_pixels for s in stats]
    assert padding == [379417, 293613, 197121, 119581]
    assert steps == [360360, 346752, 342616, 252060]


def test_padding_stats_add_up_to_the_arrays_built():
    sizes = random_sizes(23, seed=7)
    it = PerDeviceIter(make_images(sizes, channels=1), num_devices=2, batch_per_device=4,
                       group_window=2)

    stats = it.padding_stats()
    device_pixels = np.zeros(2, dtype=np.int64)
    zeros = 0
    for batch in it:
        device_pixels += [device[0].size for device in batch.data]
        zeros += sum(int((device[0].asnumpy() == 0).sum()) for device in batch.data)

    assert stats.device_pixels == tuple(device_pixels)
    assert stats.padding_pixels == zeros
    assert stats.total_pixels == stats.real_pixels + stats.padding_pixels + stats.filler_pixels
    assert stats.real_pixels == int(sizes.prod(axis=1).sum())


@settings(max_examples=max(6, settings.default.max_examples * 3 // 10))  # 30 on CI
@given(sizes=st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=20),
       num_devices=st.integers(1, 3), batch_per_device=st.integers(1, 4),
       group_window=st.integers(1, 3), grouping=st.booleans(), shuffle=st.booleans())
def test_any_split_keeps_every_sample_once_and_unaltered(sizes, num_devices, batch_per_device,
                                                         group_window, grouping, shuffle):
    images = make_images(sizes, channels=1)
    it = PerDeviceIter(images, label=range(len(sizes)), num_devices=num_devices,
                       batch_per_device=batch_per_device, group_window=group_window,
                       grouping=grouping, shuffle=shuffle)

    batches = all_batches(it)

    assert sorted(it.sample_order.tolist()) == list(range(len(sizes)))
    np.testing.assert_array_equal(flat_rows(batches, "label"), it.sample_order)
    for batch in batches:
        for data, label in zip(batch.data, batch.label):
            for row, index in zip(data[0].asnumpy(), label[0].asnumpy().astype(int)):
                h, w = sizes[index]
                np.testing.assert_array_equal(row[:, :h, :w], images[index])
                assert not row[:, h:, :].any() and not row[:, :, w:].any()


GOOD = dict(data=make_images([(4, 4), (5, 6)]), num_devices=2, batch_per_device=1)
RGB = np.ones((3, 4, 4))


@pytest.mark.parametrize("changes, message", [
    (dict(data=[]), "data is empty"),
    (dict(label=[1, 2, 3]), r"label has 3 entries, expected 2"),
    (dict(label=[np.zeros(2), np.zeros(3)]),
     r"label 1 has shape \(3,\), expected \(2,\) like label 0"),
    (dict(label=["a", "b"]), "label 0 has dtype <U1, expected numbers"),
    (dict(data=[RGB, np.ones((4, 4))]), r"sample 1 has shape \(4, 4\), expected rank 3"),
    (dict(data=[RGB, np.ones((1, 4, 4))]), "sample 1 has 1 channels, expected 3 like sample 0"),
    (dict(data=[RGB, np.ones((3, 0, 4))]), r"sample 1 has an empty axis: shape \(3, 0, 4\)"),
    (dict(data=[np.array([[["x"]]])]), "sample 0 has dtype <U1, expected numbers"),
    (dict(num_devices=0), "num_devices must be an integer >= 1, got 0"),
    (dict(num_devices=2.0), r"num_devices must be an integer >= 1, got 2\.0"),
    (dict(batch_per_device=0), "batch_per_device must be an integer >= 1, got 0"),
    (dict(batch_per_device=True), "batch_per_device must be an integer >= 1, got True"),
    (dict(batch_per_device=None), "give batch_per_device .* or batch_size"),
    (dict(batch_per_device=None, batch_size=3), "batch_size must be a multiple of num_devices=2"),
    (dict(batch_per_device=None, batch_size=0), "batch_size must be an integer >= 1, got 0"),
    (dict(batch_size=3 * 2), "batch_size=6 and batch_per_device=1 disagree"),
    (dict(group_window=-1), "group_window must be an integer >= 1, got -1"),
    (dict(seed=-1), "seed must be an integer >= 0, got -1"),
    (dict(seed=None), "seed must be an integer >= 0, got None"),
    (dict(layout="NHWC"), "layout must be one of .*, got 'NHWC'"),
    # bool("False") is True: a flag read from a config file must not silently turn on.
    (dict(shuffle="False"), "shuffle must be True or False, got 'False'"),
    (dict(grouping=0), "grouping must be True or False, got 0"),
    (dict(balanced=None), "balanced must be True or False, got None"),
    (dict(balanced=np.array([True, False])), r"balanced must be True or False, got array"),
])
def test_bad_input_raises_value_error_naming_the_value(changes, message):
    with pytest.raises(ValueError, match=message):
        PerDeviceIter(**dict(GOOD, **changes))


def test_batch_size_over_all_devices_plans_as_batch_per_device_does_and_reads_back():
    images = make_images(random_sizes(10, seed=4))
    by_size = PerDeviceIter(images, num_devices=2, batch_size=4, shuffle=True)
    per_device = PerDeviceIter(images, num_devices=2, batch_per_device=2, shuffle=True)
    both = PerDeviceIter(images, num_devices=2, batch_per_device=2, batch_size=4, shuffle=True)

    assert by_size.batch_indices == per_device.batch_indices == both.batch_indices
    assert (by_size.batch_size, by_size.batch_per_device) == (4, 2)


def test_len_is_the_number_of_batches_the_epoch_yields():
    images = make_images(random_sizes(9, seed=5))
    it = PerDeviceIter(images, num_devices=2, batch_per_device=2)
    shared = PerDeviceIter(images, num_devices=2, batch_per_device=1, num_parts=2, part_index=1)

    assert len(it) == it.num_batches == 3 == len(list(it))
    assert len(shared) == 2 == len(list(shared))


def test_the_repr_says_what_the_iterator_holds_and_how_it_splits_it():
    images = make_images(random_sizes(5, seed=6))
    assert repr(PerDeviceIter(images, list(range(5)), num_devices=2, batch_per_device=2)) == (
        "PerDeviceIter(5 samples, 2 batches of 2 devices x 2, data ['data'], "
        "label ['softmax_label'])")
    assert repr(PerDeviceIter(images, num_devices=1, batch_per_device=1, balanced=True,
                              num_parts=5, part_index=0)) == (
        "PerDeviceIter(5 samples, 1 batch of 1 device x 1, balanced, part 0 of 5, "
        "data ['data'])")


def test_numpy_bools_are_flags_like_python_s():
    images = make_images(random_sizes(16, seed=3))
    options = dict(num_devices=2, batch_per_device=2)

    def plan(**flags):
        return PerDeviceIter(images, **options, **flags).batch_indices

    for shuffle, grouping, balanced in itertools.product([False, True], repeat=3):
        assert plan(shuffle=np.bool_(shuffle), grouping=np.bool_(grouping),
                    balanced=np.bool_(balanced)) == plan(shuffle=shuffle, grouping=grouping,
                                                         balanced=balanced)


def test_module_predict_returns_rows_in_sample_order(contexts):
    """A network that sums each image: zero padding leaves the sums, so rows name their sample."""
    images = make_images(random_sizes(11, seed=8))
    it = PerDeviceIter(images, num_devices=len(contexts), batch_per_device=2, shuffle=True,
                       group_window=2)
    data = mx.sym.Variable("data")
    image_sums = mx.sym.reshape(mx.sym.sum(data, axis=(1, 2, 3)), shape=(-1, 1))
    with mxpatch_bind.patched():
        module = mx.mod.Module(image_sums, label_names=None, context=contexts)
        module.bind(data_shapes=it.provide_data, for_training=False)
        module.init_params()
        rows = module.predict(it).asnumpy()[:, 0]

    sums = np.array([image.sum() for image in images])
    np.testing.assert_allclose(rows[np.argsort(it.sample_order)], sums, rtol=1e-5)


def test_docstring_examples_run():
    assert doctest.testmod(mxpatch_bind.data.io).failed == 0


def test_shuffling_groups_within_eight_batches_by_default_and_arrival_batches_otherwise():
    images = make_images(random_sizes(64), channels=1)

    def batches(**kwargs):
        it = PerDeviceIter(images, num_devices=2, batch_per_device=2, **kwargs)
        return it.batch_indices

    assert batches(shuffle=True, seed=3) == batches(shuffle=True, seed=3, group_window=8)
    assert batches(shuffle=True, seed=3) != batches(shuffle=True, seed=3, group_window=1)
    assert batches() == batches(group_window=1)


def test_shuffling_without_a_seed_is_seed_0_and_another_seed_gives_another_order():
    images = make_images(random_sizes(24, seed=5))

    def order(**kwargs):
        it = PerDeviceIter(images, label=np.arange(24), num_devices=2, batch_per_device=3,
                           shuffle=True, grouping=False, **kwargs)
        return [int(v) for batch in it for device in batch.label for v in device[0].asnumpy()]

    assert order() == order(seed=0)
    assert order() != order(seed=1)
