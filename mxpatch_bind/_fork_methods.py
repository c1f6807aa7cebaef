"""Private to :mod:`mxpatch_bind.compat`: the fork's ``init_optimizer`` and ``fit``, as
functions that ``compat`` binds onto each stock module it returns.

``init_optimizer`` keeps the fork's default ``rescale_grad`` (1 / number of devices);
``fit`` takes the fork's ``prefix`` and ``state`` keywords and, for a module made with
``epoch_end_callback_first=True``, calls each ``epoch_end_callback`` with epoch -1 once the
optimizer is set, as Relation Networks' copy did. It also takes two keywords of modified
copies: 3DCE's ``iter_size`` (its training loop, in :mod:`._accumulating_fit`) and
road_obj_detect's ``allow_extra``.
"""

import contextlib
import os
import warnings

from ._accumulating_fit import accumulating_fit, check_fit_keywords
from ._mxnet_env import import_mxnet
from .horovod import is_horovod
from .module.distributed import is_sync_dist

mx = import_mxnet()
from mxnet.base import _as_list  # noqa: E402  (MXNet is imported, or named broken, above)

_UNIFORM = mx.init.Uniform(0.01)  # the fork's default initializer, one object as the fork's


def fork_init_optimizer(self, kvstore='local', optimizer='sgd',
                         optimizer_params=(('learning_rate', 0.01),), force_init=False):
    """``Module.init_optimizer`` with the fork's default ``rescale_grad``.

    The fork's executor group counted devices as its ``batch_size``, so an optimizer given
    by name without ``rescale_grad`` got ``1 / number of devices``, times the workers on a
    store that adds up the workers' gradients (``dist_*_sync``, as the fork's scripts ran,
    and ``'horovod'``, under the same rule: every worker's devices count). An explicit
    ``rescale_grad`` or an ``Optimizer`` object is passed on unchanged. Parameters as
    ``Module.init_optimizer``.
    """
    _init_optimizer_with_fork_rescale(self, kvstore, optimizer, optimizer_params, force_init)
    after = self.__dict__.pop("_after_init_optimizer", None)  # fit's, see fork_fit
    if after is not None:
        after()


def _init_optimizer_with_fork_rescale(self, kvstore, optimizer, optimizer_params, force_init):
    will_init = self.binded and self.params_initialized and (
        force_init or not self.optimizer_initialized)
    if not (will_init and isinstance(optimizer, str)
            and "rescale_grad" not in dict(optimizer_params)):
        return type(self).init_optimizer(self, kvstore, optimizer, optimizer_params, force_init)
    adds_workers = is_sync_dist(kvstore) or is_horovod(kvstore)
    if isinstance(kvstore, str) and adds_workers:
        kvstore = mx.kv.create(kvstore)
    workers = kvstore.num_workers if adds_workers else 1
    optimizer_params = dict(optimizer_params, rescale_grad=1.0 / (len(self._context) * workers))
    with warnings.catch_warnings():
        # The Horovod store warns that a given rescale_grad is not 1/(all samples) and to leave
        # it out; here the user did leave it out, and the fork's rule is the one asked for.
        warnings.filterwarnings("ignore", message="kvstore='horovod': rescale_grad=")
        return type(self).init_optimizer(self, kvstore, optimizer, optimizer_params, force_init)


