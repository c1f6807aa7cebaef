"""Private to ``migrate``: the checks on one file that is not itself a vendored copy.

Imports of the fork's classes, their constructions (with the copy's freezing rule), calls of
their methods with keywords or positions that stock MXNet and ``compat`` do not take,
``optimizer_params`` without ``rescale_grad``, ``mx.io.PrefetchingIter`` around a per-device
loader, ``_preload_opt_states`` and ``_curr_module``.
"""

from __future__ import annotations

import ast

from . import positions
from .fork import VENDORED_GROUP, dotted
from .names import Names

REWRITE, CHECK, OK = "rewrite", "check", "ok"
PORT = "port"  # what --to-python3 does (the scan's findings: scanner, native_findings)
DROP_INS = ("MutableModule", "Module")  # what mxpatch_bind.compat provides
COMPAT_MODULE = "mxpatch_bind.compat"
FORK_LOADERS = ("AnchorLoader", "ROIIter", "TestLoader")
PREFETCHING_ITERS = ("mx.io.PrefetchingIter", "mxnet.io.PrefetchingIter")
# How to get the optional parsers (libcst, fissix): the package is not on an index yet.
INSTALL_EXTRA = ('pip install ".[migrate]" in the mxpatch_bind checkout (or "mxpatch_bind'
                 '[migrate]" once it is on an index)')
DEFAULT_RULE = "substring"  # compat's default, Deformable-ConvNets' rule
# Constructor arguments that behave differently from stock Module, by keyword and position.
CARE_ARGUMENTS = {
    "MutableModule": ("work_load_list", 5, "max_data_shapes", 6, "max_label_shapes", 7,
                      "fixed_param_prefix", 8),
    "Module": ("work_load_list", 5, "fixed_param_names", 6),
}
CARE_NOTES = {
    "max_data_shapes": "max shapes are allocated once, at the first bind",
    "max_label_shapes": "max shapes are allocated once, at the first bind",
    "work_load_list": "work_load_list splits only flat batches (your loader splits images)",
    "fixed_param_names": "fixed_param_names are frozen as given",
}
# MXNet 1.9.1's mx.mod.Module methods, parameters after self (tests compare them with
# inspect.signature of the real ones); plus what compat's drop-ins add.
STOCK_PARAMETERS = {
    "fit": ("train_data", "eval_data", "eval_metric", "epoch_end_callback",
            "batch_end_callback", "kvstore", "optimizer", "optimizer_params",
            "eval_end_callback", "eval_batch_end_callback", "initializer", "arg_params",
            "aux_params", "allow_missing", "force_rebind", "force_init", "begin_epoch",
            "num_epoch", "validation_metric", "monitor", "sparse_row_id_fn"),
    "bind": ("data_shapes", "label_shapes", "for_training", "inputs_need_grad",
             "force_rebind", "shared_module", "grad_req"),
    "init_params": ("initializer", "arg_params", "aux_params", "allow_missing", "force_init",
                    "allow_extra"),
    "set_params": ("arg_params", "aux_params", "allow_missing", "force_init", "allow_extra"),
    "init_optimizer": ("kvstore", "optimizer", "optimizer_params", "force_init"),
    "forward": ("data_batch", "is_train"),
    "backward": ("out_grads",),
    "update_metric": ("eval_metric", "labels", "pre_sliced"),
    "get_outputs": ("merge_multi_context",),
    "save_checkpoint": ("prefix", "epoch", "save_optimizer_states", "remove_amp_cast"),
}
COMPAT_EXTRAS = {"fit": ("prefix", "state", "iter_size", "allow_extra")}


