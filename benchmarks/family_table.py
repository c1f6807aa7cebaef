"""docs/migration.rst's table of ``migrate`` on ten family repositories, rendered from its JSON.

``python benchmarks/migrate_family_table.py`` measures (it needs the repositories' mirrors)
and writes ``docs/_static/migrate_family.json``, then rewrites the table between the two
marker comments of docs/migration.rst from it. The JSON records a digest of the ``migrate``
code that measured it (``mxpatch_bind/migrate/``): ``tests/tools/test_family_table.py``
checks that the page shows what the JSON renders and that the digest is the one of the code
in the checkout, so a change to ``migrate`` that is not measured again fails the tests.
Nothing here needs MXNet, the trees or the network.
"""

import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIGRATE = os.path.join(REPO_ROOT, 'mxpatch_bind', 'migrate')
RESULTS = os.path.join(REPO_ROOT, 'docs', '_static', 'migrate_family.json')
PAGE = os.path.join(REPO_ROOT, 'docs', 'migration.rst')
BEGIN = '.. family table: begin (written by python benchmarks/migrate_family_table.py)'
END = '.. family table: end'

HEADER = [('repository', 'revision', 'scan: findings (rewrite,', 'run', 'second run: left',
           'second run', 'files not', 'imports of'),
          ('', '', 'delete, port, check, ok)', 'time', '(old_div, check, ok)', 'changed',
           'compiling', 'deleted files')]


def migrate_digest(folder=MIGRATE):
    """SHA-256 of every file of ``migrate`` (its code and its data), by relative path.

    Line ends are normalised, so a checkout with CRLF line ends gives the same digest.

    Examples
    --------
    >>> len(migrate_digest())
    64
    """
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in sorted(files):
            if name.endswith(('.py', '.json')):
                path = os.path.join(root, name)
                digest.update(os.path.relpath(path, folder).replace(os.sep, '/').encode())
                with open(path, 'rb') as f:
                    digest.update(f.read().replace(b'\r\n', b'\n'))
    return digest.hexdigest()


def _counts(found, actions):
    return ', '.join(str(found.get(action, 0)) for action in actions)


def row(entry):
    """The table's cells for one repository's JSON entry."""
    scan, left = entry['scan'], entry['second_run']
    return (entry['name'], entry['revision'][:7],
            '%d (%s)' % (scan['findings'], _counts(scan, ('rewrite', 'delete', 'port', 'check',
                                                          'ok'))),
            '%.1f s' % entry['run']['seconds'],
            '%d (%d, %d, %d)' % (left['findings'], left['old_div'],
                                 left.get('check', 0) - left['old_div'], left.get('ok', 0)),
            'no' if left['unchanged'] else 'YES', str(entry['files_not_compiling']),
            str(entry['dangling_imports']))


def render(results):
    """The reStructuredText simple table of ``results`` (the JSON's content), as lines."""
    rows = HEADER + [row(entry) for entry in results['repositories']]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER[0]))]
    rule = '  '.join('=' * w for w in widths)
    lines = [r'  '.join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return [rule] + lines[:2] + [rule] + lines[2:] + [rule]


def load(path=RESULTS):
    with open(path) as f:
        return json.load(f)


def page_table(path=PAGE):
    """The lines between the page's two markers (the blank lines around them left out)."""
    with open(path) as f:
        lines = f.read().split('\n')
    begin, end = lines.index(BEGIN), lines.index(END)
    return [line for line in lines[begin + 1:end] if line.strip()]


def write_page(results, path=PAGE):
    """Replace the table between the markers of ``path`` with ``render(results)``."""
    with open(path) as f:
        lines = f.read().split('\n')
    begin, end = lines.index(BEGIN), lines.index(END)
    lines[begin + 1:end] = [''] + render(results) + ['']
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
