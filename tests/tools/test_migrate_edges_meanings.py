"""Edges of ``migrate.meanings`` (issue 36, item 10): what a star import binds, read the way
each spelling finds it (a module's literal ``__all__``, one that is no literal, one that
leaves the name out, a private name, a chain of star imports, an installed package, a
package's ``__init__``, a relative star import, a name of two meanings, a module's own
definition, a module that is nowhere), seen in whether the port of a Python 2 tree passes
``yaml.load`` its Loader (the fix needs the name's one meaning)."""

import pytest

from mxpatch_bind import migrate

pytest.importorskip("fissix")
pytest.importorskip("yaml")

LOADER = "print(load(open('c.yml'), Loader=yaml.FullLoader))\n"
LEFT = "print(load(open('c.yml')))\n"
MAIN = "from helpers import *\nprint load(open('c.yml'))\n"


@pytest.mark.parametrize("files, ported", [
    pytest.param({"helpers.py": "from yaml import load\n__all__ = ['load', 'x']\nx = 1\n",
                  "main.py": MAIN},
                 "import yaml\nfrom helpers import *\n" + LOADER, id="a_literal_all"),
    pytest.param({"helpers.py": "from yaml import load\n__all__ = ['lo' + 'ad']\n",
                  "main.py": MAIN},
                 "import yaml\nfrom helpers import *\n" + LOADER,
                 id="an_all_that_is_no_literal_exports_the_public_names"),
    pytest.param({"helpers.py": "from yaml import load\n__all__ = ['x']\nx = 1\n",
                  "main.py": MAIN},
                 "from helpers import *\n" + LEFT, id="an_all_that_leaves_the_name_out"),
    pytest.param({"helpers.py": "from yaml import load as _load\n",
                  "main.py": "from helpers import *\nprint _load(open('c.yml'))\n"},
                 "from helpers import *\nprint(_load(open('c.yml')))\n",
                 id="a_private_name_is_not_exported"),
    pytest.param({"a.py": "from b import *\n", "b.py": "from yaml import load\n",
                  "main.py": "from a import *\nprint load(open('c.yml'))\n"},
                 "import yaml\nfrom a import *\n" + LOADER, id="a_chain_of_star_imports"),
    pytest.param({"main.py": "from yaml import *\nprint load(open('c.yml'))\n"},
                 "import yaml\nfrom yaml import *\n" + LOADER, id="an_installed_package"),
    pytest.param({"helpers.py": "import os\nif os.name:\n    from yaml import load\nelse:\n"
                                "    from json import load\n", "main.py": MAIN},
                 "from helpers import *\n" + LEFT, id="a_name_of_two_meanings_means_neither"),
    pytest.param({"helpers.py": "def load(f):\n    return f\n",
                  "main.py": "from helpers import *\nimport yaml\nprint load(open('c.yml'))\n"},
                 "from helpers import *\nimport yaml\n" + LEFT,
                 id="a_name_the_module_defines_means_no_import"),
    pytest.param({"pkg/__init__.py": "from yaml import load\n",
                  "main.py": "from pkg import *\nprint load(open('c.yml'))\n"},
                 "import yaml\nfrom pkg import *\n" + LOADER, id="a_package_s_init"),
    pytest.param({"pkg/__init__.py": "", "pkg/h.py": "from yaml import load\n",
                  "pkg/main.py": "from .h import *\nprint load(open('c.yml'))\n"},
                 "import yaml\nfrom .h import *\n" + LOADER, id="a_relative_star_import"),
    pytest.param({"main.py": "from nowhere_at_all import *\nprint load(open('c.yml'))\n"},
                 "from nowhere_at_all import *\n" + LEFT, id="a_module_that_is_nowhere"),
    pytest.param({"helpers.py": "from yaml import load\n",
                  "main.py": "from nowhere_at_all import *\n" + MAIN},
                 "from nowhere_at_all import *\nfrom helpers import *\n" + LEFT,
                 id="a_star_import_from_nowhere_beside_a_known_one_leaves_every_name_unknown"),
])
def test_a_star_import_binds_what_its_module_exports(tmp_path, files, ported):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    migrate.apply(tmp_path, migrate.scan(tmp_path), write=True, delete_vendored=True,
                  to_python3=True)
    main = "pkg/main.py" if "pkg/main.py" in files else "main.py"
    assert (tmp_path / main).read_text() == ported
