"""The fault patterns mutation sample 25 (docs/mutation.rst) found untested in patching, each
pinned by what the public functions report and what the classes hold afterwards."""

import mxnet as mx
import wrapt

import mxpatch_bind
from mxpatch_bind import patching
from patch_checks import assert_originals_restored

TARGETS = [(mx.mod.Module, "bind"), (mx.mod.Module, "reshape"), (mx.mod.Module, "forward"),
           (mx.mod.BucketingModule, "bind"), (mx.mod.SequentialModule, "bind"),
           (mx.mod.Module, "init_optimizer")]

# Captured when the test module is imported, before any test has installed anything.
ORIGINALS = {(owner, name): vars(owner)[name] for owner, name in TARGETS}
ORIGINAL_BIND = ORIGINALS[(mx.mod.Module, "bind")]


def _bind_info():
    (info,) = [i for i in mxpatch_bind.describe_targets()
               if i.name == "mxnet.module.module.Module.bind"]
    return info


def test_a_hand_made_wrapper_without_mxnets_names_still_shows_mxnets_function_innermost():
    # A patcher that sets __wrapped__ by hand but copies no names (no functools.wraps): the
    # innermost function of the chain is still MXNet's own, whatever the outermost is called.
    def logged_bind(self, *args, **kwargs):
        return ORIGINAL_BIND(self, *args, **kwargs)

    logged_bind.__wrapped__ = ORIGINAL_BIND
    mx.mod.Module.bind = logged_bind
    try:
        info = _bind_info()
        assert (info.chain, info.ours, info.original) == ((logged_bind, ORIGINAL_BIND), None,
                                                          True)
        with mxpatch_bind.patched():
            info = _bind_info()
            assert info.chain[1:] == (logged_bind, ORIGINAL_BIND) and info.original
    finally:
        mx.mod.Module.bind = ORIGINAL_BIND


def test_a_post_import_hook_that_runs_after_install_has_patched_adds_no_second_wrapper():
    # The hook wrapt runs for ``import mxnet`` finishes in a background thread when it fires
    # while that import is still running, so it can run after an install() that found MXNet
    # imported has patched (called here as that thread calls it): it must find the patch done,
    # not wrap every method a second time, which the last uninstall() would leave on the
    # classes.
    mxpatch_bind.install()
    try:
        patching._on_mxnet_imported(mx)
        ours = [entry for entry in wrapt.wrapper_chain(vars(mx.mod.Module)["bind"])
                if entry is not ORIGINAL_BIND]
        assert len(ours) == 1 and _bind_info().ours is ours[0]
    finally:
        mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
