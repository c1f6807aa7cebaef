"""migrate's import model: a port that keeps the scripts' imports absolute and makes the
modules' implicit relative imports explicit (plain ``import sibling`` and compiled extensions
too); the import check that decides exit 0; vendored copies kept while anything imports them;
``--diff`` previewing exactly what the command does; virtual environments left alone.

The trees are written here, in the shape of the family's repositories: a project folder of
scripts run as ``__main__`` (with an ``__init__.py`` beside them, which misled 2to3), an
``_init_paths.py`` that puts ``../lib`` on ``sys.path``, an ``experiments/`` launcher that
puts the project folder there.
"""

import subprocess
import sys
import textwrap

import pytest

from mxpatch_bind import migrate
from mxpatch_bind.migrate import edits
from test_migrate import FORK_TREE, run_migrate, snapshot

pytest.importorskip("fissix")
pytest.importorskip("libcst")

FAMILY = {
    "proj/__init__.py": "",
    "proj/_init_paths.py": """\
        import os.path as osp
        import sys

        def add_path(path):
            if path not in sys.path:
                sys.path.insert(0, path)

        this_dir = osp.dirname(__file__)
        add_path(osp.join(this_dir, '..', 'lib'))
        """,
    "proj/train.py": """\
        import _init_paths
        from config.config import config
        from symbols import *
        from core import helper
        from nms.nms import nms


        def main():
            print "trained", config['name'], net_a.net_a(), helper.twice(2), nms(3)

        if __name__ == '__main__':
            main()
        """,
    "proj/config/__init__.py": "",
    "proj/config/config.py": "config = {'name': 'tiny'}\n",
    "proj/symbols/__init__.py": "import net_a\nimport os, net_b  # both networks\n",
    "proj/symbols/net_a.py": "def net_a():\n    return 'a'\n",
    "proj/symbols/net_b.py": "def net_b():\n    return 'b'\n",
    "proj/core/__init__.py": "",
    "proj/core/helper.py": "from util import double\n\n\ndef twice(x):\n    return double(x)\n",
    "proj/core/util.py": "def double(x):\n    return x * 2\n",
    "lib/__init__.py": "",
    "lib/nms/__init__.py": "",
    "lib/nms/nms.py": "from py_nms import keep\n\n\ndef nms(n):\n    return keep(n)\n",
    "lib/nms/py_nms.py": "def keep(n):\n    return range(n)[-1]\n",
    "experiments/proj/launch.py": """\
        import os
        import sys
        this_dir = os.path.dirname(__file__)
        sys.path.insert(0, os.path.join(this_dir, '..', '..', 'proj'))

        import train

        if __name__ == '__main__':
            train.main()
        """,
}


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def family(tmp_path):
    return write_tree(tmp_path / "repo", FAMILY)


