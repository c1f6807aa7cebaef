"""Private to ``migrate``: daemon threads that a class leaves running at interpreter exit.

The family's ``PrefetchingIter`` (and its variants: Relation Networks' ``PrefetchingIterV2``,
the copies in FCIS, DFF, FGFA, AdaScale) starts daemon threads that loop: wait on an event
of the instance, leave the loop when a flag of the instance says so, fetch. Its last
``reset()`` leaves a thread fetching; frozen there at exit (inside a ``multiprocessing.Pool``
call, or holding h5py's lock), the thread hangs the interpreter's shutdown in about one
training run of five. ``--to-python3`` adds a call of
:func:`mxpatch_bind.threads.stop_threads_at_exit` after the statement that starts them.

The class is recognised by what its code does, not by its name or file: a method stores
``threading.Thread(target=F, ...)`` objects in ``self.X``, makes them daemons and starts them;
``F`` (a function nested in the method, a method, or a function of the module) is handed the
instance (``args=[self, i]``, or ``self`` itself) and loops on ``owner.W.wait()`` or
``owner.W[i].wait()``, where ``self.W`` holds ``threading.Event`` objects, with ``if not
owner.FLAG: break`` (or ``return``, or ``while owner.FLAG:``) in the loop. Any link missing,
nothing is added.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .checks import OK, PORT

HELPER_MODULE = "mxpatch_bind.threads"
HELPER = "stop_threads_at_exit"
COMMENT = "# migrate: stop these daemon threads at exit (one left fetching hangs the exit)"


@dataclass(frozen=True)
class Stoppable:
    """A class's daemon threads and how to stop them."""

    class_name: str
    threads: str  # the attribute holding the threads
    flag: str  # the attribute the loop reads
    stop_value: bool  # what the flag is set to so that the loop ends
    wake: str  # the attribute holding the events the loop waits on
    owner: str  # the name of the instance in the method that starts the threads
    started_at: ast.stmt  # the statement of that method's body that starts them
    helper_line: int  # the line of an existing stop_threads_at_exit call for them, or 0

    def call(self) -> str:
        """The call that stops the threads at exit."""
        value = "" if self.stop_value is False else f", stop_value={self.stop_value!r}"
        return (f"{HELPER}({self.owner}, {self.threads!r}, flag={self.flag!r}, "
                f"wake={self.wake!r}{value})")


# ---------------------------------------------------------------------- reading
def stoppable_threads(tree: ast.Module) -> list[Stoppable]:
    """Every class of ``tree`` whose daemon threads loop on an event of the instance until
    a flag of the instance says stop, in the order of the statements that start them."""
    names = _ThreadingNames(tree)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found += _ClassReader(node, names, functions).stoppable()
    return sorted(found, key=lambda s: s.started_at.lineno)


class _ThreadingNames:
    """What ``threading.Thread``, ``threading.Event`` and the helper are called in a module,
    through every import form and alias."""

    def __init__(self, tree):
        self.modules, self.thread, self.event, self.helper = set(), set(), set(), set()
        self.helper_modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "threading":
                        self.modules.add(alias.asname or "threading")
                    elif alias.name == HELPER_MODULE:
                        self.helper_modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if node.module == "threading" and alias.name == "Thread":
                        self.thread.add(bound)
                    elif node.module == "threading" and alias.name == "Event":
                        self.event.add(bound)
                    elif node.module == HELPER_MODULE and alias.name == HELPER:
                        self.helper.add(bound)
                    elif node.module == "mxpatch_bind" and alias.name == "threads":
                        self.helper_modules.add(bound)

    def is_call_of(self, node, attr, bare):
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return ((isinstance(func, ast.Name) and func.id in bare)
                or (isinstance(func, ast.Attribute) and func.attr == attr
                    and isinstance(func.value, ast.Name) and func.value.id in self.modules))

    def is_thread(self, node):
        return self.is_call_of(node, "Thread", self.thread)

    def is_event(self, node):
        return self.is_call_of(node, "Event", self.event)

    def is_helper(self, node):
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return ((isinstance(func, ast.Name) and func.id in self.helper)
                or (isinstance(func, ast.Attribute) and func.attr == HELPER
                    and _dotted(func.value) in self.helper_modules))


