"""Import MXNet, or say which fix a broken environment needs (private module).

Three environments break ``import mxnet`` in ways whose own messages do not name the fix:
MXNet not installed at all, numpy 1.24 or later, which removed the ``np.bool``-style aliases
MXNet 1.x reads at import, and a native library that does not load. :func:`named_failure` is
the one place that recognises them, and this module holds the one wording of each fix:
:func:`import_mxnet` (the plugin, ``demo``, ``doctor``, the benchmarks, ``compat`` and the
lazy names of ``mxpatch_bind``) and the import guard of a pending ``install()``
(``_import_guard``) both raise what it returns. On Python 3.12 and later the fix is another
Python: numpy < 1.24 has no wheels there, so ``pip install "numpy<1.24"`` cannot work.
"""

import functools
import importlib
import importlib.util
import os
import re
import sys
import types
import warnings
from importlib import metadata
from typing import List, Optional, Sequence, Tuple

__all__ = ["MXNetEnvironmentError", "MXNetNotInstalledError", "NumpyTooNewError",
           "MXNetLibraryError", "import_mxnet", "named_failure", "mxnet_distributions",
           "NOT_INSTALLED_FIX", "NUMPY_FIX", "LIBRARY_FIX", "python_fix", "numpy_fix",
           "not_installed_fix", "quiet_subgraph_log"]

NUMPY_FIX = 'pip install "numpy<1.24"'
# numpy < 1.24 (every MXNet 1.x) has wheels up to this Python; 1.23.5 does not build on 3.12
# (its build needs distutils, which 3.12 removed).
LAST_PYTHON_FOR_MXNET = (3, 11)
LIBRARY_FIX = ("install the MXNet build that matches this machine: the CPU wheel mxnet==1.9.1, "
               "or the mxnet-cuXXX wheel whose CUDA version is installed (mxnet-cu112 needs "
               "CUDA 11.2's libraries)")
NOT_INSTALLED_FIX = ('pip install "mxnet==1.9.1" "numpy<1.24" (CPU), or on NVIDIA GPUs the '
                     'mxnet-cuXXX 1.9.1 wheel for your CUDA, e.g. '
                     'pip install "mxnet-cu112==1.9.1" "numpy<1.24"')

# The aliases numpy 1.24 removed (deprecated since 1.20); MXNet 1.x reads some at import.
_REMOVED_ALIAS = re.compile(r"module 'numpy' has no attribute "
                            r"'(bool|int|float|complex|object|str|long|unicode)'")
# Distributions that install the ``mxnet`` package: mxnet, mxnet-cu112, mxnet-mkl, ...
_MXNET_DISTRIBUTION = re.compile(r"mxnet(-[a-z0-9]+)?")


class MXNetEnvironmentError(ImportError):
    """``import mxnet`` failed for a known reason; the message ends with the fix.

    Attributes
    ----------
    fix : str
        The command that repairs the environment.

    Examples
    --------
    >>> from mxpatch_bind._mxnet_env import MXNetEnvironmentError, NumpyTooNewError
    >>> issubclass(NumpyTooNewError, MXNetEnvironmentError)
    True
    """

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message}; fix: {fix}")
        self.fix = fix


class MXNetNotInstalledError(MXNetEnvironmentError, ModuleNotFoundError):
    """No ``mxnet`` package is importable (a ``ModuleNotFoundError`` too, ``name='mxnet'``).

    Examples
    --------
    >>> str(MXNetNotInstalledError()).startswith("MXNet is not installed; fix: ")
    True
    """

    def __init__(self) -> None:
        super().__init__("MXNet is not installed", not_installed_fix())
        self.name = "mxnet"


class NumpyTooNewError(MXNetEnvironmentError):
    """``import mxnet`` failed on a numpy alias that numpy 1.24 removed.

    Examples
    --------
    >>> error = NumpyTooNewError("bool")
    >>> error.fix == numpy_fix()
    True
    """

    def __init__(self, alias: str) -> None:
        super().__init__(f"MXNet {_mxnet_version()} cannot be imported with numpy "
                         f"{_numpy_version()}: numpy 1.24 removed np.{alias}, "
                         "which MXNet 1.x uses", numpy_fix())


class MXNetLibraryError(MXNetEnvironmentError):
    """MXNet's native library (``libmxnet.so``) or one it links to failed to load.

    Examples
    --------
    >>> "libcudart.so.11.0" in str(MXNetLibraryError(OSError("libcudart.so.11.0: cannot open")))
    True
    """

    def __init__(self, error: OSError) -> None:
        super().__init__(f"MXNet's native library failed to load ({error})", LIBRARY_FIX)


