"""Other patchers of Module.bind / reshape: what uninstall() and status() do about them.

Every scenario ends with the class attribute being MXNet's original (or the foreign object
the user keeps), no live wrapper of ours reachable from it, and status() telling the truth.
"""

import functools
import logging
import re
import warnings
from unittest import mock

import mxnet as mx
import pytest
import wrapt
from nets import mlp

import mxpatch_bind
from mxpatch_bind import PatchError
from patch_checks import assert_originals_restored

TARGETS = [(mx.mod.Module, "bind"), (mx.mod.Module, "reshape"), (mx.mod.BucketingModule, "bind")]

# Captured when the test module is imported, before any test has installed anything.
ORIGINALS = {(owner, name): vars(owner)[name] for owner, name in TARGETS}
ORIGINAL_BIND = ORIGINALS[(mx.mod.Module, "bind")]

PER_DEVICE_DATA = [[("data", (1, 5))], [("data", (3, 5))]]
PER_DEVICE_LABEL = [[("softmax_label", (1,))], [("softmax_label", (3,))]]


@pytest.fixture(autouse=True)
def _originals_put_back():
    """Whatever a test leaves on the classes, the next test starts from MXNet's originals."""
    yield
    for (owner, name), original in ORIGINALS.items():
        setattr(owner, name, original)


def _module():
    return mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])


def _per_device_bind(bind):
    """Bind per device through ``bind``: the device shapes, or the exception it raised."""
    mod = _module()
    try:
        bind(mod, PER_DEVICE_DATA, PER_DEVICE_LABEL)
    except Exception as error:  # pylint: disable=broad-except
        return type(error), str(error)
    return [[d.shape for d in device] for device in mod.data_shapes]


def _stock_refusal():
    """What MXNet's own bind does with a per-device spec: the reference for a dead wrapper."""
    return _per_device_bind(ORIGINAL_BIND)


def _reaches_a_live_wrapper_of_ours(obj):
    return any(getattr(entry, "_self_enabled", None) is not None and entry._self_enabled()
               for entry in wrapt.wrapper_chain(obj)
               if getattr(entry, "_self_wrapper", None) is not None
               and entry._self_wrapper.__module__ == "mxpatch_bind.module.wrappers")


def assert_nothing_of_ours_is_live():
    status = mxpatch_bind.status()
    assert (status.installed, status.refcount, status.pending) == (False, 0, False)
    assert not mxpatch_bind.is_installed()
    for owner, name in TARGETS:
        assert not _reaches_a_live_wrapper_of_ours(vars(owner)[name]), (owner, name)


def _counting_wrapper(calls):
    def count_binds(wrapped, instance, args, kwargs):
        calls.append(instance)
        return wrapped(*args, **kwargs)
    return count_binds


def _bind_stock_mlp():
    mod = mx.mod.Module(mlp(), context=mx.cpu(0))
    mod.bind([("data", (2, 5))], [("softmax_label", (2,))])
    return mod


# --------------------------------------------------------------------------- replaced wholesale
def _replacement(self, data_shapes, label_shapes=None, for_training=True,
                 inputs_need_grad=False, force_rebind=False, shared_module=None,
                 grad_req="write"):
    return ORIGINAL_BIND(self, data_shapes, label_shapes, for_training, inputs_need_grad,
                         force_rebind, shared_module, grad_req)


def test_a_replaced_method_makes_is_installed_false_and_status_names_the_replacement():
    mxpatch_bind.install()
    mx.mod.Module.bind = _replacement
    status = mxpatch_bind.status()
    assert not mxpatch_bind.is_installed()
    assert (status.installed, status.refcount, status.pending) == (False, 1, False)
    (entry,) = status.foreign_wrappers
    assert entry.startswith("mxnet.module.module.Module.bind was replaced behind")
    assert repr(_replacement) in entry
    with pytest.warns(RuntimeWarning):
        mxpatch_bind.uninstall()


def test_uninstall_forgets_a_replaced_method_with_a_warning_and_keeps_the_replacement():
    mxpatch_bind.install()
    mx.mod.Module.bind = _replacement
    with pytest.warns(RuntimeWarning, match=re.escape(repr(_replacement))) as caught:
        mxpatch_bind.uninstall()
    assert "Module.bind was replaced behind mxpatch_bind's back" in str(caught[0].message)
    assert vars(mx.mod.Module)["bind"] is _replacement
    for owner, name in TARGETS[1:]:
        assert vars(owner)[name] is ORIGINALS[(owner, name)]
    assert_nothing_of_ours_is_live()
    assert mxpatch_bind.status().foreign_wrappers == ()


