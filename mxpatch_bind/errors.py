"""Exceptions raised by mxpatch_bind (private module; import them from ``mxpatch_bind``)."""

import pickle

__all__ = ["PatchError", "UnsupportedMXNetError", "ShapeSpecError", "BatchError", "DataSpecError",
           "DataLoadError", "WorkerExitedError", "SettingsError", "HorovodError"]


class PatchError(Exception):
    """Base class of every error mxpatch_bind raises about patching or shapes.

    Examples
    --------
    >>> from mxpatch_bind import PatchError, ShapeSpecError
    >>> issubclass(ShapeSpecError, PatchError)
    True
    """


class UnsupportedMXNetError(PatchError):
    """The installed MXNet is not one the patch was written for.

    Raised by :func:`mxpatch_bind.install` before anything is patched, when
    ``mxnet.__version__`` is outside 1.6–1.9.x or when a patched method's
    parameters differ from MXNet 1.9.1's. ``install(force=True)`` patches anyway.

    Examples
    --------
    >>> from mxpatch_bind import UnsupportedMXNetError, PatchError
    >>> issubclass(UnsupportedMXNetError, PatchError)
    True
    """


class ShapeSpecError(PatchError, ValueError):
    """A per-device shape specification is malformed.

    The message names the device index, the offending entry and the expected
    form. It is raised before any module state changes.

    Examples
    --------
    >>> from mxpatch_bind import ShapeSpecError
    >>> issubclass(ShapeSpecError, ValueError)
    True
    """


class BatchError(PatchError, ValueError):
    """A batch handed to ``forward`` does not fit the module's per-device inputs.

    The message names the device index, the input, what was given and what was expected.
    It is raised before any array is copied or any executor reshaped: the module is
    exactly as it was.

    Examples
    --------
    >>> from mxpatch_bind import BatchError
    >>> issubclass(BatchError, ValueError)
    True
    """


class DataSpecError(PatchError, ValueError):
    """Samples, input declarations, sizes or options given to ``PerDeviceIter`` are malformed.

    The message names the sample index, the input and what was expected. It is
    raised in the constructor, before the iterator exists (for a lazily loaded
    dataset: when the declared sizes or the first sample disagree with the
    declarations, and later when a decoded sample does not fit its plan).

    Examples
    --------
    >>> from mxpatch_bind import DataSpecError
    >>> issubclass(DataSpecError, ValueError)
    True
    """


class DataLoadError(PatchError, RuntimeError):
    """A batch of ``PerDeviceIter`` could not be loaded: a dataset, a transform or a worker failed.

    The message names the batch of the epoch and, when one sample failed, the sample index and
    the dataset; the exception the dataset or transform raised is the ``__cause__`` (from a
    worker process, with the worker's traceback as its own cause). The iterator raises it
    again on every later ``next()`` until ``reset()``, which starts a full epoch.

    Attributes
    ----------
    batch : int or None
        Position of the batch in the epoch.
    sample : int or None
        Dataset index of the sample that failed (None when no one sample did).
    dataset : str or None
        The dataset's type name.

    Examples
    --------
    >>> from mxpatch_bind import DataLoadError, DataSpecError
    >>> issubclass(DataLoadError, RuntimeError), issubclass(DataLoadError, DataSpecError)
    (True, False)
    >>> error = DataLoadError("dataset[9] raised KeyError", batch=2, sample=9, dataset="Files")
    >>> error.batch, error.sample, error.dataset
    (2, 9, 'Files')
    """

    def __init__(self, message, batch=None, sample=None, dataset=None):
        super().__init__(message)
        self.batch = batch
        self.sample = sample
        self.dataset = dataset
        # Set where the error crosses from a worker process: the cause it was raised from.
        self.original = None

    def __reduce__(self):
        # Exceptions pickle without their __cause__; a worker's error must bring the dataset's
        # exception along, or the main process could not chain to it.
        return (_rebuild_load_error, (type(self), self.args, self.__dict__,
                                      _portable(self.__cause__ or self.original)))


class WorkerExitedError(DataLoadError):
    """A DataLoader worker process ended (exited or was killed) while the iterator loaded a batch.

    Attributes
    ----------
    exitcode : int
        The worker's exit code; ``-N`` for a worker killed by signal ``N``.
    pid : int
        The worker's process id.

    Examples
    --------
    >>> from mxpatch_bind import DataLoadError, WorkerExitedError
    >>> issubclass(WorkerExitedError, DataLoadError)
    True
    """

    def __init__(self, message, batch=None, exitcode=None, pid=None):
        super().__init__(message, batch=batch)
        self.exitcode = exitcode
        self.pid = pid


def _portable(error):
    """``error`` when it survives pickling, else a RuntimeError holding its type and message."""
    if error is None:
        return None
    try:
        return pickle.loads(pickle.dumps(error))
    except Exception:  # an exception type that cannot be rebuilt from its args, a lock inside
        return RuntimeError(f"{type(error).__name__}: {error}")


def _rebuild_load_error(cls, args, state, original):
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    error.original = original
    return error


class SettingsError(PatchError, ValueError):
    """A value given to :func:`mxpatch_bind.configure`, or its environment variable, is invalid.

    The message names the setting, the value given and the range expected. Nothing is changed.

    Examples
    --------
    >>> from mxpatch_bind import SettingsError
    >>> issubclass(SettingsError, ValueError)
    True
    """


class HorovodError(PatchError, RuntimeError):
    """``kvstore='horovod'`` cannot do what was asked: Horovod is not installed (the message
    gives the build command), or the store was asked for what it does not support (sparse
    pulls, gradient compression, optimizer states before an optimizer).

    Examples
    --------
    >>> from mxpatch_bind import HorovodError
    >>> issubclass(HorovodError, RuntimeError)
    True
    """
