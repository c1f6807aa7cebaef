"""The MXNet functions the package copies are the ones the copies were checked against.

Runs in the nox matrix (one session per supported MXNet release), so a release that changes a
copied function fails here, naming the function and the copies to re-check.
"""

import ast
import doctest
import functools
import inspect
import pathlib
import re

import mxnet as mx
import pytest

import mxpatch_bind
from mxpatch_bind.patching import _upstream
from paths import REPO

PACKAGE = pathlib.Path(mxpatch_bind.__file__).parent
NOXFILE = REPO / "noxfile.py"  # nox installs the package

# The upstream functions whose logic the package copies (issue 10, item 6).
KNOWN_COPIES = {
    "mxnet.module.module.Module.bind",
    "mxnet.module.module.Module.forward",  # how forward derives shapes from a batch
    "mxnet.module.executor_group.DataParallelExecutorGroup._collect_arrays",
    "mxnet.module.executor_group.DataParallelExecutorGroup.update_metric",  # a short batch's
    "mxnet.module.bucketing_module.BucketingModule.switch_bucket",
    "mxnet.executor.Executor.reshape",
    "mxnet.executor.Executor.__init__",  # the lean reshape mirrors what it sets
    "mxnet.module.sequential_module.SequentialModule.bind",
    "mxnet.module.sequential_module.SequentialModule.forward",
    "mxnet.module.sequential_module.SequentialModule.backward",
}


@functools.lru_cache(maxsize=None)
def upstream_lines():
    """``{upstream path: [our function, ...]}`` from every ``Upstream:`` docstring line."""
    found = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for match in _upstream.UPSTREAM_LINE.finditer(ast.get_docstring(node) or ""):
                where = "%s:%d %s" % (source.relative_to(PACKAGE.parent), node.lineno, node.name)
                found.setdefault(match.group("path"), []).append(where)
    return found


def supported_releases():
    """``mxnet.__version__`` of each release of the nox matrix (``MATRIX`` in noxfile.py,
    read without nox): pip's ``1.7.0.post2`` reports ``1.7.0``."""
    for node in ast.parse(NOXFILE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["MATRIX"]:
            return {re.sub(r"\.post\d+$", "", pip_version)
                    for pip_version in ast.literal_eval(node.value)}
    raise AssertionError("noxfile.py has no MATRIX")


def test_the_installed_mxnet_release_has_fingerprints():
    known = sorted({v for versions in _upstream.FINGERPRINTS.values() for v in versions})
    assert all(mx.__version__ in versions for versions in _upstream.FINGERPRINTS.values()), (
        "MXNet %s has no fingerprints (known: %s). Check every copy of MXNet code in "
        "mxpatch_bind (docstring lines 'Upstream: ...') against this release, then add its "
        "fingerprints to mxpatch_bind/patching/_upstream.py: pip download --no-deps mxnet==%s -d DIR "
        "&& python -m mxpatch_bind.patching._upstream DIR/mxnet-*.whl"
        % (mx.__version__, ", ".join(known), mx.__version__))


@pytest.mark.parametrize("path", sorted(_upstream.FINGERPRINTS))
def test_the_copied_mxnet_function_is_unchanged_in_the_installed_release(path):
    expected = _upstream.FINGERPRINTS[path].get(mx.__version__)
    actual = _upstream.installed_fingerprint(path)
    copies = upstream_lines().get(path, ["(no 'Upstream:' line names it yet)"])
    assert actual == expected, (
        "%s in MXNet %s is not the version the copies were checked against (sha256 %s, "
        "expected %s). Re-check the copies against it: %s; then update its fingerprint in "
        "mxpatch_bind/patching/_upstream.py" % (path, mx.__version__, actual, expected,
                                       ", ".join(copies)))


def test_every_upstream_line_names_a_fingerprinted_function():
    unguarded = {path: where for path, where in upstream_lines().items()
                 if path not in _upstream.FINGERPRINTS}
    assert not unguarded, ("these 'Upstream:' lines name functions without fingerprints in "
                           "mxpatch_bind/patching/_upstream.py: %r" % (unguarded,))


def test_the_fingerprinted_functions_are_exactly_the_known_copies():
    assert set(_upstream.FINGERPRINTS) == KNOWN_COPIES


def test_every_fingerprinted_function_is_named_by_an_upstream_line():
    # A fingerprint nobody's copy names guards nothing: the copy was removed or renamed.
    unnamed = set(_upstream.FINGERPRINTS) - set(upstream_lines())
    assert not unnamed, ("fingerprinted in mxpatch_bind/patching/_upstream.py but named by no "
                         "'Upstream:' line in the package: %r" % sorted(unnamed))


def test_every_supported_release_has_a_fingerprint_of_every_function():
    releases = supported_releases()
    assert mx.__version__ in releases
    for path, versions in _upstream.FINGERPRINTS.items():
        assert set(versions) == releases, path


def test_the_wheel_method_gives_inspect_getsource_s_fingerprint_on_the_installed_release():
    # Fingerprints of releases that are not installed come from their wheels' source text.
    for path in sorted(_upstream.FINGERPRINTS):
        function = inspect.unwrap(_upstream._resolve(path))
        module_source = inspect.getsource(inspect.getmodule(function))
        qualname = path[len(function.__module__) + 1:]
        assert (_upstream.source_fingerprint(module_source, qualname)
                == _upstream.installed_fingerprint(path)), path


def test_a_changed_function_gets_another_fingerprint():
    source = inspect.getsource(mx.executor.Executor.reshape)
    changed = source.replace("allow_up_sizing", "allow_upsizing")
    assert _upstream.fingerprint(changed) != _upstream.fingerprint(source)


def test_the_module_s_examples_run():
    result = doctest.testmod(_upstream)
    assert result.attempted > 0 and result.failed == 0
