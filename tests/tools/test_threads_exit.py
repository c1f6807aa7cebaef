"""``mxpatch_bind.threads``: a class's daemon threads stopped before the interpreter exits.

The scripts below are of the family's form, written here: a loader that fetches through a
``multiprocessing.Pool`` while holding a module-wide lock (h5py's, which FCIS's
``hickle.load`` holds), wrapped in a prefetching iterator whose daemon thread waits on
``data_taken``, leaves its loop when ``started`` is false, and clears ``data_taken`` after
each fetch. The script's last ``reset()`` starts a fetch that outlasts the script (it
returns once the iterator is stopped), and an object torn down at interpreter exit takes the
lock (as h5py's objects do). Frozen mid-fetch, the thread never releases the lock: the
process hangs, every time. Stopped at exit, it exits.
"""

import doctest
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

from mxpatch_bind import threads
from mxpatch_bind.threads import stop_threads, stop_threads_at_exit


@pytest.fixture(autouse=True)
def _a_registry_of_the_tests_own(monkeypatch):
    """Each test's ``_stop_all()`` meets only the owners it registered. An owner of an
    earlier test can outlive it until the next garbage collection (a logged traceback's frame
    holds it): stopping it again, or its failing again, is no part of a later test."""
    monkeypatch.setattr(threads, "_owners", {})


PREFETCHER = '''\
import threading


class Prefetcher:
    """One daemon thread fetching the next batch while the last one is used."""

    def __init__(self, loader):
        self.loader = loader
        self.data_taken = [threading.Event()]
        self.data_ready = [threading.Event()]
        self.data_taken[0].set()
        self.started = True
        self.batch = [None]

        def fetch(self, i):
            while True:
                self.data_taken[i].wait()
                if not self.started:
                    break
                self.batch[i] = self.loader.next()
                self.data_taken[i].clear()
                self.data_ready[i].set()

        self.threads = [threading.Thread(target=fetch, args=[self, i]) for i in range(1)]
        for thread in self.threads:
            thread.setDaemon(True)
            thread.start()

    def reset(self):
        self.data_ready[0].wait()
        self.data_ready[0].clear()
        self.data_taken[0].set()
'''

FILES = '''\
import threading

LOCK = threading.Lock()  # h5py's lock: held while a file is read


class File:
    """An open file: closed at interpreter exit, under the lock, as h5py's objects are."""

    def __init__(self):
        self.lock = LOCK

    def __del__(self):
        with self.lock:
            pass


OPEN = File()
'''

TRAIN = '''\
import multiprocessing
import time
{before}
import files
from prefetcher import Prefetcher

FETCHING = files.threading.Event()


def square(x):
    return x * x


class Loader:
    def __init__(self):
        self.pool = multiprocessing.Pool(2)
        self.prefetcher, self.fetches = None, 0

    def next(self):
        with files.LOCK:
            batch = self.pool.map(square, range(4))
            self.fetches += 1
            if self.fetches == 3:  # the one the last reset() starts: it outlasts the script
                FETCHING.set()
                while self.prefetcher.started:
                    time.sleep(0.01)
        return batch


loader = Loader()
loader.prefetcher = Prefetcher(loader)
{stop}
for epoch in range(2):  # fetch 1 at construction, one per reset()
    loader.prefetcher.reset()
FETCHING.wait()
print("trained", flush=True)
'''

STOP = ("from mxpatch_bind.threads import stop_threads_at_exit\n"
        "stop_threads_at_exit(loader.prefetcher, 'threads', flag='started', wake='data_taken')")


# A library imported after mxpatch_bind.threads whose exit hook takes the lock (h5py's takes
# its lock to unregister its converters): it must run after the threads are stopped.
LIBRARY_HOOK = """import atexit
import mxpatch_bind.threads
import files
atexit.register(lambda: files.LOCK.acquire() and files.LOCK.release())"""


