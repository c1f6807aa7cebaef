"""migrate's Python 3 traps (migrate/traps.py), proven by running both sides
(tests/py2_oracle.py): yaml.load without a Loader, pickled files and their modes, caches
Python 2 wrote, bytes through json, multiprocessing.dummy's re-exports and np.linspace's
float count, each in every spelling the family (or a user) writes it."""

from textwrap import dedent

import pytest
from py2_oracle import assert_same_output

pytest.importorskip("fissix")
pytest.importorskip("libcst")

CONFIG = """\
    name: rfcn
    network:
      PIXEL_MEANS: [103.06, 115.9, 123.15]
    TRAIN:
      lr: 0.0005
      BATCH_IMAGES: 1
    """

# How a config reaches yaml.load: (the import, the call), each a Python 2 program's lines.
YAML_FORMS = {
    "import yaml": ("import yaml", "yaml.load(f)"),
    "import yaml as y": ("import yaml as y", "y.load(f)"),
    "from yaml import load": ("from yaml import load", "load(f)"),
    "from yaml import load as read": ("from yaml import load as read", "read(f)"),
    "stream= keyword": ("import yaml", "yaml.load(stream=f)"),
    "the text": ("import yaml", "yaml.load(f.read())"),
}


@pytest.mark.parametrize("imports, call", YAML_FORMS.values(), ids=YAML_FORMS.keys())
def test_a_config_loaded_without_a_loader_gives_the_same_values(tmp_path, imports, call):
    assert_same_output(tmp_path, {"config.yaml": CONFIG, "main.py": f"""\
        {imports}
        with open('config.yaml') as f:
            cfg = {call}
        print cfg['name'], repr(cfg['TRAIN']['lr']), repr(cfg['network']['PIXEL_MEANS'])
        """}, modules=("yaml",))



# SNIPER's configs: its scales and valid ranges are tuples, tagged !!python/tuple
TUPLE_CONFIG = """\
    TRAIN:
      SCALES:
      - !!python/tuple [1400, 2000]
      - !!python/tuple [-1, 512]
      VALID_RANGES:
      - !!python/tuple [-1, 80]
    """


def test_a_config_of_python_tuples_loaded_without_a_loader_gives_the_same_tuples(tmp_path):
    assert_same_output(tmp_path, {"config.yaml": TUPLE_CONFIG, "main.py": """\
        import yaml
        with open('config.yaml') as f:
            cfg = yaml.load(f)
        print repr(cfg['TRAIN']['SCALES']), repr(cfg['TRAIN']['VALID_RANGES'])
        """}, modules=("yaml",))

PICKLED_IN_TEXT_MODE = {
    "with": """\
        def save(obj, path):
            with open(path, 'w') as f:
                cPickle.dump(obj, f)


        def load(path):
            with open(path, 'r') as f:
                return cPickle.load(f)
        """,
    "assignment": """\
        def save(obj, path):
            f = open(path, 'w')
            cPickle.dump(obj, f, cPickle.HIGHEST_PROTOCOL)
            f.close()


        def load(path):
            handle = open(path, 'r')
            obj = cPickle.load(handle)
            handle.close()
            return obj
        """,
}


@pytest.mark.parametrize("functions", PICKLED_IN_TEXT_MODE.values(),
                         ids=PICKLED_IN_TEXT_MODE.keys())
def test_a_file_pickled_in_text_mode_round_trips_the_same(tmp_path, functions):
    assert_same_output(tmp_path, {"main.py": "import cPickle\n\n\n" + dedent(functions) + (
        "\n\nsave({'boxes': [[1, 2, 3, 4]], 'name': 'img', 'scale': 0.5}, 'cache.pkl')\n"
        "print repr(sorted(load('cache.pkl').items()))\n")})


# mx-maskrcnn's shape: rcnn/tools/train_maskrcnn.py star-imports its symbol package, whose
# __init__.py star-imports a sibling by Python 2's implicit relative import; what the star
# binds (no ``open``) is known only through that sibling.
STAR_THROUGH_A_SIBLING = {
    "pkg/__init__.py": "",
    "pkg/shapes/__init__.py": "from boxes import *\n",
    "pkg/shapes/boxes.py": """\
        def area(box):
            return (box[2] - box[0]) * (box[3] - box[1])
        """,
    "pkg/tools/__init__.py": "",
    "pkg/tools/cache.py": """\
        import cPickle as pkl
        from ..shapes import *


        def save(obj, path):
            with open(path, 'w') as f:
                pkl.dump(obj, f, -1)


        def load(path):
            with open(path, 'r') as f:
                return pkl.load(f)
        """,
    "main.py": """\
        from pkg.tools.cache import area, load, save
        save({'boxes': [[1, 2, 4, 6]], 'name': 'img'}, 'cache.pkl')
        print repr(sorted(load('cache.pkl').items())), area([1, 2, 4, 6])
        """,
}


