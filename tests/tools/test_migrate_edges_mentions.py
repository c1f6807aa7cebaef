"""Edges of ``migrate.mentions`` (issue 36, item 10): one tree holding each kind of file the
scan reads beside its modules (a shell script, a Makefile, files named by their ``#!`` line,
a Cython file, a ``.pyw`` in Python 3, in Python 2 and broken, configuration with and without
a copy's name, nbformat 4 and 3 notebooks with every magic, a broken notebook) and each kind
it does not (prose, a symlink, a binary file, ``setup.py``, an unknown suffix, a file
without suffix or ``#!``), and the places found compared whole."""

import json
import os

import pytest

from mxpatch_bind.migrate import mentions

NOTEBOOK = {"nbformat": 4, "cells": [
    {"cell_type": "markdown", "source": ["python core/module.py\n"]},
    {"cell_type": "code", "source": ["import core.module\n", "!python core/module.py\n",
                                     "%run core/module.py\n", "%run -m core.module\n",
                                     "x = !ls core/module.py\n", "obj?\n",
                                     "%sx python core/module.py\n", "%load\n",
                                     "%matplotlib inline\n", "%run -m\n",
                                     "%run -d core/module.py\n"]},
    {"cell_type": "code", "source": ["if True:\n", "    %run 'core/module.py'"]},
    {"cell_type": "code", "source": "%%bash\npython core/module.py\n"},
    {"cell_type": "code", "source": ["%%time\n", "import core.module\n"]},
    {"cell_type": "code", "source": ["%%html\n", "<b>core/module.py</b>\n"]},
    {"cell_type": "code", "source": ["x = 1\nimport core.module", "\ny = 2\n"]},
    {"cell_type": "code", "source": ["print 'core.module'\n"]},
    {"cell_type": "raw", "source": ["import core.module\n"]},
    "not a cell",
]}
OLD_NOTEBOOK = {"nbformat": 3, "worksheets": [{"cells": [
    {"cell_type": "code", "input": ["x = 1\n", "import core.module\n"]}]}]}