def write_script(folder, stop="", before=""):
    (folder / "prefetcher.py").write_text(PREFETCHER)
    (folder / "files.py").write_text(FILES)
    (folder / "train.py").write_text(TRAIN.format(stop=stop, before=before))
    return folder / "train.py"


def run_to_exit(script, wait_s):
    """(exit status or None if still running ``wait_s`` seconds after it printed "trained",
    its output). It runs in its own session; what is left of it is killed, by group."""
    process = subprocess.Popen([sys.executable, str(script)], cwd=script.parent,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        first = process.stdout.readline()  # "trained", or "" if it failed first
        try:
            status = process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            status = None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    return status, first + out, err


@pytest.mark.slow
def test_the_family_form_hangs_at_exit_when_its_thread_is_left_fetching(tmp_path):
    # the thread is frozen holding the lock the teardown takes: it can never exit, so any
    # wait proves it
    status, out, err = run_to_exit(write_script(tmp_path), wait_s=10)
    assert out == "trained\n", err
    assert status is None


@pytest.mark.slow
def test_stopping_the_threads_at_exit_lets_the_same_script_exit(tmp_path):
    status, out, err = run_to_exit(write_script(tmp_path, STOP), wait_s=120)
    assert (status, out) == (0, "trained\n"), err
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_threads_are_stopped_before_an_exit_hook_registered_after_the_import(tmp_path):
    status, out, err = run_to_exit(write_script(tmp_path, STOP, LIBRARY_HOOK), wait_s=120)
    assert (status, out) == (0, "trained\n"), err


@pytest.mark.slow
def test_a_fetch_that_never_returns_is_named_and_the_exit_goes_on(tmp_path):
    (tmp_path / "stuck.py").write_text(textwrap.dedent('''\
        import threading
        from mxpatch_bind.threads import stop_threads_at_exit

        class Stuck:
            def __init__(self):
                self.started, self.wake, self.never = True, threading.Event(), threading.Event()
                self.thread = threading.Thread(target=self.run, daemon=True, name="fetcher")
                self.thread.start()

            def run(self):
                while self.started:
                    self.wake.wait()
                    self.never.wait()  # a fetch that never returns

        stuck = Stuck()
        stop_threads_at_exit(stuck, 'thread', flag='started', wake='wake', timeout=0.5)
        print("done", flush=True)
    '''))
    status, out, err = run_to_exit(tmp_path / "stuck.py", wait_s=120)
    assert (status, out) == (0, "done\n")
    assert ("1 thread(s) of Stuck (fetcher) still running 0.5 s after Stuck.started = False: "
            "the fetch they are in has not returned") in err


@pytest.mark.slow
def test_an_owner_deleted_before_the_exit_is_skipped(tmp_path):
    (tmp_path / "gone.py").write_text(textwrap.dedent('''\
        import gc, threading
        from mxpatch_bind.threads import stop_threads_at_exit

        class Idle:
            def __init__(self):
                self.started, self.wake, self.threads = True, threading.Event(), []

        idle = Idle()
        stop_threads_at_exit(idle, 'threads', flag='started', wake='wake')
        del idle
        gc.collect()
        print("done", flush=True)
    '''))
    assert run_to_exit(tmp_path / "gone.py", wait_s=120) == (0, "done\n", "")


class Fetcher:
    """In-process: a loop of the family's form whose fetch waits on ``release``."""

    def __init__(self, fetch_first=False):
        self.started, self.data_taken = True, [threading.Event()]
        self.release, self.fetching, self.fetches = threading.Event(), threading.Event(), 0
        if not fetch_first:
            self.release.set()
        self.threads = [threading.Thread(target=self.loop, daemon=True)]
        self.data_taken[0].set()
        self.threads[0].start()

    def loop(self):
        while True:
            self.data_taken[0].wait()
            if not self.started:
                break
            self.fetching.set()
            self.release.wait()
            self.fetches += 1
            self.data_taken[0].clear()  # after the fetch: a set() made during it is lost


def test_stop_threads_ends_a_thread_that_clears_its_event_after_the_stop_was_asked():
    fetcher = Fetcher(fetch_first=True)
    fetcher.fetching.wait()
    result = []
    stopper = threading.Thread(target=lambda: result.append(
        stop_threads(fetcher, "threads", flag="started", wake="data_taken", timeout=60)))
    stopper.start()
    while fetcher.started:  # the stop is asked while the fetch runs ...
        time.sleep(0.001)
    fetcher.release.set()  # ... then the fetch returns and clears data_taken
    stopper.join()
    assert result == [True]
    assert not fetcher.threads[0].is_alive()
    assert fetcher.fetches == 1


def test_stop_threads_takes_a_single_thread_and_event_and_a_true_stop_value():
    class Single:
        def __init__(self):
            self.stopped, self.wake = False, threading.Event()
            self.worker = threading.Thread(target=self.run, daemon=True)
            self.worker.start()

        def run(self):
            while True:
                self.wake.wait()
                if self.stopped:
                    return
                self.wake.clear()

    single = Single()
    assert stop_threads(single, "worker", flag="stopped", wake="wake", stop_value=True)
    assert (single.stopped, single.worker.is_alive()) == (True, False)


def test_stop_threads_at_exit_keeps_no_reference_to_its_owner():
    fetcher = Fetcher()
    stop_threads(fetcher, "threads", flag="started", wake="data_taken")
    stop_threads_at_exit(fetcher, "threads", flag="started", wake="data_taken")
    reference = weakref.ref(fetcher)
    del fetcher
    assert reference() is None


def test_the_examples_in_the_docstrings_run():
    assert doctest.testmod(threads).failed == 0


def test_two_owners_of_the_same_form_registered_at_exit_are_both_stopped():
    # A training script's two prefetchers (train and validation) name their threads alike.
    train, validation = Fetcher(), Fetcher()
    for owner in (train, validation):
        stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken", timeout=60)

    threads._stop_all()  # what the interpreter's exit runs

    assert [owner.started for owner in (train, validation)] == [False, False]
    assert not any(owner.threads[0].is_alive() for owner in (train, validation))


def test_stop_threads_called_from_one_of_the_owner_s_threads_stops_the_others_and_returns():
    class Pair:
        def __init__(self):
            self.started, self.wake, self.result = True, threading.Event(), []
            self.threads = [threading.Thread(target=self.loop, daemon=True),
                            threading.Thread(target=self.stop_all, daemon=True)]
            for thread in self.threads:
                thread.start()

        def loop(self):
            while True:
                self.wake.wait()
                if not self.started:
                    return
                self.wake.clear()

        def stop_all(self):
            self.result.append(stop_threads(self, "threads", flag="started", wake="wake",
                                            timeout=60))

    pair = Pair()
    pair.threads[1].join(120)

    assert pair.result == [True]
    assert not pair.threads[0].is_alive()


class Chained:
    """The family's loop over ``fetch``, which may take the items of another ``Chained``."""

    def __init__(self, fetch):
        self.fetch, self.started, self.batch = fetch, True, None
        self.data_taken, self.data_ready = [threading.Event()], threading.Event()
        self.data_taken[0].set()
        self.threads = [threading.Thread(target=self.loop, daemon=True)]
        self.threads[0].start()

    def loop(self):
        while True:
            self.data_taken[0].wait()
            if not self.started:
                break
            self.batch = self.fetch()
            self.data_taken[0].clear()
            self.data_ready.set()

    def next(self):
        self.data_ready.wait()
        self.data_ready.clear()
        batch = self.batch
        self.data_taken[0].set()
        return batch


def test_at_exit_a_prefetcher_over_another_is_stopped_first_so_that_its_fetch_can_finish():
    inner = Chained(lambda: 1)
    stop_threads_at_exit(inner, "threads", flag="started", wake="data_taken", timeout=5)
    in_fetch = threading.Event()

    def three_items():
        first = inner.next()
        in_fetch.set()
        time.sleep(0.3)  # the exit comes here: the fetch still needs two items of `inner`
        return first + inner.next() + inner.next()

    outer = Chained(three_items)  # made and registered after `inner`: stopped before it
    stop_threads_at_exit(outer, "threads", flag="started", wake="data_taken", timeout=5)
    in_fetch.wait(120)

    threads._stop_all()

    assert outer.batch == 3  # its fetch finished, then it left its loop
    assert not any(owner.threads[0].is_alive() for owner in (inner, outer))


def test_an_owner_that_takes_no_weak_reference_is_still_stopped_at_exit():
    class Slotted:
        __slots__ = ("started", "data_taken", "threads")  # no __weakref__

        def __init__(self):
            self.started, self.data_taken = True, [threading.Event()]
            self.threads = [threading.Thread(target=self.loop, daemon=True)]
            self.threads[0].start()

        def loop(self):
            while True:
                self.data_taken[0].wait()
                if not self.started:
                    break
                self.data_taken[0].clear()

    owner = Slotted()
    stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken", timeout=60)

    threads._stop_all()

    assert owner.started is False
    assert not owner.threads[0].is_alive()


class Pairs:
    """Two threads, each waiting on its own event, and a second set under another name."""

    def __init__(self):
        self.started, self.data_taken = True, [threading.Event(), threading.Event()]
        self.threads = [threading.Thread(target=self.loop, args=(event,), daemon=True)
                        for event in self.data_taken]
        self.others = [threading.Thread(target=self.loop, args=(event,), daemon=True)
                       for event in self.data_taken]
        for thread in self.threads + self.others:
            thread.start()

    def loop(self, event):
        while True:
            event.wait()
            if not self.started:
                return
            event.clear()


class Waiter:
    """One thread that waits on ``wake`` (any event), and leaves when ``started`` is false."""

    def __init__(self, wake):
        self.started, self.wake = True, wake
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            self.wake.wait()
            if not self.started:
                return
            self.wake.clear()


def test_every_event_of_the_owner_is_set_so_that_each_thread_wakes():
    owner = Pairs()
    assert stop_threads(owner, "threads", flag="started", wake="data_taken", timeout=60)
    assert not any(thread.is_alive() for thread in owner.threads)
    for thread in owner.others:  # not waited for, woken by the same events: they end too
        thread.join(60)


def test_an_owner_without_threads_or_events_only_gets_its_flag_set():
    class Empty:
        started, threads, wake = True, None, None

    empty = Empty()
    assert stop_threads(empty, "threads", flag="started", wake="wake") is True
    assert empty.started is False


def test_registering_the_same_owner_and_threads_again_replaces_the_earlier_call():
    owner = Fetcher()
    stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken", stop_value=0)
    stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken", stop_value=None)

    threads._stop_all()

    # Both calls run newest first would leave the older one's 0.
    assert owner.started is None
    assert not owner.threads[0].is_alive()


def test_the_same_owner_registered_for_two_sets_of_threads_has_both_stopped():
    owner = Pairs()
    stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken", timeout=60)
    stop_threads_at_exit(owner, "others", flag="started", wake="data_taken", timeout=60)
    assert sum(reference() is owner for reference, _ in threads._owners.values()) == 2

    threads._stop_all()

    assert not any(thread.is_alive() for thread in owner.threads + owner.others)


def test_an_owner_whose_stop_fails_at_exit_is_logged_and_the_others_are_still_stopped(caplog):
    class Broken:
        @property
        def threads(self):
            raise RuntimeError("no threads here")

    healthy, broken = Fetcher(), Broken()
    stop_threads_at_exit(healthy, "threads", flag="started", wake="data_taken", timeout=60)
    stop_threads_at_exit(broken, "threads", flag="started", wake="data_taken")  # runs first

    threads._stop_all()

    assert not healthy.threads[0].is_alive()
    failures = [record for record in caplog.records if record.exc_info]
    assert [record.getMessage() for record in failures] == [
        "mxpatch_bind: stopping the threads of Broken at exit failed"]
    assert "no threads here" in str(failures[0].exc_info[1])


def test_the_timeout_and_stop_value_given_at_registration_are_the_ones_used_at_exit(caplog):
    class Stuck:
        def __init__(self):
            self.started, self.wake, self.never = True, threading.Event(), threading.Event()
            self.thread = threading.Thread(target=self.run, daemon=True, name="stuck-fetch")
            self.thread.start()

        def run(self):
            self.wake.wait()
            self.never.wait()  # a fetch that does not return until the test releases it

    stuck = Stuck()
    try:
        stop_threads_at_exit(stuck, "thread", flag="started", wake="wake", stop_value="off",
                             timeout=0.2)
        threads._stop_all()
        assert stuck.started == "off"
        assert ("1 thread(s) of Stuck (stuck-fetch) still running 0.2 s after "
                "Stuck.started = 'off'") in caplog.text
    finally:
        stuck.never.set()


def test_an_owner_that_died_leaves_the_registry():
    owners = [Fetcher() for _ in range(3)]
    for owner in owners:
        stop_threads(owner, "threads", flag="started", wake="data_taken")
        stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken")
    keys = {key for key, (reference, _) in threads._owners.items() if reference() in owners}
    assert len(keys) == 3
    del owner, owners
    assert keys.isdisjoint(threads._owners)


def test_each_registration_moves_the_exit_hook_after_every_hook_registered_before_it(tmp_path):
    # The exit hooks run newest first: one registered between two registrations must find the
    # second owner's threads already stopped.
    script = tmp_path / "order.py"
    script.write_text(textwrap.dedent('''\
        import atexit, sys, threading
        sys.path.insert(0, {here!r})
        from mxpatch_bind.threads import stop_threads_at_exit
        from test_threads_exit import Waiter

        first = Waiter(threading.Event())
        stop_threads_at_exit(first, 'thread', flag='started', wake='wake')
        atexit.register(lambda: print("second stopped:", not second.thread.is_alive()))
        second = Waiter(threading.Event())
        stop_threads_at_exit(second, 'thread', flag='started', wake='wake')
    ''').format(here=os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (0, "second stopped: True\n", "")


def test_an_owner_without_the_named_attributes_has_only_its_flag_set():
    class Unstarted:  # stopped before its threads and events were ever made
        started = True

    unstarted = Unstarted()
    assert stop_threads(unstarted, "threads", flag="started", wake="data_taken") is True
    assert unstarted.started is False


def test_a_process_event_as_the_wake_up_is_set_as_a_single_event():
    owner = Waiter(multiprocessing.Event())  # not a threading.Event
    assert stop_threads(owner, "thread", flag="started", wake="wake", timeout=60)
    assert not owner.thread.is_alive()


def test_an_owner_that_dies_leaves_the_registry_only_under_its_lock():
    owner = Fetcher()
    stop_threads(owner, "threads", flag="started", wake="data_taken")
    stop_threads_at_exit(owner, "threads", flag="started", wake="data_taken")
    key = next(key for key, (reference, _) in threads._owners.items() if reference() is owner)
    held, seen = threading.Event(), []

    def hold_the_lock():
        with threads._lock:
            held.set()
            time.sleep(0.5)  # the owner dies meanwhile, on the main thread
            seen.append(key in threads._owners)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    held.wait(60)
    del owner  # its weak reference's callback waits for the lock
    holder.join(60)

    assert seen == [True]
    assert key not in threads._owners


def test_an_owner_that_dies_while_the_exit_hook_runs_is_skipped_quietly(caplog):
    dead = weakref.ref(Fetcher.__new__(Fetcher))  # died already; its callback not run yet
    healthy = Fetcher()
    stop_threads_at_exit(healthy, "threads", flag="started", wake="data_taken", timeout=60)
    threads._owners[id(dead)] = (dead, ("threads", "started", "data_taken", False, 60))
    threads._stop_all()

    assert not healthy.threads[0].is_alive()
    assert "failed" not in caplog.text
