"""The MXNet functions this package copies logic from, with their fingerprints (private).

A function of this package that copies MXNet code says so with a docstring line
``Upstream: <dotted path>``. :data:`FINGERPRINTS` holds, for each such upstream function and
each supported MXNet release, the sha256 of its source as ``inspect.getsource`` returns it
(dedented). ``tests/tools/test_upstream_fingerprints.py`` compares them with the installed MXNet,
so a release that changes a copied function fails the suite (and the nox matrix) instead of
drifting from the copy. Importing this module does not import MXNet.

Fingerprints of a release that is not installed are computed from its wheel, without
importing it::

    pip download --no-deps mxnet==1.8.0.post0 -d /tmp/mx
    python -m mxpatch_bind.patching._upstream /tmp/mx/mxnet-1.8.0.post0-*.whl
"""

import argparse
import ast
import hashlib
import importlib
import inspect
import re
import sys
import textwrap
import zipfile

__all__ = ["FINGERPRINTS", "UPSTREAM_LINE", "fingerprint", "installed_fingerprint",
           "source_fingerprint", "wheel_fingerprints"]

# A docstring line naming the upstream function a copy follows.
UPSTREAM_LINE = re.compile(r"^\s*Upstream:\s*(?P<path>[\w.]+)\s*$", re.MULTILINE)

