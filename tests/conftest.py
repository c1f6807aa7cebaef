"""Shared fixtures: CPU contexts, a guard that no test leaves MXNet patched, the
Hypothesis profiles every property test runs under, and ``migrate``'s probe of the installed
packages asked each different question once a session (:func:`shared_probe`).

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

import contextlib
import copy
import importlib
import os
import sys

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


# migrate's probe of the installed packages, by question: {key: Environment}
_PROBE_ANSWERS: dict = {}


@contextlib.contextmanager
def shared_probe():
    """Within the block, each different question to ``migrate``'s environment probe runs the
    probe once a session.

    The probe is a child Python that imports what a scanned tree names (MXNet, for the
    synthetic fork tree): a large part of a migrate test's time. Its answer depends only on
    the names asked, the interpreter, the working folder and the environment variables, all
    of which are in the key (pytest's ``PYTEST_CURRENT_TEST`` aside); the same question asked
    again is given the first answer, so a migrate test reads what the real probe said
    (``test_migrate.py`` compares the two). A probe that could not run is asked again.
    """
    environment = importlib.import_module("mxpatch_bind.migrate.environment")
    probe = environment.probe

    def probe_once(names, star_modules=()):
        key = (tuple(sorted(set(names))), tuple(sorted(set(star_modules))), sys.executable,
               os.getcwd(), tuple(sorted((name, value) for name, value in os.environ.items()
                                         if name != "PYTEST_CURRENT_TEST")))
        if key in _PROBE_ANSWERS:
            return copy.deepcopy(_PROBE_ANSWERS[key])
        answer = probe(names, star_modules)
        if answer.failure is None:
            _PROBE_ANSWERS[key] = copy.deepcopy(answer)
        return answer

    environment.probe = probe_once
    try:
        yield
    finally:
        environment.probe = probe


@pytest.fixture(autouse=True)
def _one_probe_per_question(request):
    """:func:`shared_probe` around every test that may run ``migrate`` (its module imported),
    except those marked ``real_probe`` (the probe's own tests). Set and put back by hand, not
    with this fixture's own monkeypatch, which would be undone after the test's fixtures that
    read the variables the test's monkeypatch set (``settings_restored``)."""
    if ("mxpatch_bind.migrate.environment" not in sys.modules
            or request.node.get_closest_marker("real_probe")):
        yield
        return
    with shared_probe():
        yield
