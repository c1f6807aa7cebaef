"""``migrate``'s names.py: what a name means where it is used (every import form and alias,
scopes, star imports) and which value a local name holds at a use (the statements before
it, until it is rebound). Every fixer of the port asks these two questions instead of
matching spellings, so each rule here is one a fixer's soundness rests on."""

import ast
import textwrap

import pytest

from mxpatch_bind.migrate.names import Names


def parsed(source, star_bound=None):
    tree = ast.parse(textwrap.dedent(source))
    return Names(tree, star_bound)


def call_named(names, spelled, occurrence=0):
    """The ``occurrence``-th call whose function is spelled ``spelled``."""
    calls = [c for c in names.calls if ast.unparse(c.func) == spelled]
    return calls[occurrence]


def reaching_text(names, call, argument=0):
    value = names.reaching(call.args[argument])
    return None if value is None else ast.unparse(value)


# --------------------------------------------------------------------------- meanings
@pytest.mark.parametrize("source, spelled, meaning", [
    ("import yaml\nyaml.load(f)\n", "yaml.load", "yaml.load"),
    ("import yaml as y\ny.load(f)\n", "y.load", "yaml.load"),
    ("from yaml import load\nload(f)\n", "load", "yaml.load"),
    ("from yaml import load as ld\nld(f)\n", "ld", "yaml.load"),
    ("import os.path\nos.path.join(a)\n", "os.path.join", "os.path.join"),
    ("import xml.etree.ElementTree as ET\nET.parse(f)\n", "ET.parse",
     "xml.etree.ElementTree.parse"),
    ("from . import utils\nutils.f()\n", "utils.f", ".utils.f"),
    ("def f():\n    import json\n    json.dumps(x)\n", "json.dumps", "json.dumps"),
    ("round(x)\n", "round", "builtins.round"),
    ("try:\n    import cPickle as pickle\nexcept ImportError:\n    import pickle\n"
     "pickle.load(f)\n", "pickle.load", None),  # cPickle or pickle: two meanings
])
def test_a_call_means_what_its_imports_bind_under_any_alias(source, spelled, meaning):
    names = parsed(source)
    assert names.qualified(call_named(names, spelled).func) == meaning


def test_a_name_rebound_anywhere_in_its_scope_means_nothing_certain():
    names = parsed("""\
        import yaml
        def f():
            load = yaml.load
            return load(x)
        def g():
            yaml = make_yaml()
            return yaml.load(x)
    """)
    assert names.qualified(call_named(names, "yaml.load").func) is None  # g's own yaml
    assert names.qualified(call_named(names, "load").func) is None  # a local, not an import


def test_a_function_parameter_hides_the_builtin_and_the_module_import():
    names = parsed("""\
        import json
        def f(json, open):
            return json.dumps(open(1))
    """)
    assert names.qualified(call_named(names, "json.dumps").func) is None
    assert names.qualified(call_named(names, "open").func) is None


def test_a_class_body_name_is_not_seen_from_its_methods():
    names = parsed("""\
        class A:
            round = 3
            def f(self, x):
                return round(x)
    """)
    assert names.qualified(call_named(names, "round").func) == "builtins.round"


def test_a_global_statement_binds_in_the_module():
    names = parsed("""\
        def setup():
            global round
            round = lambda x: x
        def f(x):
            return round(x)
    """)
    assert names.qualified(call_named(names, "round").func) is None


def test_a_star_import_makes_a_builtin_unknown_until_its_names_are_known():
    source = "from config import *\nround(x)\nopen(p)\n"
    unknown = parsed(source)
    assert unknown.qualified(call_named(unknown, "round").func) is None
    known = parsed(source, frozenset({("open", "gzip.open"), ("cfg", None)}))
    assert known.qualified(call_named(known, "round").func) == "builtins.round"
    assert known.qualified(call_named(known, "open").func) == "gzip.open"


