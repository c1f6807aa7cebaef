"""The import check resolves each entry point with its own ``sys.path``: its folder, what its
``_init_paths`` and the modules it imports put there; a module reached from several entry
points resolves under each. The trees are written here in the layout of Deformable-ConvNets
(sub-projects beside ``lib/``, each with an ``_init_paths.py`` that inserts ``../lib``); each
finding is checked against running the script itself.
"""

import subprocess
import sys
import textwrap

import pytest
from test_migrate import run_migrate
from test_migrate_imports import write_tree

from mxpatch_bind import migrate

INIT_PATHS = """\
    import os.path as osp
    import sys

    def add_path(path):
        if path not in sys.path:
            sys.path.insert(0, path)

    this_dir = osp.dirname(__file__)
    add_path(osp.join(this_dir, '..', 'lib'))
    """
SCRIPT = """\
    import _init_paths
    import common
    from core.helper import twice

    if __name__ == '__main__':
        print(twice(common.ONE))
    """


def sub_projects(root, **extra):
    files = {"lib/common.py": "ONE = 1\n",
             "proj_a/_init_paths.py": INIT_PATHS, "proj_a/train.py": SCRIPT,
             "proj_b/_init_paths.py": INIT_PATHS, "proj_b/train.py": SCRIPT,
             "proj_b/core/__init__.py": "",
             "proj_b/core/helper.py": "def twice(x):\n    return 2 * x\n"}
    files.update(extra)
    return write_tree(root, files)


def runs(root, script):
    ran = subprocess.run([sys.executable, script], cwd=root, capture_output=True, text=True,
                         timeout=120)
    return ran.returncode, ran.stdout + ran.stderr


def test_an_import_only_a_sibling_sub_project_satisfies_is_a_check_naming_the_script(tmp_path,
                                                                                     capsys):
    root = sub_projects(tmp_path)
    status, lines = run_migrate(capsys, root, "--check-imports")
    assert lines[:-1] == [
        "proj_a/train.py:3: [check] 'from core.helper import twice' does not resolve when "
        "proj_a/train.py runs (sys.path: lib/, proj_a/): the tree has it at "
        "proj_b/core/helper.py, found only with proj_b/ on sys.path, which that run does not "
        "put there"]
    assert status == 1
    # the reference: Python itself
    assert runs(root, "proj_a/train.py")[0] == 1
    assert "No module named 'core'" in runs(root, "proj_a/train.py")[1]
    assert runs(root, "proj_b/train.py") == (0, "2\n")


def test_the_same_import_its_own_sub_project_satisfies_is_no_finding(tmp_path, capsys):
    root = sub_projects(tmp_path, **{"proj_a/core/__init__.py": "",
                                     "proj_a/core/helper.py": "def twice(x):\n    return x + x\n"})
    assert run_migrate(capsys, root, "--check-imports") == (0, [
        "migrate: 0 findings in 0 files: nothing to migrate"])
    assert runs(root, "proj_a/train.py") == (0, "2\n")


def test_a_script_without_a_main_guard_is_an_entry_point_too(tmp_path, capsys):
    root = sub_projects(tmp_path, **{"proj_a/train.py": "import _init_paths\n"
                                                        "from core.helper import twice\n"
                                                        "print(twice(1))\n"})
    [found] = migrate.check_imports(root)
    assert (found.path, found.line) == ("proj_a/train.py", 2)
    assert "when proj_a/train.py runs (sys.path: lib/, proj_a/)" in found.message
    assert runs(root, "proj_a/train.py")[0] == 1


def test_a_module_two_scripts_reach_is_checked_under_each_and_names_the_one_that_fails(
        tmp_path, capsys):
    root = sub_projects(tmp_path, **{
        "lib/common.py": "from core.helper import twice\nONE = twice(1) // 2\n",
        "proj_a/train.py": "import _init_paths\nimport common\n\n"
                           "if __name__ == '__main__':\n    print(common.ONE)\n"})
    found = migrate.check_imports(root)
    assert [(f.path, f.line) for f in found] == [("lib/common.py", 1)]
    assert "when proj_a/train.py runs (sys.path: lib/, proj_a/)" in found[0].message
    assert "proj_b/train.py" not in found[0].message
    assert runs(root, "proj_a/train.py")[0] == 1 and runs(root, "proj_b/train.py")[0] == 0


