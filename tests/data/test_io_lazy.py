"""PerDeviceIter over lazily loaded datasets: planning from sizes, gluon DataLoader workers."""

import os
import struct
import sys

import mxnet as mx
import numpy as np
import pytest

from mxpatch_bind import DataSpecError, Input, PerDeviceIter, image_size

from paths import REPO

sys.path.insert(0, str(REPO / "examples"))
import imagefiles  # noqa: E402
from samples import random_sizes

IMAGE = Input("data", size_axes=(1, 2))
BOXES = Input("gt_boxes", variable_axes=(0,), pad_value=-1)


class Decoding(mx.gluon.data.Dataset):
    """A dataset that builds each sample on access, as decoding a file would."""

    def __init__(self, sizes, seed=0):
        self.sizes = sizes
        self.seed = seed

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, index):
        rng = np.random.default_rng([self.seed, index])
        h, w = (int(v) for v in self.sizes[index])
        image = rng.integers(1, 256, size=(3, h, w)).astype(np.float32)
        boxes = rng.integers(1, 9, size=(index % 4, 5)).astype(np.float32)
        return image, boxes


def arrays_of(batch):
    return [array.asnumpy() for device in batch.data + (batch.label or []) for array in device]


def epochs(it, count=2):
    """Every batch's index and arrays, ``count`` epochs long."""
    out = []
    for _ in range(count):
        out.append([(batch.index.tolist(), arrays_of(batch)) for batch in it])
        it.reset()
    return out


def assert_equal_epochs(one, two):
    assert [[index for index, _ in epoch] for epoch in one] == \
        [[index for index, _ in epoch] for epoch in two]
    for epoch_one, epoch_two in zip(one, two):
        for (_, arrays_one), (_, arrays_two) in zip(epoch_one, epoch_two):
            assert len(arrays_one) == len(arrays_two)
            for a, b in zip(arrays_one, arrays_two):
                np.testing.assert_array_equal(a, b)


def lazy_iter(dataset, **kwargs):
    options = dict(num_devices=2, batch_per_device=2, inputs=[IMAGE], label_inputs=[BOXES],
                   shuffle=True, seed=3)
    options.update(kwargs)
    return PerDeviceIter(dataset, **options)


def test_lazy_and_in_memory_batches_are_equal():
    sizes = random_sizes(19, low=4, high=20)
    dataset = Decoding(sizes)
    in_memory = [dataset[i] for i in range(len(dataset))]

    assert_equal_epochs(epochs(lazy_iter(dataset, sizes=sizes)), epochs(lazy_iter(in_memory)))


def test_two_workers_give_exactly_the_batches_of_none_in_the_planned_order():
    sizes = random_sizes(23, seed=1, low=4, high=20)
    dataset = Decoding(sizes, seed=1)
    serial = lazy_iter(dataset, sizes=sizes, num_workers=0)
    workers = lazy_iter(dataset, sizes=sizes, num_workers=2, prefetch=3)
    planned = [serial.batch_indices, workers.batch_indices]

    got = [epochs(serial, 1), epochs(workers, 1)]

    assert planned[0] == planned[1]
    assert [index for index, _ in got[1][0]] == \
        [sum(batch, []) for batch in planned[1]]
    assert_equal_epochs(got[0], got[1])


def test_a_size_of_callable_plans_like_a_sizes_array():
    sizes = random_sizes(9, seed=2, low=4, high=20)
    dataset = Decoding(sizes, seed=2)

    one = lazy_iter(dataset, sizes=sizes)
    two = lazy_iter(dataset, sizes=lambda i: tuple(sizes[i]))

    assert one.batch_indices == two.batch_indices
    assert_equal_epochs(epochs(one, 1), epochs(two, 1))


def test_lazy_planning_reads_only_the_first_sample():
    reads = []

    class Counting(Decoding):
        def __getitem__(self, index):
            reads.append(index)
            return super().__getitem__(index)

    sizes = random_sizes(12, seed=3, low=4, high=20)
    it = lazy_iter(Counting(sizes), sizes=sizes)

    assert reads == [0]
    it.padding_stats()
    assert reads == [0]


def test_gluon_transforms_run_in_the_loader():
    sizes = random_sizes(6, seed=4, low=4, high=20)
    dataset = Decoding(sizes, seed=4)
    doubled = dataset.transform(lambda image, boxes: (image * 2, boxes))

    plain = epochs(lazy_iter(dataset, sizes=sizes), 1)[0]
    transformed = epochs(lazy_iter(doubled, sizes=sizes, num_workers=2), 1)[0]

    for (_, arrays), (_, arrays_doubled) in zip(plain, transformed):
        np.testing.assert_array_equal(arrays[0] * 2, arrays_doubled[0])


