"""``migrate --to-python3`` stops a class's daemon threads at interpreter exit: which classes
it recognises (by what their code does, not by their names), what it writes, that a second
run changes nothing, and that the ported script of the family's form then exits.

The classes are written here in the forms the family's prefetching iterators take (D-CN's
``PrefetchingIter``: a nested loop function handed ``self`` through ``args``; Relation
Networks' ``PrefetchingIterV2``: one event per thread) and in other spellings of the same
data flow.
"""

import ast
import textwrap

import pytest
from test_migrate import run_migrate, snapshot
from test_threads_exit import run_to_exit, write_script

from mxpatch_bind.migrate import daemon_threads

pytest.importorskip("fissix")

FAMILY = '''\
"""A prefetching iterator of the family's form."""
import threading


class Prefetching(object):
    def __init__(self, iters):
        self.iters = iters
        self.data_ready = [threading.Event() for i in range(len(iters))]
        self.data_taken = [threading.Event() for i in range(len(iters))]
        for e in self.data_taken:
            e.set()
        self.started = True
        self.next_batch = [None for _ in iters]

        def prefetch_func(self, i):
            while True:
                self.data_taken[i].wait()
                if not self.started:
                    break
                self.next_batch[i] = self.iters[i].next()
                self.data_taken[i].clear()
                self.data_ready[i].set()
        self.prefetch_threads = [threading.Thread(target=prefetch_func, args=[self, i])
                                 for i in range(len(iters))]
        for thread in self.prefetch_threads:
            thread.setDaemon(True)
            thread.start()

    def __del__(self):
        self.started = False
        for e in self.data_taken:
            e.set()
'''

FAMILY_PORTED = FAMILY.replace(
    '"""\nimport threading\n',
    '"""\nfrom mxpatch_bind.threads import stop_threads_at_exit\nimport threading\n').replace(
    "            thread.start()\n",
    "            thread.start()\n"
    "        # migrate: stop these daemon threads at exit (one left fetching hangs the exit)\n"
    "        stop_threads_at_exit(self, 'prefetch_threads', flag='started', "
    "wake='data_taken')\n")

METHOD_TARGET = '''\
from threading import Event as Signal, Thread


class BatchFeeder:
    def __init__(self, source):
        self.source, self.running, self.wanted = source, True, Signal()
        self.worker = Thread(target=self._feed, daemon=True)
        self.worker.start()

    def _feed(self):
        while self.running:
            self.wanted.wait()
            self.batch = self.source.next()
            self.wanted.clear()
'''

ALIASED = '''\
import threading as th


class Reader:
    def __init__(self, n):
        self.stopped = False
        self.go = [th.Event() for _ in range(n)]
        self.pool = [th.Thread(target=work, args=(i, self)) for i in range(n)]
        for t in self.pool:
            t.daemon = True
        for t in self.pool:
            t.start()


def work(i, reader):
    while True:
        reader.go[i].wait()
        if reader.stopped:
            return
        reader.go[i].clear()
'''


def one(source):
    found = daemon_threads.stoppable_threads(ast.parse(textwrap.dedent(source)))
    return [(s.class_name, s.threads, s.flag, s.stop_value, s.wake, s.owner,
             s.started_at.lineno) for s in found]


# --------------------------------------------------------------------------- recognition
def test_the_familys_prefetching_iterator_is_recognised_by_its_data_flow():
    assert one(FAMILY) == [("Prefetching", "prefetch_threads", "started", False, "data_taken",
                            "self", 25)]


def test_a_method_target_a_loop_condition_and_aliased_imports_are_followed():
    assert one(METHOD_TARGET) == [("BatchFeeder", "worker", "running", False, "wanted",
                                   "self", 8)]


def test_a_module_function_handed_the_instance_and_a_flag_that_returns_when_true():
    assert one(ALIASED) == [("Reader", "pool", "stopped", True, "go", "self", 11)]


@pytest.mark.parametrize("change, why", [
    (("            thread.setDaemon(True)\n", ""), "not daemons: joined before atexit"),
    (("                self.data_taken[i].wait()\n", "                self.queue.get()\n"),
     "waits on no event of the instance"),
    (("                if not self.started:\n", "                if not STARTED:\n"),
     "its flag is not the instance's"),
    (("self.data_taken = [threading.Event() for i in range(len(iters))]",
      "self.data_taken = iters"), "what it waits on is not made an Event here"),
    (("args=[self, i]", "args=[iters, i]"), "the loop is not handed the instance"),
    (("            thread.start()\n", "            pass\n"), "never started"),
])
def test_a_class_is_left_alone_when_a_link_of_the_flow_is_missing(change, why):
    assert one(FAMILY.replace(*change)) == [], why


