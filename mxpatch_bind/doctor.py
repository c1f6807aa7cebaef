"""``python -m mxpatch_bind doctor``: check MXNet, wrapt and the patch here (private module).

Each check prints one line, ``ok`` or ``FAIL`` and what it found; the exit status is 0 when
every check passed, 1 otherwise. The self-test binds a small conv net per device on
``[cpu(0), cpu(1)]`` with a different image size on each, and compares each device's
outputs and gradients with a stock one-context module bound to that device's shapes.

Examples
--------
::

    $ python -m mxpatch_bind doctor
    mxpatch_bind 0.1.0 doctor
    ok    mxnet: 1.9.1 at /.../site-packages/mxnet
          features: BLAS_OPEN, CPU_SSE, ..., MKLDNN, OPENMP, ...
    ok    supported: MXNet 1.9.1 is in 1.6-1.9.x and its methods take the expected parameters
    ok    wrapt: 2.5.2, C extension in use
    ok    foreign patches: none on Module.bind, Module.reshape, BucketingModule.bind
    ok    self-test: per-device outputs and gradients equal stock one-context modules ...
    ok    restored: Module.bind, Module.reshape, BucketingModule.bind are the objects ...
    all 6 checks passed
"""

import argparse
import importlib
import os
import sys
import warnings

import wrapt

from . import patching
from .version import __version__

__all__ = ["main"]

# Two devices with different image and batch sizes (the sizes CONTEXT.md measured the fork on).
SELF_TEST_SHAPES = ((2, 3, 32, 48), (3, 3, 40, 24))
NUM_CLASSES = 3


class Check:
    """The outcome of one check: passed or not, what it found, and indented detail lines."""

    def __init__(self, name, passed, text, details=()):
        self.name, self.passed, self.text, self.details = name, passed, text, list(details)

    def lines(self):
        yield "%-5s %s: %s" % ("ok" if self.passed else "FAIL", self.name, self.text)
        for detail in self.details:
            yield "      " + detail


def main(argv=None):
    """Run every check, print one line each, and return 0 if all passed, else 1.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments after ``doctor`` (only ``-h`` is understood).

    Returns
    -------
    int
        The exit status.
    """
    argparse.ArgumentParser(
        prog="python -m mxpatch_bind doctor",
        description="Check MXNet, wrapt and the mxpatch_bind patch on this machine, and run "
                    "a 2-context self-test. Exit status 0 when every check passes."
    ).parse_args([] if argv is None else argv)
    print("mxpatch_bind %s doctor" % __version__)
    checks = list(run_checks())
    for check in checks:
        print("\n".join(check.lines()))
    failed = [check.name for check in checks if not check.passed]
    if failed:
        print("%d of %d checks failed: %s" % (len(failed), len(checks), ", ".join(failed)))
        return 1
    print("all %d checks passed" % len(checks))
    return 0


def run_checks():
    """Yield the :class:`Check` results in order; later ones are skipped as failed when
    MXNet cannot be imported or is not supported."""
    mx, check = check_import()
    yield check
    if mx is None:
        yield Check("self-test", False, "not run: MXNet cannot be imported")
        return
    supported = check_supported(mx)
    yield supported
    yield check_wrapt()
    yield check_foreign_patches()
    if not supported.passed:
        yield Check("self-test", False, "not run: mxpatch_bind refuses this MXNet (see above)")
        return
    before = _current_methods()
    yield check_self_test(mx)
    yield check_restored(before)


# --------------------------------------------------------------------------- the checks
def check_import():
    """MXNet's version, location and enabled build features."""
    try:
        with warnings.catch_warnings():
            # MXNet 1.x's import trips numpy DeprecationWarnings that are not ours to report.
            warnings.simplefilter("ignore", DeprecationWarning)
            mx = importlib.import_module("mxnet")
    except Exception as error:  # pylint: disable=broad-except
        return None, Check("mxnet", False, "cannot import mxnet: %s: %s"
                           % (type(error).__name__, error))
    where = os.path.dirname(getattr(mx, "__file__", "") or "?")
    return mx, Check("mxnet", True, "%s at %s" % (getattr(mx, "__version__", "?"), where),
                     ["features: %s" % _enabled_features(mx)])


def _enabled_features(mx):
    try:
        features = mx.runtime.Features()
    except Exception as error:  # pylint: disable=broad-except
        return "unknown (%s)" % error
    return ", ".join(name for name, feature in sorted(features.items()) if feature.enabled)


def check_supported(mx):
    """Whether :func:`mxpatch_bind.install` accepts this MXNet without ``force=True``."""
    problems = patching.check_mxnet(mx)
    if problems:
        return Check("supported", False, "; ".join(problems))
    low, high = patching.SUPPORTED_VERSIONS
    return Check("supported", True, "MXNet %s is in %d.%d-%d.%d.x and its methods take the "
                 "expected parameters" % ((mx.__version__,) + low + high))


