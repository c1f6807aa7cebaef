"""A `MutableModule` implements the `BaseModule` API and allows input shapes to vary
between iterations (a synthetic stand-in for the fork's vendored core/module.py)."""

import logging

from mxnet import context as ctx
from mxnet.initializer import Uniform
from mxnet.module.base_module import BaseModule, _parse_data_desc

from .DataParallelExecutorGroup import DataParallelExecutorGroup


class Module(BaseModule):
    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None):
        super(Module, self).__init__(logger=logger)
        self._symbol = symbol
        self._context = context if isinstance(context, list) else [context]
        self._work_load_list = work_load_list or [1] * len(self._context)
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        self._exec_group = None
        self._preload_opt_states = None

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        self.binded = True
        self._data_shapes, self._label_shapes = zip(*[
            _parse_data_desc(self.data_names, self.label_names, data_shape, label_shape)
            for data_shape, label_shape in zip(data_shapes, label_shapes)])
        shared_group = None if shared_module is None else shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req)

    def reshape(self, data_shapes, label_shapes=None):
        self._exec_group.reshape(data_shapes, label_shapes)

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        batch_size = self._exec_group.batch_size  # the number of devices
        optimizer_params = dict(optimizer_params)
        optimizer_params.setdefault('rescale_grad', 1.0 / batch_size)
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def forward(self, data_batch, is_train=None):
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        raise NotImplementedError("_update_params_on_kvstore(param_arrays, grad_arrays, kv)")

    def update_metric(self, eval_metric, labels):
        self._exec_group.update_metric(eval_metric, labels)


class MutableModule(BaseModule):
    def __init__(self, symbol, data_names, label_names,
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 max_data_shapes=None, max_label_shapes=None, fixed_param_prefix=None):
        super(MutableModule, self).__init__(logger=logger)
        self._symbol = symbol
        self._data_names = data_names
        self._label_names = label_names
        self._context = context
        self._work_load_list = work_load_list
        self._curr_module = None
        self._max_data_shapes = max_data_shapes
        self._max_label_shapes = max_label_shapes
        self._fixed_param_prefix = fixed_param_prefix
        fixed_param_names = list()
        if fixed_param_prefix is not None:
            for name in self._symbol.list_arguments():
                for prefix in self._fixed_param_prefix:
                    if prefix in name:
                        fixed_param_names.append(name)
        self._fixed_param_names = fixed_param_names
        self._preload_opt_states = None

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None, grad_req='write'):
        self.binded = True
        max_shapes_dict = dict(self._max_data_shapes[0] if self._max_data_shapes else [])
        max_data_shapes = [(name, max_shapes_dict.get(name, shape))
                           for name, shape in data_shapes[0]]
        module = Module(self._symbol, self._data_names, self._label_names, logger=self.logger,
                        context=self._context, work_load_list=self._work_load_list,
                        fixed_param_names=self._fixed_param_names)
        module.bind([max_data_shapes for _ in range(len(self._context))], label_shapes,
                    for_training, inputs_need_grad, force_rebind=False, shared_module=None)
        self._curr_module = module

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        self._curr_module._preload_opt_states = self._preload_opt_states
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        self.optimizer_initialized = True

    def fit(self, train_data, eval_data=None, eval_metric='acc',
            epoch_end_callback=None, batch_end_callback=None, kvstore='local',
            optimizer='sgd', optimizer_params=(('learning_rate', 0.01),),
            initializer=Uniform(0.01), arg_params=None, aux_params=None,
            begin_epoch=0, num_epoch=None, prefix=None, state=None):
        self.bind(train_data.provide_data, train_data.provide_label, for_training=True)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if state is not None:
            self._curr_module.load_optimizer_states(state)
        for _ in range(begin_epoch, num_epoch):
            for data_batch in train_data:
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
            train_data.reset()

    def forward(self, data_batch, is_train=None):
        current = [dict(shapes) for shapes in self._curr_module.data_shapes]
        wanted = [dict(shapes) for shapes in data_batch.provide_data]
        if current != wanted:
            module = Module(self._symbol, self._data_names, self._label_names,
                            logger=self.logger, context=self._context,
                            work_load_list=self._work_load_list,
                            fixed_param_names=self._fixed_param_names)
            module.bind(data_batch.provide_data, data_batch.provide_label,
                        self._curr_module.for_training, self._curr_module.inputs_need_grad,
                        force_rebind=False, shared_module=self._curr_module)
            self._curr_module = module
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels):
        self._curr_module.update_metric(eval_metric, labels)