def test_image_files_decode_lazily_with_sizes_read_from_their_headers(tmp_path):
    rng = np.random.default_rng(5)
    paths = []
    for index, (h, w) in enumerate(random_sizes(8, seed=5, low=4, high=20)):
        path = str(tmp_path / ("%d.png" % index))
        imagefiles.write_png(path, rng.integers(0, 256, size=(h, w, 3)))
        paths.append(path)

    class Files(mx.gluon.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, index):
            return (mx.image.imread(paths[index]).transpose((2, 0, 1)),)

    it = PerDeviceIter(Files(), num_devices=2, batch_per_device=2, inputs=[IMAGE],
                       sizes=lambda i: image_size(paths[i]), num_workers=2)
    in_memory = PerDeviceIter([Files()[i] for i in range(len(paths))], num_devices=2,
                              batch_per_device=2, inputs=[IMAGE])

    assert_equal_epochs(epochs(it, 1), epochs(in_memory, 1))


def test_image_size_reads_a_jpeg_frame_header(tmp_path):
    path = tmp_path / "header.jpg"
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 37, 52, 1) + b"\x01\x11\x00"
    path.write_bytes(b"\xff\xd8" + app0 + sof0 + b"\xff\xd9")

    assert image_size(str(path)) == (37, 52)


def segment(marker, body):
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


@pytest.mark.parametrize("frame", [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA,
                                   0xCB, 0xCD, 0xCE, 0xCF])
def test_image_size_reads_every_start_of_frame_and_skips_the_tables_that_share_the_range(
        tmp_path, frame):
    # DHT (0xC4), JPG (0xC8) and DAC (0xCC) sit among the frame markers but hold tables:
    # each holds bytes here that, read as a frame header, would give another size.
    tables = b"".join(segment(marker, b"\x08\x00\x05\x00\x06\x01\x11\x00")
                      for marker in (0xC4, 0xC8, 0xCC))
    frame_header = segment(frame, struct.pack(">BHHB", 8, 37, 52, 1) + b"\x01\x11\x00")
    path = tmp_path / "frame.jpg"
    path.write_bytes(b"\xff\xd8" + tables + frame_header + b"\xff\xd9")

    assert image_size(str(path)) == (37, 52)


