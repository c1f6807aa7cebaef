"""Private to ``migrate``: the findings about compiled code, for one :class:`~.scanner.Scan`.

The ``.pyx`` files Cython 3 or Python 3 refuses, module-level imports of CUDA-only extensions
(:mod:`.extensions`), calls that hand a CUDA-only function a context's device id where a CPU
twin exists (:mod:`.contexts`), and calls of operators the installed MXNet lacks
(:mod:`.operators`). Each function adds its findings through ``scan.add``.
"""

from __future__ import annotations

import ast

from . import contexts, extensions, files, operators
from .checks import CHECK, PORT, REWRITE
from .files import FileProblem, read


def extension_findings(scan):
    """The ``.pyx`` files Cython 3 or Python 3 refuses, the module-level imports of CUDA-only
    extensions that a CPU build cannot satisfy, and the calls that hand a CUDA-only function a
    context's device id: --to-python3 fixes all three."""
    _pyx_findings(scan)
    cuda = {name for _, name in extensions.cuda_only(scan.root)}  # one walk for both below
    if cuda:
        _guard_findings(scan, cuda)
        _context_findings(scan, cuda)


def _pyx_findings(scan):
    for entry in files.walk(scan.root, (".pyx",))[1]:
        if entry.problem or entry.read_only:
            continue
        try:
            text = read(entry.path).text
        except FileProblem:
            continue
        changes = extensions.port_pyx(text)[1]
        if changes:
            lines = sorted({line for line, _ in changes})
            whats = "; ".join(sorted({what for _, what in changes}))
            scan.add(entry.rel, lines[0], PORT, f"Cython source written for Python 2 "
                                                f"({whats}): --to-python3 ports it",
                     edit=("pyx",))


def _guard_findings(scan, cuda):
    for rel, parsed in sorted(scan.files.items()):
        names = sorted({node.module.split(".")[-1] for node in parsed.tree.body
                        if isinstance(node, ast.ImportFrom) and node.module
                        and node.module.split(".")[-1] in cuda
                        and _is_cuda_extension(scan, rel, node)})
        if names:
            line = min(n.lineno for n in parsed.tree.body if isinstance(n, ast.ImportFrom)
                       and n.module and n.module.split(".")[-1] in names)
            plural = "s" if len(names) > 1 else ""
            scan.add(rel, line, PORT, f"imports the CUDA extension{plural} "
                                      f"{', '.join(names)} at module level: a CPU build "
                                      "fails at import; --to-python3 guards it (a call "
                                      "then names CUDA)", edit=("guard", tuple(names)))


def _context_findings(scan, cuda):
    """Calls that hand a CUDA-only function a context's device id, where the module
    defines a CPU twin (contexts.py): --to-python3 makes them choose by the context."""
    for rel, parsed in sorted(scan.files.items()):
        if rel in scan.copies:
            continue
        names = _imported_twins(scan, rel, parsed.tree, cuda)
        calls = contexts.context_calls(parsed.tree, names)
        if calls:
            gpu = sorted({c.func.id for c in calls})
            scan.add(rel, calls[0].lineno, PORT,
                     f"calls {', '.join(gpu)} with a context's device_id: a CPU context "
                     f"then needs CUDA; --to-python3 makes each call choose "
                     f"{', '.join(names[g] for g in gpu)} on a CPU context",
                     edit=("context", tuple(sorted((g, names[g]) for g in gpu))))


def _imported_twins(scan, rel, tree, cuda):
    """``{name a gpu twin is bound to: cpu twin's name}`` for the gpu twins imported (under
    any alias) from a module of the tree that defines both and imports a CUDA-only extension
    (a name in ``cuda``)."""
    names = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        target = _target(scan, rel, node)
        module = scan.files.get(target.rel) if target is not None and target.rel else None
        twins = contexts.twins(module.tree) if module is not None else {}
        if twins and _imports_cuda(scan, target.rel, module.tree, cuda):
            names.update({a.asname or a.name: twins[a.name] for a in node.names
                          if a.name in twins})
    return names


def _imports_cuda(scan, rel, tree, cuda):
    """Whether the module imports one of the CUDA-only extensions ``cuda`` at its top level
    (a guarded import in a ``try`` too)."""
    found = [n for top in tree.body for n in ([top] + (top.body if isinstance(top, ast.Try)
                                                       else []))
             if isinstance(n, ast.ImportFrom) and n.module
             and n.module.split(".")[-1] in cuda]
    return any(_is_cuda_extension(scan, rel, n) for n in found)


def _target(scan, rel, node):
    """What an ``ImportFrom`` refers to as the repository runs (implicit relative first,
    as Python 2 read it)."""
    return (scan.model.sibling(rel, node.module) if not node.level
            and node.module.split(".")[0] in scan.model.local_names(rel)
            else scan.model.resolve(rel, node.module, node.level))


def _is_cuda_extension(scan, rel, node):
    target = _target(scan, rel, node)
    return target is not None and target.kind == "extension"


def _elsewhere(table, namespace, name):
    """The namespace of the same kind (symbol or ndarray) where the installed MXNet has
    ``name``, or None."""
    return next((other for other in ("sym.contrib", "sym", "nd.contrib", "nd")
                 if other[:2] == namespace[:2] and name in table[other]), None)


def operator_findings(scan):
    """A ``[check]`` at each call of an operator the installed MXNet lacks."""
    found = [(rel, *call) for rel, parsed in sorted(scan.files.items())
             if rel not in scan.copies for call in operators.calls(parsed.tree)]
    if not found:
        return
    table = operators.installed()
    if table is None:
        rel, line = found[0][:2]
        scan.add(rel, line, CHECK, "MXNet cannot be imported here, so the operators the code "
                                   "calls were not checked (pip install \"mxnet==1.9.1\" "
                                   "\"numpy<1.24\")")
        return
    sources = None
    for rel, line, namespace, name, spelled in found:
        if name not in table[namespace] and operators.replaces(namespace, name):
            scan.add(rel, line, REWRITE, operators.missing_message(
                spelled, name, table["version"], [], _elsewhere(table, namespace, name),
                drop_in=True), edit=("compat-op",))
        elif name not in table[namespace]:
            sources = operators.own_sources(scan.root) if sources is None else sources
            scan.add(rel, line, CHECK, operators.missing_message(
                spelled, name, table["version"], sources.get(name, []),
                operators.elsewhere(table, namespace, name),
                tuple(operators.submodules(scan.root)), namespace=namespace))
