"""PerDevicePrefetchingIter: the wrapped iterator's batches, in order, fetched on a thread."""

import doctest
import gc
import threading
import time

import mxnet as mx
import numpy as np
import pytest
from synthetic import bar_images, bar_net

import mxpatch_bind
from mxpatch_bind import PerDeviceIter, PerDevicePrefetchingIter

WAIT_S = 60  # a generous limit on waiting for the thread, never a measurement


def loader(shuffle=True, count=14):
    images, labels = bar_images(count, seed=3)
    return PerDeviceIter(images, labels, num_devices=2, batch_per_device=2, shuffle=shuffle,
                         seed=5)


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "PerDevicePrefetchingIter"]


def assert_same_batch(got, expected):
    assert got.pad == expected.pad
    np.testing.assert_array_equal(got.index, expected.index)
    assert got.provide_data == expected.provide_data
    assert got.provide_label == expected.provide_label
    for field in ("data", "label"):
        for got_device, expected_device in zip(getattr(got, field), getattr(expected, field)):
            for got_array, expected_array in zip(got_device, expected_device):
                assert got_array.dtype == expected_array.dtype
                np.testing.assert_array_equal(got_array.asnumpy(), expected_array.asnumpy())


def epoch_of(data_iter, shapes_before_each=None):
    batches = []
    while True:
        if shapes_before_each is not None:
            shapes_before_each.append((data_iter.provide_data, data_iter.provide_label))
        try:
            batches.append(data_iter.next())
        except StopIteration:
            return batches


class FailsAtBatch(mx.io.DataIter):
    """A per-device iterator whose ``next()`` raises at one position of its first epoch."""

    def __init__(self, inner, position):
        super().__init__(inner.batch_size)
        self.inner, self.position, self.served, self.epoch = inner, position, 0, 0

    provide_data = property(lambda self: self.inner.provide_data)
    provide_label = property(lambda self: self.inner.provide_label)

    def reset(self):
        self.inner.reset()
        self.served, self.epoch = 0, self.epoch + 1

    def next(self):
        if self.epoch == 0 and self.served == self.position:
            raise KeyError("sample %d is missing" % self.served)
        self.served += 1
        return self.inner.next()


class CountsFetches(mx.io.DataIter):
    def __init__(self, inner):
        super().__init__(inner.batch_size)
        self.inner, self.fetches = inner, 0

    provide_data = property(lambda self: self.inner.provide_data)
    provide_label = property(lambda self: self.inner.provide_label)

    def reset(self):
        self.inner.reset()

    def next(self):
        self.fetches += 1
        return self.inner.next()


def wait_until(condition):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the prefetch thread"
        time.sleep(0.01)


# --------------------------------------------------------------------------- same batches
def test_it_gives_the_unwrapped_iterators_batches_bit_for_bit_in_order_epoch_after_epoch():
    plain = loader()
    with PerDevicePrefetchingIter(loader()) as prefetched:
        for _ in range(3):
            expected, got = epoch_of(plain), epoch_of(prefetched)
            assert len(got) == len(expected) == 4
            for got_batch, expected_batch in zip(got, expected):
                assert_same_batch(got_batch, expected_batch)
            plain.reset()
            prefetched.reset()


def test_provide_data_and_label_describe_the_next_batch_as_the_wrapped_iterators_do():
    plain_shapes, prefetched_shapes = [], []
    plain = loader()
    with PerDevicePrefetchingIter(loader()) as prefetched:
        epoch_of(plain, plain_shapes)
        epoch_of(prefetched, prefetched_shapes)
    assert prefetched_shapes == plain_shapes
    assert len({str(shapes) for shapes in plain_shapes}) > 1  # the shapes do change


def test_a_reset_in_the_middle_of_an_epoch_starts_the_next_one_as_the_wrapped_iterator_does():
    plain = loader()
    with PerDevicePrefetchingIter(loader(), depth=2) as prefetched:
        plain.next()
        prefetched.next()
        plain.reset()
        prefetched.reset()
        for got_batch, expected_batch in zip(epoch_of(prefetched), epoch_of(plain)):
            assert_same_batch(got_batch, expected_batch)


def test_a_flat_iterator_passes_through_unchanged():
    data = np.arange(60, dtype=np.float32).reshape(12, 5)
    plain = mx.io.NDArrayIter(data, np.arange(12), batch_size=4)
    with PerDevicePrefetchingIter(mx.io.NDArrayIter(data, np.arange(12), batch_size=4)) as it:
        assert it.provide_data == plain.provide_data and it.batch_size == 4
        for got, expected in zip(epoch_of(it), epoch_of(plain)):
            np.testing.assert_array_equal(got.data[0].asnumpy(), expected.data[0].asnumpy())


def test_training_through_it_equals_training_without_it(contexts):
    def trained(train_iter):
        mod = mx.mod.Module(bar_net(), context=contexts)
        with mxpatch_bind.patched():
            mod.fit(train_iter, num_epoch=2, initializer=mx.init.Xavier(rnd_type="uniform"),
                    optimizer_params={"learning_rate": 0.1})
        return mod.get_params()[0]

    mx.random.seed(11)
    expected = trained(loader())
    mx.random.seed(11)
    with PerDevicePrefetchingIter(loader()) as prefetched:
        got = trained(prefetched)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name].asnumpy(), expected[name].asnumpy())


# --------------------------------------------------------------------------- errors, threads
def test_an_error_of_the_wrapped_iterator_is_raised_by_next_at_the_same_position():
    with PerDevicePrefetchingIter(FailsAtBatch(loader(), position=2)) as prefetched:
        prefetched.next()
        prefetched.next()
        with pytest.raises(KeyError, match="sample 2 is missing"):
            prefetched.next()
        with pytest.raises(KeyError, match="sample 2 is missing"):
            prefetched.next()  # and again, until reset()
        prefetched.reset()
        assert len(epoch_of(prefetched)) == 4


def test_it_fetches_at_most_depth_batches_ahead():
    counting = CountsFetches(loader(count=40))
    with PerDevicePrefetchingIter(counting, depth=3) as prefetched:
        prefetched.next()
        wait_until(lambda: counting.fetches == 1 + 3)
        time.sleep(0.2)  # room for a fourth fetch ahead, which must not happen
        assert counting.fetches == 1 + 3


def test_close_ends_the_thread_and_next_then_raises():
    before = len(prefetch_threads())
    prefetched = PerDevicePrefetchingIter(loader())
    assert len(prefetch_threads()) == before + 1
    prefetched.close()
    assert len(prefetch_threads()) == before
    with pytest.raises(RuntimeError, match="closed"):
        prefetched.next()


def test_a_dropped_iterator_ends_its_thread():
    before = len(prefetch_threads())
    prefetched = PerDevicePrefetchingIter(loader())
    prefetched.next()
    del prefetched
    gc.collect()
    wait_until(lambda: len(prefetch_threads()) == before)


def test_a_list_of_iterators_is_refused():
    with pytest.raises(TypeError, match="takes one iterator, got a list of 2"):
        PerDevicePrefetchingIter([loader(), loader()])


@pytest.mark.parametrize("depth", [0, 1.5, True, "2"])
def test_a_depth_that_is_not_a_positive_integer_is_refused(depth):
    with pytest.raises(ValueError, match="depth must be an integer >= 1, got %r" % (depth,)):
        PerDevicePrefetchingIter(loader(), depth=depth)


def test_the_module_s_examples_run():
    from mxpatch_bind import prefetch
    result = doctest.testmod(prefetch)
    assert result.attempted > 0 and result.failed == 0
