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


def test_len_is_the_wrapped_iterator_s_len_epoch_after_epoch():
    with PerDevicePrefetchingIter(loader(count=14)) as prefetched:  # 4 batches of 2 x 2
        for _ in range(2):
            assert len(prefetched) == 4 == len(epoch_of(prefetched))
            prefetched.reset()


def test_len_of_a_wrapped_iterator_without_one_is_a_type_error_naming_it_and_truth_holds():
    data = np.zeros((8, 2), np.float32)
    with PerDevicePrefetchingIter(mx.io.NDArrayIter(data, batch_size=4)) as prefetched:
        with pytest.raises(TypeError, match="len\\(\\) of a PerDevicePrefetchingIter is the "
                                            "len\\(\\) of the iterator it wraps, and NDArrayIter "
                                            "has none"):
            len(prefetched)
        assert prefetched  # MXNet's fit asks `if eval_data:`: never len()


def test_the_repr_shows_what_it_wraps_its_depth_and_whether_it_is_closed():
    inner = loader(count=14)
    prefetched = PerDevicePrefetchingIter(inner, depth=3)
    assert repr(prefetched) == f"PerDevicePrefetchingIter({inner!r}, depth=3)"
    assert repr(inner).startswith("PerDeviceIter(14 samples, 4 batches of 2 devices x 2")

    prefetched.close()
    assert repr(prefetched) == f"PerDevicePrefetchingIter({inner!r}, depth=3, closed)"
    prefetched.reset()  # a reset after close() fetches again
    assert repr(prefetched) == f"PerDevicePrefetchingIter({inner!r}, depth=3)"
    prefetched.close()


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
    from mxpatch_bind.data import prefetch
    result = doctest.testmod(prefetch)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- stalled next()
class StallsAtBatch(mx.io.DataIter):
    """``next()`` blocks at one position until ``release`` is set (a stuck read)."""

    def __init__(self, inner, position):
        super().__init__(inner.batch_size)
        self.inner, self.position, self.served = inner, position, 0
        self.stalled, self.release, self.returned = (threading.Event(), threading.Event(),
                                                     threading.Event())

    provide_data = property(lambda self: self.inner.provide_data)
    provide_label = property(lambda self: self.inner.provide_label)

    def reset(self):
        self.inner.reset()
        self.served = 0

    def next(self):
        if self.served == self.position:
            self.stalled.set()
            self.release.wait(WAIT_S)
            self.returned.set()
        self.served += 1
        return self.inner.next()


def test_close_returns_while_the_wrapped_next_is_still_stalled():
    stalling = StallsAtBatch(loader(), position=1)
    prefetched = PerDevicePrefetchingIter(stalling)
    prefetched.next()
    assert stalling.stalled.wait(WAIT_S)

    prefetched.close()

    # The stalled next() is released only below: a close() that waited for it to return
    # would have come back only after the stall's own WAIT_S, with `returned` set.
    assert not stalling.returned.is_set()
    with pytest.raises(RuntimeError, match="closed"):
        prefetched.next()
    stalling.release.set()
    wait_until(lambda: not any(t.is_alive() for t in prefetch_threads()))
    assert stalling.served == 2  # the late batch was fetched once and dropped, nothing after


def test_dropping_a_prefetcher_whose_wrapped_next_is_stalled_does_not_wait(monkeypatch):
    from mxpatch_bind.data import prefetch
    # A wait bounded by close()'s own limit would now outlast the stall below (WAIT_S).
    monkeypatch.setattr(prefetch, "CLOSE_WAIT_S", 10 * WAIT_S)
    before = len(prefetch_threads())
    stalling = StallsAtBatch(loader(), position=0)
    prefetched = PerDevicePrefetchingIter(stalling)
    assert stalling.stalled.wait(WAIT_S)

    del prefetched
    gc.collect()

    # Released only below: a finaliser that waited for the thread would have come back only
    # once the stall gave up (after WAIT_S), with `returned` set.
    assert not stalling.returned.is_set()
    stalling.release.set()
    wait_until(lambda: len(prefetch_threads()) == before)
    assert stalling.served == 1


def test_a_consumer_waiting_on_another_thread_is_woken_by_close():
    stalling = StallsAtBatch(loader(), position=0)
    prefetched = PerDevicePrefetchingIter(stalling)
    outcome = []

    def consume():
        try:
            prefetched.next()
        except RuntimeError as error:
            outcome.append(str(error))

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    assert stalling.stalled.wait(WAIT_S)
    prefetched.close()
    consumer.join(WAIT_S)

    assert outcome == ["PerDevicePrefetchingIter is closed"]
    stalling.release.set()


def test_reset_after_a_stalled_close_waits_for_the_late_fetch_then_starts_over():
    stalling = StallsAtBatch(loader(), position=1)
    prefetched = PerDevicePrefetchingIter(stalling)
    prefetched.next()
    assert stalling.stalled.wait(WAIT_S)
    prefetched.close()
    threading.Timer(0.3, stalling.release.set).start()

    prefetched.reset()

    assert stalling.returned.is_set()  # the wrapped iterator was reset only after it returned
    stalling.position = -1
    assert len(epoch_of(prefetched)) == 4
    prefetched.close()


@pytest.mark.slow  # a child Python that imports MXNet
@pytest.mark.parametrize("closing", ["it.close()", "del it", ""])
def test_the_interpreter_exits_promptly_with_a_stalled_prefetcher_left_behind(closing):
    import subprocess
    import sys
    script = "\n".join([
        "import threading, numpy as np",
        "import mxnet as mx",
        "from mxpatch_bind import PerDeviceIter, PerDevicePrefetchingIter",
        "class Stall(mx.io.DataIter):",
        "    provide_data = provide_label = None",
        "    def reset(self): pass",
        "    def next(self): threading.Event().wait()",
        "it = PerDevicePrefetchingIter(Stall())",
        closing,
        "print('done')"])
    completed = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=WAIT_S)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "done"
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize("duplicate", ["deepcopy", "copy", "pickle"])
def test_copying_or_pickling_a_prefetcher_is_a_type_error_naming_it(duplicate):
    import copy
    import pickle
    with PerDevicePrefetchingIter(loader()) as prefetched:
        how = {"deepcopy": copy.deepcopy, "copy": copy.copy, "pickle": pickle.dumps}[duplicate]
        with pytest.raises(TypeError, match="PerDevicePrefetchingIter cannot be pickled or copied"):
            how(prefetched)