def test_a_pickled_file_under_a_star_import_of_a_sibling_through_its_package_round_trips(
        tmp_path):
    assert_same_output(tmp_path, STAR_THROUGH_A_SIBLING)


# lib/dataset/pascal_voc_eval.py's shape: text files and the pickled annotation cache are
# all opened under the name f in one function.
VOC_EVAL = {
    "ImageSets/test.txt": "000001\n000002\n",
    "detections.txt": "000001 0.9 1 2 3 4\n000002 0.3 5 6 7 8\n",
    "Annotations/000001.xml": "<object>dog</object>\n",
    "Annotations/000002.xml": "<object>cat</object>\n",
    "main.py": """\
        import cPickle
        import os


        def voc_eval(detfile, annopath, imageset_file, annocache):
            with open(imageset_file, 'r') as f:
                lines = f.readlines()
            image_filenames = [x.strip() for x in lines]
            if not os.path.isfile(annocache):
                recs = {}
                for image_filename in image_filenames:
                    with open(annopath.format(image_filename)) as f:
                        recs[image_filename] = f.read().strip()
                with open(annocache, 'wb') as f:
                    cPickle.dump(recs, f, protocol=cPickle.HIGHEST_PROTOCOL)
            else:
                with open(annocache, 'rb') as f:
                    recs = cPickle.load(f)
            with open(detfile, 'r') as f:
                lines = f.readlines()
            splitlines = [x.strip().split(' ') for x in lines]
            scores = [float(x[1]) for x in splitlines]
            return sorted(recs.items()), image_filenames, scores


        for attempt in ('writes the cache', 'reads it'):
            print attempt, repr(voc_eval('detections.txt', 'Annotations/{}.xml',
                                         'ImageSets/test.txt', 'annotations.pkl'))
        """,
}


def test_text_files_opened_beside_a_pickled_cache_under_the_same_name_stay_text(tmp_path):
    assert_same_output(tmp_path, VOC_EVAL)


WRITE_CACHE = """\
    import cPickle
    import numpy as np
    recs = {'boxes': np.array([[1, 2, 3, 4]], dtype=np.float32),
            'classes': np.arange(3), 'name': 'img_000001', 'flipped': False}
    with open('cache.pkl', 'wb') as f:
        cPickle.dump(recs, f, cPickle.HIGHEST_PROTOCOL)
    """
SHOW_CACHE = """\
    print repr(sorted(recs.keys())), repr(recs['name']), recs['flipped']
    print repr(recs['boxes'].tolist()), recs['boxes'].dtype, repr(recs['classes'].tolist())
    """
READ_CACHE = {
    "binary mode": "with open('cache.pkl', 'rb') as f:\n    recs = cPickle.load(f)\n",
    "no mode (AdaScale)": "with open('cache.pkl') as f:\n    recs = cPickle.load(f)\n",
    "no mode, assigned": "f = open('cache.pkl')\nrecs = cPickle.load(f)\nf.close()\n",
    "text mode": "with open('cache.pkl', 'r') as fid:\n    recs = cPickle.load(fid)\n",
}


@pytest.mark.parametrize("read", READ_CACHE.values(), ids=READ_CACHE.keys())
def test_a_cache_python_2_pickled_loads_the_same(tmp_path, read):
    assert_same_output(tmp_path, {
        "write_cache.py": WRITE_CACHE,
        "main.py": "import cPickle\n" + read + dedent(SHOW_CACHE)},
        modules=("numpy",), prepare="write_cache.py")


# Python 2's json wrote its str (bytes) as text; pycocotools' RLE counts are bytes.
JSON_FORMS = {
    "import json": ("import json", "json.dumps(rle, sort_keys=True)"),
    "import json as js": ("import json as js", "js.dumps(rle, sort_keys=True)"),
    "from json import dumps": ("from json import dumps", "dumps(rle, sort_keys=True)"),
    "from json import dump, dumps": ("from json import dump, dumps",
                                     "dumps(rle, sort_keys=True)"),
    "from json import dumps as to_json": ("from json import dumps as to_json",
                                          "to_json(rle, sort_keys=True)"),
}


@pytest.mark.parametrize("imports, call", JSON_FORMS.values(), ids=JSON_FORMS.keys())
def test_bytes_dumped_to_json_text_give_the_same_json(tmp_path, imports, call):
    assert_same_output(tmp_path, {"main.py": f"""\
        {imports}
        rle = {{'counts': 'Ue02'.encode('ascii'), 'size': [4, 4]}}
        print {call}
        """})


@pytest.mark.parametrize("imports, call", [
    ("import json", "json.dump(results, f, sort_keys=True)"),
    ("from json import dump", "dump(results, f, sort_keys=True)"),
], ids=["json.dump", "from json import dump"])
def test_bytes_dumped_to_a_json_file_give_the_same_file(tmp_path, imports, call):
    assert_same_output(tmp_path, {"main.py": f"""\
        {imports}
        results = [{{'segmentation': {{'counts': 'Ue02'.encode('ascii')}}, 'score': 0.5}}]
        with open('results.json', 'w') as f:
            {call}
        print open('results.json').read()
        """})


