"""glibc's ``rand()``, so that SNIPER's padding proposals can be drawn as its C++ drew them
(private module).

glibc's default generator (``random()``'s additive feedback generator of degree 31, the state
a process starts with, ``srand(1)``): the state is filled from the seed by
``r[i] = 16807 · r[i-1] mod (2^31 - 1)``, then ``r[i] = r[i-31] + r[i-3]`` (mod 2^32), the
first 310 values of that recurrence are discarded and each call returns the next value
shifted right by one bit.
"""

from __future__ import annotations

import threading

__all__ = ["CRand", "PROCESS_RAND"]


class CRand:
    """A generator that returns what glibc's ``rand()`` returns after ``srand(seed)``.

    Examples
    --------
    >>> from mxpatch_bind._family_ops.crand import CRand
    >>> generator = CRand(1)
    >>> [generator.rand() for _ in range(3)]
    [1804289383, 846930886, 1681692777]
    """

    def __init__(self, seed: int = 1) -> None:
        self._lock = threading.Lock()
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Start again, as ``srand(seed)`` does (a seed of 0 counts as 1, as in glibc)."""
        state = [(seed or 1) & 0xFFFFFFFF]
        for _ in range(1, 31):
            state.append((16807 * state[-1]) % 2147483647)
        state += state[:3]
        for i in range(34, 344):
            state.append((state[i - 31] + state[i - 3]) & 0xFFFFFFFF)
        with self._lock:
            self._state = state[-34:]

    def rand(self) -> int:
        """The next value in [0, 2^31)."""
        with self._lock:
            value = (self._state[-31] + self._state[-3]) & 0xFFFFFFFF
            self._state.append(value)
            del self._state[0]
        return value >> 1


# The one generator of the process, as C's rand() state is one per process.
PROCESS_RAND = CRand(1)
