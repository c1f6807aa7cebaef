"""Compatibility matrix: the test suite against each MXNet 1.x release the patch supports.

One session per MXNet release, each in a fresh virtualenv with that release, the numpy pin
it imports with, and ``.[test]``::

    python -m pip install nox
    nox -l                                   # list the sessions
    nox -s "tests(mxnet='1.8.0.post0')"      # one release
    nox -s tests                             # all of them
    nox -s "tests(mxnet='1.6.0')" -- -x -k doctor   # arguments after -- go to pytest
    nox -s interpreters                      # MXNet 1.9.1 on each Python the dependencies allow

The MXNet wheels are ``py2.py3-none`` (1.7 and later ``manylinux2014_x86_64``), so they install
on any CPython 3; what limits the Python version is numpy: every MXNet 1.x uses aliases such
as ``np.bool`` that numpy 1.24 removed, and numpy 1.23.2 is the first with wheels for
Python 3.11. MXNet before 1.6 is outside ``mxpatch_bind.patching._targets.SUPPORTED_VERSIONS``.

``interpreters`` needs ``python3.9``, ``python3.10`` and ``python3.11`` on ``PATH`` (nox skips a
missing one); ``.ci/run`` tests 3.11 only (docs/install.rst: supported Python versions).
"""

import nox

# MXNet release -> the numpy requirement it is tested with. Every 1.x needs numpy<1.24
# (np.bool and friends); their own metadata asks only for numpy>1.16,<2.
MATRIX = {
    "1.9.1": "numpy<1.24",
    "1.8.0.post0": "numpy<1.24",
    "1.7.0.post2": "numpy<1.24",
    "1.6.0": "numpy<1.24",
}

# The Python versions setup.cfg's python_requires admits: wrapt>=2.4 starts at 3.9, numpy<1.24
# (every MXNet 1.x) has no wheels past 3.11.
PYTHONS = ["3.9", "3.10", "3.11"]

nox.options.sessions = ["tests"]


@nox.session
@nox.parametrize("mxnet", list(MATRIX))
def tests(session, mxnet):
    """Run the test suite against one MXNet release."""
    session.install(".[test]", "mxnet==%s" % mxnet, MATRIX[mxnet])
    session.run("python", "-c", "import mxnet, numpy; print('mxnet', mxnet.__version__, "
                                "'numpy', numpy.__version__)")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=PYTHONS)
def interpreters(session):
    """Run the test suite with MXNet 1.9.1 (the ``cpu`` extra) on one Python version."""
    session.install(".[cpu,test]")
    session.run("python", "-m", "pytest", *session.posargs)
