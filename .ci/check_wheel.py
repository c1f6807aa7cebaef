"""Check a built wheel holds the library and its metadata, and nothing from beside it.

Usage: ``python .ci/check_wheel.py dist/mxpatch_bind-*.whl``; exits 1 naming what is wrong.
"""

import configparser
import sys
import zipfile

# Top-level folders that belong in the sdist only (the wheel is the library and the plugin).
SOURCE_ONLY = ("benchmarks/", "tests/", "examples/", "docs/")
# fork_revisions.json: migrate's fingerprints of the fork, package data (setup.cfg, MANIFEST.in).
REQUIRED = ("mxpatch_bind/__init__.py", "mxpatch_bind/py.typed",
            "mxpatch_bind/migrate/fork_revisions.json")
ENTRY_POINTS = {
    "console_scripts": {"mxpatch-bind": "mxpatch_bind.__main__:main"},
    "pytest11": {"mxpatch_bind": "mxpatch_bind.pytest_plugin"},
}


def problems(path):
    """Return a list of what is wrong with the wheel at ``path`` (empty when all is well)."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        dist_info = next(name.split("/")[0] for name in names if ".dist-info/" in name)
        entry_points = configparser.ConfigParser()
        entry_points.read_string(wheel.read(dist_info + "/entry_points.txt").decode())
    found = ["ships %s" % name for name in names if name.startswith(SOURCE_ONLY)]
    found += ["lacks %s" % name for name in REQUIRED if name not in names]
    if dist_info + "/licenses/LICENSE" not in names:
        found.append("lacks %s/licenses/LICENSE" % dist_info)
    for group, expected in ENTRY_POINTS.items():
        actual = dict(entry_points[group]) if entry_points.has_section(group) else {}
        if actual != expected:
            found.append("entry points [%s] are %r, expected %r" % (group, actual, expected))
    return found


def main(paths):
    failed = not paths
    for path in paths:
        found = problems(path)
        for problem in found:
            print("%s: %s" % (path, problem), file=sys.stderr)
        if not found:
            print("%s: library only, py.typed, LICENSE, entry points: ok" % path)
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
