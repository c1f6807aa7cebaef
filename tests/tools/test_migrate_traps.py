"""The family's Python 3 traps, fixed by ``migrate --to-python3`` and proven by running the
ported code: ``/`` that fed an integer parameter, ``yaml.load`` without a Loader, and a config
pickled through ``mx.sym.Custom``'s keywords to a custom operator.

The fixture trees are written here in the family's Python 2 style (``print`` statements,
``cPickle``), each reproducing one trap.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from mxpatch_bind.migrate import traps
from test_migrate import run_migrate, snapshot
from test_migrate_imports import write_tree

pytest.importorskip("fissix")
pytest.importorskip("libcst")


OLD_DIV = "from mxpatch_bind.py2 import old_div\n"
OLD_IDIV = "from mxpatch_bind.py2 import old_idiv\n"


def fixed(source, python2=True):
    return traps.fix(textwrap.dedent(source), python2)


# --------------------------------------------------------------------------- division
@pytest.mark.parametrize("source, expected", [
    ("r = bias.shape[0] / means.shape[0]\n", "r = bias.shape[0] // means.shape[0]\n"),
    ("h = (len(rois) + 1) / 2\n", "h = (len(rois) + 1) // 2\n"),
    ("h = -int(a) / (3 * 2)\n", "h = -int(a) // (3 * 2)\n"),
    ("x = w / 255.0\n", "x = w / 255.0\n"),
    ("x = float(w) / n\n", "x = float(w) / n\n"),
    ("import time\nx = n * s / (time.time() - t)\n", "import time\nx = n * s / (time.time() - t)\n"),
    # 'time' is no module here (nothing imports it): nothing proves a float
    ("x = n * s / (time.time() - t)\n", f"{OLD_DIV}x = old_div(n * s, (time.time() - t))\n"),
    ("from __future__ import division\nx = a / b\n", "from __future__ import division\n"
                                                     "x = a / b\n"),
    ("x = a / b  # half\n", f"{OLD_DIV}x = old_div(a, b)  # half\n"),
    ("x = (a + b) / c\n", f"{OLD_DIV}x = old_div((a + b), c)\n"),
    ("x = a / b / c\n", f"{OLD_DIV}x = old_div(old_div(a, b), c)\n"),
    ("y = len(s) / 2 / n\n", f"{OLD_DIV}y = old_div(len(s) // 2, n)\n"),
    ("w = f'{a / b}'\n", f"{OLD_DIV}w = f'{{old_div(a, b)}}'\n"),
    ("x = a /\\\n    b\n", f"{OLD_DIV}x = old_div(a,\\\n    b)\n"),
    ("x = (a\n     / b)\n", f"{OLD_DIV}x = (old_div(a\n, b))\n"),
    ("x = (a /  # half\n     b)\n", f"{OLD_DIV}x = (old_div(a, # half\n     b))\n"),
    ("x /= 2\n", f"{OLD_IDIV}x = old_idiv(x, 2)\n"),
    ("self.s[i, 1:] /= k\n", f"{OLD_IDIV}self.s[i, 1:] = old_idiv(self.s[i, 1:], k)\n"),
    ("x /= 2.0\n", "x /= 2.0\n"),
    # a target that calls (f() would run twice) or divides: the marker, for a person
    ("f()[0] /= k\n", "f()[0] /= k  " + traps.MARKER + "\n"),
    ("x[a / b] /= 2\n", f"{OLD_DIV}x[old_div(a, b)] /= 2  " + traps.MARKER + "\n"),
    ("s = '''a / b'''\n", "s = '''a / b'''\n"),
    ("from mxpatch_bind.py2 import old_div\nx = c / d\n",
     "from mxpatch_bind.py2 import old_div\nx = old_div(c, d)\n"),
    ("import os\nx = a / b\n", f"{OLD_DIV}import os\nx = old_div(a, b)\n"),
])
def test_a_division_is_rewritten_where_proven_and_kept_python_2_where_not(source, expected):
    assert fixed(source)[0] == expected


def test_a_file_of_a_python_3_code_base_keeps_its_divisions():
    assert fixed("x = a / b\n", python2=False) == ("x = a / b\n", [])


def test_the_marked_lines_are_read_from_comments_only():
    text = f"x = a / b  {traps.MARKER}\ns = \"{traps.MARKER}\"\n"
    assert traps.marked_lines(text) == [1]


def test_every_report_lists_the_kept_divisions_until_a_person_resolves_them(tmp_path,
                                                                             capsys):
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/rates.py":
                                 "def rate(n, t):\n    print 'rate'\n    return n / t\n"})
    run_migrate(capsys, root, "--to-python3")
    path = root / "pkg/rates.py"
    assert "return old_div(n, t)" in path.read_text()
    status, lines = run_migrate(capsys, root)
    assert lines[:-1] == ["pkg/rates.py:4: [check] old_div/old_idiv (mxpatch_bind.py2): a '/' "
                          "from Python 2, run by Python 2's rule (an integer from two "
                          "integers); write '//' where an integer is meant, '/' where a float "
                          "is"]
    assert status == 1
    assert run_migrate(capsys, root) == (1, lines)  # and again, until a person decides
    path.write_text(path.read_text().replace("old_div(n, t)", "n // t"))
    assert run_migrate(capsys, root)[0] == 0


def test_every_report_lists_a_marker_until_a_person_deletes_it(tmp_path, capsys):
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/rates.py":
                                 f"def rate(n, t):\n    return n / t  {traps.MARKER}\n"})
    status, lines = run_migrate(capsys, root)
    assert lines[:-1] == ["pkg/rates.py:2: [check] '/' from Python 2: an integer there, a "
                          "float on Python 3; write '//' where an integer was meant, then "
                          f"delete the marker {traps.MARKER!r}"]
    assert status == 1
    path = root / "pkg/rates.py"
    path.write_text(path.read_text().replace(f"n / t  {traps.MARKER}", "n // t"))
    assert run_migrate(capsys, root)[0] == 0


CALLBACK = {
    "proj/__init__.py": "",
    "proj/train.py": """\
        import mxnet as mx
        from core.callback import bbox_weights

        if __name__ == '__main__':
            print bbox_weights(mx.nd.ones((8,)), [0.1, 0.2, 0.3, 0.4])
        """,
    "proj/core/__init__.py": "",
    # Python 3 syntax already: its '/' still had Python 2's meaning in this code base
    "proj/core/callback.py": """\
        import mxnet as mx


        def bbox_weights(bias, stds):
            repeat = bias.shape[0] / len(stds)
            return mx.nd.repeat(mx.nd.array(stds), repeats=repeat).asnumpy().tolist()
        """,
}


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_a_division_that_feeds_an_integer_parameter_runs_after_the_port(tmp_path, capsys):
    root = write_tree(tmp_path, CALLBACK)
    status, lines = run_migrate(capsys, root)
    assert any(line.startswith("proj/core/callback.py:5: [port] Python 3 traps: '/' at line 5")
               for line in lines), lines
    assert run_migrate(capsys, root, "--to-python3")[0] == 0
    ran = subprocess.run([sys.executable, "proj/train.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    expected = [0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4]
    assert [round(x, 6) for x in eval(ran.stdout)] == expected


# Divisions no form proves: attributes and parameters that hold integers at run time (a
# sampler's rois per image fed to np.random.choice's size; a symbol's per-group width fed to
# Reshape's shape) beside ones that hold floats and integer arrays.
UNPROVEN = {
    "proj/__init__.py": "",
    "proj/train.py": """\
        import numpy as np
        import mxnet as mx
        from core.sampler import Sampler, group_shape

        if __name__ == '__main__':
            picked, half, boxes = Sampler(2, 64, 5.0).sample(np.random.RandomState(0))
            print len(picked), half, boxes.tolist()
            print group_shape(mx.sym.Variable('x'), dim=(1024, 96), group=16)
        """,
    "proj/core/__init__.py": "",
    "proj/core/sampler.py": """\
        import numpy as np
        import mxnet as mx


        class Sampler(object):
            def __init__(self, batch_images, batch_rois, scale):
                self._batch_images = batch_images
                self._batch_rois = batch_rois
                self._scale = scale

            def sample(self, rng):
                rois_per_image = self._batch_rois / self._batch_images
                boxes = np.array([[7, 9], [-7, 3]])
                boxes /= 2
                return (rng.choice(100, size=rois_per_image, replace=False),
                        self._scale / 2, boxes)


        def group_shape(data, dim, group):
            dim_group = (dim[0] / group, dim[1] / group)
            reshaped = mx.sym.Reshape(data, shape=(-1, group, dim_group[1]))
            return reshaped.infer_shape(x=(2, dim[1]))[1][0]
        """,
}


def test_divisions_no_form_proves_compute_what_python_2_computed(tmp_path, capsys):
    root = write_tree(tmp_path, UNPROVEN)
    assert run_migrate(capsys, root, "--to-python3")[0] == 1  # the kept divisions listed
    ran = subprocess.run([sys.executable, "proj/train.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    # Python 2: 64 / 2 == 32 (an int, so np.random.choice takes it), 5.0 / 2 == 2.5, the
    # integer array floor-divided in place, 96 / 16 == 6 in Reshape's shape.
    assert ran.stdout.splitlines() == ["32 2.5 [[3, 4], [-4, 1]]", "(2, 16, 6)"]
    status, lines = run_migrate(capsys, root)
    assert [line.split(": [check]")[0] for line in lines[:-1]] == [
        "proj/core/sampler.py:13", "proj/core/sampler.py:15", "proj/core/sampler.py:17",
        "proj/core/sampler.py:21"]


# FCIS's coco.py: Python 2's multiprocessing.dummy re-exported cpu_count; Python 3's does not.
DUMMY = {
    "lib/__init__.py": "",
    "lib/dataset.py": """\
        import multiprocessing.dummy as mp


        def areas(boxes):
            pool = mp.Pool(mp.cpu_count())
            try:
                return pool.map(lambda b: (b[2] - b[0]) * (b[3] - b[1]), boxes)
            finally:
                pool.close()
        """,
    "train.py": """\
        from lib.dataset import areas

        if __name__ == '__main__':
            print areas([(0, 0, 2, 3), (1, 1, 5, 2)])
        """,
}


def test_multiprocessing_dummys_cpu_count_comes_from_multiprocessing_after_the_port(tmp_path,
                                                                                   capsys):
    root = write_tree(tmp_path, DUMMY)
    status, lines = run_migrate(capsys, root)
    assert "lib/dataset.py:5: [port] Python 3 traps: multiprocessing.dummy.cpu_count is gone: " \
           "multiprocessing.cpu_count (Python 2's multiprocessing.dummy re-exported it) at " \
           "line 5: --to-python3 fixes them" in lines, lines
    run_migrate(capsys, root, "--to-python3")
    ported = (root / "lib/dataset.py").read_text()
    assert ported.startswith("import multiprocessing\nimport multiprocessing.dummy as mp\n")
    assert "pool = mp.Pool(multiprocessing.cpu_count())" in ported
    ran = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "[6, 4]\n"), ran.stderr


@pytest.mark.parametrize("source, changed", [
    ("import numpy as np\nt = np.linspace(.5, .95, np.round((.95 - .5) / .05) + 1)\n", True),
    # a name that may hold a float (older NumPy took int() of it): int() is exact
    ("import numpy as np\nt = np.linspace(0, 1, n)\n", True),
    ("import numpy as np\nn = len(x) + 1\nt = np.linspace(0, 1, n)\n", False),
    ("import numpy as np\nt = np.linspace(0, 1, len(x) + 1)\n", False),
])
def test_np_linspace_gets_int_only_around_a_count_that_is_no_name_or_integer(source, changed):
    assert (fixed(source, python2=False)[0] != source) == changed


# FCIS's coco.py writes pycocotools' RLE masks (counts: bytes on Python 3) with json.dump.
JSON_BYTES = {
    "results.py": """\
        import json


        def write(path, counts):
            results = [{'image_id': 1, 'segmentation': {'size': [4, 4],
                                                        'counts': counts.encode('ascii')}}]
            with open(path, 'w') as f:
                json.dump(results, f, sort_keys=True, indent=4)

        if __name__ == '__main__':
            write('out.json', 'Ue02')
            print open('out.json').read()
        """,
}


def test_bytes_reach_json_as_python_2_wrote_them_after_the_port(tmp_path, capsys):
    root = write_tree(tmp_path, JSON_BYTES)
    run_migrate(capsys, root, "--to-python3")
    assert "json.dump(results, f, sort_keys=True, indent=4, default=json_bytes)" in (
        root / "results.py").read_text()
    ran = subprocess.run([sys.executable, "results.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    expected = json.dumps([{"image_id": 1, "segmentation": {"size": [4, 4], "counts": "Ue02"}}],
                          sort_keys=True, indent=4)
    assert (ran.returncode, ran.stdout) == (0, expected + "\n"), ran.stderr


@pytest.mark.parametrize("source, expected", [
    ("import json\ns = json.dumps(x)\n",
     "from mxpatch_bind.py2 import json_bytes\nimport json\ns = json.dumps(x, default=json_bytes)\n"),
    ("import json\njson.dump(x, f,)\n",
     "from mxpatch_bind.py2 import json_bytes\nimport json\njson.dump(x, f, default=json_bytes)\n"),
    ("import json\ns = json.dumps(x, cls=Encoder)\n", "import json\ns = json.dumps(x, cls=Encoder)\n"),
    ("import json\ns = json.dumps(x, **options)\n", "import json\ns = json.dumps(x, **options)\n"),
])
def test_json_calls_of_a_python_2_code_base_get_the_bytes_default(source, expected):
    assert fixed(source)[0] == expected
    assert fixed(source, python2=False)[0] == source


# --------------------------------------------------------------------------- yaml
def test_yaml_load_gets_a_loader_and_the_ported_config_loads(tmp_path, capsys):
    pytest.importorskip("yaml")
    root = write_tree(tmp_path, {
        "exp.yaml": "network:\n  scales: [600, 1000]\n  name: tiny\n",
        "config.py": """\
            import yaml

            def update_config(path):
                with open(path) as f:
                    exp = yaml.load(f)
                print exp['network']['name'], exp['network']['scales']

            if __name__ == '__main__':
                update_config('exp.yaml')
            """})
    run_migrate(capsys, root, "--to-python3")
    assert "yaml.load(f, Loader=yaml.FullLoader)" in (root / "config.py").read_text()
    ran = subprocess.run([sys.executable, "config.py"], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, "tiny [600, 1000]\n"), ran.stderr


def test_a_python_3_file_with_only_a_yaml_trap_is_fixed_by_the_port(tmp_path, capsys):
    root = write_tree(tmp_path, {"config.py": "import yaml as y\ncfg = y.load(open('a'))\n"})
    status, lines = run_migrate(capsys, root)
    assert lines[0] == ("config.py:2: [port] Python 3 traps: yaml.load without a Loader "
                        "(PyYAML 6 requires one) at line 2: --to-python3 fixes them")
    assert status == 1
    run_migrate(capsys, root, "--to-python3")
    assert (root / "config.py").read_text() == ("import yaml as y\n"
                                                "cfg = y.load(open('a'), Loader=y.FullLoader)\n")
    assert run_migrate(capsys, root)[0] == 0


# --------------------------------------------------------------------------- pickled configs
OPERATOR_TREE = {
    "proj/__init__.py": "",
    "proj/operator_py/__init__.py": "",
    "proj/operator_py/scale.py": """\
        import cPickle
        import mxnet as mx


        class ScaleOperator(mx.operator.CustomOp):
            def __init__(self, cfg):
                super(ScaleOperator, self).__init__()
                self._cfg = cfg

            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], in_data[0] * self._cfg['SCALE'])

            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                self.assign(in_grad[0], req[0], out_grad[0] * self._cfg['SCALE'])


        @mx.operator.register('scale_by_cfg')
        class ScaleProp(mx.operator.CustomOpProp):
            def __init__(self, cfg):
                super(ScaleProp, self).__init__(need_top_grad=True)
                self._cfg = cPickle.loads(cfg)

            def list_arguments(self):
                return ['data']

            def infer_shape(self, in_shape):
                return in_shape, in_shape, []

            def create_operator(self, ctx, shapes, dtypes):
                return ScaleOperator(self._cfg)
        """,
    "proj/symbols/__init__.py": "import scaled\n",
    "proj/symbols/scaled.py": """\
        import cPickle
        import mxnet as mx
        from operator_py.scale import *


        def get_symbol(cfg):
            data = mx.sym.Variable('data')
            return mx.sym.Custom(data=data, op_type='scale_by_cfg', cfg=cPickle.dumps(cfg))
        """,
    "proj/run.py": """\
        import mxnet as mx
        import numpy as np
        from symbols import scaled

        if __name__ == '__main__':
            cfg = {'SCALE': 3.0, 'MEANS': np.array([0.0, 0.1]), 'NAME': u'tiny\\x00'}
            executor = scaled.get_symbol(cfg).simple_bind(mx.cpu(), data=(2, 2))
            executor.arg_dict['data'][:] = 2.0
            print executor.forward()[0].asnumpy().tolist()
        """,
}


@pytest.mark.slow  # the port runs as a child Python that imports MXNet
def test_a_config_pickled_through_a_custom_op_reaches_it_after_the_port(tmp_path, capsys):
    root = write_tree(tmp_path, OPERATOR_TREE)
    assert run_migrate(capsys, root, "--to-python3")[0] == 0
    symbol = (root / "proj/symbols/scaled.py").read_text()
    assert "cfg=base64.b64encode(pickle.dumps(cfg)).decode('ascii')" in symbol
    assert "pickle.loads(base64.b64decode(cfg))" in (root / "proj/operator_py/scale.py"
                                                     ).read_text()
    ran = subprocess.run([sys.executable, "proj/run.py"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "[[6.0, 6.0], [6.0, 6.0]]\n"), ran.stderr


def test_the_pickle_fix_is_made_once(tmp_path, capsys):
    root = write_tree(tmp_path, OPERATOR_TREE)
    run_migrate(capsys, root, "--to-python3")
    before = snapshot(root)
    assert run_migrate(capsys, root, "--to-python3")[0] == 0
    assert snapshot(root) == before


# --------------------------------------------------------------------------- pickles and NumPy
EVAL_PY2 = """\
import cPickle
import numpy as np


