"""What checking a per-device batch costs next to the forward it guards, and what recording
a module for an all-or-nothing transition costs next to a reshape (docs/design.rst).

Run from a checkout: ``PYTHONPATH=. python docs/measure_validation_cost.py``. Both are timed
side by side in one run, on the tests' small conv net on cpu(0)/cpu(1), and the ratio printed.
"""

import sys
import timeit

import mxnet as mx

sys.path.insert(0, "tests")

from nets import conv_net  # noqa: E402

import mxpatch_bind  # noqa: E402
from mxpatch_bind.module import forward as forward_  # noqa: E402
from mxpatch_bind.module import transactions  # noqa: E402

SHAPES = [(2, 3, 32, 32), (3, 3, 24, 24)]


def main(repeats=7, number=200):
    mod = mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])
    mxpatch_bind.bind(mod, [[("data", s)] for s in SHAPES],
                      [[("softmax_label", (s[0],))] for s in SHAPES])
    mod.init_params()
    batch = mx.io.DataBatch(data=[[mx.nd.ones(s)] for s in SHAPES],
                            label=[[mx.nd.zeros((s[0],))] for s in SHAPES])

    def check():
        forward_.prepare(mod, batch, is_train=False)  # the checked batch and its spec

    def forward():
        mod.forward(batch, is_train=False)
        mx.nd.waitall()

    forward()
    check_s = min(timeit.repeat(check, repeat=repeats, number=number)) / number
    forward_s = min(timeit.repeat(forward, repeat=repeats, number=number)) / number
    print("check %.1f us, forward (check included) %.1f us, ratio %.3f"
          % (check_s * 1e6, forward_s * 1e6, check_s / forward_s))

    other = [[("data", (s[0], 3, s[2] - 2, s[3] - 2))] for s in SHAPES]
    labels = [[("softmax_label", (s[0],))] for s in SHAPES]

    def record():
        transactions._snapshot(mod, {}, {})

    def uncached_reshape():
        mod._exec_group._drop_cache()  # every reshape reaches MXNet
        mxpatch_bind.reshape(mod, other, labels)
        mxpatch_bind.reshape(mod, [[("data", s)] for s in SHAPES], labels)

    record_s = min(timeit.repeat(record, repeat=repeats, number=number)) / number
    reshape_s = min(timeit.repeat(uncached_reshape, repeat=repeats, number=20)) / 20
    print("record %.1f us, free reshape to new shapes and back (records included) %.1f us, "
          "ratio %.3f"
          % (record_s * 1e6, reshape_s * 1e6, record_s / reshape_s))


if __name__ == "__main__":
    main()
