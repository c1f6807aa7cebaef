"""Recompute ``mxpatch_bind/migrate/fork_revisions.json`` from the family's git mirrors.

    python benchmarks/fork_fingerprints.py /work/.mirror > mxpatch_bind/migrate/fork_revisions.json

Reads every vendored ``module.py`` / ``DataParallelExecutorGroup.py`` (recognised by content,
as ``migrate`` does) at each mirror's HEAD, and ijkguo/mx-rcnn's ``rcnn/core/module.py`` at
every commit that touched it; groups the copies whose methods and signatures are the same
into one revision; and prints the data file that ships (method names, parameters, defaults:
no code of the copies; its keys are described in ``mxpatch_bind.migrate.fork``). Which
revisions ``compat`` covers is decided below, by hand, from reading each copy
(``COVERAGE``). Not part of the test suite: it needs the mirrors.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

from mxpatch_bind.migrate import fork
from mxpatch_bind.migrate import port as py2
from mxpatch_bind.migrate.files import FileProblem, decode

REPOSITORIES = [
    "msracver/Deformable-ConvNets", "msracver/FCIS",
    "msracver/Relation-Networks-for-Object-Detection",
    "msracver/Flow-Guided-Feature-Aggregation", "msracver/Deep-Feature-Flow",
    "TuSimple/mx-maskrcnn", "enyac-group/AdaScale", "dhzhd1/road_obj_detect",
    "jpulidojr/3DCE_new", "mahyarnajibi/SNIPER", "ijkguo/mx-rcnn", "rsummers11/CADLab",
]
HISTORY = {"ijkguo/mx-rcnn": "rcnn/core/module.py"}  # every revision of this path

# (covered by compat, what the revision adds or how it differs, rescale_grad default),
# keyed by the first copy that shows the revision. Decided from reading the copies.
COVERAGE = {
    "jpulidojr/3DCE_new:rcnn/core/module.py": (
        False, "fit(train_data, ogdb, ...): after an epoch whose epoch_end_callback value is "
        "below its target, the copy trains on a new AnchorLoader over a resample of ogdb (its "
        "annealing), which compat does not do; ogdb is the second positional parameter, where "
        "stock fit takes eval_data. Its iter_size is compat's fit(iter_size=)", "samples"),
    "rsummers11/CADLab:lesion_detector_3DCE/rcnn/core/module.py": (
        True, "fit(iter_size=): compat's fit(iter_size=) runs this copy's loop (grad_req='add', "
        "one update per iter_size batches, each epoch ended with the first device's "
        "parameters); its get_params returned the first device's arrays, compat's averages "
        "the devices (the same values on one or two devices without per-device auxiliary "
        "states)", "samples"),
    "dhzhd1/road_obj_detect:rfcn/core/module.py": (
        True, "allow_extra threaded through Module.bind / set_params / init_params, "
        "MutableModule.bind and fit(allow_extra=), which compat's fit takes (names the "
        "network lacks are ignored either way); fit(state=) removed", "devices"),
    "dhzhd1/road_obj_detect:rfcn/core/DataParallelExecutorGroup.py": (
        True, "__init__(allow_extra=) and set_params(allow_extra=), both ignored", "devices"),
    "enyac-group/AdaScale:rfcn/core/module.py": (
        True, "MutableModule.init_params defaults allow_extra=True and does not pass it on; "
        "stock init_params (hence compat) ignores extra keys as that copy did", "devices"),
}
# A MutableModule over stock Module (the mx-rcnn line) had stock's 1/samples default.
MX_RCNN_LINE = "samples"


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], capture_output=True,
                          check=True).stdout


def git_dir(root, repo):
    base = os.path.join(root, repo.replace("/", "+"), "repo")
    return os.path.join(base, ".git") if os.path.isdir(os.path.join(base, ".git")) else base


def tree_of(data, name):
    try:
        text = decode(data).text
    except FileProblem:
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        try:
            return ast.parse(py2.analysis_text(text, name))
        except (py2.Python2Error, SyntaxError):
            return None


def copies(root):
    """(repo, commit, path, tree, kind) for every vendored copy to fingerprint."""
    for repo in REPOSITORIES:
        mirror = git_dir(root, repo)
        if not os.path.exists(mirror):
            print("# missing mirror: %s" % repo, file=sys.stderr)
            continue
        head = git(mirror, "rev-parse", "HEAD").decode().strip()
        targets = [(head, p) for p in git(mirror, "ls-tree", "-r", "--name-only", head)
                   .decode().splitlines() if p.endswith(".py")]
        if repo in HISTORY:
            targets += [(c, HISTORY[repo]) for c in git(
                mirror, "log", "--all", "--format=%H", "--", HISTORY[repo]).decode().split()]
        for commit, path in targets:
            try:
                data = git(mirror, "show", "%s:%s" % (commit, path))
            except subprocess.CalledProcessError:
                continue
            tree = tree_of(data, path)
            kind = fork.vendored_kind(tree) if tree is not None else None
            if kind:
                yield repo, commit, path, tree, kind


def revisions(root):
    found = {}
    for repo, commit, path, tree, kind in copies(root):
        methods = fork.signatures(tree)
        key = (kind, tuple(sorted(methods.items())))
        where = "%s:%s" % (repo, path)
        entry = found.setdefault(key, {"kind": kind, "methods": methods, "seen_in": []})
        entry["seen_in"].append("%s@%s" % (where, commit[:7]))
        entry.setdefault("first", where)
    out = {}
    for entry in found.values():
        first = entry.pop("first")
        covered, note, rescale = COVERAGE.get(first, (True, "", None))
        if rescale is None:
            wraps_stock = entry["kind"] == fork.VENDORED_MODULE and "Module.bind" not in \
                entry["methods"]
            rescale = MX_RCNN_LINE if wraps_stock else "devices"
        out[entry["seen_in"][0]] = dict(entry, covered=covered, note=note,
                                        rescale_grad_default=rescale)
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else "/work/.mirror"
    # One key per line, sorted, so that a regenerated file diffs per signature.
    sys.stdout.write(json.dumps(revisions(root), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
