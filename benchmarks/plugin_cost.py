"""Benchmark 6: what the pytest plugin costs a pytest run that does not use it.

The ``pytest11`` entry point loads ``mxpatch_bind.pytest_plugin`` in every pytest run of the
environment, so a project that never asks for the patch pays for whatever the module does.
``pytest --co`` of a trivial generated project (two files of ten empty tests, no conftest)
runs in subprocesses with the plugin loaded and with ``-p no:mxpatch_bind``, interleaved
round by round. Other plugins' autoloading is off in both, so the difference is ours alone.
The target is on the children's CPU time (user + system, from ``getrusage``): on a shared
machine, wall time mostly measures the other processes; the wall ratio is reported beside it.
It also lists the modules that loading the plugin imports beyond pytest and mxpatch_bind.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

from . import common

NAME = "plugin_cost"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RATIO = 1.02
# Blocking the entry point's name, then loading the module by name, loads it exactly once
# whether or not the package's entry point is installed.
LOADED = ("-p", "no:mxpatch_bind", "-p", "mxpatch_bind.pytest_plugin")
NOT_LOADED = ("-p", "no:mxpatch_bind")
# The control repeats the unloaded case: its ratio to the unloaded case is the noise floor.
CASES = {"plugin loaded": LOADED, "-p no:mxpatch_bind": NOT_LOADED,
         "-p no:mxpatch_bind, control": NOT_LOADED}
FILES, TESTS_PER_FILE = 2, 10

# Run in a fresh interpreter: what importing the plugin adds to what pytest already loaded.
_NEW_MODULES = """
import sys, pytest
before = set(sys.modules)
import mxpatch_bind.pytest_plugin
print(" ".join(sorted(name for name in set(sys.modules) - before
                      if name.split(".")[0] != "mxpatch_bind")))
"""


def run(tiny=False, rounds=None):
    """Median CPU and wall seconds of ``pytest --co`` with and without the plugin."""
    rounds = rounds or (2 if tiny else 41)
    with tempfile.TemporaryDirectory(prefix="mxpatch_bind_plugin_cost_") as project:
        _write_project(project)
        _check_loading(project)
        for arguments in CASES.values():  # warm the file cache and .pyc files
            _collect(project, arguments)
        common.progress("plugin_cost: %d rounds of pytest --co, plugin loaded vs not"
                        % rounds)
        samples = common.interleaved({name: (lambda arguments=arguments:
                                             _collect(project, arguments))
                                      for name, arguments in CASES.items()}, rounds)
        imported = _imported_by_plugin(project)
    return _result(samples, imported, rounds, tiny)


def _write_project(project):
    body = "".join("def test_%d():\n    pass\n\n\n" % index for index in range(TESTS_PER_FILE))
    for index in range(FILES):
        with open(os.path.join(project, "test_trivial_%d.py" % index), "w") as stream:
            stream.write(body)


def _environment(project):
    """This checkout's package first; no other plugin autoloads (their cost is not ours).

    Byte-code is cached (in the project's folder, not the checkout) even where
    PYTHONDONTWRITEBYTECODE is set: an installed package has its ``.pyc`` files, and
    compiling the checkout's sources in every run would be counted as the plugin's cost.
    """
    environment = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                       PYTHONPYCACHEPREFIX=os.path.join(project, ".pycache"),
                       PYTHONPATH=os.pathsep.join(filter(None, [REPO,
                                                                os.environ.get("PYTHONPATH")])))
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def _pytest(project, *arguments):
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments]


def _check_loading(project):
    """Fail loudly if a case does not load, or block, the plugin as it claims."""
    for name, arguments in CASES.items():
        completed = subprocess.run(_pytest(project, *arguments, "--markers"), cwd=project,
                                   env=_environment(project), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, universal_newlines=True,
                                   timeout=300, check=False)
        loaded = "@pytest.mark.mxpatch_bind" in completed.stdout
        if loaded != (arguments is LOADED):
            raise RuntimeError("plugin_cost: case %r %s the plugin:\n%s"
                               % (name, "did not load" if arguments is LOADED else "loaded",
                                  completed.stdout[-2000:]))


def _collect(project, arguments):
    """One ``pytest --co -q`` run: (wall seconds, the child's CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(_pytest(project, *arguments, "--co", "-q"), cwd=project,
                               env=_environment(project), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True,
                               timeout=300, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0 or "%d tests collected" % (FILES * TESTS_PER_FILE) not in \
            completed.stdout:
        raise RuntimeError("plugin_cost: pytest --co failed:\n%s" % completed.stdout[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _imported_by_plugin(project):
    completed = subprocess.run([sys.executable, "-c", _NEW_MODULES],
                               env=_environment(project), stdout=subprocess.PIPE,
                               universal_newlines=True, timeout=300, check=True)
    return completed.stdout.split()


def _result(samples, imported, rounds, tiny):
    loaded, blocked = samples["plugin loaded"], samples["-p no:mxpatch_bind"]
    cpu_ratio = common.paired_ratio([cpu for _, cpu in loaded], [cpu for _, cpu in blocked])
    control_ratio = common.paired_ratio([cpu for _, cpu in samples["-p no:mxpatch_bind, control"]],
                                        [cpu for _, cpu in blocked])
    wall_ratio = common.paired_ratio([wall for wall, _ in loaded],
                                     [wall for wall, _ in blocked])
    cpu_added = common.median([on - off for (_, on), (_, off) in zip(loaded, blocked)])
    rows = [{"case": name, "cpu_ms": 1e3 * common.median([cpu for _, cpu in values]),
             "wall_ms": 1e3 * common.median([wall for wall, _ in values]),
             "cpu_spread": common.spread([cpu for _, cpu in values])}
            for name, values in samples.items()]
    targets = [common.target("CPU time ratio, plugin loaded / -p no:mxpatch_bind", cpu_ratio,
                             "<= %.2f" % TARGET_RATIO, cpu_ratio <= TARGET_RATIO),
               common.target("modules the plugin imports beyond pytest and mxpatch_bind",
                             " ".join(imported) or "none", "none", not imported)]
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"rounds": rounds, "files": FILES, "tests_per_file": TESTS_PER_FILE,
                       "command": "pytest -p no:cacheprovider --co -q, "
                                  "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"},
            "rows": rows, "targets": targets,
            "ratios": {"cpu": cpu_ratio, "wall": wall_ratio, "cpu_control": control_ratio},
            "cpu_ms_added": 1e3 * cpu_added}


def format_table(result):
    table = common.format_table(["pytest --co", "CPU ms", "±", "wall ms"],
                                [[r["case"], r["cpu_ms"], "%.0f%%" % (100 * r["cpu_spread"]),
                                  r["wall_ms"]] for r in result["rows"]])
    ratios = ("median per-round ratio, plugin loaded / not: CPU %.3f, wall %.3f; "
              "median CPU added: %+.1f ms; noise floor (control / not): CPU %.3f"
              % (result["ratios"]["cpu"], result["ratios"]["wall"], result["cpu_ms_added"],
                 result["ratios"]["cpu_control"]))
    return "\n".join([table, ratios, common.format_targets(result["targets"])])
