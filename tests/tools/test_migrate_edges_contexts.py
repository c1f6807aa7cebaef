"""Edges of ``migrate.contexts`` (issue 36, item 10): which functions are gpu/cpu twins (the
gpu one takes the cpu one's parameters and ``device_id`` last), and which calls of a gpu twin
choose by their context in the port (imported, the context's ``device_id`` last and
positional, not chosen already, not a local name), with the cpu twin imported beside it or
called by the name the file already gives it; compared whole."""

import ast

from mxpatch_bind.migrate import contexts

TWINS = ("def gpu_nms(dets, thresh, device_id):\n    pass\ndef cpu_nms(dets, thresh):\n    pass\n"
         "def gpu_x(a, device_id):\n    pass\ndef cpu_x(b):\n    pass\n"
         "def gpu_y(a, dev):\n    pass\ndef cpu_y(a):\n    pass\n"
         "def gpu_z(device_id):\n    pass\ndef cpu_z():\n    pass\n"
         "def gpu_only(a, device_id):\n    pass\n")
CHOICE = ("(gpu_nms(dets, 0.3, data.context.device_id) if data.context.device_type == 'gpu' "
          "else cpu_nms(dets, 0.3))")
SOURCE = ("from nms import gpu_nms\nfrom other import gpu_x as gx, cpu_x as cx\n"
          "from nms import gpu_z\ncpu_z = 1\n\n\ndef run(dets, data):\n"
          "    keep = gpu_nms(dets, 0.3, data.context.device_id)\n"
          "    more = gx(dets, data.context.device_id)\n"
          "    z = gpu_z(data.context.device_id)\n"
          "    k = gpu_nms(dets, 0.3, device_id=data.context.device_id)\n"
          "    j = gpu_nms(dets, 0.3, data.device_id)\n"
          f"    i = {CHOICE}\n"
          "    h = gpu_nms(dets, 0.3, data.context.device_id) if flag else None\n"
          "    g = gpu_nms(dets, data.context.device_id, thresh=0.3)\n"
          "    return keep\n\n\ndef other(gpu_nms, d):\n"
          "    return gpu_nms(d, d.context.device_id)\n")
NAMES = {"gpu_nms": "cpu_nms", "gx": "cpu_x", "gpu_z": "cpu_z"}


def test_twins_take_the_same_parameters_and_the_gpu_one_a_device_id_last():
    assert contexts.twins(ast.parse(TWINS)) == {"gpu_nms": "cpu_nms", "gpu_z": "cpu_z"}


def test_each_call_of_an_imported_gpu_twin_given_its_context_s_device_chooses_by_it():
    assert [call.lineno for call in contexts.context_calls(ast.parse(SOURCE), NAMES)] \
        == [8, 9, 10, 14]
    assert contexts.choose_by_context(SOURCE, NAMES) == SOURCE.replace(
        "from nms import gpu_nms\n", "from nms import gpu_nms, cpu_nms\n").replace(
        "    keep = gpu_nms(dets, 0.3, data.context.device_id)\n",
        f"    keep = {CHOICE}\n").replace(
        "    more = gx(dets, data.context.device_id)\n",
        "    more = (gx(dets, data.context.device_id) if data.context.device_type == 'gpu' "
        "else cx(dets))\n").replace(
        "    h = gpu_nms(dets, 0.3, data.context.device_id) if flag else None\n",
        f"    h = {CHOICE} if flag else None\n")
