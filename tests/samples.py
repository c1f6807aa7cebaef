"""Samples for the data tests: images whose pixels are never 0, and random image sizes."""

import numpy as np


def make_images(sizes, channels=3, seed=0):
    """Images of the given (H, W) sizes with values 1..255, so zeros can only be padding."""
    rng = np.random.default_rng(seed)
    return [rng.integers(1, 256, size=(channels, h, w)).astype(np.float32) for h, w in sizes]


def random_sizes(count, seed=0, low=16, high=65):
    """``count`` random (H, W) sizes from ``low`` to ``high - 1``, the same for a seed."""
    return np.random.default_rng(seed).integers(low, high, size=(count, 2))