def fork_fit(self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None,
              batch_end_callback=None, kvstore='local', optimizer='sgd',
              optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None,
              eval_batch_end_callback=None, initializer=_UNIFORM,
              arg_params=None, aux_params=None, allow_missing=False, force_rebind=False,
              force_init=False, begin_epoch=0, num_epoch=None, validation_metric=None,
              monitor=None, prefix=None, state=None, *, iter_size=None, allow_extra=False,
              **kwargs):
    """``Module.fit`` that also takes the fork's ``prefix`` and ``state`` keywords, and the
    ``iter_size`` and ``allow_extra`` keywords of two modified copies.

    ``prefix`` was accepted and ignored by the fork's ``MutableModule.fit`` (checkpoints
    come from ``epoch_end_callback``); it is ignored here too. ``state`` is the path of an
    optimizer-states file (``prefix-0004.states``) that the fork loaded right after
    ``init_optimizer``; it is loaded at the same point here. Other keywords (stock's
    ``sparse_row_id_fn``) are passed on.

    With ``MutableModule(..., epoch_end_callback_first=True)`` each ``epoch_end_callback``
    is called once with epoch ``-1`` and this call's ``arg_params`` / ``aux_params`` right
    after ``init_optimizer``, before the first epoch (Relation Networks' copy).

    ``iter_size`` (keyword only; 3DCE's copy placed it after ``eval_end_callback``): given,
    1 included, ``fit`` runs that copy's loop, which binds with ``grad_req='add'``, updates
    after every ``iter_size`` batches with the sum of their gradients (scaled by
    ``rescale_grad`` once) and ends each epoch with the first device's parameters
    (:mod:`mxpatch_bind._accumulating_fit` lists what it keeps); None: stock's loop.
    ``allow_extra`` (keyword only; road_obj_detect's copy): accepted as that copy took it;
    names in ``arg_params`` / ``aux_params`` that the network lacks are ignored whatever its
    value, by stock ``init_params`` as by that copy.

    Raises
    ------
    FileNotFoundError
        ``state`` names no file; raised before anything is bound.
    TypeError, ValueError
        ``iter_size`` is not a whole number of 1 or more, ``allow_extra`` is not a bool, or
        ``eval_batch_end_callback`` is a number (3DCE's ``iter_size`` passed by position);
        raised before anything is bound. TypeError too for stock's other keywords
        (``sparse_row_id_fn``) with ``iter_size``.
    """
    check_fit_keywords(iter_size, allow_extra, eval_batch_end_callback)
    if iter_size is not None and kwargs:
        raise TypeError(f"fit(iter_size=...) takes no {', '.join(sorted(kwargs))}: 3DCE's loop, "
                        "which it runs, had none")
    if state is not None:
        if not os.path.isfile(os.fspath(state)):
            raise FileNotFoundError(f"fit(state={state!r}): no such optimizer-states file")
        if self.optimizer_initialized:
            self.load_optimizer_states(state)
        else:
            self._preload_opt_states = state  # stock init_optimizer loads it, then clears it
    with _epoch_end_first(self, epoch_end_callback, arg_params, aux_params):
        if iter_size is not None:
            return accumulating_fit(
                self, train_data, eval_data, eval_metric, epoch_end_callback,
                batch_end_callback, kvstore, optimizer, optimizer_params, eval_end_callback,
                iter_size, eval_batch_end_callback, initializer, arg_params, aux_params,
                allow_missing, force_rebind, force_init, begin_epoch, num_epoch,
                validation_metric, monitor, allow_extra)
        return type(self).fit(
            self, train_data, eval_data=eval_data, eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
            kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params,
            eval_end_callback=eval_end_callback, eval_batch_end_callback=eval_batch_end_callback,
            initializer=initializer, arg_params=arg_params, aux_params=aux_params,
            allow_missing=allow_missing, force_rebind=force_rebind, force_init=force_init,
            begin_epoch=begin_epoch, num_epoch=num_epoch, validation_metric=validation_metric,
            monitor=monitor, **kwargs)


@contextlib.contextmanager
def _epoch_end_first(module, epoch_end_callback, arg_params, aux_params):
    """Within ``fit``: with ``epoch_end_callback_first``, the callbacks' epoch -1 call, run
    by ``fork_init_optimizer`` once the optimizer is set (where the copy made it)."""
    if getattr(module, "_epoch_end_callback_first", False) and epoch_end_callback is not None:
        callbacks = _as_list(epoch_end_callback)  # as stock fit and the copy read it

        def call_epoch_end_first():
            for callback in callbacks:
                callback(-1, module.symbol, arg_params, aux_params)
        module._after_init_optimizer = call_epoch_end_first
    try:
        yield
    finally:
        module.__dict__.pop("_after_init_optimizer", None)  # fit stopped before it