class _ClassReader:
    """One class: its attributes holding threads and events, and its threads' loops."""

    def __init__(self, cls, names, functions):
        self.cls, self.names, self.functions = cls, names, functions
        self.methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
        self.threads, self.events = {}, set()  # attribute -> [(Thread call, method)]
        for method in self.methods.values():
            me = _first_parameter(method)
            for attr, value in _attribute_assignments(method, me):
                calls = _elements(value)
                if calls and all(names.is_thread(c) for c in calls):
                    self.threads.setdefault(attr, []).extend((c, method) for c in calls)
                elif calls and all(names.is_event(c) for c in calls):
                    self.events.add(attr)

    def stoppable(self):
        found = []
        for attr, made in self.threads.items():
            loops = [self._loop(call, method) for call, method in made]
            if not loops or None in loops or len(set(loops)) != 1:
                continue
            if not all(_is_daemon(call) for call, _ in made) and not self._daemon_set(attr):
                continue
            for method, statement in self._starts(attr):
                flag, stop_value, wake = loops[0]
                found.append(Stoppable(self.cls.name, attr, flag, stop_value, wake,
                                       _first_parameter(method), statement,
                                       self._helper_line(attr)))
        return found

    # -- the thread's loop
    def _loop(self, call, method):
        """(flag, stop value, wake attribute) of the loop the thread runs, or None."""
        target = _keyword(call, "target")
        function, owner = None, None
        if isinstance(target, ast.Name):
            function = _nested_function(method, target.id) or self.functions.get(target.id)
            owner = _parameter_given(function, _keyword(call, "args"), _first_parameter(method))
        elif (isinstance(target, ast.Attribute) and _is_name(target.value, _first_parameter(method))
              and target.attr in self.methods):
            function = self.methods[target.attr]
            owner = _first_parameter(function)
        if function is None or owner is None:
            return None
        for loop in (n for n in ast.walk(function) if isinstance(n, ast.While)):
            wake = self._waited_event(loop, owner)
            stop = _stop_flag(loop, owner)
            if wake is not None and stop is not None:
                return stop + (wake,)
        return None

    def _waited_event(self, loop, owner):
        for node in ast.walk(loop):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "wait" and not node.args:
                holder = node.func.value
                if isinstance(holder, ast.Subscript):
                    holder = holder.value
                if _is_attribute_of(holder, owner) and holder.attr in self.events:
                    return holder.attr
        return None

    # -- daemon and start
    def _daemon_set(self, attr):
        """Whether a method makes each thread of ``self.<attr>`` a daemon (``t.daemon =
        True`` or ``t.setDaemon(True)`` in a ``for t in self.<attr>`` loop)."""
        return any(_in_loop_over(method, attr, _sets_daemon) for method in self.methods.values())

    def _starts(self, attr):
        """(method, statement of its body) for each statement that starts the threads."""
        found = []
        for method in self.methods.values():
            for statement in method.body:
                if _in_loop_over(statement, attr, _starts_thread, _first_parameter(method)) \
                        or _starts_directly(statement, attr, _first_parameter(method)):
                    found.append((method, statement))
        return found

    def _helper_line(self, attr):
        for node in ast.walk(self.cls):
            if self.names.is_helper(node) and _threads_argument(node) == attr:
                return node.lineno
        return 0


# ---------------------------------------------------------------------- small readers
def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _first_parameter(function):
    params = function.args.posonlyargs + function.args.args
    return params[0].arg if params else None


def _is_name(node, name):
    return isinstance(node, ast.Name) and name is not None and node.id == name


def _is_attribute_of(node, owner):
    return isinstance(node, ast.Attribute) and _is_name(node.value, owner)


def _attribute_assignments(method, me):
    """(attribute, value) of each ``me.attribute = value`` in ``method`` (one of a tuple
    assigned a tuple too: ``me.a, me.b = x, y``)."""
    for node in ast.walk(method):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = ([(target, value)] if not isinstance(target, ast.Tuple)
                 else zip(target.elts, value.elts) if isinstance(value, ast.Tuple)
                 and len(value.elts) == len(target.elts) else [])
        for one, its_value in pairs:
            if _is_attribute_of(one, me):
                yield one.attr, its_value


def _elements(value):
    """The calls a value builds: itself, a list's or tuple's items, a comprehension's
    element."""
    if isinstance(value, ast.Call):
        return [value]
    if isinstance(value, (ast.List, ast.Tuple)):
        return list(value.elts)
    if isinstance(value, ast.ListComp):
        return [value.elt]
    return []


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_daemon(call):
    value = _keyword(call, "daemon")
    return isinstance(value, ast.Constant) and value.value is True


def _nested_function(method, name):
    return next((n for n in ast.walk(method) if isinstance(n, ast.FunctionDef)
                 and n.name == name and n is not method), None)


def _parameter_given(function, args, me):
    """The parameter of ``function`` that receives the instance ``me``: the one at the
    position of ``me`` in the thread's ``args``; with no ``args``, the closure's ``me``."""
    if function is None:
        return None
    params = [p.arg for p in function.args.posonlyargs + function.args.args]
    if args is None:
        return me if me not in params else None
    if not isinstance(args, (ast.List, ast.Tuple)):
        return None
    for position, value in enumerate(args.elts):
        if _is_name(value, me) and position < len(params):
            return params[position]
    return None


