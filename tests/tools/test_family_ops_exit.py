"""A script using a family operator waits for MXNet's engine at exit.

MXNet 1.9.1 runs a Python operator in its own worker thread; one still queued or running
when the interpreter finalizes can hang the process (a script that queued one ROIAlign
forward of 300 ROIs and exited hung in 1 of 4 runs here, one with a doubling operator in 3
of 5). The drop-ins register ``mx.nd.waitall`` at exit when the first one is built; with it,
no run hung.
"""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""\
    import atexit
    import mxnet as mx

    atexit.register(print, 'exited')  # registered first: runs last
    waitall = mx.nd.waitall
    mx.nd.waitall = lambda: (print('waited for the engine'), waitall())

    from mxpatch_bind.compat import ROIAlign

    pooled = ROIAlign(mx.sym.Variable('feat'), mx.sym.Variable('rois'), (7, 7), 0.5)
    executor = pooled.simple_bind(mx.cpu(), feat=(1, 16, 40, 40), rois=(300, 5))
    executor.forward(is_train=True)  # queued, never read
    ROIAlign(mx.sym.Variable('feat'), mx.sym.Variable('rois'), (7, 7), 0.5)
    print('forwarded')
    """)


@pytest.mark.slow
def test_a_script_that_leaves_a_forward_queued_waits_for_it_once_at_exit():
    ran = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "forwarded\nwaited for the engine\nexited\n"), \
        ran.stderr
