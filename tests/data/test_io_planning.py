"""PerDeviceIter's planner options: work-balanced per-device counts and shape rounding."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mxpatch_bind import Input, PerDeviceIter
from samples import make_images, random_sizes

SEG = [Input("data", size_axes=(1, 2))], [Input("seg", size_axes=(0, 1), pad_value=255)]


def device_work(indices, sizes, multiple=1):
    box = -(-sizes[indices].max(axis=0) // multiple) * multiple
    return len(indices) * int(np.prod(box))


def best_contiguous_split(batch, sizes, num_devices):
    """Brute force: the least busiest-device work over every cut of the batch, largest first."""
    order = sorted(batch, key=lambda i: -int(np.prod(sizes[i])))
    best = None
    for cuts in itertools.combinations(range(1, len(order)), num_devices - 1):
        bounds = (0,) + cuts + (len(order),)
        worst = max(device_work(order[a:b], sizes) for a, b in zip(bounds, bounds[1:]))
        best = worst if best is None else min(best, worst)
    return best


def check_every_sample_once_and_unaltered(it, images, sizes):
    seen = []
    for batch in it:
        counts = [device[0].shape[0] for device in batch.data]
        for device, indices in zip(batch.data, _split(batch.index, counts)):
            for row, index in zip(device[0].asnumpy(), indices):
                h, w = sizes[index]
                np.testing.assert_array_equal(row[:, :h, :w], images[index])
                assert not row[:, h:].any() and not row[:, :, w:].any()
        seen.extend(batch.index[:len(batch.index) - batch.pad].tolist())
    assert sorted(seen) == list(range(len(images)))


def _split(flat, counts):
    return np.split(flat, np.cumsum(counts)[:-1])


def test_balanced_devices_get_different_counts_that_fill_the_batch():
    sizes = np.array([[60, 60], [58, 62], [10, 12], [11, 9], [12, 12], [9, 10], [10, 10],
                      [12, 11]])
    it = PerDeviceIter(make_images(sizes, channels=1), num_devices=2, batch_per_device=4, balanced=True)

    counts = [len(device) for device in it.batch_indices[0]]

    assert counts == [2, 6]
    assert [device[0].shape[0] for device in it.next().data] == [2, 6]


def test_a_balanced_batch_with_fewer_samples_than_devices_repeats_the_last_as_fixed_ones_do():
    sizes = np.array([[12, 12], [10, 14], [9, 9], [14, 10], [8, 12], [11, 13]])
    images = make_images(sizes, channels=1)
    balanced = PerDeviceIter(images, num_devices=4, batch_per_device=1, balanced=True)
    fixed = PerDeviceIter(images, num_devices=4, batch_per_device=1)

    last = [list(device) for device in balanced.batch_indices[-1]]

    assert last == [[4], [5], [5], [5]]
    assert last == [list(device) for device in fixed.batch_indices[-1]]


def test_balanced_batches_wait_no_longer_than_the_best_cut_largest_first():
    sizes = random_sizes(48, seed=1, low=8)
    it = PerDeviceIter(make_images(sizes, channels=1), num_devices=3, batch_per_device=3, balanced=True,
                       group_window=2)

    for batch in it.batch_indices:
        worst = max(device_work(device, sizes) for device in batch)
        assert worst <= best_contiguous_split(sum(batch, []), sizes, 3)


def test_balanced_batches_hold_the_equal_split_s_samples_and_wait_no_longer():
    sizes = random_sizes(200, seed=2, low=32, high=161)
    options = dict(num_devices=2, batch_per_device=2, shuffle=True, group_window=8)

    equal = PerDeviceIter(make_images(sizes, channels=1), **options)
    balanced = PerDeviceIter(make_images(sizes, channels=1), balanced=True, **options)

    for one, two in zip(equal.batch_indices, balanced.batch_indices):
        assert sorted(sum(one, [])) == sorted(sum(two, []))
        assert max(device_work(d, sizes) for d in two) <= max(device_work(d, sizes) for d in one)
    assert balanced.padding_stats().step_pixels < equal.padding_stats().step_pixels


@settings(max_examples=max(5, settings.default.max_examples // 4))  # 25 on CI
@given(sizes=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=24),
       num_devices=st.integers(1, 4), batch_per_device=st.integers(1, 3),
       grouping=st.booleans(), shuffle=st.booleans(), multiple=st.sampled_from([1, 4]))
def test_balanced_counts_never_exceed_the_batch_and_every_device_gets_a_sample(
        sizes, num_devices, batch_per_device, grouping, shuffle, multiple):
    sizes = np.array(sizes)
    images = make_images(sizes, channels=1)
    it = PerDeviceIter(images, num_devices=num_devices, batch_per_device=batch_per_device,
                       balanced=True, grouping=grouping, shuffle=shuffle,
                       pad_to_multiple=multiple)

    for batch in it.batch_indices:
        counts = [len(device) for device in batch]
        assert len(counts) == num_devices and min(counts) >= 1
        assert sum(counts) <= it.batch_size
    check_every_sample_once_and_unaltered(it, images, sizes)


@pytest.mark.parametrize("balanced", [False, True])
def test_rounding_makes_every_padded_extent_a_multiple_and_crops_nothing(balanced):
    sizes = random_sizes(30, seed=3, low=8)
    images = make_images(sizes, channels=1)
    it = PerDeviceIter(images, num_devices=2, batch_per_device=3, pad_to_multiple=16,
                       balanced=balanced, shuffle=True)

    for batch in it:
        assert all(extent % 16 == 0 for device in batch.data for extent in device[0].shape[2:])
    it.reset()
    check_every_sample_once_and_unaltered(it, images, sizes)


def test_rounding_applies_to_every_sized_input_with_its_own_pad_value():
    rng = np.random.default_rng(4)
    samples = [(rng.integers(1, 9, size=(3, h, w)), rng.integers(0, 21, size=(h, w)))
               for h, w in random_sizes(6, seed=4, low=3, high=12)]
    it = PerDeviceIter(samples, num_devices=2, batch_per_device=1, inputs=SEG[0],
                       label_inputs=SEG[1], pad_to_multiple=8)

    for batch in it:
        for device, label, index in zip(batch.data, batch.label, batch.index):
            h, w = samples[index][1].shape
            assert device[0].shape[2:] == label[0].shape[1:]
            assert all(extent % 8 == 0 for extent in label[0].shape[1:])
            maps = label[0].asnumpy()[0]
            np.testing.assert_array_equal(maps[:h, :w], samples[index][1])
            assert (maps[h:] == 255).all() and (maps[:, w:] == 255).all()


def test_padding_stats_report_the_rounding_s_padding_and_the_shapes_it_saves():
    sizes = random_sizes(120, seed=5, low=8)
    images = make_images(sizes, channels=1)
    plain = PerDeviceIter(images, num_devices=2, batch_per_device=2).padding_stats()

    rounded = PerDeviceIter(images, num_devices=2, batch_per_device=2,
                            pad_to_multiple=32).padding_stats()

    assert rounded.rounding_pixels == rounded.padding_pixels - plain.padding_pixels > 0
    assert plain.rounding_pixels == 0
    assert rounded.distinct_shapes < plain.distinct_shapes
    assert rounded.distinct_shapes <= 4


def test_distinct_shapes_count_the_per_device_shapes_of_the_epoch():
    it = PerDeviceIter(make_images(random_sizes(40, seed=6, low=8), channels=1), num_devices=2, batch_per_device=2,
                       balanced=True)

    shapes = {device[0].shape for batch in it for device in batch.data}

    assert it.padding_stats().distinct_shapes == len({(s[0],) + s[2:] for s in shapes})


def test_padding_stats_of_a_balanced_epoch_add_up_to_the_arrays_built():
    sizes = random_sizes(23, seed=7, low=8)
    it = PerDeviceIter(make_images(sizes, channels=1), num_devices=2, batch_per_device=3, balanced=True,
                       pad_to_multiple=8)

    stats = it.padding_stats()
    device_pixels = np.zeros(2, dtype=np.int64)
    step_pixels = 0
    for batch in it:
        pixels = [device[0].size for device in batch.data]
        device_pixels += pixels
        step_pixels += max(pixels)

    assert stats.device_pixels == tuple(device_pixels) and stats.step_pixels == step_pixels
    assert stats.total_pixels == stats.real_pixels + stats.padding_pixels + stats.filler_pixels
