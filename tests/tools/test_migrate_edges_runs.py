"""Edges of ``migrate.runs`` (issue 36, item 10): the path each entry script runs with and the
tree's modules it reaches, for each way a run builds its path (an init module, inserts
latest first, appends last, an import deferred into a function, an import before the insert
it needs, a folder computed at run time) and each way an import finds a module (a package's
names, relative levels, Python 2's implicit relative import, a dotted import's packages),
compared whole as (path, modules reached, known)."""

import ast
from pathlib import Path

import pytest

from mxpatch_bind.migrate.model import ImportModel
from mxpatch_bind.migrate.runs import entry_runs

MAIN = "if __name__ == '__main__':\n    pass\n"


def insert(folder, how="insert(0, "):
    """``sys.path.<how>`` the tree's ``folder``, spelled from the script's own folder."""
    return f"sys.path.{how}os.path.join(os.path.dirname(__file__), '..', '{folder}'))\n"


CASES = [
    pytest.param({"a/_init_paths.py": "import os, sys\n" + insert("lib"),
                  "a/train.py": "import _init_paths\nimport util\n" + MAIN, "lib/util.py": ""},
                 {"a/train.py": ("lib/, a/", ["a/_init_paths.py", "a/train.py", "lib/util.py"],
                                 True)}, id="a_path_inserted_by_an_init_module"),
    pytest.param({"a/run.py": "import os, sys\n" + insert("lib") + insert("ext")
                  + insert("tail", "append(") + "import util\n" + MAIN,
                  "lib/util.py": "", "ext/util.py": "", "tail/util.py": ""},
                 {"a/run.py": ("ext/, lib/, a/, tail/", ["a/run.py", "ext/util.py"], True)},
                 id="inserted_folders_come_latest_first_and_appended_ones_last"),
    pytest.param({"a/run.py": "import os, sys\ndef go():\n    import util\n" + insert("lib")
                  + MAIN, "lib/util.py": ""},
                 {"a/run.py": ("lib/, a/", ["a/run.py", "lib/util.py"], True)},
                 id="an_import_deferred_into_a_function_runs_after_the_path_it_needs"),
    pytest.param({"a/run.py": "import os, sys\nimport util\n" + insert("lib") + MAIN,
                  "lib/util.py": ""},
                 {"a/run.py": ("lib/, a/", ["a/run.py", "lib/util.py"], True)},
                 id="an_import_before_the_insert_it_needs_is_found_on_the_final_path"),
    pytest.param({"run.py": "from pkg import mod, other\n" + MAIN, "pkg/__init__.py": "",
                  "pkg/mod.py": "", "pkg/sub/__init__.py": ""},
                 {"run.py": ("./", ["pkg/__init__.py", "pkg/mod.py", "run.py"], True)},
                 id="a_package_s_names_are_its_modules"),
    pytest.param({"pkg/__init__.py": "", "pkg/sub/__init__.py": "",
                  "pkg/sub/run.py": "from .. import mod\nfrom ..sub import near\n"
                                    "from . import *\n" + MAIN,
                  "pkg/mod.py": "", "pkg/sub/near.py": ""},
                 {"pkg/sub/run.py": ("./", ["pkg/__init__.py", "pkg/mod.py",
                                            "pkg/sub/__init__.py", "pkg/sub/near.py",
                                            "pkg/sub/run.py"], True)},
                 id="relative_imports_climb_their_levels_from_above_the_package"),
    pytest.param({"run.py": "import pkg.mod\n" + MAIN, "pkg/__init__.py": "",
                  "pkg/mod.py": "import helper\n", "pkg/helper.py": ""},
                 {"run.py": ("./", ["pkg/__init__.py", "pkg/helper.py", "pkg/mod.py",
                                    "run.py"], True)},
                 id="python_2_s_implicit_relative_import"),
    pytest.param({"run.py": "import sys\nsys.path.insert(0, args.root)\nimport util\n" + MAIN,
                  "util.py": ""},
                 {"run.py": ("./", ["run.py", "util.py"], False)},
                 id="a_folder_computed_at_run_time_is_not_known"),
    pytest.param({"run.py": "import a.b.c\n" + MAIN, "a/__init__.py": "",
                  "a/b/__init__.py": "", "a/b/c.py": "", "a/b/d.py": ""},
                 {"run.py": ("./", ["a/__init__.py", "a/b/__init__.py", "a/b/c.py", "run.py"],
                             True)},
                 id="a_dotted_import_reaches_each_package_on_its_way"),
    pytest.param({"a/run.py": "import os, sys\ndef go():\n    import util\n" + insert("lib")
                  + MAIN, "lib/util.py": "", "a/util.py": ""},
                 {"a/run.py": ("lib/, a/", ["a/run.py", "lib/util.py"], True)},
                 id="a_deferred_import_finds_what_the_final_path_finds_first"),
    pytest.param({"a/run.py": "import os, sys\nimport util\n" + insert("lib") + MAIN,
                  "lib/util.py": "", "a/util.py": ""},
                 {"a/run.py": ("lib/, a/", ["a/run.py", "a/util.py", "lib/util.py"], True)},
                 id="an_import_before_an_insert_finds_what_the_path_then_finds_and_later"),
    pytest.param({"a/run.py": "import os, sys\n" + insert("lib") + insert("lib") + MAIN,
                  "lib/util.py": ""},
                 {"a/run.py": ("lib/, a/", ["a/run.py"], True)},
                 id="a_folder_inserted_twice_is_on_the_path_once"),
    pytest.param({"a/run.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname("
                              "__file__), '..', 'lib', version))\n" + MAIN, "lib/util.py": ""},
                 {"a/run.py": ("a/", ["a/run.py"], False)},
                 id="a_folder_computed_below_one_with_python_is_not_known"),
    pytest.param({"a/run.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname("
                              "__file__), '..', 'external', version))\n" + MAIN,
                  "lib/util.py": ""},
                 {"a/run.py": ("a/", ["a/run.py"], True)},
                 id="a_folder_computed_below_one_without_python_is_harmless"),
    pytest.param({"a/run.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname("
                              "__file__), '..', 'lib', version))\nsys.path.insert(0, os.path."
                              "join(os.path.dirname(__file__), '..', 'external', version))\n"
                              + MAIN, "lib/util.py": ""},
                 {"a/run.py": ("a/", ["a/run.py"], False)},
                 id="a_harmless_computed_folder_does_not_make_an_unknown_one_known"),
]


@pytest.mark.parametrize("trees, expected", CASES)
def test_each_entry_runs_with_its_path_and_reaches_its_modules(tmp_path, trees, expected):
    model = ImportModel(Path(tmp_path), {rel: ast.parse(text) for rel, text in trees.items()})
    found = {str(rel): (run.spelled_path(), sorted(map(str, run.reached)), run.known)
             for rel, run in entry_runs(model).items()}
    assert found == expected
