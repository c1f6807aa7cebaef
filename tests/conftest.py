"""Shared fixtures: CPU contexts, and a guard that no test leaves MXNet patched."""

import pytest

import mxpatch_bind


@pytest.fixture(autouse=True)
def _patch_is_left_as_found():
    """Fail a test that leaves the process-global patch installed, and clean up after it."""
    before = mxpatch_bind.status().refcount
    yield
    after = mxpatch_bind.status().refcount
    for _ in range(after - before):  # bounded: an uninstall() that fails to count must not hang
        mxpatch_bind.uninstall()
    assert after == before, "test left mxpatch_bind installed (refcount %d -> %d)" % (before, after)
    assert mxpatch_bind.status().refcount == before, "uninstall() did not undo the test's installs"
    if before == 0:  # nothing outstanding: nothing of ours may still be patched in
        assert not mxpatch_bind.is_installed(), "patched with no install() outstanding"


@pytest.fixture
def contexts():
    """Two CPU contexts (MXNet treats cpu(0) and cpu(1) as separate devices), or two GPU
    contexts with ``MXPATCH_TEST_CONTEXTS=gpu``."""
    from benchmarks.common import contexts_from_env
    return contexts_from_env("MXPATCH_TEST_CONTEXTS", 2)


@pytest.fixture
def settings_restored():
    """The settings of ``mxpatch_bind.configure`` as they were, whatever the test set."""
    previous = mxpatch_bind.configure()
    yield
    mxpatch_bind.configure(**previous._asdict())


@pytest.fixture
def give_back_installs():
    """The test's own install() calls, and the one a compat drop-in ensures for the process,
    are given back after it (the guard above then finds the refcount as it was)."""
    before = mxpatch_bind.status().refcount
    yield
    while mxpatch_bind.status().refcount > before:
        mxpatch_bind.uninstall()
