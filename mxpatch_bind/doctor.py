"""``python -m mxpatch_bind doctor``: check this machine for mxpatch_bind (private module).

Each check prints one line, ``ok``, ``warn`` or ``FAIL`` and what it found: the versions of
Python, numpy, wrapt and MXNet with a verdict each, which distribution installed MXNet,
MXNet's build features, the GPUs it sees, foreign patches, the settings of
:func:`mxpatch_bind.configure` (a bad ``MXPATCH_BIND_*`` variable fails), and a self-test.
The exit status is 0 when no check failed (warnings allowed), 1 otherwise. The self-test
binds a small conv net per device with a different image size on each device, on two GPUs
when MXNet sees two, one GPU and the CPU when it sees one, else ``cpu(0), cpu(1)``, and
compares each device's outputs and gradients with a stock one-context module bound to that
device's shapes.

Examples
--------
::

    $ python -m mxpatch_bind doctor
    mxpatch_bind 0.1.0 doctor
    ok    python: 3.11.2, the version the test suite runs on
    ok    numpy: 1.23.5 (< 1.24, as MXNet 1.x needs)
    ok    wrapt: 2.5.2, C extension in use
    ok    mxnet: 1.9.1 at /.../site-packages/mxnet
    ok    distribution: mxnet 1.9.1, the CPU build that pip install ".[cpu]" installs
    ok    supported: MXNet 1.9.1 is in 1.6-1.9.x and its methods take the expected parameters
    ok    features: CUDA off, CUDNN off, MKLDNN on, DIST_KVSTORE on
          enabled: BLAS_OPEN, CPU_SSE, ..., MKLDNN, OPENMP, ...
    ok    gpus: none (a CPU build of MXNet)
    ok    foreign patches: none on Module.bind, Module.reshape, BucketingModule.bind
    ok    settings: exec_cache_size=8, reshape_threads=2 (defaults)
    ok    self-test: per-device outputs and gradients equal stock one-context modules ...
    ok    restored: Module.bind, Module.reshape, BucketingModule.bind are the objects ...
    all 12 checks passed
"""

import argparse
import glob
import importlib
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ._cli_types import Parser, description, run_parsed
from .demo.nets import conv_classifier
from .errors import PatchError
from .version import __version__

__all__ = ["main", "add_arguments", "run", "self_test_contexts"]

# Two devices with different image and batch sizes (the sizes CONTEXT.md measured the fork on).
SELF_TEST_SHAPES = ((2, 3, 32, 48), (3, 3, 40, 24))
NUM_CLASSES = 3

TESTED_PYTHON = (3, 11)
# numpy<1.24 (MXNet 1.x) has wheels up to 3.11; wrapt>=2.4 has none for 3.8.
ALLOWED_PYTHON = ((3, 9), (3, 11))
NUMPY_LIMIT = (1, 24)  # MXNet 1.x imports only with numpy below this
WRAPT_MINIMUM = (2, 4)
BUILD_FEATURES = ("CUDA", "CUDNN", "MKLDNN", "DIST_KVSTORE")
CPU_DISTRIBUTION = "mxnet"  # what the .[cpu] extra installs
# GPU results may differ in the last bits: cuDNN picks its algorithms per executor.
GPU_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


class Check:
    """The outcome of one check: ``ok``, ``warn`` or ``FAIL``, what it found, detail lines."""

    LEVELS = ("ok", "warn", "FAIL")

    def __init__(self, name: str, level: str, text: str, details: Sequence[str] = ()) -> None:
        if level not in self.LEVELS:
            raise ValueError(f"level must be one of {self.LEVELS!r}, got {level!r}")
        self.name, self.level, self.text, self.details = name, level, text, list(details)

    @property
    def passed(self) -> bool:
        return self.level != "FAIL"

    def lines(self) -> Iterator[str]:
        yield f"{self.level!s:<5} {self.name}: {self.text}"
        for detail in self.details:
            yield "      " + detail


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run every check, print one line each, and return 0 if none failed, else 1.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments after ``doctor`` (only ``-h`` is understood).

    Returns
    -------
    int
        The exit status.
    """
    parser = Parser(prog="python -m mxpatch_bind doctor", description=description(__doc__),
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_parsed(parser, [] if argv is None else argv, run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The doctor takes no options; ``--help`` is the parser's own.

    Examples
    --------
    >>> import argparse
    >>> add_arguments(argparse.ArgumentParser(prog="doctor"))
    """


