"""The number of samples a whole ``dist_*_sync`` job trains on per batch (private).

Stock ``Module.init_optimizer`` sets ``rescale_grad = 1/(batch_size * num_workers)`` on a
synchronous distributed kvstore, which assumes every worker holds as many samples as this
one. The devices of a per-device module each hold their own batch, so the workers add up
their counts with one reduction on the job's own kvstore instead.
"""

import weakref

__all__ = ["is_sync_dist", "global_sample_count", "KEY_PREFIX"]

KEY_PREFIX = "__mxpatch_bind_total_samples_"

# Pushed after the count. Servers without an optimizer merely add up the workers' pushes
# and give these back multiplied by num_workers; an optimizer already registered on the
# servers, or gradient compression, changes them, and the count with them.
_PROBE = (1.0, 0.5)

# kvstore -> counts it has carried. Each count needs a fresh key (a kvstore refuses a second
# init of a key), and every worker makes the same calls, so the n-th count gets the same key
# on every worker.
_counts_taken: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()


def is_sync_dist(kvstore):
    """Whether ``kvstore`` (a type name or a ``KVStore``) is synchronous and distributed.

    The same test as stock ``Module.init_optimizer``: the type contains ``'dist'`` and
    ``'_sync'`` (``dist_sync``, ``dist_device_sync``, ``dist_sync_device``).

    Examples
    --------
    >>> from mxpatch_bind.module.distributed import is_sync_dist
    >>> is_sync_dist('dist_device_sync'), is_sync_dist('dist_async'), is_sync_dist(None)
    (True, False, False)
    """
    kv_type = kvstore if isinstance(kvstore, str) else getattr(kvstore, "type", None) or ""
    return "dist" in kv_type and "_sync" in kv_type


def global_sample_count(kvstore, local_count):
    """The sum of every worker's ``local_count``, through one reduction on ``kvstore``.

    A collective call: every worker of the job must make it, in the same order relative to
    its other ``init`` calls on this kvstore. It must come before an optimizer is registered
    on the servers (``kvstore.set_optimizer``, which stock ``init_optimizer`` does), because
    from then on the servers apply the optimizer to every push instead of adding pushes up.

    Parameters
    ----------
    kvstore : mxnet.kvstore.KVStore
        A ``dist_*_sync`` kvstore of the running job.
    local_count : int
        This worker's number of samples (all its devices together).

    Returns
    -------
    int
        The number of samples of all workers together.

    Raises
    ------
    RuntimeError
        The servers did not simply add the pushes up (an optimizer or gradient compression
        was already set on this kvstore); the message carries what came back.
    """
    from mxnet import ndarray as nd

    index = _counts_taken.get(kvstore, 0)
    _counts_taken[kvstore] = index + 1
    # Stock Module keys the kvstore by parameter name and a kvstore refuses mixed key types,
    # so this key is a string too.
    key = f"{KEY_PREFIX}{index}__"
    sent = (float(local_count),) + _PROBE
    kvstore.init(key, nd.zeros((len(sent),)))
    kvstore.push(key, nd.array(sent))
    received = nd.zeros((len(sent),))
    kvstore.pull(key, out=received)
    total, *probe = received.asnumpy().tolist()
    if probe != [value * kvstore.num_workers for value in _PROBE] or total != int(total):
        raise RuntimeError(
            f"cannot count the samples of all workers on kvstore {kvstore.type!r}: pushing "
            f"{list(sent)!r} from each of {kvstore.num_workers} workers gave back "
            f"{[total] + probe!r} instead of their sum, so the servers already apply an optimizer "
            "or gradient compression (the kvstore served another module's init_optimizer, or "
            "set_optimizer / set_gradient_compression was called on it). Pass "
            "optimizer_params={'rescale_grad': 1.0 / <samples of all workers>, ...} to this "
            "module's init_optimizer on every worker.")
    return int(total)