# Upstream function -> {mxnet.__version__: sha256 of its dedented inspect.getsource}.
# mxnet.__version__ drops pip's post-release suffix: 1.7.0.post2 is "1.7.0".
# Computed with ``python -m mxpatch_bind.patching._upstream <wheel>`` for each release of the
# nox matrix.
FINGERPRINTS = {
    "mxnet.executor.Executor.__init__": {
        "1.6.0": "af622bfd193ba2ad6e76791b5a31ddc25961a421ad95e822a17db77f06b26178",
        "1.7.0": "f9477852273e69a0a1a2b84bd11e631c161b9b1c8558752a056389545fe965fa",
        "1.8.0": "f9477852273e69a0a1a2b84bd11e631c161b9b1c8558752a056389545fe965fa",
        "1.9.1": "f9477852273e69a0a1a2b84bd11e631c161b9b1c8558752a056389545fe965fa",
    },
    "mxnet.executor.Executor.reshape": {
        "1.6.0": "16b807261b98d4a6350f3b96cce3573ef0a7c6df193b4932d624bfbe6e776114",
        "1.7.0": "e495383921d117f0f5fa4a8b53dd0afc45ad75d82505c1ea88e1a257501716d5",
        "1.8.0": "e495383921d117f0f5fa4a8b53dd0afc45ad75d82505c1ea88e1a257501716d5",
        "1.9.1": "e495383921d117f0f5fa4a8b53dd0afc45ad75d82505c1ea88e1a257501716d5",
    },
    "mxnet.module.bucketing_module.BucketingModule.switch_bucket": {
        "1.6.0": "84a11fce18f51299d12c0c7fdddf64d9f9f5a8e2fff53674460fe5d5d7d4f88e",
        "1.7.0": "84a11fce18f51299d12c0c7fdddf64d9f9f5a8e2fff53674460fe5d5d7d4f88e",
        "1.8.0": "84a11fce18f51299d12c0c7fdddf64d9f9f5a8e2fff53674460fe5d5d7d4f88e",
        "1.9.1": "84a11fce18f51299d12c0c7fdddf64d9f9f5a8e2fff53674460fe5d5d7d4f88e",
    },
    "mxnet.module.executor_group.DataParallelExecutorGroup._collect_arrays": {
        "1.6.0": "4ac35a3a27061fb52246105fb8a7f36e5801aa9dda3035f5350b2569e049d26b",
        "1.7.0": "798f9c13dceaf2d6ff186095bbf571fde853dbfc8175a9f6ad35eea8064739c8",
        "1.8.0": "798f9c13dceaf2d6ff186095bbf571fde853dbfc8175a9f6ad35eea8064739c8",
        "1.9.1": "798f9c13dceaf2d6ff186095bbf571fde853dbfc8175a9f6ad35eea8064739c8",
    },
    "mxnet.module.executor_group.DataParallelExecutorGroup.update_metric": {
        "1.6.0": "d55f8fb60e4eb1d82b38f17122d83fff4742c382ab64840158036688b69f9192",
        "1.7.0": "d55f8fb60e4eb1d82b38f17122d83fff4742c382ab64840158036688b69f9192",
        "1.8.0": "d55f8fb60e4eb1d82b38f17122d83fff4742c382ab64840158036688b69f9192",
        "1.9.1": "d55f8fb60e4eb1d82b38f17122d83fff4742c382ab64840158036688b69f9192",
    },
    "mxnet.module.module.Module.bind": {
        "1.6.0": "29bee9b9e47f1cfd5802ac66c4e595806836573af681b5c48ce420a41db28b8a",
        "1.7.0": "29bee9b9e47f1cfd5802ac66c4e595806836573af681b5c48ce420a41db28b8a",
        "1.8.0": "29bee9b9e47f1cfd5802ac66c4e595806836573af681b5c48ce420a41db28b8a",
        "1.9.1": "29bee9b9e47f1cfd5802ac66c4e595806836573af681b5c48ce420a41db28b8a",
    },
    "mxnet.module.module.Module.forward": {
        "1.6.0": "15eeca8d472100adb432a11351aae5d2db2b62a461e87dd170e08393d9ba1f17",
        "1.7.0": "15eeca8d472100adb432a11351aae5d2db2b62a461e87dd170e08393d9ba1f17",
        "1.8.0": "15eeca8d472100adb432a11351aae5d2db2b62a461e87dd170e08393d9ba1f17",
        "1.9.1": "15eeca8d472100adb432a11351aae5d2db2b62a461e87dd170e08393d9ba1f17",
    },
    "mxnet.module.sequential_module.SequentialModule.backward": {
        "1.6.0": "5cdcf2b10dc6818e824650f122ddaf997e098cfe06b5223f8b13adf9892e1dcf",
        "1.7.0": "5cdcf2b10dc6818e824650f122ddaf997e098cfe06b5223f8b13adf9892e1dcf",
        "1.8.0": "5cdcf2b10dc6818e824650f122ddaf997e098cfe06b5223f8b13adf9892e1dcf",
        "1.9.1": "5cdcf2b10dc6818e824650f122ddaf997e098cfe06b5223f8b13adf9892e1dcf",
    },
    "mxnet.module.sequential_module.SequentialModule.bind": {
        "1.6.0": "06e54ba9cf3e0c9b5e4c5e400d9aeefe3a9a97ef3813a17b99d74d5f624410b5",
        "1.7.0": "06e54ba9cf3e0c9b5e4c5e400d9aeefe3a9a97ef3813a17b99d74d5f624410b5",
        "1.8.0": "06e54ba9cf3e0c9b5e4c5e400d9aeefe3a9a97ef3813a17b99d74d5f624410b5",
        "1.9.1": "06e54ba9cf3e0c9b5e4c5e400d9aeefe3a9a97ef3813a17b99d74d5f624410b5",
    },
    "mxnet.module.sequential_module.SequentialModule.forward": {
        "1.6.0": "a3461f3bf5fd851ab1fcede8c3664fe7cdf1d107bb8de087dbf2aa05438b612b",
        "1.7.0": "a3461f3bf5fd851ab1fcede8c3664fe7cdf1d107bb8de087dbf2aa05438b612b",
        "1.8.0": "a3461f3bf5fd851ab1fcede8c3664fe7cdf1d107bb8de087dbf2aa05438b612b",
        "1.9.1": "a3461f3bf5fd851ab1fcede8c3664fe7cdf1d107bb8de087dbf2aa05438b612b",
    },
}


