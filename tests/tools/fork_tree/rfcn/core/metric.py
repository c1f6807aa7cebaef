"""A fork-style metric: ``update`` sees one device's labels and outputs at a time."""

import mxnet as mx
import numpy as np


class LogLossMetric(mx.metric.EvalMetric):
    """Cross-entropy; ``history`` keeps every device's loss of every batch, in order."""

    def __init__(self):
        super(LogLossMetric, self).__init__("LogLoss")
        self.history = []

    def update(self, labels, preds):
        prob = preds[0].asnumpy().astype(np.float64)
        label = labels[0].asnumpy().astype("int32")
        loss = float(-np.log(prob[np.arange(label.shape[0]), label] + 1e-14).sum())
        self.history.append(loss)
        self.sum_metric += loss
        self.num_inst += label.shape[0]
