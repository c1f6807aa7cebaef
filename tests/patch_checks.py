"""Checks the patch tests share: what the patched classes hold."""


def assert_originals_restored(originals):
    """Each ``(owner, name)`` of ``originals`` holds again the very object recorded for it."""
    for (owner, name), original in originals.items():
        assert vars(owner)[name] is original, f"{owner.__name__}.{name} not restored"
