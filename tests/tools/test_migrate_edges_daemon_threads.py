"""Edges of ``migrate.daemon_threads`` (issue 36, item 10): each spelling of a class whose
daemon threads loop on an event of the instance until a flag says stop (a nested function
given the instance by ``args``, a method target, a module function given it in a tuple, a
closure; ``while flag``, ``while not flag``, ``if not flag: break``, ``if flag: return``;
``daemon=True``, ``.daemon = True``, ``setDaemon(True)``; every import form), and each link
whose absence leaves a class alone, ported by :func:`daemon_threads.add_stops` and compared
as the lines it adds and the lines of the calls it lists."""

import ast

import pytest

from mxpatch_bind.migrate import daemon_threads

BASE = '''import threading


class Prefetch(object):
    def __init__(self, n):
        self.started = True
        self.data_taken = [threading.Event() for i in range(n)]
        self.data_ready = [threading.Event() for i in range(n)]

        def fetch(self, i):
            while True:
                self.data_taken[i].wait()
                if not self.started:
                    break
                self.data_ready[i].set()
        self.threads = [threading.Thread(target=fetch, args=[self, i]) for i in range(n)]
        for t in self.threads:
            t.daemon = True
            t.start()
'''
METHOD = '''"""Prefetching."""
from __future__ import print_function
from threading import Thread as T, Event as E


class One(object):
    def __init__(me):
        me.running = True
        me.ev = E()
        me.thread = T(target=me.loop, daemon=True)
        me.thread.start()

    def loop(this):
        while this.running:
            this.ev.wait()
'''
MODULE_FUNCTION = '''import threading as th


def work(owner, i):
    while True:
        owner.wake[i].wait()
        if owner.stopped:
            return


class Pool:
    def start(self):
        self.stopped = False
        self.wake = (th.Event(), th.Event())
        self.workers = (th.Thread(target=work, args=(self, 0)),
                        th.Thread(target=work, args=(self, 1)))
        for w in self.workers:
            w.setDaemon(True)
        for w in self.workers:
            w.start()
'''
CLOSURE = '''# licence
import threading


class Closure(object):
    def go(self):
        self.done = False
        self.ev = threading.Event()

        def run():
            while not self.done:
                self.ev.wait()
        self.t = threading.Thread(target=run, daemon=True)
        self.t.start()
'''
STOP = "stop_threads_at_exit(self, 'threads', flag='started', wake='data_taken')"
STOPPED = BASE.replace("import threading\n", "import threading\n"
                       "from mxpatch_bind.threads import stop_threads_at_exit\n").replace(
    "            t.start()\n", f"            t.start()\n        {STOP}\n")
STOPPED_THROUGH_MODULE = BASE.replace(
    "import threading\n", "import threading\nfrom mxpatch_bind import threads\n").replace(
    "            t.start()\n", "            t.start()\n        threads.stop_threads_at_exit("
    "self, threads='threads', flag='started', wake='data_taken')\n")
RESET = BASE + '''
    def reset(self):
        for t in self.threads:
            t.start()
'''
STOPPED_DOTTED = BASE.replace(
    "import threading\n", "import threading\nimport mxpatch_bind.threads\n").replace(
    "            t.start()\n", f"            t.start()\n        mxpatch_bind.threads.{STOP}\n")
STOPPED_OTHER = STOPPED.replace("(self, 'threads',", "(self, 'others',")
TWO_LOOPS = MODULE_FUNCTION.replace("th.Thread(target=work, args=(self, 1))",
                                    "th.Thread(target=rest, args=(self, 1))") + \
    "\n\ndef rest(owner, i):\n    while owner.going:\n        owner.wake[i].wait()\n"
SAME_NAME = MODULE_FUNCTION.replace("    def start(self):", "    def work(self):")
SHADOWED = CLOSURE.replace("        def run():", "        def run(self):")
INDENTED = "if True:\n" + "".join("    " + line if line.strip() else line
                                   for line in CLOSURE.splitlines(True)[2:])