def test_a_foreign_wrapt_wrapper_put_straight_on_the_original_is_named_a_replacement():
    # It proxies MXNet's original (and compares equal to it) but is not the original.
    mxpatch_bind.install()
    theirs = wrapt.FunctionWrapper(ORIGINAL_BIND, _counting_wrapper([]))
    mx.mod.Module.bind = theirs
    with pytest.warns(RuntimeWarning) as caught:
        mxpatch_bind.uninstall()
    message = str(caught[0].message)
    assert "Module.bind was replaced behind mxpatch_bind's back by" in message
    assert "restored" not in message
    assert vars(mx.mod.Module)["bind"] is theirs


def test_the_warning_points_at_the_uninstall_call():
    mxpatch_bind.install()
    mx.mod.Module.bind = _replacement
    with pytest.warns(RuntimeWarning) as caught:
        mxpatch_bind.uninstall()
    assert caught[0].filename == __file__


def test_a_warning_turned_into_an_error_still_leaves_the_state_whole():
    mxpatch_bind.install()
    mx.mod.Module.bind = _replacement
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="replaced behind"):
            mxpatch_bind.uninstall()
    assert vars(mx.mod.Module)["bind"] is _replacement
    for owner, name in TARGETS[1:]:
        assert vars(owner)[name] is ORIGINALS[(owner, name)]
    assert_nothing_of_ours_is_live()


def test_a_replacement_that_calls_our_wrapper_by_reference_calls_stock_after_uninstall():
    mxpatch_bind.install()
    ours = vars(mx.mod.Module)["bind"]

    def calls_ours(self, *args, **kwargs):  # no __wrapped__: ours is out of sight
        return ours(self, *args, **kwargs)

    mx.mod.Module.bind = calls_ours
    assert _per_device_bind(mx.mod.Module.bind) == [[(1, 5)], [(3, 5)]]
    with pytest.warns(RuntimeWarning, match="calls_ours"):
        mxpatch_bind.uninstall()
    assert vars(mx.mod.Module)["bind"] is calls_ours
    assert _per_device_bind(mx.mod.Module.bind) == _stock_refusal()
    assert _bind_stock_mlp().binded
    assert_nothing_of_ours_is_live()


def test_a_method_restored_to_the_original_behind_our_back_is_reported_and_forgotten():
    mxpatch_bind.install()
    mx.mod.Module.bind = ORIGINAL_BIND
    (entry,) = mxpatch_bind.status().foreign_wrappers
    assert "Module.bind was restored to MXNet's original" in entry
    assert not mxpatch_bind.is_installed()
    with pytest.warns(RuntimeWarning, match="restored to MXNet's original"):
        mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_a_saved_wrapper_of_ours_put_back_after_uninstall_is_dead_and_stays_reported():
    # mock.patch stopped out of order does this: it restores what it saw when it started.
    mxpatch_bind.install()
    saved = vars(mx.mod.Module)["bind"]
    mxpatch_bind.uninstall()
    mx.mod.Module.bind = saved
    assert _per_device_bind(mx.mod.Module.bind) == _stock_refusal()
    (entry,) = mxpatch_bind.status().foreign_wrappers
    assert "switched off" in entry and ("%x" % id(saved)) in entry
    assert_nothing_of_ours_is_live()
    mxpatch_bind.uninstall()  # nothing installed: a warning, and the dead wrapper taken out
    assert_originals_restored(ORIGINALS)
    assert mxpatch_bind.status().foreign_wrappers == ()


def test_install_after_a_forgotten_replacement_wraps_the_replacement_and_restores_it():
    mxpatch_bind.install()
    mx.mod.Module.bind = _replacement
    with pytest.warns(RuntimeWarning):
        mxpatch_bind.uninstall()
    with mxpatch_bind.patched():
        assert mxpatch_bind.is_installed()
        assert vars(mx.mod.Module)["bind"].__wrapped__ is _replacement
        assert _per_device_bind(mx.mod.Module.bind) == [[(1, 5)], [(3, 5)]]
    assert vars(mx.mod.Module)["bind"] is _replacement
    assert_nothing_of_ours_is_live()


# --------------------------------------------------------------------------- non-wrapt on top
def _decorate_with_functools_wraps(owner, name):
    ours = vars(owner)[name]

    @functools.wraps(ours)
    def plain(*args, **kwargs):
        return ours(*args, **kwargs)

    setattr(owner, name, plain)
    return plain


