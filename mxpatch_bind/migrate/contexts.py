"""Private to ``migrate``: a CUDA-only call on a CPU context gets the repository's CPU twin.

The family's proposal operators build their NMS with ``gpu_nms_wrapper(thresh,
in_data[0].context.device_id)`` whatever the context (fpn's ``pyramid_proposal.py`` always;
faster_rcnn's and rfcn's ``proposal.py`` when ``CXX_PROPOSAL`` is off), and the same module
(``lib/nms/nms.py``) defines ``cpu_nms_wrapper(thresh)``. On a CPU context the call reached
CUDA (the guarded import then names it). The port makes the choice the context allows:

    (gpu_nms_wrapper(t, x.context.device_id) if x.context.device_type == 'gpu'
     else cpu_nms_wrapper(t))

A *twin*: a function ``cpu_<rest>`` beside ``gpu_<rest>`` in a module of the tree that imports
a CUDA-only extension, taking ``gpu_<rest>``'s parameters but its last, ``device_id``. Only
calls whose last argument is ``<expr>.context.device_id`` are changed: elsewhere (``rfcn``'s
demo passes ``0``) nothing says which device the data is on, and the guard's error stays.
"""

from __future__ import annotations

import ast

from .textedit import absolute as _absolute
from .textedit import offsets as _offsets

GPU, CPU = "gpu_", "cpu_"


def twins(tree: ast.Module) -> dict[str, str]:
    """``{gpu name: cpu name}`` for the twins a module defines (see the module's doc)."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    found = {}
    for name, gpu in functions.items():
        cpu = functions.get(CPU + name[len(GPU):]) if name.startswith(GPU) else None
        params = [a.arg for a in gpu.args.args]
        if cpu is not None and params[-1:] == ["device_id"] \
                and [a.arg for a in cpu.args.args] == params[:-1]:
            found[name] = cpu.name
    return found


def context_calls(tree: ast.Module, names: dict[str, str]) -> list[ast.Call]:
    """The calls of a gpu twin in ``names`` (by the name the file uses) whose last
    argument is ``<expr>.context.device_id``."""
    chosen = {id(n.body) for n in ast.walk(tree) if isinstance(n, ast.IfExp)
              and _is_gpu_test(n.test)}  # ported already: the choice is there
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and id(n) not in chosen
            and isinstance(n.func, ast.Name) and n.func.id in names and n.args
            and not n.keywords and _device_id_of_context(n.args[-1]) is not None]


def choose_by_context(text: str, names: dict[str, str]) -> str:
    """``text`` with each such call choosing by its context, and the cpu twins imported
    beside the gpu ones. ``names``: ``{gpu name as imported: cpu name}``."""
    tree = ast.parse(text)
    edits = []  # (start offset, end offset, new text)
    starts = _offsets(text)

    def offset(line, column):  # ast columns count UTF-8 bytes
        return _absolute(starts, line, column, text)

    calls = context_calls(tree, names)
    for call in calls:
        segment = _source(text, call)
        context = _source(text, _device_id_of_context(call.args[-1]))
        arguments = ", ".join(_source(text, a) for a in call.args[:-1])
        new = (f"({segment} if {context}.device_type == 'gpu' "
               f"else {names[_called(call)]}({arguments}))")
        edits.append((offset(call.lineno, call.col_offset),
                      offset(call.end_lineno or call.lineno, call.end_col_offset or 0), new))
    used = {names[_called(c)] for c in calls}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        imported = {a.asname or a.name for a in node.names}
        for alias in node.names:
            cpu = names.get(alias.asname or alias.name)
            if cpu in used and cpu not in imported and alias.asname is None:
                at = offset(alias.end_lineno, alias.end_col_offset)
                edits.append((at, at, f", {cpu}"))
                imported.add(cpu)
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _called(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else ""


def _source(text, node) -> str:
    return ast.get_source_segment(text, node) or ""


def _device_id_of_context(node):
    """``x.context`` of ``x.context.device_id``, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "device_id" \
            and isinstance(node.value, ast.Attribute) and node.value.attr == "context":
        return node.value
    return None


def _is_gpu_test(node):
    """``<expr>.context.device_type == 'gpu'``."""
    return isinstance(node, ast.Compare) and len(node.comparators) == 1 \
        and isinstance(node.left, ast.Attribute) and node.left.attr == "device_type" \
        and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value == "gpu"
