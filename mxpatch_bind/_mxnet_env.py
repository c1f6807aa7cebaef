"""Import MXNet, or say which fix a broken environment needs (private module).

Two environments break ``import mxnet`` in ways whose own messages do not name the fix:
MXNet not installed at all, and numpy 1.24 or later, which removed the ``np.bool``-style
aliases MXNet 1.x reads at import. :func:`import_mxnet` is the one place that recognises
them; the plugin, ``demo``, ``doctor`` and the benchmarks all import MXNet through it.
"""

import importlib
import os
import re
import types
import warnings
from importlib import metadata

__all__ = ["MXNetEnvironmentError", "MXNetNotInstalledError", "NumpyTooNewError",
           "MXNetLibraryError", "import_mxnet", "mxnet_distributions", "NOT_INSTALLED_FIX",
           "NUMPY_FIX", "LIBRARY_FIX", "quiet_subgraph_log"]

NUMPY_FIX = 'pip install "numpy<1.24"'
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
        super().__init__("%s; fix: %s" % (message, fix))
        self.fix = fix


class MXNetNotInstalledError(MXNetEnvironmentError):
    """No ``mxnet`` package is importable.

    Examples
    --------
    >>> str(MXNetNotInstalledError()).startswith("MXNet is not installed; fix: pip install")
    True
    """

    def __init__(self) -> None:
        super().__init__("MXNet is not installed", NOT_INSTALLED_FIX)


class NumpyTooNewError(MXNetEnvironmentError):
    """``import mxnet`` failed on a numpy alias that numpy 1.24 removed.

    Examples
    --------
    >>> error = NumpyTooNewError("bool")
    >>> error.fix
    'pip install "numpy<1.24"'
    """

    def __init__(self, alias: str) -> None:
        super().__init__("MXNet %s cannot be imported with numpy %s: numpy 1.24 removed "
                         "np.%s, which MXNet 1.x uses" % (_mxnet_version(), _numpy_version(),
                                                           alias), NUMPY_FIX)


class MXNetLibraryError(MXNetEnvironmentError):
    """MXNet's native library (``libmxnet.so``) or one it links to failed to load.

    Examples
    --------
    >>> "libcudart.so.11.0" in str(MXNetLibraryError(OSError("libcudart.so.11.0: cannot open")))
    True
    """

    def __init__(self, error: OSError) -> None:
        super().__init__("MXNet's native library failed to load (%s)" % error, LIBRARY_FIX)


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
    except ModuleNotFoundError as error:
        if error.name != "mxnet":
            raise
        raise MXNetNotInstalledError() from error
    except AttributeError as error:
        match = _REMOVED_ALIAS.match(str(error))
        if match is None:
            raise
        raise NumpyTooNewError(match.group(1)) from error
    except OSError as error:  # ctypes cannot load libmxnet.so or what it links to
        raise MXNetLibraryError(error) from error


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


def _numpy_version() -> str:
    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return "?"
