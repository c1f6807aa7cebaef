"""After a migrate run: imports in the remaining files that resolve to a file the run deleted.

    python benchmarks/migrate_dangling.py TREE RUN_REPORT.txt

Imports are resolved as ``migrate`` resolves them (the importing file's directory and its
parents); a file that does not parse is searched for its import lines. Not part of the test
suite (it reads real trees).
"""

import ast
import re
import sys
from pathlib import Path, PurePosixPath

from mxpatch_bind.migrate.deletions import _text_imports


def imports(path):
    """(line, level, module) of every import in ``path``."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return _text_imports(path.read_bytes().decode("latin-1"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out.append((node.lineno, node.level, node.module or ""))
            if not node.module:
                out += [(node.lineno, node.level, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, 0, a.name) for a in node.names]
    return out


def dangling(root, deleted):
    for path in sorted(root.rglob("*.py")):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        for line, level, module in imports(path):
            if not module:
                continue
            directory = rel.parent
            if level:
                bases = [directory] if level == 1 else list(directory.parents)[level - 2:level - 1]
            else:
                bases = [directory, *directory.parents]
            if any(b.joinpath(*module.split(".")).with_suffix(".py") in deleted for b in bases):
                yield "%s:%d imports the deleted %s" % (rel, line, module)


def main(argv):
    root, report = Path(argv[1]), Path(argv[2]).read_text()
    deleted = {PurePosixPath(m) for m in re.findall(r"^(\S+\.py):1: \[deleted\]", report, re.M)}
    found = list(dangling(root, deleted))
    print("%d deleted, %d dangling imports" % (len(deleted), len(found)))
    for line in found:
        print("  " + line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