def check_wrapt():
    """wrapt's version, and whether its C extension provides ``FunctionWrapper``."""
    version = getattr(wrapt, "__version__", "?")
    version_tuple = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if version_tuple < (2, 4):
        return Check("wrapt", False, "%s; mxpatch_bind needs wrapt>=2.4" % version)
    # wrapt.__wrapt__ picks wrapt._wrappers (C) unless WRAPT_DISABLE_EXTENSIONS is set or the
    # extension failed to build; the pure-Python classes live in wrapt.wrappers.
    if wrapt.FunctionWrapper is not wrapt.wrappers.FunctionWrapper:
        return Check("wrapt", True, "%s, C extension in use" % version)
    why = ("WRAPT_DISABLE_EXTENSIONS is set" if os.environ.get("WRAPT_DISABLE_EXTENSIONS")
           else "the C extension is not available")
    return Check("wrapt", True, "%s, pure Python (%s): slower per patched call, which "
                 "bind/reshape can afford" % (version, why))


def check_foreign_patches():
    """Whether anything other than mxpatch_bind has replaced or wrapped a patched method.

    Walks each method's whole wrapt chain, so it reports wrappers put on top of ours (what
    ``status().foreign_wrappers`` lists) and those put on before ours, or with ours absent.
    """
    found = []
    for target in patching.TARGETS:
        name = patching._target_name(target)
        ours = patching._state.handles.get(target)  # our FunctionWrapper while installed
        chain = list(wrapt.wrapper_chain(vars(_owner(target)).get(target.attribute)))
        found.extend("%s: %r" % (name, entry) for entry in chain[:-1] if entry is not ours)
        innermost = chain[-1]
        if (getattr(innermost, "__module__", None) != target.module
                or getattr(innermost, "__qualname__", None) != "%s.%s" % (target.owner,
                                                                          target.attribute)):
            found.append("%s: %r is not MXNet's own function" % (name, innermost))
    if found:
        return Check("foreign patches", False, "something else patched MXNet", found)
    return Check("foreign patches", True, "none on %s" % _method_names())


def check_self_test(mx):
    """Bind per device on two CPU contexts and compare with stock one-context modules."""
    try:
        mismatches = _self_test(mx)
    except Exception as error:  # pylint: disable=broad-except
        return Check("self-test", False, "%s: %s" % (type(error).__name__, error))
    shapes = " and ".join(str(shape) for shape in SELF_TEST_SHAPES)
    if mismatches:
        return Check("self-test", False, "per-device results differ from stock one-context "
                     "modules (data %s)" % shapes, mismatches)
    return Check("self-test", True, "per-device outputs and gradients equal stock one-context "
                 "modules exactly (cpu(0), cpu(1); data %s)" % shapes)


def check_restored(before):
    """Whether leaving ``patched()`` put back the very objects that were there before."""
    changed = ["%s is %r, was %r" % (patching._target_name(target), now, before[target])
               for target, now in _current_methods().items() if now is not before[target]]
    if changed:
        return Check("restored", False, "the patch was not removed", changed)
    return Check("restored", True, "%s are the objects they were before the self-test"
                 % _method_names())


# --------------------------------------------------------------------------- self-test
def _owner(target):
    return getattr(sys.modules[target.module], target.owner)


def _method_names():
    return ", ".join("%s.%s" % (t.owner, t.attribute) for t in patching.TARGETS)


def _current_methods():
    return {target: vars(_owner(target)).get(target.attribute) for target in patching.TARGETS}


def _conv_net(mx):
    """Conv -> ReLU -> global pool -> FC -> softmax: one parameter set fits any image size."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=4, kernel=(3, 3), pad=(1, 1),
                             name="conv")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, pool_type="avg", kernel=(1, 1))
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=NUM_CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _self_test(mx):
    """Mismatches between each device of a per-device module and a stock module, as text."""
    import numpy as np
    rng = np.random.RandomState(0)
    symbol = _conv_net(mx)
    arg_shapes, _, _ = symbol.infer_shape(data=SELF_TEST_SHAPES[0])
    params = {name: mx.nd.array(rng.uniform(-0.5, 0.5, shape))
              for name, shape in zip(symbol.list_arguments(), arg_shapes)
              if name not in ("data", "softmax_label")}
    batches = [(mx.nd.array(rng.uniform(-1, 1, shape)),
                mx.nd.array(rng.randint(0, NUM_CLASSES, shape[0])))
               for shape in SELF_TEST_SHAPES]
    contexts = [mx.cpu(device) for device in range(len(SELF_TEST_SHAPES))]
    # The references first, while nothing is patched: plain stock MXNet.
    references = [_stock_step(mx, symbol, params, context, data, label)
                  for context, (data, label) in zip(contexts, batches)]

    with patching.patched():
        module = mx.mod.Module(symbol, context=contexts)
        module.bind([[("data", data.shape)] for data, _ in batches],
                    [[("softmax_label", label.shape)] for _, label in batches])
        module.set_params(params, {})
        module.forward(mx.io.DataBatch([[data] for data, _ in batches],
                                       [[label] for _, label in batches]), is_train=True)
        module.backward()
        outputs = module.get_outputs(merge_multi_context=False)[0]
        grads = dict(zip(module._exec_group.param_names, module._exec_group.grad_arrays))

    mismatches = []
    for device, (context, (stock_output, stock_grads)) in enumerate(zip(contexts, references)):
        if not np.array_equal(outputs[device].asnumpy(), stock_output):
            mismatches.append("device %d (%s): output differs" % (device, context))
        for name, grad in stock_grads.items():
            if not np.array_equal(grads[name][device].asnumpy(), grad):
                mismatches.append("device %d (%s): gradient of %s differs"
                                  % (device, context, name))
    return mismatches


def _stock_step(mx, symbol, params, context, data, label):
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
