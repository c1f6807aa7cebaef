"""Exceptions raised by mxpatch_bind (private module; import them from ``mxpatch_bind``)."""

__all__ = ["PatchError", "UnsupportedMXNetError", "ShapeSpecError", "BatchError", "DataSpecError",
           "SettingsError"]


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


class SettingsError(PatchError, ValueError):
    """A value given to :func:`mxpatch_bind.configure`, or its environment variable, is invalid.

    The message names the setting, the value given and the range expected. Nothing is changed.

    Examples
    --------
    >>> from mxpatch_bind import SettingsError
    >>> issubclass(SettingsError, ValueError)
    True
    """
