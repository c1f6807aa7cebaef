"""The quickstart's complete script: images of different sizes, trained on two devices.

``PerDeviceIter`` pads each device only to its own largest image, ``Module.fit`` binds and
trains per device (after ``mxpatch_bind.install()``), ``Module.score`` evaluates. Two CPU
contexts stand in for two GPUs (``mx.gpu(0), mx.gpu(1)`` on a GPU machine)::

    python examples/quickstart.py

docs/quickstart.rst shows this file; tests/tools/test_quickstart.py runs it.
"""

import logging

import mxnet as mx
import numpy as np

import mxpatch_bind

mxpatch_bind.install()  # stock Module.bind / reshape / forward now take per-device shapes

mx.random.seed(0)  # the initial weights: the same run every time
# 64 images of random sizes: label 1 is a bright image, label 0 a dark one, both noisy.
rng = np.random.default_rng(0)
labels = rng.integers(0, 2, size=64)
images = [(rng.random((3, h, w)) + 2 * label).astype("float32")
          for label, (h, w) in zip(labels, rng.integers(12, 40, size=(64, 2)))]
train = mxpatch_bind.PerDeviceIter(images[:48], labels[:48], num_devices=2, batch_size=8,
                                   shuffle=True)
test = mxpatch_bind.PerDeviceIter(images[48:], labels[48:], num_devices=2, batch_size=8)
print(train)  # what it holds; len(train) is its batches per epoch

# Conv-ReLU, global pooling, a classifier: one set of parameters fits every image size.
net = mx.sym.Convolution(mx.sym.Variable("data"), num_filter=8, kernel=(3, 3), name="conv")
net = mx.sym.Pooling(mx.sym.Activation(net, act_type="relu"), global_pool=True,
                     pool_type="avg", kernel=(1, 1))
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name="fc"), name="softmax")

logging.basicConfig(level=logging.INFO, format="%(message)s")  # fit's per-epoch lines
mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
mod.fit(train, num_epoch=5, optimizer="adam", optimizer_params={"learning_rate": 0.05},
        initializer=mx.init.Xavier(), eval_metric="acc")
print("per-device data shapes of the last batch:",
      [[desc.shape for desc in device] for device in mod.data_shapes])
(name, accuracy), = mod.score(test, "acc")
print(f"test {name}: {accuracy:.2f}")
mxpatch_bind.uninstall()
