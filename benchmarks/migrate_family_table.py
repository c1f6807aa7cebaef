"""Measure ``migrate`` on ten family repositories; write the JSON and docs/migration.rst's table.

    python benchmarks/migrate_family_table.py [--mirror-root /work/.mirror] [--work DIR]

Per repository, from its mirror's ``HEAD`` (``git archive``; blobs the mirror does not hold
are left out, and named in the JSON): the report-only scan's findings by action, one run of
``migrate --write --delete-vendored --to-python3`` (timed), a second run (what it still
reports, and whether it changed any byte), the files that no longer compile, and the imports
left pointing at a file the run deleted (``benchmarks/migrate_dangling.py``). Writes
``docs/_static/migrate_family.json`` (with the digest of the ``migrate`` code that measured
it) and the table between the markers of docs/migration.rst (``benchmarks/family_table.py``).
Not part of the test suite: it needs the mirrors (``fetch`` leaves them as
``owner+name/repo``). About 10 minutes on two shared cores.
"""

import argparse
import collections
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import family_table  # noqa: E402
from benchmarks.migrate_dangling import dangling  # noqa: E402

REPOSITORIES = [
    ('msracver/Deformable-ConvNets', 'Deformable-ConvNets'),
    ('msracver/FCIS', 'FCIS'),
    ('msracver/Relation-Networks-for-Object-Detection', 'Relation Networks'),
    ('msracver/Flow-Guided-Feature-Aggregation', 'FGFA'),
    ('msracver/Deep-Feature-Flow', 'Deep-Feature-Flow'),
    ('TuSimple/mx-maskrcnn', 'mx-maskrcnn'),
    ('enyac-group/AdaScale', 'AdaScale'),
    ('dhzhd1/road_obj_detect', 'road_obj_detect'),
    ('jpulidojr/3DCE_new', '3DCE_new'),
    ('mahyarnajibi/SNIPER', 'SNIPER'),
]
RUN = ['--write', '--delete-vendored', '--to-python3']
FINDING = re.compile(r'^\S.*?:\d+: \[([a-z]+)\] ', re.M)
# the ported lines whose '/' is old_div: listed by every run until a person writes '//' or '/'
OLD_DIV = re.compile(r'^\S.*?:\d+: \[check\] old_div/old_idiv', re.M)


def _git(git_dir, *args, **kwargs):
    # stderr kept apart: git archive names each excluded missing blob there, and succeeds
    return subprocess.run(['git', '-C', git_dir] + list(args), check=True, timeout=600,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs).stdout


def unpack(mirror, tree):
    """``HEAD`` of ``mirror`` into ``tree``; its commit and the blobs it lacks."""
    bare = os.path.isdir(os.path.join(mirror, 'objects'))
    git_dir = mirror if bare else os.path.join(mirror, '.git')
    listing = _git(git_dir, 'ls-tree', '-r', '-z', 'HEAD').decode().split('\0')
    blobs = [entry.split('\t', 1) for entry in listing if entry]
    check = _git(git_dir, 'cat-file', '--batch-check',
                 input='\n'.join(meta.split()[2] for meta, _ in blobs).encode()).decode()
    missing = [path for (meta, path), line in zip(blobs, check.splitlines())
               if meta.split()[1] == 'blob' and line.endswith('missing')]
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    archive = _git(git_dir, 'archive', 'HEAD', '--', '.',
                   *[':(exclude,literal)' + path for path in missing])
    subprocess.run(['tar', '-x', '-C', tree], input=archive, check=True, timeout=600)
    return _git(git_dir, 'rev-parse', 'HEAD').decode().strip(), missing


def migrate(tree, options, log):
    start = time.time()
    result = subprocess.run([sys.executable, '-m', 'mxpatch_bind', 'migrate', tree] + options,
                            cwd=family_table.REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=3600)
    seconds = time.time() - start
    with open(log, 'w') as f:
        f.write(result.stdout)
    counts = collections.Counter(FINDING.findall(result.stdout))
    return dict(counts, findings=sum(counts.values()), rc=result.returncode,
                old_div=len(OLD_DIV.findall(result.stdout)),
                seconds=round(seconds, 1), summary=result.stdout.strip().splitlines()[-1])


def digests(tree):
    found = {}
    for path in sorted(Path(tree).rglob('*')):
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[path.relative_to(tree).as_posix()] = digest
    return found


def not_compiling(tree):
    bad = []
    for path in sorted(Path(tree).rglob('*.py')):
        try:
            compile(path.read_bytes(), str(path), 'exec', dont_inherit=True)
        except (SyntaxError, ValueError):
            bad.append(path.relative_to(tree).as_posix())
    return bad


def measure(mirror, work, name):
    tree = os.path.join(work, name.replace(' ', '_'))
    revision, missing = unpack(mirror, tree)
    entry = {'name': name, 'revision': revision, 'blobs_not_in_mirror': missing}
    entry['scan'] = migrate(tree, [], tree + '.scan.txt')
    entry['run'] = migrate(tree, RUN, tree + '.run1.txt')
    before = digests(tree)
    entry['second_run'] = migrate(tree, RUN, tree + '.run2.txt')
    entry['second_run']['unchanged'] = digests(tree) == before
    bad = not_compiling(tree)
    entry['files_not_compiling'], entry['not_compiling'] = len(bad), bad
    with open(tree + '.run1.txt') as f:
        report = f.read()
    deleted = {PurePosixPath(m) for m in re.findall(r'^(\S+\.py):1: \[deleted\]', report, re.M)}
    left = list(dangling(Path(tree), deleted))
    entry['dangling_imports'], entry['dangling'] = len(left), left
    return entry


def tools():
    versions = {'python': sys.version.split()[0]}
    for module in ('fissix', 'libcst'):
        try:
            versions[module] = __import__('importlib.metadata').metadata.version(module)
        except Exception:  # not installed: migrate's report says what it could not do
            versions[module] = None
    return versions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mirror-root', default='/work/.mirror',
                        help='folder of owner+name/repo git folders (as fetch leaves them)')
    parser.add_argument('--work', default='/tmp/migrate_family_table', help='scratch folder')
    parser.add_argument('--json', default=family_table.RESULTS)
    parser.add_argument('--page', default=family_table.PAGE)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    results = {'command': 'python benchmarks/migrate_family_table.py',
               'date': datetime.date.today().isoformat(), 'tools': tools(),
               'migrate_digest': family_table.migrate_digest(), 'repositories': []}
    for repo, name in REPOSITORIES:
        mirror = os.path.join(args.mirror_root, repo.replace('/', '+'), 'repo')
        entry = dict(measure(mirror, args.work, name), repository=repo)
        results['repositories'].append(entry)
        print('%-20s %s' % (name, '  '.join(family_table.row(entry)[1:])), flush=True)
    with open(args.json, 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write('\n')
    family_table.write_page(results, args.page)


if __name__ == '__main__':
    main()