def run_python(cwd, script):
    return subprocess.run([sys.executable, script], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


# --------------------------------------------------------------------------- the port
def test_the_ported_family_tree_runs_its_script_and_its_launcher(family, capsys):
    status, lines = run_migrate(capsys, family, "--to-python3")
    assert status == 0, lines
    for script in ("proj/train.py", "experiments/proj/launch.py"):
        ran = run_python(family, script)
        assert (ran.returncode, ran.stdout) == (0, "trained tiny a 4 2\n"), ran.stderr


def test_a_scripts_imports_stay_absolute_and_a_modules_become_explicit(family, capsys):
    run_migrate(capsys, family, "--to-python3")
    train = (family / "proj/train.py").read_text()
    assert "import _init_paths\nfrom config.config import config\nfrom symbols import *\n" \
           "from core import helper\nfrom nms.nms import nms\n" in train
    assert (family / "proj/symbols/__init__.py").read_text() == (
        "from . import net_a\nimport os\nfrom . import net_b  # both networks\n")
    assert (family / "proj/core/helper.py").read_text().startswith("from .util import double\n")
    assert (family / "lib/nms/nms.py").read_text().startswith("from .py_nms import keep\n")


def test_a_python_3_init_of_plain_sibling_imports_is_offered_to_the_port(family, capsys):
    status, lines = run_migrate(capsys, family)
    assert ("proj/symbols/__init__.py:1: [port] Python 2 code (implicit relative import "
            "'import net_a' at line 1 and 1 more): --to-python3 ports it with the 2to3 fixers"
            in lines)
    assert status == 1


@pytest.mark.parametrize("extension", ["cpu_nms.pyx", "cpu_nms.cpython-311-x86_64-linux-gnu.so",
                                       "setup_linux.py"])
def test_an_implicit_import_of_a_compiled_extension_becomes_explicit(tmp_path, capsys,
                                                                      extension):
    files = {"lib/nms/__init__.py": "", "lib/nms/nms.py": "from cpu_nms import cpu_nms\n",
             "lib/nms/" + extension: "", "lib/train.py": "import nms.nms\nprint 'x'\n"}
    if extension == "setup_linux.py":
        files["lib/nms/setup_linux.py"] = ("from distutils.extension import Extension\n"
                                           "ext = [Extension('cpu_nms', ['cpu_nms.c'])]\n")
        files["lib/nms/nms.py"] = "from cpu_nms import cpu_nms\nprint 'x'\n"
    root = write_tree(tmp_path, files)
    run_migrate(capsys, root, "--to-python3")
    assert (root / "lib/nms/nms.py").read_text().startswith("from .cpu_nms import cpu_nms\n")
    assert "import nms.nms\n" in (root / "lib/train.py").read_text()


def test_make_relative_keeps_aliases_comments_and_what_it_cannot_say():
    text = "import a as b  # keep\nimport x.y as z\nimport x.y\nfrom a.c import d\nimport os\n"
    new, left = edits.make_relative(text, frozenset({"a", "x"}))
    assert new == ("from . import a as b  # keep\nfrom .x import y as z\nimport x.y\n"
                   "from .a.c import d\nimport os\n")
    assert left == [(3, "x.y")]


# --------------------------------------------------------------------------- the import check
def test_a_relative_import_in_a_script_is_a_check_and_the_exit_is_1(tmp_path, capsys):
    # what 2to3's fix_import made of the family's scripts
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/_init_paths.py": "",
                                 "pkg/train.py": "from . import _init_paths\n"
                                 "from . import helpers\n\nif __name__ == '__main__':\n    pass\n",
                                 "pkg/helpers.py": ""})
    status, lines = run_migrate(capsys, root)
    assert lines[1].startswith("pkg/train.py:2: [check] 'from . import helpers' does not "
                               "resolve: a relative import in a top-level module")
    assert "attempted relative import with no known parent package" in lines[0]
    assert len(lines) == 3 and status == 1


def test_an_import_nothing_provides_is_named_with_what_to_install(tmp_path, capsys):
    root = write_tree(tmp_path, {"train.py": "import os\nimport cv2_not_here\n"
                                             "from config import missing_module\n",
                                 "config/__init__.py": ""})
    status, lines = run_migrate(capsys, root, "--check-imports")
    assert lines[:-1] == ["train.py:2: [check] 'import cv2_not_here' does not resolve: "
                          "'cv2_not_here' is not in the tree, the standard library or the "
                          "installed packages (pip install cv2_not_here?)"]
    assert status == 1


def test_optional_imports_and_everything_that_resolves_exit_0(tmp_path, capsys):
    root = write_tree(tmp_path, {"train.py": "import os\nimport numpy\nimport helpers\n"
                                             "try:\n    import not_installed_at_all\n"
                                             "except ImportError:\n    pass\n",
                                 "helpers.py": "from mxpatch_bind.compat import MutableModule\n"})
    assert run_migrate(capsys, root, "--check-imports") == (0, [
        "migrate: 0 findings in 0 files: nothing to migrate"])
    assert run_migrate(capsys, root)[0] == 0


def test_check_imports_reports_the_python_2_files_without_porting(family, capsys):
    before = snapshot(family)
    status, lines = run_migrate(capsys, family, "--check-imports")
    # py_nms.py parses as Python 3, but ran on Python 2 and 2to3 changes it (range(n)[-1])
    assert {line.split(":")[0] for line in lines[:-1]} == {
        "proj/symbols/__init__.py", "proj/core/helper.py", "proj/train.py", "lib/nms/nms.py",
        "lib/nms/py_nms.py"}
    assert snapshot(family) == before and status == 1