def test_a_package_earlier_on_the_path_hides_the_same_name_later_as_python_does(tmp_path,
                                                                                capsys):
    # _init_paths inserts lib/ before the script's folder: lib/utils is the utils package
    root = sub_projects(tmp_path, **{
        "lib/utils/__init__.py": "", "lib/utils/boxes.py": "",
        "proj_b/utils/__init__.py": "", "proj_b/utils/own.py": "X = 3\n",
        "proj_b/train.py": "import _init_paths\nfrom utils.own import X\n\n"
                           "if __name__ == '__main__':\n    print(X)\n"})
    found = [f for f in migrate.check_imports(root) if f.path == "proj_b/train.py"]
    assert [(f.line, f.message) for f in found] == [(2, (
        "'from utils.own import X' does not resolve when proj_b/train.py runs (sys.path: lib/, "
        "proj_b/): the tree has it at proj_b/utils/own.py, but lib/utils comes first on that "
        "sys.path and has no such module"))]
    assert "No module named 'utils.own'" in runs(root, "proj_b/train.py")[1]


def test_a_launcher_that_puts_the_sub_project_on_the_path_reaches_its_script(tmp_path, capsys):
    # experiments/proj_a/launch.py inserts ../../proj_a, then imports train: train's imports
    # resolve under the launcher's path too, and fail there as well
    root = sub_projects(tmp_path, **{"experiments/proj_a/launch.py": """\
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'proj_a'))
        import train

        if __name__ == '__main__':
            pass
        """})
    [found] = migrate.check_imports(root)
    assert "when proj_a/train.py, experiments/proj_a/launch.py run" in found.message \
        or "when experiments/proj_a/launch.py, proj_a/train.py run" in found.message
    assert "(sys.path of " in found.message
    assert runs(root, "experiments/proj_a/launch.py")[0] == 1


def test_an_import_inside_a_function_resolves_with_the_path_the_top_level_left(tmp_path,
                                                                                capsys):
    root = sub_projects(tmp_path, **{"proj_b/train.py": """\
        def main():
            from core.helper import twice
            import common
            print(twice(common.ONE))

        import _init_paths

        if __name__ == '__main__':
            main()
        """})
    assert [(f.path, f.line) for f in migrate.check_imports(root)] == [("proj_a/train.py", 3)]
    assert runs(root, "proj_b/train.py") == (0, "2\n")


def test_a_module_no_script_reaches_resolves_against_the_whole_trees_path(tmp_path, capsys):
    root = sub_projects(tmp_path, **{
        "proj_a/core/__init__.py": "",
        "proj_a/core/helper.py": "def twice(x):\n    return x + x\n",
        "proj_a/tools/__init__.py": "",
        "proj_a/tools/unused.py": "from core.helper import twice\n"})
    assert migrate.check_imports(root) == []


@pytest.mark.parametrize("folder, finding", [
    ("os.path.join(osp.dirname(__file__), '..', sys.argv[1])", False),  # anywhere in the tree
    ("os.path.join(osp.dirname(__file__), '..', 'external', 'mxnet', VERSION)", True),
])
def test_a_computed_folder_leaves_the_run_to_the_whole_trees_path_unless_no_python_is_there(
        tmp_path, capsys, folder, finding):
    # the fork's scripts insert external/mxnet/<config.MXNET_VERSION>: no Python of the tree
    # is there, so the run's path is still known
    script = textwrap.dedent(SCRIPT).replace(
        "import _init_paths\n", "import _init_paths\nimport os\nimport os.path as osp\n"
        f"import sys\nVERSION = sys.argv[-1]\nsys.path.insert(0, {folder})\n")
    root = sub_projects(tmp_path, **{"proj_a/train.py": script})
    (root / "external" / "mxnet").mkdir(parents=True)
    assert bool(migrate.check_imports(root)) is finding


def test_the_examples_of_the_run_model_hold():
    import doctest

    from mxpatch_bind.migrate import model, runs
    assert doctest.testmod(runs).failed == 0 and doctest.testmod(model).failed == 0
    assert doctest.testmod(runs).attempted and doctest.testmod(model).attempted