def run(args: argparse.Namespace) -> int:
    """Run every check and print them; 0 if none failed, else 1.

    Examples
    --------
    >>> import argparse
    >>> run(argparse.Namespace())  # doctest: +SKIP
    0
    """
    from ._mxnet_env import quiet_subgraph_log
    quiet_subgraph_log()
    print(f"mxpatch_bind {__version__} doctor")
    checks = []
    for check in run_checks():
        print("\n".join(check.lines()), flush=True)
        checks.append(check)
    failed = [check.name for check in checks if not check.passed]
    if failed:
        print(f'{len(failed)} of {len(checks)} checks failed: {", ".join(failed)}')
        return 1
    warned = sum(check.level == "warn" for check in checks)
    with_warnings = f" ({warned} with a warning)" if warned else ""
    print(f"all {len(checks)} checks passed{with_warnings}")
    return 0


def run_checks() -> Iterator[Check]:
    """Yield the :class:`Check` results in order; those that need MXNet, or wrapt, fail as
    not run when it cannot be imported or is not supported."""
    yield check_python(tuple(sys.version_info[:3]))
    yield check_numpy()
    wrapt_check = check_wrapt()
    yield wrapt_check
    mx, check = check_import()
    yield check
    yield check_distribution(_mxnet_distributions())
    if mx is None or not wrapt_check.passed:
        why = "MXNet cannot be imported" if mx is None else "wrapt is missing or too old"
        yield Check("self-test", "FAIL", f"not run: {why} (see above)")
        return
    supported = check_supported(mx)
    yield supported
    yield check_features(mx)
    gpus, check = check_gpus(mx)
    yield check
    yield check_foreign_patches()
    yield check_settings()
    if not supported.passed:
        yield Check("self-test", "FAIL", "not run: mxpatch_bind refuses this MXNet (see above)")
        return
    before = _current_methods()
    yield check_self_test(mx, self_test_contexts(gpus))
    yield check_restored(before)


def self_test_contexts(num_gpus: int) -> List[Tuple[str, int]]:
    """The two devices the self-test binds on, as ``(device_type, device_id)``.

    Two GPUs when there are two or more, one GPU and the CPU when there is one, else two
    CPU contexts (MXNet treats ``cpu(0)`` and ``cpu(1)`` as separate devices).

    Parameters
    ----------
    num_gpus : int
        How many GPUs MXNet sees (``mx.context.num_gpus()``).

    Returns
    -------
    list of (str, int)
        Two entries, for ``mx.Context(device_type, device_id)``.

    Examples
    --------
    >>> self_test_contexts(0), self_test_contexts(1), self_test_contexts(4)
    ([('cpu', 0), ('cpu', 1)], [('gpu', 0), ('cpu', 0)], [('gpu', 0), ('gpu', 1)])
    """
    if num_gpus >= 2:
        return [("gpu", 0), ("gpu", 1)]
    if num_gpus == 1:
        return [("gpu", 0), ("cpu", 0)]
    return [("cpu", 0), ("cpu", 1)]


# --------------------------------------------------------------------------- the checks
def check_python(version: Sequence[int]) -> Check:
    """Whether this Python is the one tested, one the dependencies allow, or neither.

    Examples
    --------
    >>> check_python((3, 10, 4)).level
    'ok'
    >>> check_python((3, 12, 1)).level
    'warn'
    """
    text = ".".join(str(part) for part in version[:3])
    if tuple(version[:2]) == TESTED_PYTHON:
        return Check("python", "ok", f"{text}, the version the test suite runs on")
    low, high = ALLOWED_PYTHON
    allowed = f"{low[0]}.{low[1]}-{high[0]}.{high[1]}"
    if low <= tuple(version[:2]) <= high:
        return Check("python", "ok", f"{text}: allowed ({allowed}), though the test suite runs "
                     f"on {TESTED_PYTHON[0]}.{TESTED_PYTHON[1]}")
    return Check("python", "warn", f"{text}: outside {allowed}, the versions where numpy<1.24 (for "
                                   "MXNet 1.x) and wrapt>=2.4 both install")


