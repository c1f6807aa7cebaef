"""pytest plugin: ``--mxpatch-bind``, the ``mxpatch`` fixtures and the ``mxpatch_bind`` marker.

Registered through the ``pytest11`` entry point ``mxpatch_bind`` when the package is
pip-installed (``-p no:mxpatch_bind`` turns it off); from a bare checkout, load it with
``-p mxpatch_bind.pytest_plugin`` (not both: pytest would register the module twice and stop).
It costs nothing until asked: every pytest run in the environment imports this module, so
loading it imports neither MXNet nor wrapt nor the patch machinery and adds no header line;
only the option, a fixture or the marker does. A broken environment (MXNet missing, numpy
too new for it) under ``--mxpatch-bind`` is a usage error (exit status 4) naming the fix.

``pytest --mxpatch-bind``
    Install the patch for the whole session (from ``pytest_configure`` to
    ``pytest_unconfigure``), before any test module is imported. ``--mxpatch-force`` passes
    ``force=True`` to every install the plugin makes.
``mxpatch`` / ``mxpatch_session``
    Fixtures that install the patch for one test, or for the rest of the session, and yield
    :func:`mxpatch_bind.status`: a :class:`mxpatch_bind.PatchStatus`, the type to annotate
    them with.
``pytest --mxpatch-ignore-mxnet-deprecations``
    (or ``mxpatch_ignore_mxnet_deprecations = true`` in the ``[pytest]`` ini section.)
    Hide the deprecation warnings MXNet 1.x itself raises (``np.bool``, NEP 32's financial
    functions, distutils' ``LooseVersion``: 11 at ``import mxnet`` with numpy 1.23), which
    your code cannot fix: it adds the ``filterwarnings`` line
    ``ignore::DeprecationWarning:mxnet.*``, so that those attributed to your own modules
    still show.
``@pytest.mark.mxpatch_bind``
    Install the patch around a test's setup, call and teardown (importing MXNet first, as
    the fixtures do); on a class, around each of its tests.
    ``@pytest.mark.mxpatch_bind(force=True)`` forces; any other argument is a usage error
    found at collection. In a broken environment, the fixtures and the marker fail their
    test with one line naming the fix.

Examples
--------
A test module that binds per device only inside the tests that ask for it::

    import mxnet as mx
    import pytest

    from mxpatch_bind import PatchStatus

    def test_bind_per_device(mxpatch: PatchStatus) -> None:  # mxpatch_bind.status()
        assert mxpatch.installed
        mod = mx.mod.Module(symbol, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([[('data', (2, 3, 32, 48))], [('data', (3, 3, 40, 24))]])

    @pytest.mark.mxpatch_bind
    class TestPerDevice:
        def test_bucketing_per_device(self):  # patched around each test of the class
            mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=32,
                                         context=[mx.cpu(0), mx.cpu(1)])
            mod.bind([[('data', (2, 3, 32, 32))], [('data', (1, 3, 32, 48))]])

MXNet's own deprecation warnings hidden for a whole project (``pytest.ini``, or the
``[tool:pytest]`` section of ``setup.cfg``)::

    [pytest]
    mxpatch_ignore_mxnet_deprecations = true

The whole suite, patched, with the header saying so::

    $ pytest --mxpatch-bind
    ...
    mxpatch_bind: active (MXNet 1.9.1, mxpatch_bind 0.1.0, --mxpatch-bind)
"""

import sys
from typing import TYPE_CHECKING, Generator, Iterator

import pytest

import mxpatch_bind

if TYPE_CHECKING:
    from .patching import PatchStatus

# Nothing else is imported at the top: this module loads in every pytest run of the
# environment. The patch machinery (wrapt) and MXNet load only once an option, a fixture
# or the marker asks for them.

MARKER = "mxpatch_bind"
MARKER_USAGE = "@pytest.mark.mxpatch_bind or @pytest.mark.mxpatch_bind(force=True)"
# Where MXNet 1.x's own DeprecationWarnings are attributed (mxnet.numpy.utils, ...).
MXNET_DEPRECATIONS = "ignore::DeprecationWarning:mxnet.*"