def import_mxnet() -> types.ModuleType:
    """Import and return ``mxnet``, raising :class:`MXNetEnvironmentError` with the fix.

    MXNet 1.x's own import-time DeprecationWarnings (numpy aliases), and numpy 1.24's
    FutureWarning before it refuses one, are silenced: they are not the caller's to see, and
    under ``-W error::DeprecationWarning`` they would abort it.

    Returns
    -------
    module
        The ``mxnet`` module.

    Raises
    ------
    MXNetNotInstalledError
        MXNet is not installed.
    NumpyTooNewError
        numpy 1.24 or later is installed.
    MXNetLibraryError
        ``libmxnet.so`` or a library it needs (CUDA's, for a GPU build) cannot be loaded.

    Examples
    --------
    >>> import_mxnet().__name__
    'mxnet'
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            # numpy 1.24 warns about the alias just before refusing it: the error says it all.
            warnings.filterwarnings("ignore", r"In the future `np\.\w+` will be defined",
                                    FutureWarning)
            return importlib.import_module("mxnet")
    except (ImportError, AttributeError, OSError) as error:
        named = named_failure(error)
        if named is None:
            raise
        raise named from error


def named_failure(error: BaseException) -> Optional[MXNetEnvironmentError]:
    """The :class:`MXNetEnvironmentError` that ``error``, raised by ``import mxnet``, means.

    ``None`` when it is none of the failures this module knows, or is named already (the
    import guard of a pending ``install()`` raised it): raise ``error`` as it is. The import
    machinery's frames (importlib's, wrapt's post-import loader, mxpatch_bind's import guard)
    are taken out of ``error``'s traceback, so that, raised ``from error``, the chain shows
    MXNet's and numpy's own frames and nothing that merely passed the failure on.

    Parameters
    ----------
    error : BaseException
        What ``import mxnet`` raised.

    Returns
    -------
    MXNetEnvironmentError or None
        :class:`MXNetNotInstalledError` for ``No module named 'mxnet'``,
        :class:`NumpyTooNewError` for numpy 1.24's ``np.bool``-style ``AttributeError``,
        :class:`MXNetLibraryError` for an ``OSError`` (ctypes cannot load ``libmxnet.so``
        or what it links to).

    Examples
    --------
    >>> error = AttributeError("module 'numpy' has no attribute 'bool'.")
    >>> type(named_failure(error)).__name__
    'NumpyTooNewError'
    >>> named_failure(AttributeError("module 'numpy' has no attribute 'frobnicate'")) is None
    True
    """
    named: Optional[MXNetEnvironmentError] = None
    if isinstance(error, MXNetEnvironmentError):
        return None
    if isinstance(error, ModuleNotFoundError) and error.name == "mxnet":
        named = MXNetNotInstalledError()
    elif isinstance(error, AttributeError):
        match = _REMOVED_ALIAS.match(str(error))
        if match is not None:
            named = NumpyTooNewError(match.group(1))
    elif isinstance(error, OSError):
        named = MXNetLibraryError(error)
    if named is not None:
        error.with_traceback(_without_import_frames(error.__traceback__))
    return named


def check_without_importing() -> None:
    """Raise what :func:`import_mxnet` would, as far as can be told without importing MXNet.

    For a process that only starts others that import it (the launcher's scheduler and
    servers): no ``mxnet`` to be found, or an installed numpy of 1.24 or later.

    Raises
    ------
    MXNetNotInstalledError
        No ``mxnet`` package can be found on ``sys.path``.
    NumpyTooNewError
        The installed numpy distribution is 1.24 or later.

    Examples
    --------
    >>> check_without_importing()  # MXNet 1.9.1 and numpy 1.23.5 installed: nothing to say
    """
    try:
        findable = importlib.util.find_spec("mxnet") is not None
    except (ImportError, ValueError):
        findable = False
    if not findable:
        raise MXNetNotInstalledError()
    version = _numpy_version()
    if release(version) >= (1, 24):
        raise NumpyTooNewError("bool")  # the first alias MXNet 1.x reads


def python_fix(version: Sequence[int]) -> str:
    """The fix for a Python too new for MXNet 1.x: another Python, and why.

    Examples
    --------
    >>> python_fix((3, 12, 1))  # doctest: +ELLIPSIS
    'use Python 3.11 (3.9 to 3.11 work): ... no wheels for Python 3.12'
    """
    return ("use Python 3.11 (3.9 to 3.11 work): MXNet 1.x needs numpy<1.24, which has no "
            f"wheels for Python {version[0]}.{version[1]}")


def numpy_fix(version: Optional[Sequence[int]] = None) -> str:
    """The fix for a numpy MXNet cannot import, on Python ``version`` (default: this one).

    Examples
    --------
    >>> numpy_fix((3, 11, 7))
    'pip install "numpy<1.24"'
    >>> numpy_fix((3, 12, 1)).startswith("use Python 3.11")
    True
    """
    version = tuple(sys.version_info[:3] if version is None else version)
    return NUMPY_FIX if version[:2] <= LAST_PYTHON_FOR_MXNET else python_fix(version)


def not_installed_fix(version: Optional[Sequence[int]] = None) -> str:
    """The fix for a missing MXNet, on Python ``version`` (default: this one).

    Examples
    --------
    >>> not_installed_fix((3, 11, 7)) == NOT_INSTALLED_FIX
    True
    """
    version = tuple(sys.version_info[:3] if version is None else version)
    return NOT_INSTALLED_FIX if version[:2] <= LAST_PYTHON_FOR_MXNET else python_fix(version)


# Frames that only carry an import: importlib's own (frozen, and importlib.import_module),
# wrapt's post-import loader, our import guard.
_FROZEN_IMPORTLIB = "<frozen importlib."
_IMPORT_MACHINERY = (os.path.join("importlib", "__init__.py"),
                     os.path.join("wrapt", "importer.py"),
                     os.path.join("mxpatch_bind", "_import_guard.py"))


def _without_import_frames(traceback: Optional[types.TracebackType]
                           ) -> Optional[types.TracebackType]:
    """``traceback`` relinked without the import machinery's frames."""
    kept: List[types.TracebackType] = []
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        if not (filename.startswith(_FROZEN_IMPORTLIB) or filename.endswith(_IMPORT_MACHINERY)):
            kept.append(traceback)
        traceback = traceback.tb_next
    for outer, inner in zip(kept, kept[1:]):
        outer.tb_next = inner
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def quiet_subgraph_log() -> None:
    """Keep MXNet from logging "Subgraph backend MKLDNN is activated" on every bind.

    Sets ``MXNET_SUBGRAPH_VERBOSE=0`` in this process's environment unless the user set it;
    call it before MXNet binds its first executor. For the demo and doctor, whose output
    those lines would break up; a library must not change its caller's environment.

    Examples
    --------
    >>> quiet_subgraph_log()
    >>> "MXNET_SUBGRAPH_VERBOSE" in os.environ
    True
    """
    os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")


