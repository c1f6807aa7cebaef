"""The two environments where ``import mxnet`` breaks, simulated for subprocesses.

``path_for(kind, directory)`` writes into ``directory`` what a subprocess needs first on its
``PYTHONPATH``:

``"missing"``
    a ``sitecustomize.py`` whose meta path finder hides ``mxnet`` as if it were not installed
    (``ModuleNotFoundError: No module named 'mxnet'``, the same error, with ``name`` set);
``"numpy"``
    an ``mxnet`` package that fails at import exactly as MXNet 1.x does under numpy >= 1.24:
    the ``AttributeError`` numpy 1.24's ``__getattr__`` raises for ``np.bool``; and the
    metadata of a numpy 1.26.4 distribution, which what reads the installed versions sees
    (``pip install mxnet==1.9.1`` installs that numpy).
"""

import os
import textwrap

HIDE_MXNET = textwrap.dedent('''
    import sys


    class _HideMXNet:
        """Finds nothing for mxnet, and says so before any other finder can find it."""

        def find_spec(self, name, path=None, target=None):
            if name == "mxnet" or name.startswith("mxnet."):
                raise ModuleNotFoundError("No module named %r" % name, name=name)
            return None


    sys.meta_path.insert(0, _HideMXNet())
''')

# numpy 1.24's message for a removed alias (numpy/__init__.py, __former_attrs__), for np.bool.
NUMPY_124_BOOL_ERROR = (
    "module 'numpy' has no attribute 'bool'.\n"
    "`np.bool` was a deprecated alias for the builtin `bool`. To avoid this error in existing "
    "code, use `bool` by itself. Doing this will not modify any behavior and is safe. If you "
    "specifically wanted the numpy scalar type, use `np.bool_` here.\n"
    "The aliases was originally deprecated in NumPy 1.20; for more details and guidance see "
    "the original release note at:\n"
    "    https://numpy.org/devdocs/release/1.20.0-notes.html#deprecations")

# Where MXNet 1.9.1 trips over it: mxnet/numpy/utils.py, imported by mxnet/__init__.py.
# numpy 1.24's __getattr__ warns, then raises.
FAKE_MXNET = textwrap.dedent("""
    import warnings

    import numpy as onp

    # bool = onp.bool, under numpy 1.24:
    warnings.warn("In the future `np.bool` will be defined as the corresponding NumPy scalar.",
                  FutureWarning, stacklevel=1)
    raise AttributeError(%r)
""") % NUMPY_124_BOOL_ERROR

KINDS = ("missing", "numpy")


def path_for(kind, directory):
    """Write the simulation of ``kind`` into ``directory``; returns ``str(directory)``."""
    directory = str(directory)
    if kind == "missing":
        with open(os.path.join(directory, "sitecustomize.py"), "w") as stream:
            stream.write(HIDE_MXNET)
    elif kind == "numpy":
        os.makedirs(os.path.join(directory, "mxnet"))
        with open(os.path.join(directory, "mxnet", "__init__.py"), "w") as stream:
            stream.write(FAKE_MXNET)
        os.makedirs(os.path.join(directory, "numpy-1.26.4.dist-info"))
        with open(os.path.join(directory, "numpy-1.26.4.dist-info", "METADATA"), "w") as stream:
            stream.write("Metadata-Version: 2.1\nName: numpy\nVersion: 1.26.4\n")
    else:
        raise ValueError("kind must be one of %r, got %r" % (KINDS, kind))
    return directory


def environment(kind, directory, repo):
    """``os.environ`` with the simulation of ``kind`` and then ``repo`` first on PYTHONPATH."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        path_for(kind, directory), repo, os.environ.get("PYTHONPATH")])))


# What each kind's message must say: the cause, then the fix.
EXPECTED = {
    "missing": ('MXNet is not installed; fix: pip install "mxnet==1.9.1" "numpy<1.24"',),
    "numpy": ("cannot be imported with numpy", "numpy 1.24 removed np.bool",
              'fix: pip install "numpy<1.24"'),
}
