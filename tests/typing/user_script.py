"""A user's training script, checked with ``mypy --strict`` (``.ci/run``): the public API
is typed, so calls into it are not untyped calls.

Not collected by pytest (no ``test_`` prefix) and not run: mypy only reads it.
"""

from typing import List, Optional, Tuple

import mxpatch_bind
from mxpatch_bind import (
    BatchError,
    DataSpecError,
    Input,
    PatchError,
    PatchStatus,
    PerDeviceIter,
    PerDevicePrefetchingIter,
    Settings,
    SettingsError,
    ShapeSpecError,
    UnsupportedMXNetError,
)


def train(symbol: object, images: List[object], labels: List[int]) -> Optional[str]:
    mxpatch_bind.install()
    mxpatch_bind.install(force=False)
    settings: Settings = mxpatch_bind.configure(exec_cache_size=8, reshape_threads=2)
    state: PatchStatus = mxpatch_bind.status()
    installed: bool = mxpatch_bind.is_installed()
    with mxpatch_bind.patched():
        pass

    @mxpatch_bind.patched()
    def step() -> int:
        return 1

    count: int = step()
    data = PerDeviceIter(images, labels, num_devices=2, batch_per_device=2, shuffle=True,
                         seed=0, group_window=8)
    data.reset()
    by_size = PerDeviceIter(images, labels, num_devices=2, batch_size=4)
    batches: int = len(by_size)
    described: str = repr(by_size)
    prefetched = PerDevicePrefetchingIter(data)
    prefetched.reset()
    prefetched.close()
    box = Input("boxes", pad_value=-1)
    size: Tuple[int, int] = mxpatch_bind.image_size("image.jpg")
    mxpatch_bind.bind(None, [[("data", (1, 3, 8, 8))], [("data", (2, 3, 8, 8))]])
    mxpatch_bind.reshape(None, [[("data", (1, 3, 8, 8))], [("data", (2, 3, 8, 8))]])
    mxpatch_bind.uninstall()
    mxpatch_bind.uninstall(force=True)
    errors = (BatchError, DataSpecError, PatchError, SettingsError, ShapeSpecError,
              UnsupportedMXNetError)
    del symbol, settings, installed, count, box, size, errors, batches, described
    return state.mxnet_version


def check_bind_per_device(mxpatch: PatchStatus) -> None:
    """A test in a user's suite, as docs/ci.rst shows it: the plugin's fixture annotated."""
    assert mxpatch.installed and mxpatch.mxnet_version is not None
