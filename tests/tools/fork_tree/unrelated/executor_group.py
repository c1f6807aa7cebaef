"""A stock-style executor group (one flat batch split by slices): not the fork's."""


class DataParallelExecutorGroup(object):
    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None):
        self.batch_size = None
        self.slices = None
        self.execs = []
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def decide_slices(self, data_shapes):
        self.batch_size = data_shapes[0][1][0]

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        self.decide_slices(data_shapes)

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        def _get_or_reshape(name, shared_data_arrays, arg_shape):
            return shared_data_arrays[name].reshape(arg_shape)
        return _get_or_reshape