def test_status_names_a_non_wrapt_decorator_on_ours_and_the_way_out():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    try:
        assert mxpatch_bind.is_installed()
        (entry,) = mxpatch_bind.status().foreign_wrappers
        assert entry.startswith("mxnet.module.module.Module.bind: %r" % plain)
        assert "not a wrapt wrapper" in entry and "uninstall(force=True)" in entry
    finally:
        mx.mod.Module.bind = plain.__wrapped__
        mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)


def test_uninstall_refuses_under_a_non_wrapt_decorator_and_changes_nothing():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    chains = {target: list(wrapt.wrapper_chain(vars(target[0])[target[1]])) for target in TARGETS}
    with pytest.raises(PatchError, match="%x" % id(plain)) as raised:
        mxpatch_bind.uninstall()
    assert "Module.bind" in str(raised.value) and "uninstall(force=True)" in str(raised.value)
    assert mxpatch_bind.is_installed()
    assert mxpatch_bind.status().refcount == 1
    for target, chain in chains.items():
        now = list(wrapt.wrapper_chain(vars(target[0])[target[1]]))
        assert len(now) == len(chain) and all(a is b for a, b in zip(now, chain))
    mx.mod.Module.bind = plain.__wrapped__
    mxpatch_bind.uninstall()


def test_removing_the_non_wrapt_decorator_lets_uninstall_restore_the_originals():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    with pytest.raises(PatchError):
        mxpatch_bind.uninstall()
    mx.mod.Module.bind = plain.__wrapped__
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_forced_uninstall_keeps_the_decorator_and_switches_ours_inside_it_off():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    with pytest.warns(RuntimeWarning, match=re.escape(repr(plain))):
        mxpatch_bind.uninstall(force=True)
    assert vars(mx.mod.Module)["bind"] is plain
    assert _per_device_bind(mx.mod.Module.bind) == _stock_refusal()
    assert _bind_stock_mlp().binded
    for owner, name in TARGETS[1:]:
        assert vars(owner)[name] is ORIGINALS[(owner, name)]
    assert_nothing_of_ours_is_live()


def test_uninstall_with_nothing_installed_warns_and_takes_out_our_dead_wrappers(caplog):
    # The switched-off wrapper a forced uninstall left under a decorator is uncovered when
    # the user drops their decorator: the next uninstall(), with nothing installed, takes it
    # out, so that MXNet's function is back by identity.
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    with pytest.warns(RuntimeWarning):
        mxpatch_bind.uninstall(force=True)
    mx.mod.Module.bind = plain.__wrapped__  # the user drops their decorator
    dead = vars(mx.mod.Module)["bind"]
    (entry,) = mxpatch_bind.status().foreign_wrappers
    assert entry == ("mxnet.module.module.Module.bind: an mxpatch_bind %s at 0x%x running "
                     "mxpatch_bind.module.wrappers.bind_wrapper, switched off (it calls "
                     "straight through to what it wraps)" % (type(dead).__name__, id(dead)))
    assert _bind_stock_mlp().binded  # switched off: stock bind runs through it
    assert _per_device_bind(mx.mod.Module.bind) == _stock_refusal()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mxpatch_bind.patching"):
        mxpatch_bind.uninstall()
    assert [r.getMessage() for r in caplog.records] == [
        "mxpatch_bind.uninstall() called but the patch is not installed"]
    assert_originals_restored(ORIGINALS)
    assert mxpatch_bind.status().foreign_wrappers == ()


def test_a_dead_wrapper_still_under_the_decorator_stays_and_is_still_reported():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    with pytest.warns(RuntimeWarning):
        mxpatch_bind.uninstall(force=True)
    assert vars(mx.mod.Module)["bind"] is plain
    (entry,) = mxpatch_bind.status().foreign_wrappers
    assert entry.startswith("mxnet.module.module.Module.bind: an mxpatch_bind ")
    assert "switched off" in entry
    assert _bind_stock_mlp().binded
    mx.mod.Module.bind = ORIGINALS[(mx.mod.Module, "bind")]
    assert_originals_restored(ORIGINALS)


def test_with_two_decorators_stacked_the_refusal_names_the_one_directly_on_ours():
    mxpatch_bind.install()
    inner = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    outer = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    with pytest.raises(PatchError) as raised:
        mxpatch_bind.uninstall()
    assert "%x" % id(inner) in str(raised.value)
    assert "%x" % id(outer) not in str(raised.value)
    (entry,) = [e for e in mxpatch_bind.status().foreign_wrappers if "not a wrapt" in e]
    assert "%x" % id(inner) in entry
    mx.mod.Module.bind = inner.__wrapped__
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)


