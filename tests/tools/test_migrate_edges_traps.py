"""Edges of ``migrate.traps`` (issue 36, item 10): each spelling of each trap (every pickle
module, ``Pickler`` beside ``dump``, a file given by keyword, ``'U'`` alone and inside a
mode, a handle used otherwise too, a name taken), ported by :func:`traps.fix` and reported
by :func:`traps.analyse`, both compared whole, so that a slip of one line changes a result.
Each expected text was read against what Python 2 and Python 3 do with it."""

import ast

import pytest

from mxpatch_bind.migrate import traps
from mxpatch_bind.migrate.found import Meaning
from mxpatch_bind.migrate.names import Names

CASES = [
    pytest.param(
        ('import yaml\n'
         'yaml.load(f)\n'
         'yaml.load_all(f)\n'
         'yaml.load(f, Loader=X)\n'
         'yaml.load(f, X)\n'
         'yaml.load(f, **kw)\n'
         'yaml.safe_load(f)\n'),
        ('import yaml\n'
         'yaml.load(f, Loader=yaml.FullLoader)\n'
         'yaml.load_all(f, Loader=yaml.FullLoader)\n'
         'yaml.load(f, Loader=X)\n'
         'yaml.load(f, X)\n'
         'yaml.load(f, **kw)\n'
         'yaml.safe_load(f)\n'),
        [], False,
        [(2, 'yaml.load without a Loader (PyYAML 6 requires one)', False),
         (3, 'yaml.load without a Loader (PyYAML 6 requires one)', False),],
        id='a_yaml_load_without_a_loader_gets_the_full_loader_in_each_spelling'),
    pytest.param(
        ('from yaml import load\n'
         'load(f)\n'),
        ('import yaml\n'
         'from yaml import load\n'
         'load(f, Loader=yaml.FullLoader)\n'),
        [], False,
        [(2, 'yaml.load without a Loader (PyYAML 6 requires one)', False),],
        id='a_load_imported_from_yaml_gets_yaml_imported_for_its_loader'),
    pytest.param(
        ('import yaml as y\n'
         'y.load(f)\n'),
        ('import yaml as y\n'
         'y.load(f, Loader=y.FullLoader)\n'),
        [], False,
        [(2, 'yaml.load without a Loader (PyYAML 6 requires one)', False),],
        id='an_aliased_yaml_names_its_loader_by_the_alias'),
    pytest.param(
        ('from yaml import load\n'
         'yaml = 1\n'
         'load(f)\n'),
        ('from yaml import load\n'
         'yaml = 1\n'
         'load(f)\n'),
        [], False,
        [(3, 'yaml.load', True),],
        id='a_yaml_load_where_the_name_yaml_is_taken_is_a_check'),
    pytest.param(
        ('import json\n'
         'if c:\n'
         '    from yaml import load\n'
         'else:\n'
         '    load = json.load\n'
         'load(f)\n'),
        ('import json\n'
         'if c:\n'
         '    from yaml import load\n'
         'else:\n'
         '    load = json.load\n'
         'load(f)\n'),
        [], False,
        [(6, 'yaml.load', True),],
        id='a_name_that_may_be_yaml_load_or_another_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(file=f)\n'
         "g = open(q, 'w')\n"
         'pickle.dump(o, file=g)\n'),
        ('import pickle\n'
         "f = open(p, 'rb')\n"
         'pickle.load(file=f)\n'
         "g = open(q, 'wb')\n"
         'pickle.dump(o, file=g)\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),
         (4, "pickle's file opened in text mode", False),],
        id='a_pickle_file_given_by_keyword_gets_binary_mode'),
    pytest.param(
        ('import pickle\n'
         'def f(c, g):\n'
         '    if c:\n'
         '        with open(p) as h:\n'
         '            pass\n'
         '    else:\n'
         '        h = g\n'
         '    pickle.load(h)\n'),
        ('import pickle\n'
         'def f(c, g):\n'
         '    if c:\n'
         '        with open(p) as h:\n'
         '            pass\n'
         '    else:\n'
         '        h = g\n'
         '    pickle.load(h)\n'),
        [], False,
        [(8, 'pickle file', True),],
        id='a_pickle_handle_that_may_come_from_a_with_open_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p, m)\n'
         'pickle.load(f)\n'),
        ('import pickle\n'
         'f = open(p, m)\n'
         'pickle.load(f)\n'),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_file_whose_mode_is_not_a_literal_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'if c:\n'
         "    f = open(q, 'w')\n"
         "f.write('x')\n"),
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'if c:\n'
         "    f = open(q, 'w')\n"
         "f.write('x')\n"),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_handle_whose_name_a_later_branch_may_rebind_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'print(f)\n'),
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'print(f)\n'),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_handle_also_passed_elsewhere_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'f.close()\n'
         'f.name\n'),
        ('import pickle\n'
         "f = open(p, 'rb')\n"
         'pickle.load(f)\n'
         'f.close()\n'
         'f.name\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),],
        id='a_pickle_handle_only_closed_and_named_besides_gets_binary_mode'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'f.read()\n'),
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.load(f)\n'
         'f.read()\n'),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_handle_also_read_as_text_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.dump(o, f)\n'),
        ('import pickle\n'
         'f = open(p)\n'
         'pickle.dump(o, f)\n'),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_written_into_a_file_opened_without_a_mode_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(p, **kw)\n'
         'pickle.load(f)\n'),
        ('import pickle\n'
         'f = open(p, **kw)\n'
         'pickle.load(f)\n'),
        [], False,
        [(2, 'pickle file', True),],
        id='a_pickle_file_opened_with_keyword_options_is_a_check'),
    pytest.param(
        ('import pickle\n'
         'f = open(file=p)\n'
         'pickle.load(f)\n'),
        ('import pickle\n'
         "f = open(file=p, mode='rb')\n"
         'pickle.load(f)\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),],
        id='a_pickle_file_opened_by_keyword_alone_gets_a_mode_keyword'),
    pytest.param(
        ('import pickle\n'
         "f = open(p, 'r')\n"
         'pickle.load(f)\n'
         'g = open(p, "w")\n'
         'pickle.dump(o, g)\n'
         "h = open(p, 'rb')\n"
         'pickle.load(h)\n'
         "k = open(p, mode='rU')\n"
         'pickle.load(k)\n'
         "j = open(p, 'rbU')\n"
         'pickle.load(j)\n'),
        ('import pickle\n'
         "f = open(p, 'rb')\n"
         'pickle.load(f)\n'
         'g = open(p, "wb")\n'
         'pickle.dump(o, g)\n'
         "h = open(p, 'rb')\n"
         'pickle.load(h)\n'
         "k = open(p, mode='rb')\n"
         'pickle.load(k)\n'
         "j = open(p, 'rb')\n"
         'pickle.load(j)\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),
         (4, "pickle's file opened in text mode", False),
         (8, "pickle's file opened in text mode", False),
         (10, "open mode 'U' (Python 3.11 refuses it)", False),],
        id='each_text_mode_of_a_pickle_file_gets_b_and_loses_u'),
    pytest.param(
        ("open(p, 'U')\n"
         "open(p, 'rU')\n"
         "open(p, mode='Ur')\n"
         "open(p, 'r')\n"
         'open(p, m)\n'
         "io.open(p, 'U')\n"
         'import io\n'),
        ("open(p, 'r')\n"
         "open(p, 'r')\n"
         "open(p, mode='r')\n"
         "open(p, 'r')\n"
         'open(p, m)\n'
         "io.open(p, 'r')\n"
         'import io\n'),
        [], False,
        [(1, "open mode 'U' (Python 3.11 refuses it)", False),
         (2, "open mode 'U' (Python 3.11 refuses it)", False),
         (3, "open mode 'U' (Python 3.11 refuses it)", False),
         (6, "open mode 'U' (Python 3.11 refuses it)", False),],
        id='a_universal_newline_mode_is_dropped_in_each_spelling'),
    pytest.param(
        ('import cPickle\n'
         "f = open(p, 'w')\n"
         'cPickle.Pickler(f).dump(o)\n'
         'g = open(p)\n'
         'cPickle.Unpickler(g).load()\n'),
        ('import cPickle\n'
         "f = open(p, 'wb')\n"
         'cPickle.Pickler(f).dump(o)\n'
         "g = open(p, 'rb')\n"
         'cPickle.Unpickler(g).load()\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),
         (4, "pickle's file opened in text mode", False),],
        id='files_given_to_a_pickler_or_unpickler_get_binary_modes'),
    pytest.param(
        ('import six.moves.cPickle as pk\n'
         'f = open(p)\n'
         'pk.load(f)\n'
         'import _pickle\n'
         'g = open(p)\n'
         '_pickle.load(g)\n'),
        ('import six.moves.cPickle as pk\n'
         "f = open(p, 'rb')\n"
         'pk.load(f)\n'
         'import _pickle\n'
         "g = open(p, 'rb')\n"
         '_pickle.load(g)\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),
         (5, "pickle's file opened in text mode", False),],
        id="each_pickle_module's_spelling_is_a_pickle"),
    pytest.param(
        ('import io, pickle\n'
         'f = io.open(p)\n'
         'pickle.load(f)\n'),
        ('import io, pickle\n'
         "f = io.open(p, 'rb')\n"
         'pickle.load(f)\n'),
        [], False,
        [(2, "pickle's file opened in text mode", False),],
        id='a_file_from_io_open_is_a_file_too'),
    pytest.param(
        ('import pickle\n'
         'pickle.load(open(p))\n'
         "pickle.dump(o, open(p, 'w'))\n"),
        ('import pickle\n'
         "pickle.load(open(p, 'rb'))\n"
         "pickle.dump(o, open(p, 'wb'))\n"),
        [], False,
        [(2, "pickle's file opened in text mode", False),
         (3, "pickle's file opened in text mode", False),],
        id='an_open_passed_straight_to_pickle_gets_binary_mode'),
    pytest.param(
        ('import pickle\n'
         'f = g = open(p)\n'
         'pickle.load(f)\n'),
        ('import pickle\n'
         'f = g = open(p)\n'
         'pickle.load(f)\n'),
        [], False,
        [(3, 'pickle file', True),],
        id='an_open_bound_to_two_names_is_a_check'),
    pytest.param(
        ('from yaml import load\n'
         'import mxnet as mx\n'
         'import pickle\n'
         'load(f)\n'
         'mx.sym.Custom(cfg=pickle.dumps(c))\n'),
        ('import yaml\n'
         'import base64\n'
         'from yaml import load\n'
         'import mxnet as mx\n'
         'import pickle\n'
         'load(f, Loader=yaml.FullLoader)\n'
         "mx.sym.Custom(cfg=base64.b64encode(pickle.dumps(c)).decode('ascii'))\n"),
        [], False,
        [(4, 'yaml.load without a Loader (PyYAML 6 requires one)', False),
         (5, "pickle through mx.sym.Custom's keywords", False),],
        id='two_imports_go_on_top_in_the_order_of_their_fixes'),
    pytest.param(
        ('import pickle\n'
         'def h(f):\n'
         '    f.seek(0); f = open(p)\n'
         '    pickle.load(f)\n'),
        ('import pickle\n'
         'def h(f):\n'
         '    f.seek(0); f = open(p)\n'
         '    pickle.load(f)\n'),
        [], False,
        [(3, 'pickle file', True),],
        id='a_pickle_handle_read_before_its_open_on_the_same_line_is_a_check'),
    pytest.param(
        ('import numpy as np\n'
         'n = 3\n'
         'np.linspace(0, 1, n)\n'
         'np.linspace(0, 1, np.round(x) + 1)\n'
         'np.linspace(0, 1, num=np.round(x))\n'
         'np.linspace(0, 1)\n'
         'np.linspace(0, 1, len(x))\n'
         'm = x * 2\n'
         'np.linspace(0, 1, m)\n'),
        ('import numpy as np\n'
         'n = 3\n'
         'np.linspace(0, 1, n)\n'
         'np.linspace(0, 1, int(np.round(x) + 1))\n'
         'np.linspace(0, 1, num=int(np.round(x)))\n'
         'np.linspace(0, 1)\n'
         'np.linspace(0, 1, len(x))\n'
         'm = x * 2\n'
         'np.linspace(0, 1, int(m))\n'),
        [], False,
        [(4, "np.linspace's float num", False),
         (5, "np.linspace's float num", False),
         (9, "np.linspace's float num", False),],
        id='numpy_linspace_gets_an_integer_count_where_its_form_is_not_one'),
    pytest.param(
        ('import pickle\n'
         "f = open(p, 'rb')\n"
         'pickle.load(f)\n'
         "pickle.load(f, encoding='bytes')\n"
         'pickle.load(f, **kw)\n'
         'pickle.loads(s)\n'),
        ('import pickle\n'
         "f = open(p, 'rb')\n"
         "pickle.load(f, encoding='latin1')\n"
         "pickle.load(f, encoding='bytes')\n"
         'pickle.load(f, **kw)\n'
         'pickle.loads(s)\n'),
        [], True,
        [(3, "pickle.load of Python 2's pickles", False),],
        id='a_python_2_pickle_load_gets_latin1_unless_it_has_an_encoding'),
    pytest.param(
        ('import json\n'
         'json.dump(o, f)\n'
         'json.dumps(o)\n'
         'json.dumps(o, default=str)\n'
         'json.dumps(o, cls=E)\n'
         'json.dumps(o, **kw)\n'
         'json.loads(s)\n'),
        ('from mxpatch_bind.py2 import json_bytes\n'
         'import json\n'
         'json.dump(o, f, default=json_bytes)\n'
         'json.dumps(o, default=json_bytes)\n'
         'json.dumps(o, default=str)\n'
         'json.dumps(o, cls=E)\n'
         'json.dumps(o, **kw)\n'
         'json.loads(s)\n'),
        [], True,
        [(2, 'bytes in json', False),
         (3, 'bytes in json', False),],
        id='json_dumps_of_python_2_get_json_bytes_unless_a_default_or_encoder_is_given'),
    pytest.param(
        ('import json\n'
         'if c:\n'
         '    from json import dumps\n'
         'else:\n'
         '    dumps = str\n'
         'dumps(o)\n'),
        ('import json\n'
         'if c:\n'
         '    from json import dumps\n'
         'else:\n'
         '    dumps = str\n'
         'dumps(o)  # migrate: check json\n'),
        [6], True,
        [(6, 'json', True),],
        id='a_name_that_may_be_json_dumps_is_a_marked_check'),
    pytest.param(
        ('from json import dumps as d\n'
         'd(o)\n'),
        ('from mxpatch_bind.py2 import json_bytes\n'
         'from json import dumps as d\n'
         'd(o, default=json_bytes)\n'),
        [], True,
        [(2, 'bytes in json', False),],
        id='json_dumps_imported_by_another_name_gets_json_bytes'),
    pytest.param(
        ('from mxpatch_bind.py2 import json_bytes\n'
         'import json\n'
         'json.dumps(o)\n'),
        ('from mxpatch_bind.py2 import json_bytes\n'
         'import json\n'
         'json.dumps(o, default=json_bytes)\n'),
        [], True,
        [(3, 'bytes in json', False),],
        id='a_helper_already_imported_is_not_imported_again'),
    pytest.param(
        ('import json\n'
         'json.dumps(o)\n'
         'x = a / b\n'),
        ('from mxpatch_bind.py2 import json_bytes, old_div\n'
         'import json\n'
         'json.dumps(o, default=json_bytes)\n'
         'x = old_div(a, b)\n'),
        [], True,
        [(2, 'bytes in json', False),],
        id='helpers_of_two_fixes_share_one_import_in_sorted_order'),
    pytest.param(
        ('import json\n'
         'json.dumps(o)\n'
         'x = a / b\n'
         'y /= 2\n'
         'z = round(w)\n'),
        ('from mxpatch_bind.py2 import json_bytes, old_div, old_idiv, old_round\n'
         'import json\n'
         'json.dumps(o, default=json_bytes)\n'
         'x = old_div(a, b)\n'
         'y = old_idiv(y, 2)\n'
         'z = old_round(w)\n'),
        [], True,
        [(2, 'bytes in json', False),
         (5, 'round() returns an int on Python 3', False),],
        id='helpers_of_four_fixes_are_imported_in_sorted_order'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg):\n'
         '        if c:\n'
         '            cfg = other\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        ('import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg):\n'
         '        if c:\n'
         '            cfg = other\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        [], True,
        [],
        id='an_op_prop_argument_its_init_may_rebind_is_not_decoded'),
    pytest.param(
        ('from __future__ import division\n'
         'import json\n'
         'x = a / b\n'),
        ('from __future__ import division\n'
         'import json\n'
         'x = a / b\n'),
        [], True,
        [],
        id='a_file_importing_true_division_keeps_its_divisions'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'sym = mx.sym.Custom(cfg=pickle.dumps(c))\n'),
        ('import base64\n'
         'import mxnet as mx\n'
         'import pickle\n'
         "sym = mx.sym.Custom(cfg=base64.b64encode(pickle.dumps(c)).decode('ascii'))\n"),
        [], True,
        [(3, "pickle through mx.sym.Custom's keywords", False),],
        id='a_pickle_passed_to_a_custom_op_is_base64_encoded'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'cfg = pickle.dumps(c)\n'
         'sym = mx.symbol.Custom(cfg=cfg)\n'),
        ('import base64\n'
         'import mxnet as mx\n'
         'import pickle\n'
         'cfg = pickle.dumps(c)\n'
         "sym = mx.symbol.Custom(cfg=base64.b64encode(cfg).decode('ascii'))\n"),
        [], True,
        [(4, "pickle through mx.sym.Custom's keywords", False),],
        id='a_pickle_passed_to_a_custom_op_through_a_name_is_base64_encoded'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'if k:\n'
         '    cfg = pickle.dumps(c)\n'
         'else:\n'
         "    cfg = 's'\n"
         'sym = mx.sym.Custom(cfg=cfg)\n'),
        ('import mxnet as mx\n'
         'import pickle\n'
         'if k:\n'
         '    cfg = pickle.dumps(c)\n'
         'else:\n'
         "    cfg = 's'\n"
         'sym = mx.sym.Custom(cfg=cfg)\n'),
        [], True,
        [(7, 'pickle through mx.sym.Custom', True),],
        id='a_name_that_may_hold_a_pickle_for_a_custom_op_is_a_check'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'sym = mx.sym.Custom(**pickle.dumps(c))\n'
         'sym2 = mx.nd.Custom(x, cfg=pickle.dumps(c))\n'),
        ('import base64\n'
         'import mxnet as mx\n'
         'import pickle\n'
         'sym = mx.sym.Custom(**pickle.dumps(c))\n'
         "sym2 = mx.nd.Custom(x, cfg=base64.b64encode(pickle.dumps(c)).decode('ascii'))\n"),
        [], True,
        [(4, "pickle through mx.sym.Custom's keywords", False),],
        id='only_named_keywords_of_any_custom_op_are_encoded'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'base64 = None\n'
         'sym = mx.sym.Custom(cfg=pickle.dumps(c))\n'),
        ('import mxnet as mx\n'
         'import pickle\n'
         'base64 = None\n'
         'sym = mx.sym.Custom(cfg=pickle.dumps(c))\n'),
        [], True,
        [(4, 'pickle through mx.sym.Custom', True),],
        id='a_custom_op_pickle_where_base64_is_taken_is_a_check'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg, other):\n'
         '        x = cfg\n'
         '        self.cfg = pickle.loads(x)\n'
         '        self.o = pickle.loads(other)\n'
         '        self.g = pickle.loads(GLOBAL)\n'
         '        self.h = pickle.loads(cfg, fix_imports=True)\n'
         '    def f(self, cfg):\n'
         '        pickle.loads(cfg)\n'),
        ('import base64\n'
         'import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg, other):\n'
         '        x = cfg\n'
         '        self.cfg = pickle.loads(base64.b64decode(x))\n'
         '        self.o = pickle.loads(base64.b64decode(other))\n'
         '        self.g = pickle.loads(GLOBAL)\n'
         '        self.h = pickle.loads(base64.b64decode(cfg), fix_imports=True)\n'
         '    def f(self, cfg):\n'
         '        pickle.loads(cfg)\n'),
        [], True,
        [(6, "pickle through mx.sym.Custom's keywords (the op side)", False),
         (7, "pickle through mx.sym.Custom's keywords (the op side)", False),
         (9, "pickle through mx.sym.Custom's keywords (the op side)", False),],
        id='an_op_prop_decodes_the_pickles_of_its_init_arguments_only'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'base64 = 1\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg):\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        ('import mxnet as mx\n'
         'import pickle\n'
         'base64 = 1\n'
         'class P(mx.operator.CustomOpProp):\n'
         '    def __init__(self, cfg):\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        [], True,
        [(6, 'pickle through mx.sym.Custom', True),],
        id='an_op_prop_pickle_where_base64_is_taken_is_a_check'),
    pytest.param(
        ('import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOp):\n'
         '    def __init__(self, cfg):\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        ('import mxnet as mx\n'
         'import pickle\n'
         'class P(mx.operator.CustomOp):\n'
         '    def __init__(self, cfg):\n'
         '        self.cfg = pickle.loads(cfg)\n'),
        [], True,
        [],
        id='a_custom_op_that_is_no_op_prop_keeps_its_pickle_loads'),
]


@pytest.mark.parametrize("source, ported, marked, python2, found", CASES)
def test_each_trap_is_ported_to_its_exact_text_and_reported_at_its_line(
        source, ported, marked, python2, found):
    meaning = Meaning(python2=python2)
    assert traps.fix(source, meaning) == (ported, marked)
    report = traps.analyse(source, Names(ast.parse(source), meaning.star_bound), meaning)
    assert [(f.line, f.what, f.check is not None) for f in report] == found


def test_a_line_with_two_checks_keeps_the_marker_of_the_first_found():
    new, marked = traps.fix("import hashlib\nx = coerce(a, b) + hashlib.md5(s).hexdigest()\n",
                            True)
    assert (new, marked) == ("import hashlib\nx = coerce(a, b) + hashlib.md5(s).hexdigest()"
                             "  # migrate: check coerce\n", [2])