def mxnet_distributions() -> list:
    """``(name, version)`` of each installed distribution that provides the ``mxnet`` package.

    ``mxnet`` and ``mxnet-cuXXX`` install the same package, so installing one replaces the
    files of the other; more than one entry means they overwrote each other.

    Returns
    -------
    list of (str, str)
        Sorted by name; empty when none is installed.

    Examples
    --------
    >>> all(name.startswith("mxnet") for name, _ in mxnet_distributions())
    True
    """
    found = {}
    for distribution in metadata.distributions():
        name = (distribution.metadata["Name"] or "").lower().replace("_", "-")
        if _MXNET_DISTRIBUTION.fullmatch(name):
            found[name] = distribution.version
    return sorted(found.items())


def _mxnet_version() -> str:
    versions = [version for _, version in mxnet_distributions()]
    return versions[0] if len(versions) == 1 else "1.x"


def release(version: str) -> Tuple[int, ...]:
    """The release numbers of a version string, as ``packaging.version`` reads it (PEP 440);
    ``()`` for a string that is none. A pre-release counts as its release: numpy 1.24.0rc1
    already lacks the aliases MXNet 1.x reads.

    Examples
    --------
    >>> release("1.24.0rc1"), release("1.9.1.post0"), release("?")
    ((1, 24, 0), (1, 9, 1), ())
    """
    from packaging.version import InvalidVersion, Version
    try:
        return Version(version).release
    except InvalidVersion:
        return ()


def _numpy_version() -> str:
    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return "?"


_INT32_ELEMENTS = 2 ** 31 - 1
_INT64_ELEMENTS = (2 ** 63 - 1) // 8


@functools.lru_cache(maxsize=None)
def max_array_elements():
    """The most elements one NDArray of the installed MXNet holds (asked once): the bound
    that shape specs (``module/shapes``) and planned batches (``data/limits``) are checked by.

    Without large tensor support (pip's builds) MXNet indexes arrays with int32; with it,
    numpy is the bound: an array's bytes must fit in a signed int64.

    Examples
    --------
    >>> from mxpatch_bind._mxnet_env import max_array_elements
    >>> max_array_elements() in (2 ** 31 - 1, (2 ** 63 - 1) // 8)
    True
    """
    import mxnet as mx
    if mx.runtime.Features().is_enabled("INT64_TENSOR_SIZE"):
        return _INT64_ELEMENTS
    return _INT32_ELEMENTS