def test_a_wrapt_wrapper_on_a_decorator_on_ours_is_refused_naming_the_decorator():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    theirs = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper([]))
    with pytest.raises(PatchError) as raised:
        mxpatch_bind.uninstall()
    assert "%x" % id(plain) in str(raised.value)
    assert "%x" % id(theirs) not in str(raised.value)
    assert mxpatch_bind.is_installed() and mxpatch_bind.status().refcount == 1
    mx.mod.Module.bind = plain.__wrapped__
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)


def test_a_non_wrapt_decorator_on_a_target_other_than_bind_is_refused_too():
    mxpatch_bind.install()
    plain = _decorate_with_functools_wraps(mx.mod.BucketingModule, "bind")
    with pytest.raises(PatchError, match="BucketingModule.bind"):
        mxpatch_bind.uninstall()
    mx.mod.BucketingModule.bind = plain.__wrapped__
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)


# --------------------------------------------------------------------------- wrapt wrappers
def test_status_names_a_foreign_wrapt_wrapper_put_on_top():
    mxpatch_bind.install()
    theirs = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper([]))
    try:
        (entry,) = mxpatch_bind.status().foreign_wrappers
        assert entry.startswith("mxnet.module.module.Module.bind: ")
        assert ("%x" % id(theirs)) in entry
        assert "not a wrapt wrapper" not in entry
    finally:
        mxpatch_bind.uninstall()
        wrapt.unwrap_object(mx.mod.Module, "bind", theirs)
    assert_originals_restored(ORIGINALS)


def test_uninstall_splices_ours_out_from_under_a_foreign_wrapt_wrapper():
    calls = []
    mxpatch_bind.install()
    theirs = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper(calls))
    try:
        mxpatch_bind.uninstall()
        assert not mxpatch_bind.is_installed()
        assert vars(mx.mod.Module)["bind"] is theirs
        assert theirs.__wrapped__ is ORIGINAL_BIND
        mod = _bind_stock_mlp()
        assert calls == [mod] and mod.binded
        assert mxpatch_bind.status().foreign_wrappers == ()
        assert_nothing_of_ours_is_live()
    finally:
        wrapt.unwrap_object(mx.mod.Module, "bind", theirs)
    assert_originals_restored(ORIGINALS)


def test_a_foreign_wrapt_wrapper_beneath_ours_survives_uninstall():
    calls = []
    theirs = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper(calls))
    try:
        with mxpatch_bind.patched():
            assert mxpatch_bind.status().foreign_wrappers == ()
        assert vars(mx.mod.Module)["bind"] is theirs
        _bind_stock_mlp()
        assert len(calls) == 1
        assert_nothing_of_ours_is_live()
    finally:
        wrapt.unwrap_object(mx.mod.Module, "bind", theirs)
    assert_originals_restored(ORIGINALS)


def test_a_non_wrapt_decorator_above_a_wrapt_wrapper_above_ours_does_not_block():
    mxpatch_bind.install()
    theirs = wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper([]))
    plain = _decorate_with_functools_wraps(mx.mod.Module, "bind")
    mxpatch_bind.uninstall()
    assert vars(mx.mod.Module)["bind"] is plain
    assert theirs.__wrapped__ is ORIGINAL_BIND
    assert_nothing_of_ours_is_live()


# --------------------------------------------------------------------------- describe_targets
def _bind_info():
    (info,) = [i for i in mxpatch_bind.describe_targets()
               if i.name == "mxnet.module.module.Module.bind"]
    return info


def test_describe_targets_names_every_target_status_names_with_mxnets_own_functions():
    infos = mxpatch_bind.describe_targets()
    assert tuple(info.name for info in infos) == mxpatch_bind.status().targets
    assert [info.short_name for info in infos] == [
        "Module.bind", "Module.reshape", "Module.forward", "BucketingModule.bind",
        "SequentialModule.bind", "Module.init_optimizer", "kvstore.create"]
    for info in infos:
        assert (len(info.chain), info.ours, info.original) == (1, None, True), info
    assert _bind_info().chain == (ORIGINAL_BIND,)