def test_a_star_import_that_binds_the_same_module_keeps_the_meaning():
    source = "import mxnet as mx\nfrom ops import *\nmx.sym.Custom(x=1)\n"
    names = parsed(source, frozenset({("mx", "mxnet")}))
    assert names.qualified(call_named(names, "mx.sym.Custom").func) == "mxnet.sym.Custom"


def test_module_reference_names_an_alias_or_the_module_where_it_is_free():
    assert parsed("import yaml as y\n").module_reference("yaml") == "y"
    assert parsed("import os\n").module_reference("yaml") == "yaml"
    assert parsed("yaml = None\n").module_reference("yaml") is None
    assert parsed("import collections\n").module_reference("collections.abc") == \
        "collections.abc"


# --------------------------------------------------------------------------- flow
VOC = """\
    import pickle

    def voc_eval(imageset_file, cachefile):
        with open(imageset_file, 'r') as f:
            lines = f.readlines()
        with open(cachefile, 'rb') as f:
            recs = pickle.load(f)
        f = open(cachefile + '.2')
        more = pickle.load(f)
        return lines, recs, more
"""


def test_each_use_of_a_reused_handle_reaches_its_own_open():
    names = parsed(VOC)
    assert reaching_text(names, call_named(names, "pickle.load", 0)) == "open(cachefile, 'rb')"
    assert reaching_text(names, call_named(names, "pickle.load", 1)) == \
        "open(cachefile + '.2')"
    readlines = call_named(names, "f.readlines")
    assert ast.unparse(names.reaching(readlines.func.value)) == "open(imageset_file, 'r')"


@pytest.mark.parametrize("body", [
    # a branch may have rebound it
    "f = open(a)\nif c:\n    f = open(b, 'rb')\npickle.load(f)\n",
    # a later statement of the loop rebinds it for the next round
    "f = open(a)\nfor i in x:\n    pickle.load(f)\n    f = open(b)\n",
    # a try body that rebinds it may or may not have run before the handler
    "f = open(a)\ntry:\n    f = open(b)\nexcept IOError:\n    pickle.load(f)\n",
    # a parameter: whoever calls opened it
    "pickle.load(p)\n",
    # unpacking: not one value
    "f, g = open(a), open(b)\npickle.load(f)\n",
])
def test_a_value_that_is_not_one_path_is_not_proven(body):
    names = parsed("import pickle\ndef h(p, a, b, c, x):\n"
                   + textwrap.indent(body, "    "))
    assert names.reaching(call_named(names, "pickle.load").args[0]) is None


def test_a_closure_does_not_see_a_value_it_was_not_given():
    names = parsed("""\
        import pickle
        def outer(a):
            f = open(a)
            def inner():
                return pickle.load(f)
            return inner
    """)
    assert names.reaching(call_named(names, "pickle.load").args[0]) is None


def test_a_value_set_before_a_loop_that_keeps_it_reaches_into_the_loop():
    names = parsed("""\
        import pickle
        def h(a, n):
            f = open(a, 'rb')
            for i in range(n):
                pickle.load(f)
    """)
    assert reaching_text(names, call_named(names, "pickle.load")) == "open(a, 'rb')"


def test_the_value_after_a_with_block_is_its_context_expression():
    names = parsed("""\
        def h(a):
            with open(a) as f:
                pass
            return f.name
    """)
    attribute = next(n for n in names.nodes if isinstance(n, ast.Attribute))
    assert ast.unparse(names.reaching(attribute.value)) == "open(a)"


def test_a_comprehensions_first_iterable_means_what_the_enclosing_scope_binds():
    # Python evaluates the first iterable outside the comprehension: its target is not bound yet
    names = parsed("""\
        from yaml import load
        docs = [load for load in load(f)]
        def first(load, rows):
            return [load for load in load(rows)]
    """)
    assert names.qualified(call_named(names, "load", 0).func) == "yaml.load"
    assert names.qualified(call_named(names, "load", 1).func) is None  # first's parameter