# Whether pytest_configure installed the patch (so pytest_unconfigure owes one uninstall).
_SESSION_INSTALLED = pytest.StashKey[bool]()
# Whether the marker installed the patch for an item (so its teardown owes one uninstall).
_ITEM_INSTALLED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mxpatch-bind",
                            "mxpatch_bind: per-device shapes for MXNet Module.bind")
    group.addoption("--mxpatch-bind", action="store_true", dest="mxpatch_bind", default=False,
                    help="install the mxpatch_bind patch for the whole session "
                         "(Module.bind / Module.reshape accept per-device shape lists).")
    group.addoption("--mxpatch-force", action="store_true", dest="mxpatch_force", default=False,
                    help="patch even an unsupported MXNet version (install(force=True)); "
                         "applies to --mxpatch-bind, the mxpatch fixtures and the marker.")
    group.addoption("--mxpatch-ignore-mxnet-deprecations", action="store_true",
                    dest="mxpatch_ignore_mxnet_deprecations", default=False,
                    help="hide the DeprecationWarnings MXNet's own modules raise (filterwarnings "
                         f"{MXNET_DEPRECATIONS!r}); ini: mxpatch_ignore_mxnet_deprecations.")
    parser.addini("mxpatch_ignore_mxnet_deprecations", type="bool", default=False,
                  help="as --mxpatch-ignore-mxnet-deprecations")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(force=False): install the mxpatch_bind patch (per-device shapes for "
                   "MXNet Module.bind/reshape) around this test, or each test of this class or "
                   "module.")
    config.stash[_SESSION_INSTALLED] = False
    if (config.getoption("mxpatch_ignore_mxnet_deprecations")
            or config.getini("mxpatch_ignore_mxnet_deprecations")):
        # Read by pytest for collection and every test, after the user's own lines.
        config.addinivalue_line("filterwarnings", MXNET_DEPRECATIONS)
    if not config.getoption("mxpatch_bind"):
        return
    # Import MXNet now rather than let install() wait for the import: a broken environment or
    # an unsupported version then stops the run here, as a usage error naming the fix, instead
    # of leaving tests unpatched.
    from ._mxnet_env import import_mxnet
    try:
        import_mxnet()
        mxpatch_bind.install(force=_force(config))
    except (ImportError, mxpatch_bind.UnsupportedMXNetError) as error:
        raise pytest.UsageError(f"--mxpatch-bind: {error}") from error
    config.stash[_SESSION_INSTALLED] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_SESSION_INSTALLED, False):
        config.stash[_SESSION_INSTALLED] = False
        mxpatch_bind.uninstall()


def pytest_report_header(config: pytest.Config) -> "str | None":
    if "mxpatch_bind.patching" not in sys.modules:
        return None  # nothing loaded the patch machinery, so nothing can be installed
    state = mxpatch_bind.status()
    if state.installed:
        how = [f"MXNet {state.mxnet_version}", f"mxpatch_bind {mxpatch_bind.__version__}"]
        if config.stash.get(_SESSION_INSTALLED, False):
            how.append("--mxpatch-bind")
        if _force(config):
            how.append("--mxpatch-force")
        return f'mxpatch_bind: active ({", ".join(how)})'
    if state.pending:
        return "mxpatch_bind: installed, waiting for import mxnet"
    return None


# --------------------------------------------------------------------------- fixtures
def _mxpatch(request: pytest.FixtureRequest) -> "Iterator[PatchStatus]":
    """The patch, installed for this fixture's scope; yields :func:`mxpatch_bind.status`.

    MXNet is imported first, so the status shows the patch applied and the MXNet version.
    Nests with ``--mxpatch-bind``, the marker and the other scope (reference-counted).

    Yields
    ------
    mxpatch_bind.PatchStatus
        The status just after installing.

    Examples
    --------
    >>> def test_bind_per_device(mxpatch):
    ...     assert mxpatch.installed and mxpatch.mxnet_version
    """
    _import_mxnet()
    with mxpatch_bind.patched(force=_force(request.config)):
        yield mxpatch_bind.status()


# One generator at two scopes, as pytest-mock does for mocker / class_mocker / session_mocker.
mxpatch = pytest.fixture(name="mxpatch")(_mxpatch)
mxpatch_session = pytest.fixture(name="mxpatch_session", scope="session")(_mxpatch)


# --------------------------------------------------------------------------- marker
def pytest_collection_modifyitems(items: "list[pytest.Item]") -> None:
    # Check every marker at collection, so a typo stops the run before any test does.
    for item in items:
        for marker in item.iter_markers(MARKER):
            _marker_force(marker, item.nodeid)


# Setup and teardown hooks rather than an autouse fixture: the patch then spans all of the
# test's fixtures, whatever order pytest sets them up in.
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    force = _marker_force(marker, item.nodeid) or _force(item.config)
    _import_mxnet()
    mxpatch_bind.install(force=force)
    item.stash[_ITEM_INSTALLED] = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    # A hookwrapper resumes after the fixtures' teardown even when one of them raised.
    yield
    if item.stash.get(_ITEM_INSTALLED, False):
        item.stash[_ITEM_INSTALLED] = False
        mxpatch_bind.uninstall()


def _marker_force(marker: pytest.Mark, where: str) -> bool:
    """The marker's ``force``, or a usage error naming what else it was given."""
    problems = []
    if marker.args:
        problems.append(f"positional argument(s) {marker.args!r}")
    unknown = sorted(set(marker.kwargs) - {"force"})
    if unknown:
        problems.append(f'unknown keyword(s) {", ".join(map(repr, unknown))}')
    force = marker.kwargs.get("force", False)
    if not isinstance(force, bool):
        problems.append(f"force={force!r} is not True or False")
    if problems:
        raise pytest.UsageError(f'@pytest.mark.{MARKER} on {where}: {"; ".join(problems)}; '
                                f'expected {MARKER_USAGE}')
    return force


def _import_mxnet() -> None:
    """Import MXNet; in a broken environment, fail the test with the fix and nothing else."""
    from ._mxnet_env import MXNetEnvironmentError, import_mxnet
    try:
        import_mxnet()
        return
    except MXNetEnvironmentError as error:
        message = f"mxpatch_bind: {error}"
    pytest.fail(message, pytrace=False)  # outside the except: no chained tracebacks


def _force(config: pytest.Config) -> bool:
    return bool(config.getoption("mxpatch_force"))
