"""Private to :mod:`mxpatch_bind.compat`: ``fit(iter_size=)``, the training loop of 3DCE's copy
of the fork's module, which adds up the gradients of several batches before each update.

The copy is Ke Yan's revision of mx-rcnn's ``MutableModule`` (rsummers11/CADLab's
``lesion_detector_3DCE``, kept in jpulidojr/3DCE_new). What its ``fit`` does, kept here:

- it binds with ``grad_req='add'``, so that each backward adds to the gradient arrays;
- it updates after batch ``nbatch`` when ``nbatch % iter_size == 0``, counting from 0 in each
  epoch, then sets the gradients to zero: a run's first update uses one batch, each later one
  the ``iter_size`` batches since the update before;
- the batches after an epoch's last update stay in the gradients and go into the next epoch's
  first update (after the last epoch they are never applied);
- ``rescale_grad`` scales that sum once, at the update; nothing divides it by ``iter_size``;
- each epoch ends with the parameters and auxiliary states of the first device (the copy's
  ``get_params``) written to every device and handed to ``epoch_end_callback``, as that
  device's arrays.
"""

import numbers
import time

from ._mxnet_env import import_mxnet

mx = import_mxnet()
from mxnet.base import _as_list  # noqa: E402  (MXNet is imported, or named broken, above)
from mxnet.model import BatchEndParam  # noqa: E402


def check_fit_keywords(iter_size, allow_extra, eval_batch_end_callback):
    """Refuse what the copies' keywords cannot be, before anything is bound.

    Raises
    ------
    TypeError
        ``iter_size`` is not a whole number or ``allow_extra`` not a bool; or
        ``eval_batch_end_callback`` is a number: a call written in 3DCE's positional order,
        whose tenth argument was ``iter_size`` (``python -m mxpatch_bind migrate --write``
        passes it by keyword).
    ValueError
        ``iter_size`` is below 1.
    """
    if iter_size is not None:
        if isinstance(iter_size, bool) or not isinstance(iter_size, numbers.Integral):
            raise TypeError(f"fit(iter_size={iter_size!r}): expected a whole number of batches")
        if iter_size < 1:
            raise ValueError(f"fit(iter_size={iter_size!r}): expected 1 or more batches per "
                             "update")
    if not isinstance(allow_extra, bool):
        raise TypeError(f"fit(allow_extra={allow_extra!r}): expected True or False")
    if isinstance(eval_batch_end_callback, numbers.Number):
        raise TypeError(f"fit(eval_batch_end_callback={eval_batch_end_callback!r}) is a number, "
                        "not a callback: 3DCE's copy of the fork took iter_size at this position;"
                        " pass iter_size= by keyword")


def accumulating_fit(self, train_data, eval_data, eval_metric, epoch_end_callback,
                     batch_end_callback, kvstore, optimizer, optimizer_params, eval_end_callback,
                     iter_size, eval_batch_end_callback, initializer, arg_params, aux_params,
                     allow_missing, force_rebind, force_init, begin_epoch, num_epoch,
                     validation_metric, monitor, allow_extra):
    """3DCE's ``fit``: one update per ``iter_size`` batches (see the module's docstring).

    One function, as the copy's: each ``batch_end_callback`` gets its ``locals()``, and the
    family's callbacks read ``self`` and ``epoch_end_callback`` there (3DCE's Speedometer).

    Raises
    ------
    ValueError
        ``num_epoch`` is None, or ``iter_size`` > 1 on a module already bound with
        ``grad_req='write'`` (where the copy would have added nothing up).
    """
    if num_epoch is None:
        raise ValueError("fit(iter_size=...) needs num_epoch, the epoch to stop before")
    _check_binding(self, iter_size, force_rebind)
    self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
              for_training=True, force_rebind=force_rebind, grad_req='add')
    if monitor is not None:
        self.install_monitor(monitor)
    self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                     allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
    self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
    if validation_metric is None:
        validation_metric = eval_metric
    if not isinstance(eval_metric, mx.metric.EvalMetric):
        eval_metric = mx.metric.create(eval_metric)
    for epoch in range(begin_epoch, num_epoch):
        tic = time.time()
        eval_metric.reset()
        nbatch = 0
        data_iter = iter(train_data)
        end_of_batch = False
        next_data_batch = next(data_iter)
        while not end_of_batch:
            data_batch = next_data_batch
            if monitor is not None:
                monitor.tic()
            self.forward(data_batch, is_train=True)
            self.backward()
            if nbatch % iter_size == 0:
                self.update()
                _zero_gradients(self._exec_group)
            try:
                next_data_batch = next(data_iter)
                self.prepare(next_data_batch)
            except StopIteration:
                end_of_batch = True
            self.update_metric(eval_metric, data_batch.label)
            if monitor is not None:
                monitor.toc_print()
            if batch_end_callback is not None:
                batch_end_params = BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                 eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(batch_end_params)
            nbatch += 1
        _log_epoch(self.logger, epoch, eval_metric.get_name_value(), "Train", tic)
        arg_params, aux_params = first_device_parameters(self._exec_group)
        self.set_params(arg_params, aux_params)
        if epoch_end_callback is not None:
            for callback in _as_list(epoch_end_callback):
                callback(epoch, self.symbol, arg_params, aux_params)
        if eval_data:  # the copy's test: an empty list or loader is skipped
            _log_epoch(self.logger, epoch, self.score(
                eval_data, validation_metric, score_end_callback=eval_end_callback,
                batch_end_callback=eval_batch_end_callback, epoch=epoch), "Validation")
        train_data.reset()


def first_device_parameters(group):
    """``(arg_params, aux_params)``: the first device's own arrays, by name (the copy's
    ``get_params``, which did not average over devices)."""
    arg_params = {name: arrays[0] for name, arrays in zip(group.param_names, group.param_arrays)}
    aux_params = {name: arrays[0] for name, arrays in zip(group.aux_names, group.aux_arrays)}
    return arg_params, aux_params


def _check_binding(module, iter_size, force_rebind):
    # A module already bound keeps its grad_req through fit's bind; with 'write' each backward
    # would replace the gradients, and iter_size > 1 would update with the last batch's alone.
    if iter_size == 1 or not module.binded or force_rebind:
        return
    group = module._exec_group
    writing = [name for name in group.param_names if group.grad_req.get(name) == 'write']
    if writing:
        raise ValueError(f"fit(iter_size={iter_size}) adds gradients up, but the module is bound "
                         f"with grad_req='write' (for {writing[0]!r} and others): bind it with "
                         "grad_req='add', or pass force_rebind=True")


def _zero_gradients(group):
    for per_device in group.grad_arrays:
        for gradient in per_device:
            if gradient is not None:  # a frozen parameter's
                gradient[:] = 0.


def _log_epoch(logger, epoch, name_values, what, tic=None):
    for name, value in name_values:
        logger.info('Epoch[%d] %s-%s=%f', epoch, what, name, value)
    if tic is not None:
        logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)
