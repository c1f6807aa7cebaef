"""Our wrappers in the targets' wrapt chains: where they stand, taking them out (private).

What ``uninstall()``, ``status()`` and a forked child need to know about a target's chain of
wrappers, and the sentences that describe it. The policies (what to do about a foreign
wrapper) are ``patching``'s; this module only looks and, when told, takes one out.
"""

import itertools
from typing import Any, NamedTuple, Tuple

import wrapt

from ._targets import current, full_name, owner


class Switch:
    """The ``enabled`` of one install's wrappers: off once they are removed or forgotten.

    Also what tells our wrappers apart (:func:`is_ours`): they are wrapt's own
    ``FunctionWrapper``, not a subclass, since wrapt's C descriptor costs a subclass about a
    third of a microsecond more on every call, and ``Module.forward`` is called every batch.
    """

    __slots__ = ("on",)

    def __init__(self):
        self.on = True

    def __call__(self):
        return self.on


class Place(NamedTuple):
    """Where our wrapper stands in one target's chain, as uninstall and status see it."""

    current: Any  # what the class's own __dict__ holds
    reachable: bool  # ours is in the chain that starts there
    above: Tuple[Any, ...]  # the chain entries above ours, outermost first

    @property
    def blocker(self):
        """The wrapper directly on ours if it is not wrapt's (ours cannot be spliced out)."""
        if self.above and not issubclass(type(self.above[-1]), wrapt.BaseObjectProxy):
            return self.above[-1]
        return None


def is_ours(entry):
    """Whether a chain entry is a wrapper of ours: switched by a :class:`Switch`. Told apart
    this way even without a handle (a child forked in the middle of an install has wrappers
    it never recorded)."""
    return isinstance(getattr(entry, "_self_enabled", None), Switch)


def is_guard(entry):
    """Whether a chain entry is a guard of ours on the new class of a half-reloaded module
    file (``_reloads.halfway_wrapper``: it refuses per-device calls until the package is
    reloaded)."""
    return is_ours(entry) and getattr(entry._self_wrapper, "halfway", False)


def place_of(target, handle):
    """The :class:`Place` of our wrapper ``handle`` in the target's chain."""
    found = current(target)
    if found is handle:  # the usual case, without walking the chain
        return Place(found, True, ())
    if wrapt.find_wrapper(found, handle) is None:
        return Place(found, False, ())
    above = itertools.takewhile(lambda entry: entry is not handle, wrapt.wrapper_chain(found))
    return Place(found, True, tuple(above))


def ours(target):
    """Every wrapper of ours in the target's chain, outermost first."""
    return [entry for entry in wrapt.wrapper_chain(current(target)) if is_ours(entry)]


def take_out(target, entry):
    """Remove one wrapper of ours from the target's chain; False if a foreign one covers it."""
    try:
        wrapt.unwrap_object(owner(target), target.attribute, entry)
    except wrapt.WrapperNotOutermostError:
        return False
    return True


# --------------------------------------------------------------------------- sentences
def refusal(target, place, handle):
    """Why ``uninstall()`` refuses: a wrapper that is not wrapt's sits directly on ours."""
    return (f"cannot uninstall: {full_name(target)} is wrapped by {place.blocker!r}, which is "
            "not a wrapt wrapper, so mxpatch_bind's wrapper cannot be taken out from under it. "
            "Nothing was changed. Remove that wrapper first (put back what it wraps) and call "
            "uninstall() again, or call mxpatch_bind.uninstall(force=True) to keep it: "
            "mxpatch_bind's wrapper inside it is then switched off and calls straight through "
            f"to {handle.__wrapped__!r}")


def left_inside(target, place, handle):
    """What ``uninstall(force=True)`` did under a wrapper that is not wrapt's."""
    return (f"mxpatch_bind.uninstall(force=True): {full_name(target)} stays wrapped by "
            f"{place.blocker!r}, which is not a wrapt wrapper; mxpatch_bind's wrapper inside "
            f"it is switched off (it calls straight through to {handle.__wrapped__!r}) and "
            "forgotten")


def forgotten(target, place, handle):
    """What ``uninstall()`` did with our wrapper on a target replaced behind our back."""
    return (f"mxpatch_bind.uninstall(): {replacement(target, place, handle)}; left it as it is "
            "and forgot mxpatch_bind's wrapper, now switched off (anything still holding it "
            f"calls straight through to {handle.__wrapped__!r})")


def replacement(target, place, handle):
    """What happened to a target whose chain no longer reaches our wrapper, as a clause."""
    if place.current is wrapt.unwrapped(handle):
        return (f"{full_name(target)} was restored to MXNet's original {place.current!r} "
                "behind mxpatch_bind's back")
    return (f"{full_name(target)} was replaced behind mxpatch_bind's back by "
            f"{place.current!r}, which does not reach mxpatch_bind's wrapper through "
            "__wrapped__")


def describe(entry):
    """A wrapt wrapper by the function it runs (its repr shows only an address)."""
    wrapper = getattr(entry, "_self_wrapper", None)
    if wrapper is None:
        return repr(entry)
    whose = "an mxpatch_bind " if is_ours(entry) else ""
    return (f"{whose}{type(entry).__name__} at 0x{id(entry):x} running "
            f"{getattr(wrapper, '__module__', '?')}."
            f"{getattr(wrapper, '__qualname__', repr(wrapper))}")