INDENTED = CLOSURE.splitlines(True)[1] + INDENTED
DOCSTRING_ONLY = CLOSURE.replace(
    "# licence\nimport threading\n", '"""Closure\n\nthreads."""\n').replace(
    "    def go(self):\n", "    def go(self):\n        import threading\n")

CASES = [  # source, the import's line (0: none), (line, call) of each stop added, listed lines
    pytest.param(BASE, 1, [(22, STOP)], [22], id="a_nested_fetch_handed_the_instance_by_args"),
    pytest.param(METHOD, 3, [(14, "stop_threads_at_exit(me, 'thread', flag='running', "
                                  "wake='ev')")], [14],
                 id="a_method_target_with_imported_names_a_while_flag_and_one_thread"),
    pytest.param(MODULE_FUNCTION, 1, [(23, "stop_threads_at_exit(self, 'workers', "
                                           "flag='stopped', wake='wake', stop_value=True)")],
                 [23], id="a_module_function_given_the_instance_in_a_tuple_stopping_on_a_flag"),
    pytest.param(CLOSURE, 2, [(17, "stop_threads_at_exit(self, 't', flag='done', wake='ev', "
                                   "stop_value=True)")], [17],
                 id="a_closure_over_the_instance_with_a_negated_while"),
    pytest.param(STOPPED, 0, [], [21], id="threads_already_stopped_are_left_and_listed"),
    pytest.param(STOPPED_THROUGH_MODULE, 0, [], [21],
                 id="threads_stopped_through_the_module_are_left_and_listed"),
    pytest.param(BASE.replace("            t.daemon = True\n", ""), 0, [], [],
                 id="threads_that_are_no_daemons_are_left"),
    pytest.param(BASE.replace("t.daemon = True", "t.daemon = False"), 0, [], [],
                 id="threads_whose_daemon_is_false_are_left"),
    pytest.param(BASE.replace("self.data_taken = [threading.Event() for i in range(n)]",
                              "self.data_taken = [Queue() for i in range(n)]"), 0, [], [],
                 id="a_loop_waiting_on_what_is_no_event_is_left"),
    pytest.param(BASE.replace("                if not self.started:\n                    break\n",
                              ""), 0, [], [], id="a_loop_without_a_stop_flag_is_left"),
    pytest.param(BASE.replace("self.data_taken[i].wait()", "self.data_taken[i].wait(1)"), 0,
                 [], [], id="a_wait_given_a_timeout_is_no_wake"),
    pytest.param(BASE.replace("args=[self, i]", "args=[other, i]"), 0, [], [],
                 id="threads_handed_another_object_are_left"),
    pytest.param(BASE.replace("\n", "\r\n"), 1, [(22, STOP)], [22],
                 id="a_crlf_file_gets_crlf_lines"),
    pytest.param(RESET, 1, [(22, STOP), (28, STOP)], [22],
                 id="threads_started_in_two_methods_get_a_stop_after_each"),
    pytest.param(STOPPED_DOTTED, 0, [], [21], id="threads_stopped_by_the_dotted_helper_are_left"),
    pytest.param(STOPPED_OTHER, 0, [(22, STOP)], [22],
                 id="a_stop_of_other_threads_does_not_stop_these_nor_repeat_the_import"),
    pytest.param(BASE.replace("import threading\n", "from .threading import Thread, Event\n")
                 .replace("threading.Thread(", "Thread(").replace("threading.Event(", "Event("),
                 0, [], [], id="a_local_module_named_threading_is_not_threading"),
    pytest.param(BASE.replace("threading.Thread(", "pool.Thread("), 0, [], [],
                 id="a_thread_of_another_module_is_no_thread"),
    pytest.param(BASE.replace("for i in range(n)]\n        for t", "for i in range(n)] + "
                              "[worker()]\n        for t").replace(
                     "[threading.Thread(target=fetch, args=[self, i]) for i in range(n)] + "
                     "[worker()]", "[threading.Thread(target=fetch, args=[self, 0]), worker()]"),
                 0, [], [], id="threads_beside_what_is_no_thread_are_left"),
    pytest.param(TWO_LOOPS, 0, [], [], id="threads_running_two_different_loops_are_left"),
    pytest.param(METHOD.replace("target=me.loop", "target=me.other"), 0, [], [],
                 id="a_target_that_is_no_method_of_the_class_is_left"),
    pytest.param(METHOD.replace("def loop(this):", "def loop(this, /):"), 3,
                 [(14, "stop_threads_at_exit(me, 'thread', flag='running', wake='ev')")], [14],
                 id="a_method_target_whose_instance_is_positional_only"),
    pytest.param(METHOD.replace("me.ev = E()", "me.ev, me.other = E(), 1"), 3,
                 [(14, "stop_threads_at_exit(me, 'thread', flag='running', wake='ev')")], [14],
                 id="an_event_assigned_in_a_tuple"),
    pytest.param(METHOD.replace('"""Prefetching."""', '"""Prefetching\n\nthreads."""'), 5,
                 [(16, "stop_threads_at_exit(me, 'thread', flag='running', wake='ev')")], [16],
                 id="the_import_goes_below_a_docstring_of_several_lines"),
    pytest.param(CLOSURE.replace("daemon=True", "daemon=False"), 0, [], [],
                 id="a_thread_made_with_daemon_false_is_left"),
    pytest.param(SAME_NAME, 1, [(23, "stop_threads_at_exit(self, 'workers', flag='stopped', "
                                     "wake='wake', stop_value=True)")], [23],
                 id="a_module_function_named_as_the_method_that_starts_it"),
    pytest.param(SHADOWED, 0, [], [], id="a_closure_whose_parameter_shadows_the_instance_is_left"),
    pytest.param(BASE.replace("def fetch(self, i):", "def fetch():"), 0, [], [],
                 id="a_function_given_more_arguments_than_it_takes_is_left"),
    pytest.param(RESET.replace("        for t in self.threads:\n            t.start()\n",
                               "        for t in other.threads:\n            t.start()\n"), 1,
                 [(22, STOP)], [22], id="threads_of_another_object_started_are_not_these"),
    pytest.param(INDENTED, 1, [(17, "    stop_threads_at_exit(self, 't', flag='done', "
                                    "wake='ev', stop_value=True)")], [17],
                 id="a_class_indented_in_a_block_gets_its_stop_indented_as_its_statement"),
    pytest.param("VERSION = 1\n" + BASE, 1, [(23, STOP)], [23],
                 id="the_import_goes_first_where_code_comes_before_the_imports"),
    pytest.param(DOCSTRING_ONLY, 4, [(19, "stop_threads_at_exit(self, 't', flag='done', wake='ev', "
                                          "stop_value=True)")], [19],
                 id="the_import_goes_below_a_docstring_of_several_lines_where_no_import_is"),
]


