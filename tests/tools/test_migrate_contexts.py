"""``migrate``'s contexts.py: a CUDA-only function handed a context's device id takes the
module's CPU twin on a CPU context. The end-to-end case (ported tree, run on a CPU context)
is in test_migrate_extensions.py; these pin what counts as a twin and as such a call."""

import ast
import textwrap

import pytest
from test_migrate import run_migrate
from test_migrate_extensions import TWINS
from test_migrate_imports import write_tree

from mxpatch_bind.migrate import contexts

pytest.importorskip("libcst")

NMS = """\
def cpu_nms_wrapper(thresh):
    pass


def gpu_nms_wrapper(thresh, device_id):
    pass
"""


def twins(source):
    return contexts.twins(ast.parse(textwrap.dedent(source)))


def test_a_twin_takes_the_gpu_functions_parameters_but_its_last_device_id():
    assert twins(NMS) == {"gpu_nms_wrapper": "cpu_nms_wrapper"}
    assert twins(NMS.replace("device_id", "gpu_index")) == {}
    assert twins(NMS.replace("cpu_nms_wrapper(thresh)", "cpu_nms_wrapper(thresh, n)")) == {}
    assert twins(NMS.replace("cpu_nms_wrapper", "host_nms_wrapper")) == {}


@pytest.mark.parametrize("call, changed", [
    ("nms = gpu_nms_wrapper(t, in_data[0].context.device_id)", True),
    ("nms = gpu_nms_wrapper(t, in_data[0].context.device_id, extra=1)", False),
    ("nms = gpu_nms_wrapper(t, 0)", False),
    ("nms = gpu_nms_wrapper(t, ctx.device_id)", False),
])
def test_only_a_call_given_a_contexts_device_id_and_no_keyword_chooses(call, changed):
    text = f"from nms import gpu_nms_wrapper\n{call}\n"
    new = contexts.choose_by_context(text, {"gpu_nms_wrapper": "cpu_nms_wrapper"})
    assert (new != text) == changed


def test_a_cpu_twin_already_imported_is_not_imported_twice():
    text = ("from nms import cpu_nms_wrapper, gpu_nms_wrapper\n"
            "nms = gpu_nms_wrapper(t, x.context.device_id)\n")
    new = contexts.choose_by_context(text, {"gpu_nms_wrapper": "cpu_nms_wrapper"})
    assert new.splitlines()[0] == "from nms import cpu_nms_wrapper, gpu_nms_wrapper"
    assert new.splitlines()[1] == ("nms = (gpu_nms_wrapper(t, x.context.device_id) if "
                                   "x.context.device_type == 'gpu' else cpu_nms_wrapper(t))")


def test_a_module_guarded_by_an_earlier_port_still_counts_as_importing_cuda(tmp_path, capsys):
    # nms.py ported (its CUDA import in the guard's try) while proposal.py is not yet: the
    # next run still makes the call choose
    tree = dict(TWINS)
    tree["lib/nms/nms.py"] = TWINS["lib/nms/nms.py"].replace(
        "from gpu_nms import gpu_nms\n",
        "try:\n            from .gpu_nms import gpu_nms\n        except ImportError:\n"
        "            def gpu_nms(*args, **kwargs):\n                raise ImportError('cuda')\n"
    ).replace("from cpu_nms import cpu_nms", "from .cpu_nms import cpu_nms")
    root = write_tree(tmp_path, tree)
    lines = run_migrate(capsys, root)[1]
    assert any(line.startswith("proj/proposal.py:5: [port] calls gpu_nms_wrapper with a "
                               "context's device_id") for line in lines), lines


def test_a_gpu_twin_imported_under_another_name_still_chooses_by_context():
    text = ("from nms.nms import gpu_nms_wrapper as nms_gpu\n"
            "nms = nms_gpu(t, x.context.device_id)\n")
    new = contexts.choose_by_context(text, {"nms_gpu": "cpu_nms_wrapper"})
    assert new == ("from nms.nms import gpu_nms_wrapper as nms_gpu, cpu_nms_wrapper\n"
                   "nms = (nms_gpu(t, x.context.device_id) if x.context.device_type == 'gpu' "
                   "else cpu_nms_wrapper(t))\n")


def test_a_local_that_shadows_the_gpu_twins_name_is_not_its_call():
    text = ("from nms import gpu_nms_wrapper\n"
            "def f(gpu_nms_wrapper):\n    return gpu_nms_wrapper(t, x.context.device_id)\n")
    assert contexts.choose_by_context(text, {"gpu_nms_wrapper": "cpu_nms_wrapper"}) == text


def test_the_scan_finds_an_aliased_gpu_twin(tmp_path, capsys):
    tree = dict(TWINS)
    tree["proj/proposal.py"] = TWINS["proj/proposal.py"].replace(
        "import gpu_nms_wrapper", "import gpu_nms_wrapper as nms_gpu").replace(
        "gpu_nms_wrapper(", "nms_gpu(")
    root = write_tree(tmp_path, tree)
    lines = run_migrate(capsys, root)[1]
    assert any("[port] calls nms_gpu with a context's device_id" in line for line in lines), lines


def test_a_gpu_twin_the_module_also_rebinds_is_left_as_it_is():
    # the name holds the module's own wrapper then, not the import: its CPU twin is no twin
    text = ("from nms import gpu_nms_wrapper\n"
            "gpu_nms_wrapper = profiled(gpu_nms_wrapper)\n"
            "nms = gpu_nms_wrapper(t, x.context.device_id)\n")
    assert contexts.choose_by_context(text, {"gpu_nms_wrapper": "cpu_nms_wrapper"}) == text