class FileChecks:
    """The checks on one (non-vendored) file; findings go to ``scan.add``."""

    def __init__(self, scan, rel, tree, lines, view_lines):
        self.scan, self.rel, self.tree = scan, rel, tree
        self.lines, self.view_lines = lines, view_lines  # the file's, and what ast read
        self.fork_names = {}      # local name -> (class, vendored copy or None for compat)
        self.prefetchers = set(PREFETCHING_ITERS)
        # dotted name -> (class, vendored copy or None, the name its class was called by)
        self.fork_objects = {}
        # local name -> key of the rewritten import that binds it (a name bound by an import
        # --write leaves alone stays the copy's class, which takes none of compat's keywords)
        self.import_keys = {}
        self.names = None         # names.Names of the tree, made when a construction asks

    def add(self, node, action, message, **extra):
        self.scan.add(self.rel, node.lineno, action, message, **extra)

    def run(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Import):
                self._import(node)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and self._fork_class(node.value):
                for target in node.targets:
                    if dotted(target):
                        self.fork_objects[dotted(target)] = \
                            self._fork_class(node.value) + (node.value.func.id,)
        for scope in _scopes(self.tree):
            self._scope(scope)

    # imports
    def _import_from(self, node):
        if node.module == COMPAT_MODULE and not node.level:
            self._bind(node, None)
            return
        if node.module in ("mxnet.io", "mx.io"):
            self.prefetchers |= {a.asname or a.name for a in node.names
                                 if a.name == "PrefetchingIter"}
        target = self.scan.resolve(self.rel, node.module, node.level)
        if target is None:
            return
        names = [a.name for a in node.names]
        where = f"the vendored {target}"
        copy = self.scan.copies[target]
        bound = self._bind(node, target)
        if copy.kind == VENDORED_GROUP:
            self.add(node, CHECK, f"imports DataParallelExecutorGroup from {where}: no drop-in; a "
                                  "stock mx.mod.Module with mxpatch_bind.install() replaces both")
        elif not copy.revision.covered:
            self.add(node, CHECK, f'imports {", ".join(names)} from {where}, a modified copy that '
                                  f'is kept ({copy.summary()}): carry its changes over, then '
                                  f'import from {COMPAT_MODULE} by hand')
        elif set(names) <= set(DROP_INS):
            key = ("import", node.lineno, node.level, node.module or "")
            self.import_keys.update(dict.fromkeys(bound, key))
            self.add(node, REWRITE, f'imports {", ".join(names)} from {where}: becomes \'from '
                                    f'{COMPAT_MODULE} import {", ".join(names)}\'', edit=key)
        else:
            self.add(node, CHECK, f'imports {", ".join(names)} from {where}: {COMPAT_MODULE} '
                                  f'provides only {" and ".join(DROP_INS)}; change it by hand')

    def _bind(self, node, target):
        """Record the drop-in classes ``node`` binds, from ``target`` (None: compat); returns
        their local names (none of them from a rewritten import yet)."""
        bound = {a.asname or a.name: (a.name, target) for a in node.names if a.name in DROP_INS}
        self.fork_names.update(bound)
        for local in bound:
            self.import_keys.pop(local, None)
        return list(bound)

    def _import(self, node):
        for alias in node.names:
            target = self.scan.resolve(self.rel, alias.name, 0)
            if target is not None:
                self.add(node, CHECK, f'imports the vendored {target} as a module: import '
                                      f'{" / ".join(DROP_INS)} from {COMPAT_MODULE} instead, by '
                                      'hand')

    # per scope: constructions, method calls, optimizer_params, prefetching
    def _scope(self, scope):
        nodes = list(_nodes_in_scope(scope))
        assigned = _assignments(nodes)
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node, assigned)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)

    def _fork_class(self, node):
        """The drop-in class ``node`` constructs, by what its name means there (the import,
        not a local that shadows it)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in self.fork_names and self._imported(node.func):
            return self.fork_names[node.func.id]
        return None

    def _imported(self, name):
        if self.names is None:
            self.names = Names(self.tree)
        scope = self.names.resolve(name)
        return scope is not None and all(isinstance(b, (ast.Import, ast.ImportFrom))
                                         for b in scope.bindings[name.id])

    def _call(self, node, assigned):
        origin = self._fork_class(node)
        if origin is not None:
            self._construction(node, *origin)
        receiver = _receiver(node)
        if receiver in self.fork_objects:
            self._method_call(node, receiver, *self.fork_objects[receiver])
        if dotted(node.func) in self.prefetchers:
            self._prefetching(node, assigned)
        for keyword in node.keywords:
            if keyword.arg == "optimizer_params":
                self._optimizer_params(node, keyword.value, assigned)

    def _construction(self, node, cls, copy_rel):
        care = CARE_ARGUMENTS[cls]
        given = {kw.arg for kw in node.keywords}
        passed = [name for name, position in zip(care[::2], care[1::2])
                  if name in given or len(node.args) > position]
        detail = f' with {", ".join(passed)}' if passed else ""
        notes = sorted({CARE_NOTES[name] for name in passed if name in CARE_NOTES})
        text = (f'{cls}(...){detail}: the drop-in keeps the fork\'s behaviour'
               f'{"".join("; " + note for note in notes)}')
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        if copy is not None and not copy.revision.covered:
            rule = copy.rule[0]
            then = (f"; then pass fixed_param_rule={rule!r}, its rule"
                    if rule == "startswith" and "fixed_param_prefix" in passed else "")
            self.add(node, CHECK, f"{cls}(...){detail} of the kept modified copy {copy_rel}: stays "
                     f"that copy's until its import is moved by hand{then}")
            return
        if copy is not None and copy.epoch_end_first and cls == "MutableModule" \
                and "epoch_end_callback_first" not in given:
            self._write_epoch_end_first(node, cls, copy_rel, copy.epoch_end_first)
        if "fixed_param_prefix" not in passed:
            self.add(node, OK, text)
            return
        self._freezing(node, text, copy_rel, given)

    def _write_epoch_end_first(self, node, cls, copy_rel, line):
        self._write_keyword(node, "epoch_end_callback_first=True",
                            f"{cls}(...): {copy_rel}:{line} has fit call each "
                            "epoch_end_callback with epoch -1 before training (a prefix-0000 "
                            "checkpoint); stock fit does not: ")

    def _write_keyword(self, node, keyword, message, local=None):
        """``keyword`` added to the call ``node`` (a [rewritten] line), or a [check] to add it
        by hand where it cannot be placed or the import that binds the class's name here
        (``local``: the construction's own) is not rewritten."""
        insertion = _keyword_insertion(node, self.lines, self.view_lines, keyword)
        key = self.import_keys.get(node.func.id if local is None else local)
        if insertion is None or key is None:
            self.add(node, CHECK, message + f"add {keyword} by hand")
        else:
            self.add(node, REWRITE, message + f"adds {keyword}",
                     edit=("keyword",) + insertion + (key,))

    def _freezing(self, node, text, copy_rel, given):
        """The construction freezes by the copy's rule: say which, and write it when it is
        not compat's default."""
        if "fixed_param_rule" in given:
            rule = _constant(next(k.value for k in node.keywords if k.arg == "fixed_param_rule"))
            self.add(node, OK, f"{text}; fixed_param_prefix freezes by fixed_param_rule={rule!r}")
            return
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        rule, line, source = copy.rule if copy is not None else (DEFAULT_RULE, 0, "")
        where = f"{copy_rel}:{line}" if copy is not None else None
        if rule in (None, DEFAULT_RULE):
            origin = f" ({where}: {source})" if where and source else ""
            self.add(node, OK, f"{text}; fixed_param_prefix freezes by the substring rule{origin}")
        elif rule == "other":
            self.add(node, CHECK, f"{text}; but {where} freezes by '{source}', neither rule compat "
                                  "knows: pass fixed_param_names yourself")
        else:
            self._write_rule(node, text, rule, where, source)

    def _write_rule(self, node, text, rule, where, source):
        self._write_keyword(node, f"fixed_param_rule={rule!r}",
                            f"{text}; fixed_param_prefix freezes by {rule} ({where}: {source}), "
                            "not compat's default substring rule: ")

    def _method_call(self, node, receiver, cls, copy_rel, local):
        method = node.func.attr
        if method not in STOCK_PARAMETERS:
            return
        accepted = STOCK_PARAMETERS[method] + COMPAT_EXTRAS.get(method, ())
        where = f"{receiver}.{method}"
        unknown = [k.arg for k in node.keywords if k.arg is not None and k.arg not in accepted]
        if unknown:
            self.add(node, CHECK, f'{where}({", ".join(k + "=" for k in unknown)}): stock Module.'
                                  f'{method} and mxpatch_bind.compat take no {", ".join(unknown)}'
                                  f'{self._copy_note(copy_rel, method)}')
        copy_params = self._copy_parameters(copy_rel, cls, method)
        stock = STOCK_PARAMETERS[method]
        for index, _ in enumerate(node.args):
            theirs = copy_params[index] if index < len(copy_params) else None
            ours = stock[index] if index < len(stock) else None
            if ours is None or (theirs is not None and theirs != ours):
                text = (f'{where}: positional argument {index + 1} is {theirs or "not a parameter"}'
                        f' in {copy_rel or COMPAT_MODULE} but {ours or "not a parameter"} in '
                        f'stock Module.{method}')
                self._by_keyword(node, text, index, copy_rel, local, copy_params[index:],
                                 accepted)
                break
        if method == "fit":
            self._iter_size(node, where, copy_rel, local, copy_params)

    def _by_keyword(self, node, text, index, copy_rel, local, names, accepted):
        """The call's arguments from ``index`` on passed by the copy's names, where the copy
        is deleted (the import that binds the object's class is rewritten) and compat takes
        those names; else a [check]."""
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        key = self.import_keys.get(local)
        names = names[:len(node.args) - index]
        insertions = None
        if copy is not None and copy.revision.covered and key is not None \
                and set(names) <= set(accepted):
            insertions = positions.keyword_insertions(node, index, names, self.lines,
                                                      self.view_lines)
        if insertions is None:
            self.add(node, CHECK, f"{text}; pass it by keyword, or port the copy's change")
            return
        self.add(node, REWRITE, f'{text}: passes arguments {index + 1} to {len(node.args)} by '
                                f'the copy\'s names ({", ".join(n + "=" for n in names)})',
                 edit=("keyword",) + insertions[0] + (key,) + tuple(insertions[1:]))

    def _iter_size(self, node, where, copy_rel, local, copy_params):
        """A fit call of a deleted copy whose fit took iter_size (3DCE's loop) gets
        iter_size=1 when it passes none: compat's fit runs that loop only when it is given."""
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        if (copy is None or not copy.revision.covered or "iter_size" not in copy_params
                or any(k.arg == "iter_size" for k in node.keywords)
                or len(node.args) > copy_params.index("iter_size")):
            return
        self._write_keyword(node, "iter_size=1",
                            f"{where}(...): {copy_rel}'s fit trains by its own loop (gradients "
                            "added up with grad_req='add', each epoch ended with the first "
                            "device's parameters), which compat's fit runs when iter_size is "
                            "given: ", local=local)

    def _copy_note(self, copy_rel, method):
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        if copy is None:
            return ""
        return f" ({copy_rel}'s {method}: {copy.summary()})"

    def _copy_parameters(self, copy_rel, cls, method):
        copy = self.scan.copies.get(copy_rel) if copy_rel is not None else None
        if copy is None:
            return []
        signature = copy.signatures.get(f"{cls}.{method}")
        if signature is None:
            return []
        from .fork import parameters
        return [name for name, _ in parameters(signature)][1:]

    def _attribute(self, node):
        if node.attr == "_preload_opt_states":
            self.add(node, OK, f'{(dotted(node) or "_preload_opt_states")}: resumes the optimizer '
                               'states; stock init_optimizer honours it too')
        elif node.attr == "_curr_module":
            self.add(node, CHECK, f'{(dotted(node) or "_curr_module")}: the fork\'s inner module; '
                                  'a drop-in module is a stock Module, use it directly')

    def _optimizer_params(self, call, value, assigned):
        if _sets_rescale_grad(value, assigned, call.lineno) is True:
            return
        receiver = _receiver(call)
        origin = self.fork_objects.get(receiver)
        copy = self.scan.copies.get(origin[1]) if origin and origin[1] else None
        if origin is not None and (copy is None or copy.rescale_default == "devices"):
            self.add(call, OK, f"optimizer_params without rescale_grad on {receiver}: the drop-in "
                               "keeps the fork's default 1/(number of devices); stock Module's is "
                               "1/(total samples)")
        elif copy is not None:
            self.add(call, CHECK, f"optimizer_params without rescale_grad on {receiver}: "
                                  f"{origin[1]} wraps stock Module and scaled by 1/(total "
                                  "samples); the drop-in scales by 1/(number of devices): set "
                                  "rescale_grad explicitly")
        else:
            self.add(call, CHECK, "optimizer_params without rescale_grad: stock Module scales "
                     "by 1/(total samples), the fork by 1/(number of devices); set "
                     "rescale_grad explicitly")

    def _prefetching(self, call, assigned):
        wrapped = call.args[0] if call.args else next(
            (kw.value for kw in call.keywords if kw.arg == "iters"), None)
        loaders = sorted(self._loader_classes(wrapped, assigned, call.lineno))
        if loaders:
            self.add(call, CHECK, f'{dotted(call.func)} around {", ".join(loaders)}, a per-device '
                                  'loader: it reads provide_data as one flat list (batch_size = '
                                  'provide_data[0][1][0]); keep the fork\'s utils/PrefetchingIter '
                                  'or use mxpatch_bind.PerDevicePrefetchingIter')

    def _loader_classes(self, node, assigned, line):
        if isinstance(node, (ast.List, ast.Tuple)):
            return set().union(*[self._loader_classes(e, assigned, line) for e in node.elts])
        if isinstance(node, ast.Name):
            value = _last_value(assigned, node.id, line)
            return self._loader_classes(value, assigned, line) if value is not None else set()
        if isinstance(node, ast.Call):
            name = (dotted(node.func) or "").rsplit(".", 1)[-1]
            return {name} if name in self.scan.loaders else set()
        return set()


def is_per_device_loader(cls: ast.ClassDef) -> bool:
    """A class whose ``provide_data`` returns a list (per device) of lists."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "provide_data":
            return any(isinstance(r, ast.Return) and isinstance(r.value, ast.ListComp)
                       and isinstance(r.value.elt, ast.ListComp) for r in ast.walk(node))
    return False


def _receiver(call):
    return dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None


def _keyword_insertion(call, lines, view_lines, text):
    """``(line, column, ', text')`` to insert after the call's last argument, or None when
    the call has no argument or the file's line differs from the one ast read (a Python 2
    line that the syntax fixers changed)."""
    last = max(list(call.args) + [k.value for k in call.keywords],
               key=lambda n: (n.end_lineno, n.end_col_offset), default=None)
    if last is None or last.end_lineno is None or last.end_lineno > len(lines):
        return None
    number = last.end_lineno
    if lines[number - 1] != view_lines[number - 1]:
        return None
    # ast counts columns in UTF-8 bytes; the edit is made on text.
    column = len(lines[number - 1].encode("utf-8")[:last.end_col_offset].decode("utf-8"))
    return number, column, ", " + text


def _scopes(tree):
    """The module and every function: each is one scope for name lookups."""
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _nodes_in_scope(scope):
    """Nodes of ``scope`` without those of the functions nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _assignments(nodes):
    """``{name: [(line, value), ...]}`` of the plain ``name = value`` statements."""
    assigned = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append((node.lineno, node.value))
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and _constant(node.slice) == "rescale_grad"):
            assigned.setdefault(node.value.id, []).append((node.lineno, _SETS_RESCALE))
    return assigned


_SETS_RESCALE = ast.Constant(value="rescale_grad set by item assignment")


def _last_value(assigned, name, line):
    before = [(at, value) for at, value in assigned.get(name, ()) if at < line]
    return max(before, key=lambda item: item[0])[1] if before else None


def _sets_rescale_grad(value, assigned, line):
    """True / False when ``value`` (a dict) does or does not set rescale_grad; None unknown."""
    if isinstance(value, ast.Name):
        if any(v is _SETS_RESCALE for at, v in assigned.get(value.id, ()) if at < line):
            return True
        value = _last_value(assigned, value.id, line)
    if isinstance(value, ast.Dict):
        if any(key is None for key in value.keys):
            return None  # {**other}: cannot tell
        return any(_constant(key) == "rescale_grad" for key in value.keys)
    if isinstance(value, ast.Call) and dotted(value.func) == "dict":
        if any(kw.arg == "rescale_grad" for kw in value.keywords):
            return True
        return None if value.args or any(kw.arg is None for kw in value.keywords) else False
    return None


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None
