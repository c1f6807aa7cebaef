"""Do a family repository's own scripts import after one migration? (Not part of the suite: it
needs the raw trees.)

    python benchmarks/migrate_imports.py RAW WORK [--out results.json]

``RAW`` holds one unpacked raw tree per repository (``git -C MIRROR archive HEAD | tar -x``).
Per repository, in a fresh copy under ``WORK``: one ``python -m mxpatch_bind migrate TREE
--write --delete-vendored --to-python3 --build-ext=cpu`` (timed; its summary and exit status),
the report run after it (its ``[check]`` lines by kind), then every script of the tree (a file
with ``if __name__ == '__main__':`` that uses argparse) run with ``--help`` the way the
repository runs it: ``python path/to/script.py`` from the tree's root, or ``python -m
package.module`` for one that imports relatively. A script "imports" when that exits 0.
The packages the family imports at run time must be installed (easydict, opencv-python-headless
< 4.9, Cython, PyYAML, scipy, dill, hickle for FCIS's demo).
"""

import argparse
import ast
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path


def scripts(tree):
    """``(path, command)`` of each argparse script of the tree, as the repository runs it."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        try:
            parsed = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        text = ast.dump(parsed)
        if "'__main__'" not in text or "argparse" not in text:
            continue
        rel = path.relative_to(tree)
        relative = any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(parsed))
        if relative:
            command = [sys.executable, "-m", ".".join(rel.with_suffix("").parts), "--help"]
        else:
            command = [sys.executable, str(rel), "--help"]
        found.append((str(rel), command))
    return found


def run(raw, work):
    results = {}
    for source in sorted(Path(raw).iterdir()):
        tree = Path(work) / source.name
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(source, tree, symlinks=True)
        started = time.monotonic()
        migrated = subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", str(tree),
                                   "--write", "--delete-vendored", "--to-python3",
                                   "--build-ext=cpu"], capture_output=True, text=True)
        seconds = time.monotonic() - started
        report = subprocess.run([sys.executable, "-m", "mxpatch_bind", "migrate", str(tree)],
                                capture_output=True, text=True)
        checks = [line for line in report.stdout.splitlines() if "[check]" in line]
        ran = {}
        for rel, command in scripts(tree):
            done = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                                  timeout=300)
            ran[rel] = "imports" if done.returncode == 0 else (done.stderr.strip()
                                                               .splitlines() or ["?"])[-1]
        results[source.name] = {
            "migrate_seconds": round(seconds, 1), "migrate_status": migrated.returncode,
            "migrate_summary": (migrated.stdout.strip().splitlines() or [""])[-1],
            "report_status": report.returncode,
            "marked_divisions": sum("'/' from Python 2" in c for c in checks),
            "unresolved_imports": [c for c in checks if "does not resolve" in c],
            "missing_operators": sum("not in the installed MXNet" in c for c in checks),
            "other_checks": [c for c in checks if "'/' from Python 2" not in c
                             and "does not resolve" not in c
                             and "not in the installed MXNet" not in c],
            "scripts": ran}
        ok = sum(v == "imports" for v in ran.values())
        print(f"{source.name}: migrate {seconds:.0f} s (exit {migrated.returncode}); scripts "
              f"importing: {ok} of {len(ran)}; report: {results[source.name]['marked_divisions']}"
              f" marked '/', {len(results[source.name]['unresolved_imports'])} unresolved "
              f"imports, {results[source.name]['missing_operators']} missing operators",
              flush=True)
        for rel, outcome in ran.items():
            if outcome != "imports":
                print(f"    {rel}: {outcome}", flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", help="a folder of unpacked raw family trees")
    parser.add_argument("work", help="where the copies are migrated")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    results = run(args.raw, args.work)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
