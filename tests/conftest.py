"""Shared fixtures: CPU contexts, a guard that no test leaves MXNet patched, and the
Hypothesis profiles every property test runs under.

Hypothesis profiles (``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME`` picks one):

``dev``
    The default: 20 examples per property test (each test may ask for a multiple of it),
    derandomized, so that a run is the same run every time and a failure replays as it is.
``ci``
    Where ``CI=true`` (what ``.ci/run`` sets): the full 100 examples per test, derandomized too,
    so that CI cannot fail on a draw the inner loop never makes.
``explore``
    100 examples from a random seed, with the example database: a search for new failures,
    run by hand (``pytest --hypothesis-profile explore tests/module``); the failure it finds is
    printed with its seed and its ``@reproduce_failure`` blob.

Every profile prints the blob on failure (``print_blob``) and has no deadline (the tests
bind MXNet executors, whose time depends on the machine's load, not on the code).
"""

import os

import pytest
from hypothesis import settings

import mxpatch_bind

_COMMON = dict(deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=20, derandomize=True, database=None, **_COMMON)
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, **_COMMON)
settings.register_profile("explore", max_examples=100, derandomize=False, **_COMMON)
# Loaded here, before the test modules are imported, so that their settings(...) objects
# (built at import) inherit it; --hypothesis-profile, applied later, still overrides.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev"))


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