def check_numpy() -> Check:
    """numpy's version against the ``numpy<1.24`` MXNet 1.x needs."""
    from ._mxnet_env import NUMPY_FIX, release
    try:
        import numpy
    except ImportError:
        return Check("numpy", "FAIL", f"numpy is not installed; fix: {NUMPY_FIX}")
    if release(numpy.__version__) >= NUMPY_LIMIT:
        return Check("numpy", "FAIL", f"{numpy.__version__}: MXNet 1.x cannot be imported with "
                                      f"numpy >= 1.24; fix: {NUMPY_FIX}")
    return Check("numpy", "ok", f"{numpy.__version__} (< 1.24, as MXNet 1.x needs)")


def check_wrapt() -> Check:
    """wrapt's version, and whether its C extension provides ``FunctionWrapper``."""
    fix = f'pip install "wrapt>={WRAPT_MINIMUM[0]}.{WRAPT_MINIMUM[1]}"'
    try:
        import wrapt
    except ImportError:
        return Check("wrapt", "FAIL", f"wrapt is not installed; fix: {fix}")
    version = getattr(wrapt, "__version__", "?")
    from ._mxnet_env import release
    if release(version) < WRAPT_MINIMUM:
        return Check("wrapt", "FAIL", f"{version}; mxpatch_bind needs "
                     f"wrapt>={WRAPT_MINIMUM[0]}.{WRAPT_MINIMUM[1]}; fix: {fix}")
    # wrapt.__wrapt__ picks wrapt._wrappers (C) unless WRAPT_DISABLE_EXTENSIONS is set or the
    # extension failed to build; the pure-Python classes live in wrapt.wrappers.
    pure_python = importlib.import_module("wrapt.wrappers").FunctionWrapper
    if wrapt.FunctionWrapper is not pure_python:
        return Check("wrapt", "ok", f"{version}, C extension in use")
    why = ("WRAPT_DISABLE_EXTENSIONS is set" if os.environ.get("WRAPT_DISABLE_EXTENSIONS")
           else "the C extension is not available")
    return Check("wrapt", "ok", f"{version}, pure Python ({why}): slower per patched call, which "
                                "bind/reshape can afford")


def check_import() -> Tuple[Any, Check]:
    """MXNet's version and location, or why it cannot be imported and the fix."""
    from ._mxnet_env import MXNetEnvironmentError, import_mxnet
    try:
        mx = import_mxnet()
    except MXNetEnvironmentError as error:
        return None, Check("mxnet", "FAIL", str(error))
    except Exception as error:  # pylint: disable=broad-except
        return None, Check("mxnet", "FAIL", f"cannot import mxnet: {type(error).__name__}: {error}")
    where = os.path.dirname(getattr(mx, "__file__", "") or "?")
    return mx, Check("mxnet", "ok", f'{getattr(mx, "__version__", "?")} at {where}')


def check_distribution(distributions: Sequence[Tuple[str, str]]) -> Check:
    """Which distribution installed the ``mxnet`` package, and what ``.[cpu]`` would do to it.

    ``mxnet`` and ``mxnet-cuXXX`` install the same ``mxnet`` package, so the ``cpu`` extra
    (``mxnet==1.9.1``) installed over a GPU build replaces it with the CPU build.

    Parameters
    ----------
    distributions : sequence of (str, str)
        ``(name, version)`` of the installed distributions that provide ``mxnet``.

    Examples
    --------
    >>> check_distribution([("mxnet-cu112", "1.9.1")]).level
    'warn'
    """
    found = ", ".join(f"{name} {version}" for name, version in distributions)
    if len(distributions) > 1:
        return Check("distribution", "warn", f"{found} all install the mxnet package, over each "
                                             "other's files: pip uninstall all of them, then "
                                             "install one")
    if not distributions:
        return Check("distribution", "ok", "no installed distribution provides mxnet "
                     "(a source build on the path, or none)")
    if distributions[0][0] == CPU_DISTRIBUTION:
        return Check("distribution", "ok", f'{found}, the CPU build that pip install ".[cpu]" '
                                           'installs')
    return Check("distribution", "warn", f'{found}: pip install ".[cpu]" would replace this build '
                                         'with the CPU one (both install the mxnet package); '
                                         'install mxpatch_bind without the extra: pip install .')


def check_supported(mx: Any) -> Check:
    """Whether :func:`mxpatch_bind.install` accepts this MXNet without ``force=True``."""
    from .patching._targets import SUPPORTED_VERSIONS, check_mxnet
    problems = check_mxnet(mx)
    if problems:
        return Check("supported", "FAIL", "; ".join(problems))
    low, high = SUPPORTED_VERSIONS
    return Check("supported", "ok", f"MXNet {mx.__version__} is in {low[0]}.{low[1]}-"
                 f"{high[0]}.{high[1]}.x and its methods take the expected parameters")