def test_the_name_of_the_class_decides_nothing():
    assert one("class PrefetchingIter(object):\n    def reset(self):\n        pass\n") == []


# --------------------------------------------------------------------------- the edit
def test_the_stop_goes_after_the_loop_that_starts_the_threads_and_its_import_on_top():
    new, lines = daemon_threads.add_stops(FAMILY)
    assert new == FAMILY_PORTED
    assert lines == [30]


def test_the_import_goes_below_a_future_import_and_windows_line_ends_are_kept():
    source = ("from __future__ import print_function\n" + METHOD_TARGET).replace("\n", "\r\n")
    new, lines = daemon_threads.add_stops(source)
    assert new.splitlines(True)[:2] == [
        "from __future__ import print_function\r\n",
        "from mxpatch_bind.threads import stop_threads_at_exit\r\n"]
    assert new.splitlines(True)[lines[0] - 1] == (
        "        stop_threads_at_exit(self, 'worker', flag='running', wake='wanted')\r\n")
    assert "\n" not in new.replace("\r\n", "")


def test_a_true_stop_value_is_written():
    new, _ = daemon_threads.add_stops(ALIASED)
    assert "stop_threads_at_exit(self, 'pool', flag='stopped', wake='go', stop_value=True)" in new


def test_a_class_already_stopped_gets_nothing_more():
    assert daemon_threads.add_stops(FAMILY_PORTED) == (FAMILY_PORTED, [30])


# --------------------------------------------------------------------------- migrate
def test_the_report_says_what_the_port_adds_and_where(tmp_path, capsys):
    (tmp_path / "prefetch.py").write_text(FAMILY)
    status, lines = run_migrate(capsys, tmp_path)
    assert lines == [
        "prefetch.py:25: [port] class Prefetching's daemon threads (self.prefetch_threads) wait "
        "on self.data_taken and stop when self.started is False: one left fetching at "
        "interpreter exit can hang the exit; --to-python3 adds stop_threads_at_exit(self, "
        "'prefetch_threads', flag='started', wake='data_taken') (mxpatch_bind.threads) after "
        "the statement that starts them (lines 25-27)",
        "migrate: 1 finding in 1 file: 1 to port (--to-python3)"]
    assert status == 1


@pytest.mark.parametrize("flags", [["--to-python3"],
                                   ["--write", "--delete-vendored", "--to-python3"]])
def test_the_port_adds_the_stop_once_and_a_second_run_changes_nothing(tmp_path, capsys, flags):
    (tmp_path / "prefetch.py").write_text(FAMILY)
    status, lines = run_migrate(capsys, tmp_path, *flags)
    assert (tmp_path / "prefetch.py").read_text() == FAMILY_PORTED
    assert lines[0].startswith("prefetch.py:25: [ported] class Prefetching's daemon threads")
    before = snapshot(tmp_path)
    status, lines = run_migrate(capsys, tmp_path, *flags)
    assert snapshot(tmp_path) == before
    assert lines == [
        "prefetch.py:30: [ok] class Prefetching's daemon threads (self.prefetch_threads) wait on "
        "self.data_taken and stop when self.started is False: stop_threads_at_exit "
        "(mxpatch_bind.threads) stops them at interpreter exit",
        "migrate: 1 finding in 1 file: 1 handled by mxpatch_bind.compat"]
    assert status == 0


def test_a_python2_file_is_ported_and_stopped_in_one_run(tmp_path, capsys):
    source = FAMILY.replace("        self.started = True\n",
                            "        self.started = True\n        print 'prefetching'\n")
    (tmp_path / "prefetch.py").write_text(source)
    run_migrate(capsys, tmp_path, "--to-python3")
    ported = (tmp_path / "prefetch.py").read_text()
    assert "print('prefetching')" in ported
    assert ported.count("stop_threads_at_exit(self, 'prefetch_threads'") == 1
    compile(ported, "prefetch.py", "exec")


@pytest.mark.slow
def test_the_ported_script_of_the_familys_form_exits_where_the_original_hangs(tmp_path, capsys):
    script = write_script(tmp_path)  # test_threads_exit: hangs at exit as it is
    status, lines = run_migrate(capsys, tmp_path, "--to-python3")
    assert (status, [line.split(": ")[:2] for line in lines[:-1]]) == (
        0, [["prefetcher.py:25", "[ported] class Prefetcher's daemon threads (self.threads) "
                                 "wait on self.data_taken and stop when self.started is False"]])
    status, out, err = run_to_exit(script, wait_s=120)
    assert (status, out) == (0, "trained\n"), err