# --------------------------------------------------------------------------- deletions
@pytest.mark.parametrize("importer, source", [
    ("rfcn/core/metric2.py", "from core import module\n"),
    ("rfcn/core/metric2.py", "from core import module as m\n"),
    ("rfcn/core/metric2.py", "from . import module\n"),
    ("rfcn/use.py", "from .core import module\n"),
    ("rfcn/use.py", "import importlib\nmod = importlib.import_module('core.module')\n"),
    ("rfcn/use.py", "mod = __import__('core.module')\n"),
    ("rfcn/use.py", "import importlib\nname = 'module'\n"
                    "mod = importlib.import_module('core.' + name)\n"),
])
def test_a_copy_anything_still_imports_is_never_deleted(tmp_path, capsys, importer, source):
    import shutil
    root = tmp_path / "fork_tree"
    shutil.copytree(FORK_TREE, root)
    (root / importer).write_text(source)
    (root / "rfcn/__init__.py").write_text("")
    status, lines = run_migrate(capsys, root, "--write", "--delete-vendored")
    assert (root / "rfcn/core/module.py").exists()
    kept = [line for line in lines if line.startswith("rfcn/core/module.py:1: [check]")]
    assert len(kept) == 1 and importer in kept[0], lines
    assert status == 1


def test_diff_previews_the_deletions_the_same_command_makes(tmp_path, capsys):
    import shutil
    root = tmp_path / "fork_tree"
    shutil.copytree(FORK_TREE, root)
    before = snapshot(root)
    _, preview = run_migrate(capsys, root, "--write", "--delete-vendored", "--to-python3",
                             "--diff")
    assert snapshot(root) == before
    removed = sorted(old for old, new in zip(preview, preview[1:]) if new == "+++ /dev/null")
    assert removed == ["--- a/rfcn/core/DataParallelExecutorGroup.py",
                       "--- a/rfcn/core/module.py"]
    run_migrate(capsys, root, "--write", "--delete-vendored", "--to-python3")
    assert not (root / "rfcn/core/module.py").exists()
    assert not (root / "rfcn/core/DataParallelExecutorGroup.py").exists()


# --------------------------------------------------------------------------- the walk
def test_a_virtual_environment_inside_the_tree_is_skipped(tmp_path, capsys):
    root = write_tree(tmp_path, {"train.py": "import os\n",
                                 "py2env/pyvenv.cfg": "home = /usr/bin\n",
                                 "py2env/lib/python2.7/site.py": "print 'python 2'\n"})
    before = snapshot(root)
    assert run_migrate(capsys, root, "--to-python3") == (0, [
        "migrate: 0 findings in 0 files: nothing to migrate"])
    assert snapshot(root) == before


def test_the_files_right_inside_a_virtual_environment_are_skipped_too(tmp_path, capsys):
    # the folder holding pyvenv.cfg is left out, not only what is below it
    root = write_tree(tmp_path, {"train.py": "import os\n",
                                 "py2env/pyvenv.cfg": "home = /usr/bin\n",
                                 "py2env/activate_this.py": "print 'python 2'\n"})
    assert run_migrate(capsys, root, "--to-python3") == (0, [
        "migrate: 0 findings in 0 files: nothing to migrate"])


def test_a_package_wins_over_a_module_of_its_name_as_python_imports_it(tmp_path, capsys):
    root = write_tree(tmp_path, {"lib/helpers/__init__.py": "",
                                 "lib/helpers/boxes.py": "AREA = 1\n",
                                 "lib/helpers.py": "OTHER = 2\n",
                                 "lib/train.py": "from helpers.boxes import AREA\n\n"
                                                 "if __name__ == '__main__':\n    print(AREA)\n"})
    assert migrate.check_imports(root) == []
    assert run_python(root / "lib", "train.py").stdout == "1\n"


def test_check_imports_is_public_and_reads_nothing_it_is_not_given(family):
    found = migrate.check_imports(family / "proj/config")
    assert found == []


def test_a_main_module_with_relative_imports_runs_with_dash_m_from_above_its_package(
        tmp_path, capsys):
    # mx-maskrcnn's layout: python -m rcnn.tools.train from the repository's root
    root = write_tree(tmp_path, {
        "rcnn/__init__.py": "", "rcnn/tools/__init__.py": "",
        "rcnn/config.py": "name = 'tiny'\n",
        "rcnn/pycocotools/__init__.py": "",
        "rcnn/pycocotools/mask.py": "def encode(x):\n    return x\n",
        "rcnn/pycocotools/coco.py": "import sys\nfrom . import mask as maskUtils\n"
                                    "if sys.version_info[0] == 2:\n    pass\n",
        "rcnn/tools/train.py": "from ..config import name\nfrom ..pycocotools import coco\n\n"
                               "if __name__ == '__main__':\n    print name\n"})
    assert run_migrate(capsys, root, "--to-python3")[0] == 0
    ran = subprocess.run([sys.executable, "-m", "rcnn.tools.train"], cwd=root,
                         capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, "tiny\n"), ran.stderr
