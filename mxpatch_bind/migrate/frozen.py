"""Private to ``migrate``: what each copy's freezing rule freezes of the repo's own symbols.

The family freezes layers with ``fixed_param_prefix=config...FIXED_PARAMS``; each copy turns
the prefixes into names by its own rule (``prefix in name`` or ``name.startswith(prefix)``,
``docs/family.rst``). Where the repo names its parameters literally (its symbol files spell
out every layer: ``name='res3a_branch2a'``) and lists its prefixes in a config (a yaml
``FIXED_PARAMS:`` list, or ``config.network.FIXED_PARAMS = [...]``), this works out what
the copy froze and what the other rule would freeze, and which prefixes freeze nothing.
Nothing is imported or run.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path, PurePosixPath

__all__ = ["RULES", "Prefixes", "symbol_parameters", "prefix_lists", "frozen", "dead_prefixes",
           "in_subproject"]

# Operators whose parameters are named after the layer: suffixes they add.
_WEIGHTED = ("Convolution", "Deconvolution", "FullyConnected", "DeformableConvolution",
             "ModulatedDeformableConvolution")
_NORMALISED = ("BatchNorm", "InstanceNorm", "LayerNorm", "GroupNorm")
_VARIABLES = ("Variable", "var")
_KEYS = ("FIXED_PARAMS", "FIXED_PARAMS_SHARED")
_YAML_KEY = re.compile(r"^[ \t]*(FIXED_PARAMS(?:_SHARED)?)[ \t]*:[ \t]*(.*?)[ \t]*$")
_YAML_ITEM = re.compile(r"^[ \t]*-[ \t]*['\"]?([^'\"#\s]+)['\"]?[ \t]*(?:#.*)?$")
_YAML_LIMIT = 1 << 20  # a config larger than this is no config
RULES = {"substring": lambda name, prefix: prefix in name,
         "startswith": lambda name, prefix: name.startswith(prefix)}


class Prefixes:
    """One FIXED_PARAMS list and where it was first seen (and how many configs give it)."""

    def __init__(self, prefixes, where):
        self.prefixes, self.where, self.count = tuple(prefixes), where, 1


def symbol_parameters(trees: dict) -> set[str]:
    """The parameter names the parsed files spell out: ``{rel: ast tree}`` in, names out.

    Examples
    --------
    >>> tree = ast.parse("c = mx.sym.Convolution(x, num_filter=2, name='conv1', no_bias=True)"
    ...                  "\\nb = mx.sym.BatchNorm(c, name='bn_conv1')")
    >>> sorted(symbol_parameters({'s.py': tree}))
    ['bn_conv1_beta', 'bn_conv1_gamma', 'conv1_weight']
    """
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                names.update(_parameters_of(node))
    return names


def _parameters_of(call):
    operator = (call.func.attr if isinstance(call.func, ast.Attribute)
                else getattr(call.func, "id", ""))
    name = _literal(next((k.value for k in call.keywords if k.arg == "name"), None))
    if operator in _VARIABLES:
        first = _literal(call.args[0]) if call.args else None
        return [first or name] if (first or name) else []
    if name is None:
        return []
    if operator in _WEIGHTED:
        no_bias = next((k.value for k in call.keywords if k.arg == "no_bias"), None)
        bias = not (isinstance(no_bias, ast.Constant) and no_bias.value is True)
        return [name + "_weight"] + ([name + "_bias"] if bias else [])
    if operator in _NORMALISED:
        return [name + "_gamma", name + "_beta"]
    return []


def _literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def prefix_lists(root: Path, trees: dict) -> list[Prefixes]:
    """Every distinct FIXED_PARAMS list of the tree: from Python configs and yaml files."""
    found: dict[tuple, Prefixes] = {}
    for rel, tree in sorted(trees.items()):
        for line, prefixes in _python_lists(tree):
            _note(found, prefixes, f"{rel}:{line}")
    for rel, line, prefixes in _yaml_lists(root):
        _note(found, prefixes, f"{rel}:{line}")
    return list(found.values())


def _note(found, prefixes, where):
    key = tuple(prefixes)
    if key in found:
        found[key].count += 1
    else:
        found[key] = Prefixes(prefixes, where)


def _python_lists(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            key = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            strings = _strings(node.value)
            if key in _KEYS and strings:
                yield node.lineno, strings


def _strings(node):
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(
            _literal(e) is not None for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _yaml_lists(root):
    """``(rel, line, prefixes)`` of each ``FIXED_PARAMS:`` list in the tree's yaml files:
    a block list of ``- name`` lines, or a flow list ``[a, b]``."""
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            if not name.endswith((".yaml", ".yml")):
                continue
            try:  # is_file raises for a path over PATH_MAX: then it is left out, as unreadable
                if not path.is_file() or path.is_symlink() or path.stat().st_size > _YAML_LIMIT:
                    continue
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            rel = PurePosixPath(path.relative_to(root).as_posix())
            yield from ((rel, line, prefixes) for line, prefixes in _yaml_in(lines))


def _yaml_in(lines):
    for index, text in enumerate(lines):
        match = _YAML_KEY.match(text)
        if not match:
            continue
        inline = match.group(2)
        if inline.startswith("["):
            items = [item.strip(" '\"") for item in inline.strip("[]").split(",")]
            prefixes = [item for item in items if item]
        else:
            prefixes = []
            for following in lines[index + 1:]:
                item = _YAML_ITEM.match(following)
                if not item:
                    break
                prefixes.append(item.group(1))
        if prefixes:
            yield index + 1, prefixes


def frozen(names: set[str], prefixes, rule: str) -> set[str]:
    """The names ``rule`` freezes for ``prefixes``.

    Examples
    --------
    >>> sorted(frozen({'conv1_weight', 'bn3a_gamma'}, ['conv1', 'gamma'], 'startswith'))
    ['conv1_weight']
    >>> sorted(frozen({'conv1_weight', 'bn3a_gamma'}, ['conv1', 'gamma'], 'substring'))
    ['bn3a_gamma', 'conv1_weight']
    """
    match = RULES[rule]
    return {name for name in names for prefix in prefixes if match(name, prefix)}


def dead_prefixes(names: set[str], prefixes, rule: str) -> list[str]:
    """The prefixes that freeze nothing of ``names`` under ``rule``."""
    match = RULES[rule]
    return [prefix for prefix in prefixes if not any(match(name, prefix) for name in names)]


def in_subproject(rels, copy_rel):
    """The paths among ``rels`` that belong to the copy's sub-project (a path component
    equal to the copy's top directory, as ``experiments/fcis/cfgs`` belongs to ``fcis/``),
    or all of them where none does."""
    top = PurePosixPath(copy_rel).parts[0] if len(PurePosixPath(copy_rel).parts) > 1 else None
    mine = [rel for rel in rels if top is not None and top in PurePosixPath(rel).parts[:-1]]
    return mine or list(rels)
