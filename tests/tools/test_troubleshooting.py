"""docs/troubleshooting.rst quotes each slip's message word for word: made here, and compared.

Every block after a ``.. message: NAME`` comment is the last line of a traceback; the slip of
that name is made here (MXNet's own messages with the patch not installed, ours under it) and
its error, written as a traceback's last line writes it, must be the block's line exactly.
"""

import os
import re
import subprocess
import sys
import textwrap

import mxnet as mx
import pytest
from nets import conv_net
from paths import REPO

import mxpatch_bind

PAGE = REPO / "docs" / "troubleshooting.rst"
PER_DEVICE = [[("data", (2, 3, 8, 8))], [("data", (3, 3, 8, 8))]]
FLAT = [("data", (2, 3, 8, 8)), ("data", (3, 3, 8, 8))]


def quoted():
    """``{name: the message line}`` of every ``.. message:`` block of the page."""
    blocks = re.findall(r"^\.\. message: (.+)\n\n::\n\n   (.+)\n", PAGE.read_text(), re.MULTILINE)
    return dict(blocks)


def last_line(error):
    """The error as the last line of its traceback: builtins by name, others by full path."""
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"
    return f"{name}: {error}"


def module():
    return mx.mod.Module(conv_net(), context=[mx.cpu(0), mx.cpu(1)])


def stock_bound():
    mod = module()
    mod.bind([("data", (4, 3, 8, 8))], [("softmax_label", (4,))])
    mod.init_params()
    return mod


def per_device_batch(labels=True):
    data = [[mx.nd.ones((2, 3, 8, 8))], [mx.nd.ones((3, 3, 8, 8))]]
    label = [[mx.nd.zeros((2,))], [mx.nd.zeros((3,))]] if labels else None
    return mx.io.DataBatch(data=data, label=label)


def training_without_labels():
    with mxpatch_bind.patched():
        mod = module()
        mod.bind(PER_DEVICE, [[("softmax_label", (2,))], [("softmax_label", (3,))]])
        mod.init_params()
        mod.forward_backward(per_device_batch(labels=False))


def half_reload():
    code = textwrap.dedent("""
        import importlib, sys
        import mxnet as mx
        import mxpatch_bind
        mxpatch_bind.install()
        importlib.reload(sys.modules['mxnet.module.module'])
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3),
                                   name='softmax')
        mod = sys.modules['mxnet.module.module'].Module(net, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind(%r)
    """ % (PER_DEVICE,))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=180, check=False)
    assert result.returncode == 1, result.stderr
    raise RuntimeError(result.stderr.strip().splitlines()[-1])


SLIPS = {
    "per-device bind without install": lambda: module().bind(PER_DEVICE),
    "per-device batch without install": lambda: stock_bound().forward(per_device_batch()),
    "batch list of shapes without install": lambda: stock_bound().forward(
        [mx.io.DataBatch(data=arrays) for arrays in per_device_batch().data]),
    "flat spec without install": lambda: module().bind(FLAT),
    "flat spec under install": lambda: mxpatch_bind.bind(module(), FLAT),
    "training batch without labels": training_without_labels,
    "half reload": half_reload,
}


def test_every_message_of_the_page_has_its_slip_here_and_every_slip_its_message():
    assert sorted(quoted()) == sorted(SLIPS)


@pytest.mark.parametrize("name", sorted(SLIPS))
def test_the_slip_gives_the_message_the_page_quotes(name):
    with pytest.raises(Exception) as error:
        SLIPS[name]()
    got = error.value.args[0] if name == "half reload" else last_line(error.value)
    assert got == quoted()[name]


def test_the_page_is_in_the_documentations_table_of_contents():
    index = (REPO / "docs" / "index.rst").read_text()
    assert re.search(r"^   troubleshooting$", index, re.MULTILINE)