def fingerprint(source: str) -> str:
    """sha256 of a function's source, dedented, with ``\\n`` line ends.

    Examples
    --------
    >>> fingerprint("    def f():\\n        pass\\n") == fingerprint("def f():\\n    pass\\n")
    True
    """
    normalised = textwrap.dedent(source.replace("\r\n", "\n"))
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def installed_fingerprint(path: str) -> str:
    """The fingerprint of an upstream function of the installed MXNet (imports it).

    Examples
    --------
    >>> len(installed_fingerprint("mxnet.executor.Executor.reshape"))
    64
    """
    return fingerprint(inspect.getsource(inspect.unwrap(_resolve(path))))


def source_fingerprint(module_source: str, qualname: str) -> str:
    """The fingerprint of ``qualname`` (e.g. ``'Executor.reshape'``) in a module's source text,
    as ``inspect.getsource`` would give it once imported, without importing anything.

    The function's first line is found with ``ast`` (its first decorator, as the code
    object's ``co_firstlineno``); its end with ``inspect.getblock``, the tokenizer-based rule
    ``inspect.getsource`` itself applies (it keeps trailing comments indented as the body).

    Examples
    --------
    >>> text = "class A:\\n    @staticmethod\\n    def f():\\n        pass\\n        # end\\n"
    >>> source_fingerprint(text, "A.f") == fingerprint(
    ...     "@staticmethod\\ndef f():\\n    pass\\n    # end\\n")
    True
    """
    node = _find(ast.parse(module_source), qualname.split("."))
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = module_source.splitlines(keepends=True)
    return fingerprint("".join(inspect.getblock(lines[first - 1:])))


def wheel_fingerprints(wheel: str, paths=None) -> tuple:
    """The wheel's ``mxnet.__version__`` and ``{path: fingerprint}`` of upstream functions in
    it, without installing or importing it.

    Parameters
    ----------
    wheel : str
        A ``mxnet-*.whl`` file (``pip download --no-deps mxnet==X -d DIR``).
    paths : iterable of str, optional
        Dotted paths; default every key of :data:`FINGERPRINTS`.
    """
    result = {}
    with zipfile.ZipFile(wheel) as archive:
        libinfo = archive.read("mxnet/libinfo.py").decode("utf-8")
        version = re.search(r"^__version__ = [\"']([^\"']+)", libinfo, re.MULTILINE)
        for path in sorted(paths or FINGERPRINTS):
            module, qualname = _split_module(path, archive.namelist())
            text = archive.read(module.replace(".", "/") + ".py").decode("utf-8")
            result[path] = source_fingerprint(text, qualname)
    return (version.group(1) if version else None), result


# --------------------------------------------------------------------------- implementation
def _resolve(path):
    """Import the longest importable module prefix of ``path``, then walk the attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            # A class's own __dict__ holds the function itself (or a wrapper of it).
            obj = vars(obj)[name] if name in vars(obj) else getattr(obj, name)
        return obj
    raise ImportError(f"no module of {path!r} can be imported")


def _split_module(path, names):
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:cut]) + ".py" in names:
            return ".".join(parts[:cut]), ".".join(parts[cut:])
    raise KeyError(f"no module file of {path!r} in the wheel")


def _find(tree, names):
    body = tree.body
    for depth, name in enumerate(names):
        wanted = ast.FunctionDef if depth == len(names) - 1 else ast.ClassDef
        found = [n for n in body if isinstance(n, (wanted, ast.AsyncFunctionDef))
                 and n.name == name]
        if not found:
            raise KeyError(f'{".".join(names[:depth + 1])} not found')
        node = found[-1]  # the last definition wins, as at import
        body = node.body
    return node


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fingerprints of the upstream functions "
                                                 "mxpatch_bind copies, from MXNet wheels.")
    parser.add_argument("wheels", nargs="+", help="mxnet-*.whl files")
    args = parser.parse_args(argv)
    for wheel in args.wheels:
        version, fingerprints = wheel_fingerprints(wheel)
        print(f"# {wheel}: mxnet.__version__ {version!r}")
        for path, value in fingerprints.items():
            print(f"{path} {value}")


if __name__ == "__main__":
    sys.exit(main())