def check_features(mx: Any) -> Check:
    """MXNet's build: CUDA, cuDNN, MKLDNN (oneDNN) and the distributed kvstore, on or off."""
    try:
        features = mx.runtime.Features()
    except Exception as error:  # pylint: disable=broad-except
        return Check("features", "warn", f"unknown: mx.runtime.Features() failed: {error}")
    text = ", ".join(f"{name} {'on' if name in features and features.is_enabled(name) else 'off'}"
                     for name in BUILD_FEATURES)
    enabled = ", ".join(name for name, feature in sorted(features.items()) if feature.enabled)
    return Check("features", "ok", text, [f"enabled: {enabled}"])


def check_gpus(mx: Any) -> Tuple[int, Check]:
    """How many GPUs MXNet sees, and whether that fits its build and this machine."""
    cuda = _feature_enabled(mx, "CUDA")
    try:
        count = int(mx.context.num_gpus())
    except Exception as error:  # pylint: disable=broad-except
        return 0, Check("gpus", "warn" if cuda else "ok", "none: mx.context.num_gpus() failed: "
                                                          f"{error}")
    if count:
        gpus = ", ".join(f"gpu({index})" for index in range(count))
        return count, Check("gpus", "ok", f"{count}: {gpus}")
    if cuda:
        return 0, Check("gpus", "warn", 'none visible to this CUDA build of MXNet (driver loaded? '
                                        'CUDA_VISIBLE_DEVICES='
                                        f'{os.environ.get("CUDA_VISIBLE_DEVICES")!r})')
    if glob.glob("/dev/nvidia[0-9]*"):
        return 0, Check("gpus", "warn", "none for MXNet, a CPU build, though this machine has "
                        "NVIDIA GPUs: install the mxnet-cuXXX 1.9.1 wheel for its CUDA")
    return 0, Check("gpus", "ok", "none (a CPU build of MXNet)")


def check_foreign_patches() -> Check:
    """Whether anything other than mxpatch_bind has replaced or wrapped a patched method.

    Walks each method's whole wrapt chain, so it reports wrappers put on top of ours (what
    ``status().foreign_wrappers`` lists) and those put on before ours, or with ours absent.
    """
    from .patching import describe_targets
    found: List[str] = []
    for info in describe_targets():
        found.extend(f"{info.name}: {entry!r}" for entry in info.chain[:-1]
                     if entry is not info.ours)
        if not info.original:
            found.append(f"{info.name}: {info.chain[-1]!r} is not MXNet's own function")
    if found:
        return Check("foreign patches", "FAIL", "something else patched MXNet", found)
    return Check("foreign patches", "ok", f"none on {_method_names()}")


def check_settings() -> Check:
    """The settings of :func:`mxpatch_bind.configure` in force, and their variables."""
    from . import settings
    variables = [name for name in (settings.EXEC_CACHE_SIZE_VARIABLE,
                                   settings.RESHAPE_THREADS_VARIABLE) if name in os.environ]
    try:
        current = settings.current()
    except PatchError as error:
        return Check("settings", "FAIL", f"{error}; install() would refuse it")
    source = "from " + ", ".join(variables) if variables else "defaults"
    return Check("settings", "ok", f"exec_cache_size={current.exec_cache_size}, "
                                   f"reshape_threads={current.reshape_threads} ({source})")


def check_self_test(mx: Any, devices: Sequence[Tuple[str, int]]) -> Check:
    """Bind per device on ``devices`` and compare with stock one-context modules there."""
    contexts = [mx.Context(kind, index) for kind, index in devices]
    exact = all(kind == "cpu" for kind, _ in devices)
    try:
        mismatches = _self_test(mx, contexts, exact)
    except Exception as error:  # pylint: disable=broad-except
        return Check("self-test", "FAIL", f"{type(error).__name__}: {error}")
    where = (f'{", ".join(map(str, contexts))}; data '
            f'{" and ".join(str(shape) for shape in SELF_TEST_SHAPES)}')
    if mismatches:
        return Check("self-test", "FAIL", "per-device results differ from stock one-context "
                                          f"modules ({where})", mismatches)
    how = ("exactly" if exact
           else f"within rtol {GPU_TOLERANCE['rtol']:g}, atol {GPU_TOLERANCE['atol']:g}")
    return Check("self-test", "ok", "per-device outputs and gradients equal stock one-context "
                                    f"modules {how} ({where})")