def test_describe_targets_gives_each_chain_outermost_first_with_ours_in_it():
    calls = []
    with mxpatch_bind.patched():
        ours = vars(mx.mod.Module)["bind"]
        wrapt.wrap_function_wrapper(mx.mod.Module, "bind", _counting_wrapper(calls))
        info = _bind_info()
        assert info.chain == (vars(mx.mod.Module)["bind"], ours, ORIGINAL_BIND)
        assert (info.ours, info.original) == (ours, True)
        assert all(i.ours is i.chain[0] for i in mxpatch_bind.describe_targets()[1:])
        wrapt.unwrap_object(mx.mod.Module, "bind", info.chain[0])
    assert _bind_info().chain == (ORIGINAL_BIND,)


def test_describe_targets_tells_a_replacement_from_mxnets_function():
    mx.mod.Module.bind = _replacement
    info = _bind_info()
    assert (info.chain, info.ours, info.original) == ((_replacement,), None, False)
    with mxpatch_bind.patched():
        info = _bind_info()
        assert info.chain[1:] == (_replacement,) and info.ours is info.chain[0]
        assert not info.original


# --------------------------------------------------------------------------- mock.patch layered
def test_a_mock_entered_after_install_and_exited_after_uninstall_leaves_the_original():
    mxpatch_bind.install()
    with mock.patch.object(mx.mod.Module, "bind"):
        with pytest.warns(RuntimeWarning, match="MagicMock"):
            mxpatch_bind.uninstall()
    # The mock put back what it saw when it started: our wrapper, switched off.
    assert vars(mx.mod.Module)["bind"] is not ORIGINAL_BIND
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_an_install_cycle_after_a_mock_put_our_dead_wrapper_back_leaves_the_original():
    mxpatch_bind.install()
    with mock.patch.object(mx.mod.Module, "bind"):
        with pytest.warns(RuntimeWarning):
            mxpatch_bind.uninstall()
    with mxpatch_bind.patched():
        assert vars(mx.mod.Module)["bind"].__wrapped__ is ORIGINAL_BIND
        assert _per_device_bind(mx.mod.Module.bind) == [[(1, 5)], [(3, 5)]]
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_a_forced_uninstall_after_a_mock_put_our_dead_wrapper_back_leaves_the_original():
    mxpatch_bind.install()
    with mock.patch.object(mx.mod.Module, "bind"):
        with pytest.warns(RuntimeWarning):
            mxpatch_bind.uninstall()
    mxpatch_bind.uninstall(force=True)
    assert_originals_restored(ORIGINALS)


def test_a_mock_entered_and_exited_while_installed_leaves_the_original_after_uninstall():
    mxpatch_bind.install()
    with mock.patch.object(mx.mod.Module, "bind") as fake:
        mx.mod.Module(mlp()).bind([("data", (2, 5))])
        assert fake.call_count == 1
    assert _per_device_bind(mx.mod.Module.bind) == [[(1, 5)], [(3, 5)]]
    mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_a_mock_beneath_ours_exiting_while_installed_leaves_the_original_after_uninstall():
    with mock.patch.object(mx.mod.Module, "reshape", autospec=True):
        mxpatch_bind.install()
    with pytest.warns(RuntimeWarning, match="Module.reshape was replaced behind"):
        mxpatch_bind.uninstall()
    assert_originals_restored(ORIGINALS)
    assert_nothing_of_ours_is_live()


def test_two_mocks_stopped_out_of_order_around_uninstall_leave_the_original():
    mxpatch_bind.install()
    outer = mock.patch.object(mx.mod.Module, "bind")
    inner = mock.patch.object(mx.mod.Module, "bind")
    outer.start()
    inner.start()
    with pytest.warns(RuntimeWarning):
        mxpatch_bind.uninstall()
    outer.stop()  # puts back our dead wrapper
    inner.stop()  # puts back the outer mock
    mxpatch_bind.uninstall()  # the mock is still there: it stays, nothing of ours is live
    assert_nothing_of_ours_is_live()
    mx.mod.Module.bind = ORIGINAL_BIND


def test_a_replacement_that_copies_the_originals_names_is_a_replacement_not_a_reload():
    # functools.wraps gives it MXNet's __module__ and __qualname__; its code is elsewhere.
    mxpatch_bind.install()
    replacement = functools.wraps(ORIGINAL_BIND)(
        lambda self, *args, **kwargs: ORIGINAL_BIND(self, *args, **kwargs))
    del replacement.__wrapped__  # a copy of the names, not a wrapper of the original
    mx.mod.Module.bind = replacement
    (entry,) = mxpatch_bind.status().foreign_wrappers
    assert entry.startswith("mxnet.module.module.Module.bind was replaced behind"), entry
    with pytest.warns(RuntimeWarning, match="replaced behind"):
        mxpatch_bind.uninstall()
    assert vars(mx.mod.Module)["bind"] is replacement