@pytest.mark.parametrize("source, import_line, stops, listed", CASES)
def test_each_stoppable_class_gets_its_stop_after_the_statement_that_starts_it(
        source, import_line, stops, listed):
    newline = "\r\n" if source.endswith("\r\n") else "\n"
    expected = source.splitlines(True)
    # a comment above each call, indented as the call
    added = [(line - 1, text[:len(text) - len(text.lstrip())] + daemon_threads.COMMENT)
             for line, text in stops] + stops
    if import_line:
        added.append((import_line, "from mxpatch_bind.threads import stop_threads_at_exit"))
    for line, text in sorted(added):
        indent = "" if text.startswith("from ") else "        "
        expected.insert(line - 1, indent + text + newline)
    assert daemon_threads.add_stops(source) == ("".join(expected), listed)


def test_text_that_does_not_parse_is_returned_as_it_is():
    assert daemon_threads.add_stops("def (:\n") == ("def (:\n", [])


def test_classes_are_listed_in_the_order_of_the_statements_that_start_their_threads():
    nested = "def make():\n" + "".join("    " + line if line.strip() else line
                                       for line in CLOSURE.splitlines(True)[2:])
    source = CLOSURE.splitlines(True)[1] + nested + "".join(BASE.splitlines(True)[1:])
    found = daemon_threads.stoppable_threads(ast.parse(source))
    assert [(s.class_name, s.started_at.lineno) for s in found] == [("Closure", 14),
                                                                     ("Prefetch", 30)]