FILES = {
    "run.sh": "cd rfcn\npython core/module.py\npython -m core.module\n"
              "python -c \"from core import module; import core.module, os\"\n"
              "python -c \"from .core import module\"\n",
    "Makefile": "test:\n\tpython core/module.py\n",
    "tools/script": "#!/usr/bin/env python\nimport core.module\n",
    "tools/tool": "#!/bin/bash\npython core/module.py\n",
    "tools/plain": "python core/module.py\n",
    "README.txt": "python core/module.py\n",
    "notes.md": "python core/module.py\n",
    "cfg.yaml": "model: core/module.py\nother: x\n",
    "cfg2.yaml": "model: lib/other.py\n",
    "lib.pyx": "import core.module\nfrom .core import module, other\n  import indented\n"
               "cdef int x = 'core/module.py'\nx = 1; import hidden\n",
    "tool.pyw": "import core.module\nfrom . import module\n",
    "old.pyw": "print 'x'\nimport core.module\n",
    "broken.pyw": "def (:\nimport core.module\n",
    "run.bat": "python -m core.module\n",
    "nb.ipynb": json.dumps(NOTEBOOK, indent=1),
    "old.ipynb": json.dumps(OLD_NOTEBOOK, indent=1),
    "bad.ipynb": "{not json core/module.py\n",
    "list.ipynb": "[1, 2]",
    "data.json": "core/module.py\0",
    "setup.py": "import core.module\n",
    "image.png": "core/module.py",
    **{f"{folder}/run.sh": "python core/module.py\n" for folder in ("zeta", "alpha", "mid")},
}
EXPECTED = [  # (file, line, kind, note, how, names, paths, dotted, load's kind)
    ('Makefile', 2, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('bad.ipynb', 1, 'config', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('broken.pyw', 2, 'python', '', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('broken.pyw', 2, 'python', '', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('cfg.yaml', 1, 'config', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('lib.pyx', 1, 'cython', '', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('lib.pyx', 4, 'cython', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('lib.pyx', 1, 'cython', '', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('lib.pyx', 2, 'cython', '', 'from .core import module, other',
     ((1, 'core'), (1, 'core.module'), (1, 'core.other')), (), (), 'import'),
    ('lib.pyx', 3, 'cython', '', 'import indented',
     ((0, 'indented'),), (), (), 'import'),
    ('nb.ipynb', 14, 'notebook', 'cell 2, line 2', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('nb.ipynb', 15, 'notebook', 'cell 2, line 3', '%run core/module.py',
     (), ('core/module.py',), (), 'path'),
    ('nb.ipynb', 16, 'notebook', 'cell 2, line 4', '%run -m core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('nb.ipynb', 17, 'notebook', 'cell 2, line 5', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('nb.ipynb', 19, 'notebook', 'cell 2, line 7', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('nb.ipynb', 23, 'notebook', 'cell 2, line 11', '%run -d core/module.py',
     (), ('core/module.py',), (), 'path'),
    ('nb.ipynb', 13, 'notebook', 'cell 2, line 1', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('nb.ipynb', 30, 'notebook', 'cell 3, line 2', "%run 'core/module.py'",
     (), ('core/module.py',), (), 'path'),
    ('nb.ipynb', 35, 'notebook', 'cell 4, line 2', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('nb.ipynb', 41, 'notebook', 'cell 5, line 2', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('nb.ipynb', 54, 'notebook', 'cell 7, line 2', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('nb.ipynb', 61, 'notebook', 'cell 8, line 1', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('old.ipynb', 10, 'notebook', 'cell 1, line 2', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('old.pyw', 2, 'python', '', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('run.bat', 1, 'shell', '', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('run.sh', 2, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('run.sh', 3, 'shell', '', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('run.sh', 4, 'shell', '', "'core.module'",
     (), (), ('core.module',), 'mention'),
    ('run.sh', 4, 'shell', '', 'from core import module',
     (), (), ('core', 'core.module'), 'import'),
    ('run.sh', 4, 'shell', '', 'import core.module, os',
     (), (), ('core.module', 'os'), 'import'),
    ('run.sh', 5, 'shell', '', 'from .core import module',
     (), (), (), 'import'),
    ('tool.pyw', 1, 'python', '', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('tool.pyw', 2, 'python', '', 'from . import module',
     ((1, 'module'),), (), (), 'import'),
    ('alpha/run.sh', 1, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('mid/run.sh', 1, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('tools/script', 2, 'python', '', 'import core.module',
     ((0, 'core.module'),), (), (), 'import'),
    ('tools/tool', 2, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
    ('zeta/run.sh', 1, 'shell', '', "'core/module.py'",
     (), ('core/module.py',), (), 'mention'),
]



def test_each_file_that_may_load_a_copy_is_read_its_own_way_and_no_other_file_is(tmp_path):
    pytest.importorskip("fissix")  # the Python 2 .pyw and notebook cell are read through it
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.symlink(tmp_path / "run.sh", tmp_path / "link.sh")
    found = [(str(p.rel), p.line, p.kind, p.note, p.load.how, p.load.names,
              tuple(path.text for path in p.load.paths), p.load.dotted, p.load.kind)
             for p in mentions.places(tmp_path, {"module"})]
    assert found == EXPECTED


def test_a_notebook_cell_that_is_not_python_is_still_read_for_imports_and_mentions(tmp_path):
    pytest.importorskip("fissix")
    cell = {"cell_type": "code", "source": ["import core.module\n", "load('core/module.py')\n",
                                            "this is not python (\n"]}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "cells": [cell]}, indent=1))
    found = [(p.line, p.note, p.load.how, tuple(path.text for path in p.load.paths),
              p.load.dotted, p.load.kind) for p in mentions.places(tmp_path, {"module"})]
    assert found == FOUND_IN_A_BROKEN_CELL


FOUND_IN_A_BROKEN_CELL = [
    (7, 'cell 1, line 1', "'core.module'", (), ('core.module',), 'mention'),
    (8, 'cell 1, line 2', "'core/module.py'", ('core/module.py',), (), 'mention'),
    (7, 'cell 1, line 1', 'import core.module', (), (), 'import'),
]
