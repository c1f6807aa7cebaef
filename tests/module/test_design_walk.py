"""docs/design.rst's walk of a per-device bind and forward is the code's own: traced here.

The test records every call into the package (two levels deep, comprehensions and the
patch's switch left out, a generator counted once) while a module binds per device on two
CPU contexts and then runs a per-device batch of other shapes, and compares the lists with
the two blocks of docs/design.rst that follow a ``.. walk: NAME`` comment.
"""

import inspect
import re
import sys
from pathlib import Path

import mxnet as mx
import pytest
from nets import conv_net, device_batch, random_batch
from paths import REPO

import mxpatch_bind

DESIGN = REPO / "docs" / "design.rst"
SHAPES = [(2, 3, 8, 8), (1, 3, 6, 10)]
MAX_DEPTH = 2
PACKAGE = "mxpatch_bind."
_LEFT_OUT = ("mxpatch_bind.patching._chains",)  # the switch every wrapper passes through


def _ours(frame):
    name = frame.f_globals.get("__name__", "")
    return (name.startswith(PACKAGE) and name not in _LEFT_OUT
            and "<" not in frame.f_code.co_qualname)


def trace(run):
    """The package's calls during ``run()``: ``'  ' * depth + 'module.qualname'``, with a
    run of the same line written once as ``line (xN)``."""
    calls, generators = [], []

    def profile(frame, event, arg):
        if event != "call" or not _ours(frame):
            return
        if frame.f_code.co_flags & inspect.CO_GENERATOR:
            # A generator's frame resumes with another "call"; held here, it keeps its id.
            if any(frame is started for started in generators):
                return
            generators.append(frame)
        depth, caller = 0, frame.f_back
        while caller is not None:
            depth += _ours(caller)
            caller = caller.f_back
        if depth <= MAX_DEPTH:
            calls.append("  " * depth + frame.f_globals["__name__"][len(PACKAGE):] + "."
                         + frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    collapsed = []
    for call in calls:
        if collapsed and collapsed[-1][0] == call:
            collapsed[-1][1] += 1
        else:
            collapsed.append([call, 1])
    return [call if count == 1 else "%s (x%d)" % (call, count) for call, count in collapsed]


def documented(name):
    """The literal block after ``.. walk: name`` in docs/design.rst, as lines."""
    text = DESIGN.read_text()
    match = re.search(r"^\.\. walk: %s\n\n::\n\n((?:   .*\n)+)" % name, text, re.MULTILINE)
    assert match, "docs/design.rst has no '.. walk: %s' block" % name
    return [line[3:] for line in match.group(1).rstrip().split("\n")]


def walks():
    with mxpatch_bind.patched():
        mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
        bind = trace(lambda: mod.bind([[("data", s)] for s in SHAPES],
                                      [[("softmax_label", (s[0],))] for s in SHAPES]))
        mod.init_params()
        batch = device_batch([random_batch((3, 3, 8, 8), seed=1),
                              random_batch((1, 3, 6, 10), seed=2)])
        forward = trace(lambda: mod.forward(batch, is_train=False))
    return {"bind": bind, "forward": forward}


def test_the_documented_walks_are_the_calls_the_code_makes():
    traced = walks()
    for name, calls in traced.items():
        assert documented(name) == calls, "\n".join(["%s, as traced:" % name] + calls)


def test_the_data_folder_imports_nothing_of_the_module_folder():
    import ast

    data = Path(mxpatch_bind.__file__).parent / "data"
    found = []
    for path in sorted(data.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                names = [alias.name for alias in node.names]
                if (target.startswith("..module") or target == "mxpatch_bind.module"
                        or target.startswith("mxpatch_bind.module.")
                        or (target == ".." and "module" in names)):
                    found.append("%s:%d" % (path.name, node.lineno))
    assert len(list(data.glob("*.py"))) >= 8
    assert found == []


def _modules_passed(run):
    """The walk between forward.py and batches.py during ``run()``: each module named once
    per stay ('forward', 'batches', ...), a return into one of them counted as a stay (so a
    second question asked right after the first answer shows)."""
    passed = []
    walked = ("mxpatch_bind.module.forward", "mxpatch_bind.module.batches")

    def profile(frame, event, arg):
        if event == "return" and frame.f_back is not None:
            frame = frame.f_back
        elif event != "call":
            return
        name = frame.f_globals.get("__name__", "")
        if name in walked:
            module = name.rpartition(".")[2]
            if not passed or passed[-1] != module:
                passed.append(module)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return passed


def _labelled(shape, seed=0):
    data, label = random_batch(shape, seed=seed)
    return mx.io.DataBatch(data=[data], label=[label])


# Each form of a forward batch, the module it goes to, and the walk between the two modules:
# forward.py asks batches.py one question and works on with the answer; batches.py never asks
# back. A stock module's pre-sliced list is checked, then loaded by stock MXNet.
_FORMS = {
    "device lists": ("per device", lambda: mx.io.DataBatch(
        data=[[random_batch((3, 3, 8, 8), seed=1)[0]], [random_batch((1, 3, 6, 10))[0]]],
        label=[[mx.nd.zeros((3,))], [mx.nd.zeros((1,))]],
        provide_data=[[("data", (3, 3, 8, 8))], None]), ["forward", "batches", "forward"]),
    "a list of batches": ("per device", lambda: [_labelled((2, 3, 8, 8)), _labelled((1, 3, 8, 8))],
                          ["forward", "batches", "forward"]),
    "a flat batch": ("per device", lambda: _labelled((3, 3, 8, 8)),
                     ["forward", "batches", "forward"]),
    "a pre-sliced list": ("stock", lambda: [_labelled((2, 3, 8, 8)), _labelled((2, 3, 8, 8))],
                          ["forward", "batches", "forward"]),
}


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_a_forward_asks_batches_once_and_batches_answers_whole(form):
    # "Does the batch fit, and what does it hold?" is one question: forward.py asks it once,
    # batches.py answers it without calling back, and the spec is worked out from the answer.
    bound, make_batch, walk = _FORMS[form]
    with mxpatch_bind.patched():
        mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
        if bound == "per device":
            mod.bind([[("data", s)] for s in SHAPES],
                     [[("softmax_label", (s[0],))] for s in SHAPES])
        else:
            mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
        mod.init_params()
        batch = make_batch()
        assert _modules_passed(lambda: mod.forward(batch, is_train=True)) == walk
        assert mod.get_outputs()[0].shape[1] == 3  # the forward ran through


def test_batches_answers_without_importing_forward():
    # The answering module knows nothing of the asking one: no import, so no way to call back.
    import ast

    source = (Path(mxpatch_bind.__file__).parent / "module" / "batches.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            imported.update([node.module or ""] + [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert "shapes" in imported  # what it does import is seen
    assert not {name for name in imported if name.split(".")[-1] in ("forward", "binding")}