def check_restored(before: Dict[Any, Any]) -> Check:
    """Whether leaving ``patched()`` put back the very objects that were there before."""
    changed = [f"{name} is {now!r}, was {before[name]!r}"
               for name, now in _current_methods().items() if now is not before[name]]
    if changed:
        return Check("restored", "FAIL", "the patch was not removed", changed)
    return Check("restored", "ok", f"{_method_names()} are the objects they were before the "
                                   "self-test")


# --------------------------------------------------------------------------- helpers
def _mxnet_distributions() -> List[Tuple[str, str]]:
    from ._mxnet_env import mxnet_distributions
    return mxnet_distributions()


def _feature_enabled(mx: Any, name: str) -> bool:
    try:
        return bool(mx.runtime.Features().is_enabled(name))
    except Exception:  # pylint: disable=broad-except  (unknown features count as off)
        return False


def _method_names() -> str:
    from .patching import describe_targets
    return ", ".join(info.short_name for info in describe_targets())


def _current_methods() -> Dict[str, Any]:
    """What each patched method's class holds now, by the method's name."""
    from .patching import describe_targets
    return {info.name: info.chain[0] for info in describe_targets()}


# --------------------------------------------------------------------------- self-test
def _self_test(mx: Any, contexts: Sequence[Any], exact: bool) -> List[str]:
    """Mismatches between each device of a per-device module and a stock module, as text."""
    import numpy as np

    from . import patching
    rng = np.random.RandomState(0)
    symbol = conv_classifier(NUM_CLASSES)
    arg_shapes, _, _ = symbol.infer_shape(data=SELF_TEST_SHAPES[0])
    params = {name: mx.nd.array(rng.uniform(-0.5, 0.5, shape))
              for name, shape in zip(symbol.list_arguments(), arg_shapes)
              if name not in ("data", "softmax_label")}
    batches = [(mx.nd.array(rng.uniform(-1, 1, shape)),
                mx.nd.array(rng.randint(0, NUM_CLASSES, shape[0])))
               for shape in SELF_TEST_SHAPES]
    # The references first, while nothing is patched: plain stock MXNet.
    references = [_stock_step(mx, symbol, params, context, data, label)
                  for context, (data, label) in zip(contexts, batches)]

    with patching.patched():
        module = mx.mod.Module(symbol, context=list(contexts))
        module.bind([[("data", data.shape)] for data, _ in batches],
                    [[("softmax_label", label.shape)] for _, label in batches])
        module.set_params(params, {})
        module.forward(mx.io.DataBatch([[data] for data, _ in batches],
                                       [[label] for _, label in batches]), is_train=True)
        module.backward()
        outputs = module.get_outputs(merge_multi_context=False)[0]
        grads = dict(zip(module._exec_group.param_names, module._exec_group.grad_arrays))

    def same(actual: Any, expected: Any) -> bool:
        if exact:
            return bool(np.array_equal(actual, expected))
        return bool(np.allclose(actual, expected, rtol=GPU_TOLERANCE["rtol"],
                                atol=GPU_TOLERANCE["atol"]))

    mismatches = []
    for device, (context, (stock_output, stock_grads)) in enumerate(zip(contexts, references)):
        if not same(outputs[device].asnumpy(), stock_output):
            mismatches.append(f"device {device} ({context}): output differs")
        for name, grad in stock_grads.items():
            if not same(grads[name][device].asnumpy(), grad):
                mismatches.append(f"device {device} ({context}): gradient of {name} differs")
    return mismatches


def _stock_step(mx: Any, symbol: Any, params: Dict[str, Any], context: Any, data: Any,
                label: Any) -> Tuple[Any, Dict[str, Any]]:
    """Stock MXNet on one context: the output and parameter gradients for one batch."""
    module = mx.mod.Module(symbol, context=context)
    module.bind([("data", data.shape)], [("softmax_label", label.shape)])
    module.set_params(params, {})
    module.forward(mx.io.DataBatch([data], [label]), is_train=True)
    module.backward()
    group = module._exec_group
    return (module.get_outputs()[0].asnumpy(),
            {name: grads[0].asnumpy() for name, grads in zip(group.param_names,
                                                              group.grad_arrays)})
