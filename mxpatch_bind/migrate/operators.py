"""Private to ``migrate``: operators the code calls that the installed MXNet lacks.

The family built its own MXNet with operators of its own (FCIS's ``ChannelOperator``,
SNIPER's ``MultiProposalTarget``); the five Deformable-ConvNets needs ship with stock MXNet
1.9.1. Every call of ``mx.sym.contrib.X`` / ``mx.contrib.sym.X`` / ``mx.nd.contrib.X`` /
``mx.sym.X`` / ``mx.nd.X`` (and the ``symbol`` / ``ndarray`` spellings) is looked up in the
installed MXNet, which is asked in a child process (``migrate`` itself never imports MXNet),
once per run. What is missing is a ``[check]`` naming the repository's own C++ source of
the operator where it has one (``MXNET_REGISTER_OP_PROPERTY(_contrib_X, ...)``,
``NNVM_REGISTER_OP(X)``), or a ``[rewrite]`` to what :mod:`mxpatch_bind.compat` provides
instead (FCIS's ``ChannelOperator``, mx-maskrcnn's ``ROIAlign``, SNIPER's four).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .files import skipped_dir

# The namespaces, as the installed MXNet is asked for them, and their spellings in code.
_SPELLINGS = {
    ("sym", "contrib"): "sym.contrib", ("symbol", "contrib"): "sym.contrib",
    ("contrib", "sym"): "sym.contrib", ("contrib", "symbol"): "sym.contrib",
    ("nd", "contrib"): "nd.contrib", ("ndarray", "contrib"): "nd.contrib",
    ("contrib", "nd"): "nd.contrib", ("contrib", "ndarray"): "nd.contrib",
    ("sym",): "sym", ("symbol",): "sym", ("nd",): "nd", ("ndarray",): "nd",
}
_ASK = """import json, mxnet as mx
print(json.dumps({"version": mx.__version__, "sym.contrib": dir(mx.sym.contrib),
                  "nd.contrib": dir(mx.nd.contrib), "sym": dir(mx.sym), "nd": dir(mx.nd)}))"""
_REGISTER = re.compile(r"(?:MXNET_REGISTER_OP_PROPERTY|NNVM_REGISTER_OP|MXNET_REGISTER_SIMPLE_OP)"
                       r"\(\s*(?:_contrib_)?(\w+)")
_SOURCES = (".cc", ".cu", ".cpp", ".h")
_EVERY_NAMESPACE = ("sym.contrib", "nd.contrib", "sym", "nd")
# What mxpatch_bind.compat provides, by the name the family calls: the namespaces where a call
# means the family's operator, and what the drop-in is. mx-maskrcnn and SNIPER registered
# theirs outside contrib (``mx.sym.ROIAlign``); stock MXNet's contrib.ROIAlign and
# contrib.MultiProposal are other computations, so a call there is left alone.
_NUMPY = "a NumPy operator on the CPU with {}'s semantics"
COMPAT_OPERATORS = {
    "ChannelOperator": (_EVERY_NAMESPACE, "built from stock operators"),
    "ROIAlign": (("sym", "nd"), _NUMPY.format("mx-maskrcnn")),
    "MultiProposal": (("sym", "nd"), _NUMPY.format("SNIPER")),
    "MultiProposalTarget": (("sym", "nd"), _NUMPY.format("SNIPER")),
    "MultiProposalTargetMask": (("sym", "nd"), _NUMPY.format("SNIPER")),
    "MaskRcnnTarget": (("sym", "nd"), _NUMPY.format("SNIPER")),
}


def replaces(namespace: str, name: str) -> bool:
    """Whether a call of ``name`` in ``namespace`` (``'sym.contrib'``, ``'nd'``, ...) means an
    operator :mod:`mxpatch_bind.compat` provides."""
    return namespace in COMPAT_OPERATORS.get(name, ((), ""))[0]
_API = {"sym": "Symbol", "nd": "NDArray"}  # what each namespace's operators take


def calls(tree: ast.Module) -> list[tuple[int, str, str, str]]:
    """``(line, namespace, name, spelled)`` for each call of an MXNet operator, by what the
    called name means (``import mxnet as mx``, ``from mxnet import sym``, ``from mxnet import
    symbol as S``: every import form); ``namespace`` is ``'sym.contrib'``, ``'nd.contrib'``,
    ``'sym'`` or ``'nd'``, ``spelled`` the call as written
    (``'mx.contrib.sym.ChannelOperator'``)."""
    from .names import Names

    names = Names(tree)
    found = []
    for node in names.calls:
        dotted = names.qualified(node.func) or ""
        parts = tuple(dotted.split("."))
        if isinstance(node.func, ast.Attribute) and parts[0] == "mxnet" \
                and parts[1:-1] in _SPELLINGS:
            found.append((node.lineno, _SPELLINGS[parts[1:-1]], parts[-1],
                          ast.unparse(node.func)))
    return found


@functools.lru_cache(maxsize=1)
def installed() -> dict | None:
    """``{namespace: set of names}`` and ``'version'`` of the installed MXNet, or None
    when it cannot be imported (asked once, in a child process)."""
    try:
        done = subprocess.run([sys.executable, "-c", _ASK], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, MXNET_LIBRARY_PATH=""))
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        table = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return {key: (value if key == "version" else set(value)) for key, value in table.items()}


def own_sources(root: Path) -> dict[str, list[str]]:
    """``{operator name: [relative paths]}`` of the C++ sources in the tree that register it."""
    found: dict[str, list[str]] = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not skipped_dir(Path(directory), d))
        for name in sorted(names):
            if name.endswith(_SOURCES):
                path = Path(directory) / name
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                for op in set(_REGISTER.findall(text)):
                    found.setdefault(op, []).append(path.relative_to(root).as_posix())
    return found


def submodules(root: Path) -> list[str]:
    """The paths of the tree's git submodules that are not checked out (an empty folder, or
    none): SNIPER keeps its operators in one, ``SNIPER-mxnet``."""
    try:
        text = (root / ".gitmodules").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    paths = re.findall(r"^\s*path\s*=\s*(\S+)", text, re.M)
    return [p for p in paths if not (root / p).is_dir() or not any((root / p).iterdir())]


def elsewhere(table: dict, namespace: str, name: str) -> str | None:
    """The namespace where the installed MXNet (``table``, as :func:`installed` gives it)
    has ``name``, which a call through ``namespace`` did not find: the call's own API first
    (``sym`` and ``sym.contrib``), then the other one, its ``contrib`` alike first; None
    where it has none."""
    api = namespace.split(".")[0]
    other = next(a for a in _API if a != api)
    contrib = namespace.endswith(".contrib")
    order = [api + ".contrib", api] + ([other + ".contrib", other] if contrib
                                       else [other, other + ".contrib"])
    return next((n for n in order if n != namespace and name in table[n]), None)


def missing_message(spelled: str, name: str, version: str, sources: list[str],
                    elsewhere: str | None = None, unfetched: tuple = (),
                    namespace: str | None = None, drop_in: bool = False) -> str:
    """The ``[check]`` text for an operator the installed MXNet lacks, or with ``drop_in``
    the ``[rewrite]`` text naming what :mod:`mxpatch_bind.compat` calls instead;
    ``elsewhere``: the namespace where the installed MXNet has the name; ``unfetched``:
    submodules not checked out, which may hold its source; ``namespace``: the call's (an
    ``elsewhere`` of the other API, Symbol or NDArray, is named as such: it takes the other
    kind of input)."""
    head = f"{spelled} is not in the installed MXNet {version}"
    if drop_in:
        return (f"{head}: --write calls mxpatch_bind.compat.{name} instead, "
                f"{COMPAT_OPERATORS[name][1]}"
                + (f" (mx.{elsewhere}.{name} computes otherwise)" if elsewhere else ""))
    theirs, ours = (_API[n.split(".")[0]] if n else None for n in (elsewhere, namespace))
    if elsewhere and ours and theirs != ours:
        head += f" (only the {theirs} API has it: mx.{elsewhere}.{name}, which takes no {ours}s)"
    elif elsewhere:
        head += f" (it has mx.{elsewhere}.{name}, which may take other parameters)"
    if sources:
        shown = ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3
                                          else "")
        return (f"{head}: the repository's own C++ operator ({shown}) has to be built into "
                "MXNet from source")
    if unfetched:
        return (f"{head}, and the tree has no C++ source for it; its git submodule "
                f"{', '.join(unfetched)} is not checked out (git submodule update --init) and "
                "may hold it")
    return f"{head}, and the repository has no C++ source for it"


def use_compat(text: str) -> str:
    """``text`` (Python 3) with each call of an operator :data:`COMPAT_OPERATORS` names, in
    a namespace where it means the family's operator, pointed at ``mxpatch_bind.compat`` (and
    that module imported). The drop-ins take the original's keywords and inputs in its
    order, so the call's arguments stay as they are."""
    from .textedit import add_import

    tree = ast.parse(text)
    lines = text.splitlines(True)
    spans = []
    meant = {(line, name) for line, namespace, name, _ in calls(tree)
             if replaces(namespace, name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and (node.lineno, node.func.attr) in meant:
            func = node.func
            if func.lineno == func.end_lineno:
                spans.append((func.lineno, func.col_offset, func.end_col_offset, func.attr))
    for line, start, end, name in sorted(spans, reverse=True):
        raw = lines[line - 1].encode("utf-8")
        lines[line - 1] = (raw[:start] + f"mxpatch_bind.compat.{name}".encode() + raw[end:]
                           ).decode("utf-8")
    new = "".join(lines)
    if spans and not any(a.name == "mxpatch_bind.compat" and a.asname is None
                         for n in tree.body if isinstance(n, ast.Import) for a in n.names):
        new = add_import(new, "import mxpatch_bind.compat")
    return new
