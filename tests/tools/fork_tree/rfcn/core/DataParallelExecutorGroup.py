"""A group of executors, one per device, each bound with its own device's shapes
(a synthetic stand-in for the fork's vendored core/DataParallelExecutorGroup.py)."""

import logging

import numpy as np
from mxnet import ndarray as nd


class DataParallelExecutorGroup(object):
    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None):
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.for_training = for_training
        self.logger = logger
        self.fixed_param_names = fixed_param_names or []
        self.grad_req = grad_req
        if shared_group is not None:
            self.shared_data_arrays = shared_group.shared_data_arrays
        else:
            self.shared_data_arrays = [{} for _ in contexts]
        # one "sample" per device: the fork's rescale_grad default is 1 / number of devices
        self.batch_size = len(data_shapes)
        self.execs = []
        self._default_execs = None
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        for i in range(len(self.contexts)):
            label_shapes_i = label_shapes[i] if label_shapes is not None else []
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **dict(data_shapes[i] + label_shapes_i))
            else:
                self.execs.append(self._bind_ith_exec(i, data_shapes[i], label_shapes_i,
                                                      shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes

    def reshape(self, data_shapes, label_shapes):
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def forward(self, data_batch, is_train=None):
        for exec_, data in zip(self.execs, data_batch.data):
            for name, array in zip(self.data_shapes[0], data):
                array.copyto(exec_.arg_dict[name[0]])
            exec_.forward(is_train=is_train)

    def backward(self, out_grads=None):
        for exec_ in self.execs:
            exec_.backward(out_grads=[])

    def update_metric(self, eval_metric, labels):
        for texec, labels in zip(self.execs, labels):
            eval_metric.update(labels, texec.outputs)

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        shared_exec = None if shared_group is None else shared_group.execs[i]
        context = self.contexts[i]
        shared_data_arrays = self.shared_data_arrays[i]
        input_shapes = dict(data_shapes + label_shapes)
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**input_shapes)

        def _get_or_reshape(name, shared_data_arrays, arg_shape, context):
            if name in shared_data_arrays:
                arg_arr = shared_data_arrays[name]
                if np.prod(arg_arr.shape) >= np.prod(arg_shape):
                    # the shrink that MXNet 1.9.1 refuses: "Cannot reshape array of size ..."
                    return arg_arr.reshape(arg_shape)
            arg_arr = nd.zeros(arg_shape, context)
            shared_data_arrays[name] = arg_arr
            return arg_arr

        arg_arrays = [_get_or_reshape(name, shared_data_arrays, shape, context)
                      for name, shape in zip(self.arg_names, arg_shapes)]
        aux_arrays = [nd.zeros(shape, context) for shape in aux_shapes]
        return self.symbol.bind(ctx=context, args=arg_arrays, aux_states=aux_arrays,
                                grad_req='null', shared_exec=shared_exec)
