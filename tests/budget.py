"""How many examples a property test runs: the full count on CI, a fifth of it elsewhere.

``CI=true`` (what .ci/run sets) runs every property test with its full count of examples;
the inner loop (the README's ``pytest``, ``pytest -m "not slow"``) runs a fifth of them, at
least 3, so that a change is tried quickly and CI still searches as widely as before.
"""

import os

ON_CI = os.environ.get("CI", "").lower() == "true"
INNER_LOOP_SHARE = 5  # the inner loop runs 1/5 of each test's examples
MINIMUM = 3


def examples(full):
    """``full`` on CI, else ``full // 5`` (at least 3).

    >>> examples(300) in (300, 60)
    True
    """
    return full if ON_CI else max(MINIMUM, full // INNER_LOOP_SHARE)