def thresholds():
    return np.linspace(.5, 0.95, np.round((0.95 - .5) / .05) + 1, endpoint=True)


def save(eval_file, results):
    with open(eval_file, 'w') as f:
        cPickle.dump(results, f, cPickle.HIGHEST_PROTOCOL)


def load(eval_file):
    with open(eval_file, 'r') as f:
        return cPickle.load(f)


def log(path):
    with open(path, 'w') as f:
        f.write('text stays text')

if __name__ == '__main__':
    save('r.pkl', {'t': thresholds()})
    print len(load('r.pkl')['t'])
"""


def test_pickles_and_linspace_run_after_the_port(tmp_path, capsys):
    root = write_tree(tmp_path, {"evaluate.py": EVAL_PY2})
    assert run_migrate(capsys, root, "--to-python3")[0] == 0
    ported = (root / "evaluate.py").read_text()
    assert "int(np.round((0.95 - .5) / .05) + 1)" in ported
    assert "open(eval_file, 'wb')" in ported and "open(eval_file, 'rb')" in ported
    assert "open(path, 'w')" in ported
    assert "pickle.load(f, encoding='latin1')" in ported
    ran = subprocess.run([sys.executable, "evaluate.py"], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, "10\n"), ran.stderr


def test_a_cache_python_2_pickled_loads_after_the_port(tmp_path, capsys):
    import numpy as np
    # protocol 2 with a Python 2 str holding an array's bytes: what cPickle.dump wrote
    cache = (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00"
             b"\x85q\x02U\x01bq\x03\x87q\x04Rq\x05(K\x01K\x02\x85q\x06cnumpy\ndtype\nq\x07U\x02"
             b"f8q\x08K\x00K\x01\x87q\tRq\n(K\x03U\x01<q\x0bNNNJ\xff\xff\xff\xffJ\xff\xff\xff"
             b"\xffK\x00tq\x0cb\x89U\x10\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00"
             b"\x00\xc0q\rtq\x0eb.")
    (tmp_path / "roidb.pkl").write_bytes(cache)
    root = write_tree(tmp_path, {"cached.py": "import cPickle\n\nwith open('roidb.pkl', 'rb') "
                                              "as fid:\n    roidb = cPickle.load(fid)\n"
                                              "print roidb.tolist()\n"})
    run_migrate(capsys, root, "--to-python3")
    ran = subprocess.run([sys.executable, "cached.py"], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, "[1.0, -2.0]\n"), ran.stderr
    assert np.array_equal(np.array([1.0, -2.0]), np.array(eval(ran.stdout)))
