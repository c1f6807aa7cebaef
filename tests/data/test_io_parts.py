"""PerDeviceIter's num_parts / part_index: the workers of a job read disjoint batches of every
epoch, as many each, and each batch exactly as the unshared iterator gives it."""

import numpy as np
import pytest

from mxpatch_bind import DataSpecError, Input, PerDeviceIter

NUM_SAMPLES = 23  # 12 batches of 2 devices x 1 sample (the last one with a filler)


def images():
    """Images of their own sizes, each filled with its index + 1."""
    return [np.full((1, 3 + i % 4, 4 + i % 5), i + 1, np.float32) for i in range(NUM_SAMPLES)]


def make(num_parts=1, part_index=0, **options):
    options.setdefault("num_devices", 2)
    options.setdefault("batch_per_device", 1)
    return PerDeviceIter(images(), num_parts=num_parts, part_index=part_index, **options)


def arrays(batch):
    return [[array.asnumpy() for array in device] for device in batch.data]


@pytest.mark.parametrize("num_parts", [2, 3, 5])
@pytest.mark.parametrize("options", [dict(), dict(shuffle=True, seed=3),
                                     dict(grouping=False), dict(balanced=True),
                                     dict(shuffle=True, pad_to_multiple=4)])
def test_the_parts_take_every_nth_batch_of_the_whole_epoch_as_many_each(num_parts, options):
    whole = make(**options)
    parts = [make(num_parts, k, **options) for k in range(num_parts)]
    for epoch in range(2):
        everything = [(batch.index.tolist(), arrays(batch)) for batch in whole]
        per_part = len(everything) // num_parts
        for k, part in enumerate(parts):
            got = [(batch.index.tolist(), arrays(batch)) for batch in part]
            assert part.num_batches == per_part == len(got)
            expected = everything[k:per_part * num_parts:num_parts]
            for (indices, devices), (want_indices, want_devices) in zip(got, expected):
                assert indices == want_indices
                for device, want in zip(devices, want_devices):
                    for array, want_array in zip(device, want):
                        np.testing.assert_array_equal(array, want_array)
            part.reset()
        whole.reset()
        assert [part.epoch for part in parts] == [epoch + 1] * num_parts


def test_the_parts_of_an_epoch_are_disjoint_and_leave_out_only_the_remainder():
    parts = [make(5, k, shuffle=True, seed=11) for k in range(5)]
    batches = [tuple(map(tuple, plan)) for part in parts for plan in part.batch_indices]
    assert len(batches) == len(set(batches)) == 10  # 12 batches: 2 left out
    whole = make(shuffle=True, seed=11).batch_indices
    assert sorted(batches) == sorted(tuple(map(tuple, plan)) for plan in whole[:10])


def test_with_workers_a_part_loads_the_same_batches_as_in_process():
    in_process = make(3, 1, shuffle=True)
    with_workers = make(3, 1, shuffle=True, num_workers=2)
    for mine, theirs in zip(in_process, with_workers):
        assert mine.index.tolist() == theirs.index.tolist()
        for device, other in zip(arrays(mine), arrays(theirs)):
            for array, other_array in zip(device, other):
                np.testing.assert_array_equal(array, other_array)


def test_lazy_samples_are_shared_too():
    image = Input("data", size_axes=(1, 2))
    sizes = np.array([data.shape[1:] for data in images()])
    samples = [(data,) for data in images()]
    lazy = PerDeviceIter(samples, inputs=[image], sizes=sizes, num_devices=2, batch_per_device=1,
                         num_parts=2, part_index=1)
    whole = make()
    assert lazy.batch_indices == whole.batch_indices[1:12:2]


@pytest.mark.parametrize("num_parts, part_index, message", [
    (0, 0, r"num_parts must be an integer >= 1, got 0"),
    (-2, 0, r"num_parts must be an integer >= 1, got -2"),
    (True, 0, r"num_parts must be an integer >= 1, got True"),
    (2.0, 0, r"num_parts must be an integer >= 1, got 2.0"),
    (2, -1, r"part_index must be an integer >= 0 and <= 1 \(num_parts - 1\), got -1"),
    (2, 2, r"part_index must be an integer >= 0 and <= 1 \(num_parts - 1\), got 2"),
    (2, False, r"part_index must be an integer >= 0 and <= 1 \(num_parts - 1\), got False"),
    (1, "0", r"part_index must be an integer >= 0 and <= 0 \(num_parts - 1\), got '0'"),
    (13, 0, r"num_parts=13 is more than the epoch's 12 batches: some workers would have none"),
])
def test_a_part_that_is_no_part_is_refused_by_name(num_parts, part_index, message):
    with pytest.raises(DataSpecError, match=message):
        make(num_parts, part_index)


def test_as_many_parts_as_batches_give_one_batch_each():
    assert [make(12, k).batch_indices for k in range(12)] == [
        [plan] for plan in make().batch_indices]
