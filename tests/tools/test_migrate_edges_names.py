"""Edges of ``migrate.names`` (issue 36, item 10): what a name means where it is read and
which value reaches it, one case for each import form, scope rule and statement that
rebinds a name, each compared whole, so that a slip of one line changes a result here."""

import ast
import textwrap

import pytest

from mxpatch_bind.migrate.names import Names


def _names(source, star_bound=None):
    return Names(ast.parse(textwrap.dedent(source)), star_bound)


def _uses(names, name):
    return [n for n in names.nodes if isinstance(n, ast.Name) and n.id == name
            and isinstance(n.ctx, ast.Load)]


def meanings(source, name, star_bound=None):
    """What each read of ``name`` may mean, in the order the reads are walked."""
    names = _names(source, star_bound)
    return [sorted(map(str, names.meanings(use))) for use in _uses(names, name)]


def reaching(source, name="x"):
    """The value each read of ``name`` holds, as source text (None: not provable)."""
    names = _names(source)
    found = [names.reaching(use) for use in _uses(names, name)]
    return [None if value is None else ast.unparse(value) for value in found]


@pytest.mark.parametrize("source, name, expected", [
    ("import a.b\na.b.c\n", "a", [["a"]]),
    ("import a.b as ab\nab.c\n", "ab", [["a.b"]]),
    ("from . import x\nx\n", "x", [[".x"]]),
    ("from .. import y\ny\n", "y", [["..y"]]),
    ("from .m import z\nz\n", "z", [[".m.z"]]),
    ("from m import w as v\nv\n", "v", [["m.w"]]),
    ("import yaml\nimport json as yaml\nyaml\n", "yaml", [["json", "yaml"]]),
])
def test_each_import_form_gives_its_name_the_dotted_name_it_binds(source, name, expected):
    assert meanings(source, name) == expected


@pytest.mark.parametrize("source, name, expected", [
    # a class body's names are not seen from its methods, nor from its comprehensions
    ("class C:\n    k = 1\n    def f(self):\n        return k\n    j = k\n", "k",
     [["builtins.k"], ["None"]]),
    ("import x\nclass C:\n    x = 2\n    y = [x for _ in r]\n", "x", [["x"]]),
    ("import x\ndef f():\n    x = 2\n    class C:\n        def g(self):\n            return x\n",
     "x", [["None"]]),
    # global: the module's binding, or a builtin where the module has none
    ("import g\ndef f():\n    global g\n    return g\n", "g", [["g"]]),
    ("def f():\n    global h\n    return h\n", "h", [["builtins.h"]]),
    ("import x\ndef f():\n    global x\n    x = 2\ndef g():\n    return x\n", "x",
     [["None", "x"]]),
    # nonlocal: the enclosing function's binding, not the inner one's
    ("import x\ndef f():\n    x = 2\n    def g():\n        nonlocal x\n        return x\n",
     "x", [["None"]]),
    # a comprehension's first iterable reads the enclosing scope, the rest its own
    ("import load\nx = [load for load in load(f)]\n", "load", [["load"], ["None"]]),
    ("import p\nx = [y for p in p for y in p]\n", "p", [["p"], ["None"]]),
    # an assignment expression in a comprehension binds in the function around it
    ("import y\ndef f():\n    [y := 1 for k in (1,)]\n    return y\n", "y", [["None"]]),
    # defaults run in the enclosing scope, the body in the function's
    ("import d\ndef f(a=d, *, b=d):\n    return d\n", "d", [["d"], ["d"], ["d"]]),
    ("import d\ndef f(d=d):\n    return d\n", "d", [["d"], ["None"]]),
    ("import n\nlambda n: n\n", "n", [["None"]]),
    ("import n\nlambda *n: n\n", "n", [["None"]]),
    ("import n\nlambda **n: n\n", "n", [["None"]]),
    ("import n\nlambda *, n: n\n", "n", [["None"]]),
    ("import n\ndef f(n, /):\n    return n\n", "n", [["None"]]),
    ("import e\ntry:\n    pass\nexcept E as e:\n    e\n", "e", [["None", "e"]]),
    ("import q\ndel q\nq\n", "q", [["None", "q"]]),
])
def test_a_read_means_what_the_scope_that_binds_it_holds(source, name, expected):
    assert meanings(source, name) == expected


def test_a_star_import_makes_a_free_name_ambiguous_until_what_it_binds_is_known():
    source = "from m import *\nopen\n"
    assert meanings(source, "open") == [["None", "builtins.open"]]
    assert meanings(source, "open", frozenset({("open", "io.open")})) == [["io.open"]]
    assert meanings(source, "open", frozenset()) == [["builtins.open"]]
    # without a star import what a star would bind is nothing
    assert meanings("open\n", "open", frozenset({("open", "io.open")})) == [["builtins.open"]]


def test_binding_stars_again_replaces_what_they_bound_before():
    names = _names("from m import *\nopen\n")
    use = _uses(names, "open")[0]
    assert (names.qualified(use), names.builtin_at(use, "open")) == (None, False)
    names.bind_stars(frozenset({("open", "io.open")}))
    assert (names.qualified(use), names.builtin_at(use, "open")) == ("io.open", False)
    names.bind_stars(frozenset({("open", "codecs.open")}))
    assert names.meanings(use) == {"codecs.open"}


def test_a_builtin_is_read_only_where_nothing_binds_its_name():
    names = _names("def open():\n    pass\nopen\n")
    use = _uses(names, "open")[0]
    assert (names.builtin_at(use, "open"), names.builtin_at(use, "len")) == (False, True)