def test_image_size_refuses_other_files(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello")

    with pytest.raises(DataSpecError, match="is neither a PNG nor a JPEG file"):
        image_size(str(path))


@pytest.mark.parametrize("sizes, message", [
    (np.ones((3, 2), dtype=int),
     r"sizes must be integers >= 1 and <= 2147483647 of shape \(4, 2\)"),
    (np.ones((4, 2)), "sizes must be integers >= 1 .* of dtype float64"),
    (np.zeros((4, 2), dtype=int), "sizes must be integers >= 1"),
    (lambda i: (3,),
     r"size_of\(0\) returned \(3,\), expected a tuple of 2 integers >= 1 and <= 2147483647"),
    (lambda i: (3, 0) if i == 2 else (3, 3), r"size_of\(2\) returned \(3, 0\)"),
])
def test_bad_sizes_raise_data_spec_errors(sizes, message):
    with pytest.raises(DataSpecError, match=message):
        lazy_iter(Decoding(random_sizes(4, low=4, high=20)), sizes=sizes)


def test_sizes_that_disagree_with_sample_0_are_refused_in_the_constructor():
    sizes = random_sizes(4, seed=6, low=4, high=20)
    wrong = sizes.copy()
    wrong[0] += 1

    with pytest.raises(DataSpecError, match=r"the sizes given say sample 0 is \(.*\), but it has "
                                            "size"):
        lazy_iter(Decoding(sizes, seed=6), sizes=wrong)


def test_a_sample_larger_than_its_planned_size_fails_naming_it():
    sizes = random_sizes(4, seed=7, low=4, high=20)
    small = sizes.copy()
    small[3] = 1
    it = lazy_iter(Decoding(sizes, seed=7), sizes=small, shuffle=False, batch_per_device=1)

    with pytest.raises(DataSpecError, match=r"the sizes given say sample 3 is \(1, 1\), but it "
                                            "has size"):
        list(it)


class DecodingBytes(Decoding):
    """Samples as decoders give them: uint8 images and label maps, int64 class ids."""

    def __getitem__(self, index):
        image, boxes = super().__getitem__(index)
        label_map = (image[0] % 7).astype(np.uint8)
        return image.astype(np.uint8), label_map, boxes.astype(np.int64)


BYTE_INPUTS = dict(inputs=[IMAGE], label_inputs=[
    Input("seg_label", size_axes=(0, 1), pad_value=255),
    Input("gt_boxes", variable_axes=(0,), pad_value=-1)])


def test_workers_send_narrow_samples_and_give_the_declared_dtypes_bit_for_bit():
    sizes = random_sizes(21, seed=2, low=4, high=20)
    dataset = DecodingBytes(sizes, seed=2)
    serial = lazy_iter(dataset, sizes=sizes, num_workers=0, **BYTE_INPUTS)
    workers = lazy_iter(dataset, sizes=sizes, num_workers=2, **BYTE_INPUTS)
    got = [epochs(serial, 1), epochs(workers, 1)]
    assert_equal_epochs(*got)
    assert {array.dtype for _, arrays in got[1][0] for array in arrays} == {np.dtype("float32")}
    batch = lazy_iter(dataset, sizes=sizes, num_workers=2, **BYTE_INPUTS).next()
    assert all(a.context == mx.cpu() for device in batch.data for a in device)


def test_the_worker_packer_narrows_only_where_the_conversion_is_exact():
    from mxpatch_bind.data.loading import PerDevicePacker, Slot
    declared = [IMAGE, Input("seg_label", size_axes=(0, 1), pad_value=255),
                Input("gt_boxes", variable_axes=(0,), pad_value=-1)]
    sample = DecodingBytes([(5, 6)] * 2)[1]  # sample 1 has a box
    packer = PerDevicePacker(declared, num_devices=1, in_shared_memory=True)
    packed = packer([[(Slot(0, 1, (5, 6), (5, 6), 0), sample)]])  # the batch: one item
    # uint8 image: narrow; uint8 map padded 255: narrow; int64 boxes: wider than float32, and
    # int64 -> float32 is not exact either.
    assert [array.dtype for array in packed[0]] == [np.uint8, np.uint8, np.float32]
    assert all(array.context == mx.Context("cpu_shared", 0) for array in packed[0])


@pytest.mark.parametrize("samples, pad_value, expected", [
    ([np.zeros(2, np.uint8)], 0, np.uint8),
    ([np.zeros(2, np.uint8)], 255, np.uint8),
    ([np.zeros(2, np.uint8)], -1, np.float32),  # -1 is no uint8
    ([np.zeros(2, np.uint8)], 0.5, np.float32),
    ([np.zeros(2, np.int8)], -1, np.int8),
    ([np.zeros(2, np.float16)], 0.5, np.float16),
    ([np.zeros(2, np.int32)], 0, np.float32),  # int32 -> float32 rounds large values
    ([np.zeros(2, np.float64)], 0, np.float32),  # wider than declared
    ([np.zeros(2, np.uint16)], 0, np.float32),  # not a dtype MXNet holds
    ([np.zeros(2, np.uint8), np.zeros(2, np.int8)], 0, np.float32),  # no common dtype
])
def test_transfer_dtype(samples, pad_value, expected):
    from mxpatch_bind.data.inputs import transfer_dtype
    one = Input("x", size_axes=(0,), pad_value=pad_value)
    assert transfer_dtype(one, samples) == expected


class NoBoxesOnSomeImages(Decoding):
    """Every third image has no boxes, and so do both images of some devices."""

    def __getitem__(self, index):
        image, boxes = super().__getitem__(index)
        return image, boxes[:0] if index % 3 else boxes


def test_a_device_whose_images_have_no_boxes_crosses_from_workers_unharmed():
    # MXNet segfaults sharing a zero-size NDArray: such arrays must not be put in shared memory.
    sizes = random_sizes(12, seed=4, low=4, high=20)
    dataset = NoBoxesOnSomeImages(sizes, seed=4)
    serial = lazy_iter(dataset, sizes=sizes, num_workers=0)
    workers = lazy_iter(dataset, sizes=sizes, num_workers=2)
    got = [epochs(serial, 1), epochs(workers, 1)]
    empty = [arrays[2:] for _, arrays in got[0][0]]
    assert any(box.shape[1] == 0 for device in empty for box in device)
    assert_equal_epochs(got[0], got[1])


def test_one_device_with_workers_gets_the_same_batches_as_without():
    # MXNet 1.6's worker iterator unwraps a batch of one element (here: one device).
    images = [np.full((3, 4 + i % 3, 5), i + 1, dtype=np.float32) for i in range(8)]
    serial = [[d[0].asnumpy() for d in b.data] for b in
              PerDeviceIter(images, num_devices=1, batch_per_device=2, grouping=False)]
    lazy = PerDeviceIter(images, num_devices=1, batch_per_device=2, grouping=False,
                         num_workers=2)
    parallel = [[d[0].asnumpy() for d in b.data] for b in lazy]
    assert len(parallel) == len(serial) == 4
    for got, want in zip(parallel, serial):
        assert [g.shape for g in got] == [w.shape for w in want]
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("start", [0, 1, 4, 5])
def test_the_planned_sampler_counts_the_batches_it_yields_from_its_start(start):
    # gluon's DataLoader reports len(batch_sampler) as its own length.
    from types import SimpleNamespace

    from mxpatch_bind.data.loading import PlannedSampler

    sampler = PlannedSampler(np.full((10, 2), 3))
    sampler.plans = [SimpleNamespace(device_indices=[[2 * b], [2 * b + 1]],
                                     device_sizes=[(3, 3), (3, 3)]) for b in range(5)]
    sampler.start = start

    batches = list(sampler)

    assert len(sampler) == len(batches) == 5 - start
    assert all(len(batch) == 1 for batch in batches)  # one item per batch: its slots
    assert [batch[0][0].batch for batch in batches] == list(range(start, 5))