POOL_USE = """\
    pool = {pool}(2)
    print repr(pool.map(abs, [-1, -2, 3])), {count}() > 0, issubclass({timeout}, Exception)
    pool.close()
    pool.join()
    """
DUMMY_FORMS = {
    "import multiprocessing.dummy as mp": ("import multiprocessing.dummy as mp",
                                           "mp.Pool", "mp.cpu_count", "mp.TimeoutError"),
    "from multiprocessing import dummy as mp": ("from multiprocessing import dummy as mp",
                                                "mp.Pool", "mp.cpu_count", "mp.TimeoutError"),
    "from multiprocessing import dummy": ("from multiprocessing import dummy", "dummy.Pool",
                                          "dummy.cpu_count", "dummy.TimeoutError"),
    "import multiprocessing.dummy": ("import multiprocessing.dummy",
                                     "multiprocessing.dummy.Pool",
                                     "multiprocessing.dummy.cpu_count",
                                     "multiprocessing.dummy.TimeoutError"),
    "from multiprocessing.dummy import Pool, cpu_count": (
        "from multiprocessing.dummy import Pool, TimeoutError, cpu_count", "Pool",
        "cpu_count", "TimeoutError"),
    "from multiprocessing.dummy import cpu_count as cores": (
        "from multiprocessing.dummy import Pool, cpu_count as cores", "Pool", "cores",
        "Exception"),
}


@pytest.mark.parametrize("imports, pool, count, timeout", DUMMY_FORMS.values(),
                         ids=DUMMY_FORMS.keys())
def test_multiprocessing_dummys_cpu_count_and_timeout_error_still_resolve(
        tmp_path, imports, pool, count, timeout):
    assert_same_output(tmp_path, {"main.py": imports + "\n" + dedent(POOL_USE).format(
        pool=pool, count=count, timeout=timeout)})


LINSPACE_FORMS = {
    "positional": "np.linspace(.5, 0.95, np.round((0.95 - .5) / .05) + 1, endpoint=True)",
    "num=": "np.linspace(.0, 1.00, num=np.round((1.00 - .0) / .25) + 1, endpoint=True)",
    "through a name": "np.linspace(.5, 0.95, count)",
    "import numpy": "numpy.linspace(0, 1, numpy.round(4.0) + 1)",
}


@pytest.mark.parametrize("call", LINSPACE_FORMS.values(), ids=LINSPACE_FORMS.keys())
def test_np_linspace_given_a_float_count_gives_the_same_points(tmp_path, call):
    assert_same_output(tmp_path, {"main.py": f"""\
        import numpy
        import numpy as np
        count = np.round((0.95 - .5) / .05) + 1
        points = {call}
        print len(points), repr(points.round(4).tolist())
        """}, modules=("numpy",))


@pytest.mark.slow  # the README's command in a process of its own (about 2 s)
def test_the_readmes_command_keeps_text_files_beside_a_pickled_cache_text(tmp_path):
    assert_same_output(tmp_path, VOC_EVAL, via="cli")


@pytest.mark.slow  # the README's command in a process of its own (about 2 s)
def test_the_readmes_command_loads_a_config_and_a_python_2_cache_the_same(tmp_path):
    assert_same_output(tmp_path, {
        "config.yaml": CONFIG, "write_cache.py": WRITE_CACHE,
        "main.py": "import cPickle\nimport yaml\n" + READ_CACHE["binary mode"]
                   + "cfg = yaml.load(open('config.yaml'))\nprint cfg['TRAIN']['lr']\n"
                   + dedent(SHOW_CACHE)},
        modules=("numpy", "yaml"), via="cli", prepare="write_cache.py")


NUMERIC_DTYPES = """\
    import numpy as np
    scores = np.array([1.7, -2.2, 0.0, 3.9])
    labels = scores.astype('Int32')
    print labels.tolist(), labels.dtype, scores.astype("UInt8").dtype
    print np.zeros(2, dtype='Float32').dtype, np.dtype('Int64'), np.dtype('Float16')
    print np.ones(1, dtype='Complex32').dtype, np.ones(1, dtype='Complex64').dtype
    print scores.astype('Bool').tolist(), np.arange(3, dtype='UInt16').dtype
    """


def test_numerics_type_names_given_as_a_dtype_give_the_same_arrays(tmp_path):
    # mx-maskrcnn's rcnn/core/metric.py: .astype('Int32'), which NumPy 1.23 refuses
    outputs = assert_same_output(tmp_path, {"main.py": NUMERIC_DTYPES}, modules=("numpy",))
    assert "'int32'" in outputs.ported["main.py"]
