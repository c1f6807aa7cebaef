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
The call is found by what its name means (an import of the gpu twin, under any alias:
``from nms.nms import gpu_nms_wrapper as nms_gpu``), and the cpu twin is imported beside it
under its own name where the module has not imported it already.
"""

from __future__ import annotations

import ast

from .names import Names
from .textedit import Text, replace

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
    """The calls of a gpu twin in ``names`` (``{name the file binds it to: cpu name}``)
    whose last argument is ``<expr>.context.device_id``."""
    return _calls(Names(tree), names)


def _calls(scope_names, names):
    chosen = {id(n.body) for n in scope_names.nodes if isinstance(n, ast.IfExp)
              and _is_gpu_test(n.test)}  # ported already: the choice is there
    return [n for n in scope_names.calls if id(n) not in chosen
            and isinstance(n.func, ast.Name) and n.func.id in names
            and _is_imported(scope_names, n.func) and n.args and not n.keywords
            and _device_id_of_context(n.args[-1]) is not None]


def _is_imported(scope_names, name):
    """Whether ``name`` reads the module's own import of it (not a local rebinding)."""
    return scope_names.resolve(name) is scope_names.module and all(
        isinstance(b, ast.ImportFrom) for b in scope_names.module.bindings[name.id])


def choose_by_context(text: str, names: dict[str, str]) -> str:
    """``text`` with each such call choosing by its context, and the cpu twins imported
    beside the gpu ones. ``names``: ``{name the gpu twin is bound to: cpu twin's name}``."""
    tree = ast.parse(text)
    scope_names, source = Names(tree), Text(text)
    calls = _calls(scope_names, names)
    called = {call.func.id for call in calls}
    cpu_names, edits = _cpu_imports(scope_names, source, {g: names[g] for g in called})
    for call in (c for c in calls if c.func.id in cpu_names):
        context = source.source(_device_id_of_context(call.args[-1]))
        arguments = ", ".join(source.source(a) for a in call.args[:-1])
        new = (f"({source.source(call)} if {context}.device_type == 'gpu' "
               f"else {cpu_names[call.func.id]}({arguments}))")
        edits += source.swap(call, new)
    return replace(text, edits)


def _cpu_imports(scope_names, source, names):
    """``{gpu name: the name the cpu twin is called by}`` and the edits that import the twins
    not imported yet, each beside its gpu twin (only where its own name is free)."""
    cpu_names, edits = {}, []
    statements = [n for n in scope_names.tree.body if isinstance(n, ast.ImportFrom)]
    for node in statements:
        for alias in node.names:
            gpu = alias.asname or alias.name
            if gpu not in names:
                continue
            cpu = names[gpu]
            have = [a.asname or a.name for n in statements if n.module == node.module
                    and n.level == node.level for a in n.names if a.name == cpu]
            if have:
                cpu_names[gpu] = have[0]
            elif cpu not in scope_names.module.bindings and cpu not in cpu_names.values():
                cpu_names[gpu] = cpu
                edits += source.after(alias, f", {cpu}")
    return cpu_names, edits


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