def test_an_attribute_means_its_value_s_meaning_with_its_name_added():
    names = _names("import a\nx = a.b.c\ny = f().real\n")
    found = {ast.unparse(n): names.meanings(n) for n in names.nodes
             if isinstance(n, ast.Attribute)}
    assert found == {"a.b.c": {"a.b.c"}, "a.b": {"a.b"}, "f().real": {None}}


def test_a_module_is_named_by_its_alias_or_by_itself_where_its_first_part_is_free():
    names = _names("import yaml as y\nimport json\nimport json as j2\nfrom os import path\n"
                   "x = 1\nimport x\n")
    assert [names.module_alias(m) for m in ("yaml", "json", "os.path", "x", "pickle")] \
        == ["y", "json", "path", None, None]
    assert [names.module_reference(m) for m in ("yaml", "pickle", "x.y", "os.path")] \
        == ["y", "pickle", None, "path"]
    assert _names("import os.path\n").module_reference("os.path") == "os.path"
    assert _names("import os\n").module_reference("os.path") == "os.path"
    assert _names("from m import *\n").module_reference("pickle") is None
    assert _names("from m import *\n", frozenset()).module_reference("pickle") == "pickle"


def test_the_top_level_s_own_bindings_are_told_from_its_imports():
    names = _names("import yaml as y\nx = 1\nimport x\nfrom m import z\n")
    assert [names.binds_anything_but_imports(n) for n in ("x", "y", "z", "nope")] \
        == [True, False, False, False]
    assert [sorted(map(str, names.meanings_of_top(n))) for n in ("x", "nope", "y")] \
        == [["None", "x"], ["None"], ["yaml"]]


def test_the_function_a_node_runs_in_skips_classes_and_comprehensions():
    names = _names("class C:\n    def g(self):\n        [z for z in y]\n    w = [v for v in q]\n")
    found = {n.id: type(names.function_of(n).node).__name__ for n in names.nodes
             if isinstance(n, ast.Name) and n.id in ("z", "v")}
    assert found == {"z": "FunctionDef", "v": "Module"}


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    x = open(a)\n    y = 1\n    x\n", ["open(a)"]),
    ("x = open(a)\nx\n", ["open(a)"]),
    ("def f():\n    with open(a) as x, open(b) as y:\n        x\n", ["open(a)"]),
    ("def f():\n    with open(a) as x, open(b) as x:\n        x\n", ["open(b)"]),
    ("def f():\n    with open(a) as x:\n        pass\n    x\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    if c:\n        x\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    for i in r:\n        x\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    try:\n        x\n    except E:\n        pass\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    try:\n        x\n        x = open(b)\n    except E:\n"
     "        pass\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    try:\n        pass\n    except E:\n        x = open(b)\n"
     "    else:\n        x\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    try:\n        pass\n    except E as e:\n        x\n",
     ["open(a)"]),
    ("def f():\n    x = open(a)\n    def g():\n        x = 2\n    x\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    y = [x for x in r]\n    x\n", [None, "open(a)"]),
    ("def f():\n    x = open(a)\n    g(x)\n", ["open(a)"]),
    ("def f():\n    x = open(a)\n    @x\n    def g():\n        pass\n", ["open(a)"]),
])
def test_the_one_value_that_reaches_a_read_is_found(source, expected):
    assert reaching(source) == expected


@pytest.mark.parametrize("source", [
    "def f():\n    with g() as (x, y):\n        x\n",
    "def f():\n    x, y = 1, 2\n    x\n",
    "def f():\n    x = y = open(a)\n    x\n",
    "def f():\n    x = 1\n    x += 2\n    x\n",
    "def f():\n    x: int = 3\n    x\n",
    "def f():\n    x = open(a)\n    if c:\n        x = open(b)\n    x\n",
    "def f():\n    x = open(a)\n    for i in r:\n        x\n        x = open(b)\n",
    "def f():\n    x = open(a)\n    while c:\n        x\n        x = open(b)\n",
    "def f():\n    x = open(a)\n    for x in r:\n        x\n",
    "def f():\n    x = open(a)\n    try:\n        x = open(b)\n    except E:\n        pass\n"
    "    else:\n        x\n",
    "def f():\n    x = open(a)\n    try:\n        x = open(b)\n    except E:\n        x\n",
    "def f():\n    x = open(a)\n    try:\n        pass\n    except E:\n        x = open(b)\n"
    "    finally:\n        x\n",
    "def f():\n    x = open(a)\n    try:\n        pass\n    except E as x:\n        x\n",
    "def f(x):\n    x\n",
    "x = open(a)\ndef f():\n    x\n",
    "class C:\n    x = open(a)\n    x\n",
    "def f():\n    x = open(a)\n    def g():\n        x\n",
    "def f():\n    x = open(a)\n    def x():\n        pass\n    x\n",
    "def f():\n    x = open(a)\n    class x:\n        pass\n    x\n",
    "def f():\n    x = open(a)\n    import x\n    x\n",
    "def f():\n    x = open(a)\n    from m import *\n    x\n",
    "def f():\n    x = open(a)\n    del x\n    x\n",
    "def f():\n    x = open(a)\n    global x\n    x\n",  # Python 2 only warned
    "def f():\n    x = open(a)\n    @(x := deco)\n    def g():\n        pass\n    x\n",
    "def f():\n    x = open(a)\n    with open(a) as x, open(b) as x:\n        pass\n    x\n",
    "def f():\n    x = open(a)\n    (x := 3)\n    x\n",
    "def f(v):\n    x = open(a)\n    match v:\n        case 1:\n            x\n",
])
def test_no_value_reaches_a_read_that_a_branch_loop_or_other_binding_may_change(source):
    found = reaching(source)
    assert found and set(found) == {None}