def _stop_flag(loop, owner):
    """(flag, stop value) that ends ``loop``: ``while owner.flag:`` (stop value False), or an
    ``if [not] owner.flag: break`` / ``return`` in its body."""
    test = loop.test
    if _is_attribute_of(test, owner):
        return test.attr, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
            and _is_attribute_of(test.operand, owner):
        return test.operand.attr, True
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and any(isinstance(s, (ast.Break, ast.Return))
                                            for s in node.body):
            if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
                    and _is_attribute_of(node.test.operand, owner):
                return node.test.operand.attr, False
            if _is_attribute_of(node.test, owner):
                return node.test.attr, True
    return None


def _in_loop_over(node, attr, does, me=None):
    """Whether ``node`` holds a ``for t in <me>.<attr>:`` whose body does ``does(t, ...)``."""
    for loop in (n for n in ast.walk(node) if isinstance(n, ast.For)):
        over = loop.iter
        if isinstance(over, ast.Attribute) and over.attr == attr \
                and isinstance(over.value, ast.Name) and (me is None or over.value.id == me) \
                and isinstance(loop.target, ast.Name):
            if any(does(n, loop.target.id) for s in loop.body for n in ast.walk(s)):
                return True
    return False


def _sets_daemon(node, name):
    if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "daemon" and _is_name(t.value, name)
            for t in node.targets):
        return isinstance(node.value, ast.Constant) and node.value.value is True
    return (_is_method_call(node, name, "setDaemon") and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value is True)


def _starts_thread(node, name):
    return _is_method_call(node, name, "start")


def _starts_directly(statement, attr, me):
    """``me.attr.start()`` (one thread in the attribute)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "start" and _is_attribute_of(n.func.value, me)
               and n.func.value.attr == attr for n in ast.walk(statement))


def _is_method_call(node, name, method):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method and _is_name(node.func.value, name))


def _threads_argument(call):
    value = call.args[1] if len(call.args) > 1 else _keyword(call, "threads")
    return value.value if isinstance(value, ast.Constant) else None


# ---------------------------------------------------------------------- writing
def add_stops(text: str) -> tuple[str, list[int]]:
    """``text`` (Python 3) with a :func:`~mxpatch_bind.threads.stop_threads_at_exit` call
    after each statement that starts a class's stoppable daemon threads, and its import;
    returns it and the lines of the calls it now holds (added or there before). Text that
    does not parse is returned as it is, with no line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    found = stoppable_threads(tree)
    missing = [s for s in found if not s.helper_line]
    if not missing:
        return text, sorted({s.helper_line for s in found})
    lines = text.splitlines(True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    for stoppable in sorted(missing, key=lambda s: _last_line(s.started_at), reverse=True):
        statement = stoppable.started_at
        indent = lines[statement.lineno - 1][:statement.col_offset]
        lines.insert(_last_line(statement), f"{indent}{COMMENT}{newline}"
                                           f"{indent}{stoppable.call()}{newline}")
    new = "".join(lines)
    if not _ThreadingNames(tree).helper:
        new = _add_import(new, f"from {HELPER_MODULE} import {HELPER}", newline)
    return new, sorted({s.helper_line for s in stoppable_threads(ast.parse(new))})


def _last_line(statement: ast.stmt) -> int:
    return statement.end_lineno or statement.lineno


def _add_import(text, statement, newline):
    """``statement`` just above the module's first import (below its docstring and its
    ``__future__`` imports, where Python requires them)."""
    tree = ast.parse(text)
    at = 0
    for node in tree.body:
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom)
                                            and node.module != "__future__"):
            at = node.lineno - 1
            break
        if not isinstance(node, (ast.Expr, ast.ImportFrom)):
            break
        at = node.end_lineno
    lines = text.splitlines(True)
    lines.insert(at, statement + newline)
    return "".join(lines)


# ---------------------------------------------------------------------- findings
def findings(scan):
    """A ``[port]`` for each class whose daemon threads are left running at exit (--to-python3
    adds the stop), an ``[ok]`` for each whose threads a call already stops."""
    for rel, parsed in sorted(scan.files.items()):
        if rel in scan.copies:
            continue
        for found in stoppable_threads(parsed.tree):
            what = (f"class {found.class_name}'s daemon threads (self.{found.threads}) wait on "
                    f"self.{found.wake} and stop when self.{found.flag} is {found.stop_value}")
            if found.helper_line:
                scan.add(rel, found.helper_line, OK, f"{what}: {HELPER} ({HELPER_MODULE}) "
                                                       "stops them at interpreter exit")
                continue
            scan.add(rel, found.started_at.lineno, PORT,
                     f"{what}: one left fetching at interpreter exit can hang the exit; "
                     f"--to-python3 adds {found.call()} ({HELPER_MODULE}) after the "
                     f"statement that starts them (lines {found.started_at.lineno}-"
                     f"{_last_line(found.started_at)})",
                     edit=("exit-threads",))
