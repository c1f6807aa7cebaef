"""docs/migration.rst's table of ``migrate`` on ten family repositories cannot go stale.

The page shows what ``docs/_static/migrate_family.json`` renders, and the JSON was measured by
the ``migrate`` code of this checkout (its digest): after a change to ``mxpatch_bind/migrate/``,
``python benchmarks/migrate_family_table.py`` measures the repositories again and rewrites
both. These tests need neither the repositories nor the network.
"""

import shutil

from benchmarks import family_table
from benchmarks.migrate_family_table import REPOSITORIES

ENTRY = {
    'name': 'Tiny', 'revision': '0123456789abcdef',
    'scan': {'findings': 9, 'rewrite': 1, 'delete': 2, 'port': 3, 'check': 2, 'ok': 1},
    'run': {'seconds': 12.34},
    'second_run': {'findings': 4, 'old_div': 2, 'check': 3, 'ok': 1, 'unchanged': True},
    'files_not_compiling': 0, 'dangling_imports': 5,
}


def test_the_page_shows_the_table_the_json_renders():
    assert family_table.page_table() == family_table.render(family_table.load())


def test_the_json_was_measured_by_the_migrate_code_of_this_checkout():
    recorded = family_table.load()['migrate_digest']
    assert recorded == family_table.migrate_digest(), (
        "mxpatch_bind/migrate/ changed since docs/_static/migrate_family.json was measured: "
        "run python benchmarks/migrate_family_table.py")


def test_the_json_holds_the_ten_repositories_the_script_measures_in_its_order():
    names = [(e['repository'], e['name']) for e in family_table.load()['repositories']]
    assert names == REPOSITORIES and len(names) == 10


def test_a_changed_byte_an_added_module_or_a_renamed_one_changes_the_digest(tmp_path):
    copy = tmp_path / 'migrate'
    shutil.copytree(family_table.MIGRATE, copy, ignore=shutil.ignore_patterns('__pycache__'))
    original = family_table.migrate_digest(str(copy))
    assert original == family_table.migrate_digest()
    module = copy / 'traps.py'
    module.write_bytes(module.read_bytes().replace(b'def ', b'def  ', 1))
    assert family_table.migrate_digest(str(copy)) != original
    module.write_bytes(module.read_bytes().replace(b'def  ', b'def ', 1))
    assert family_table.migrate_digest(str(copy)) == original
    (copy / 'extra.py').write_text('x = 1\n')
    assert family_table.migrate_digest(str(copy)) != original
    (copy / 'extra.py').rename(copy / 'other.py')
    assert family_table.migrate_digest(str(copy)) not in (original, None)


def test_compiled_caches_and_crlf_line_ends_leave_the_digest_alone(tmp_path):
    copy = tmp_path / 'migrate'
    shutil.copytree(family_table.MIGRATE, copy, ignore=shutil.ignore_patterns('__pycache__'))
    original = family_table.migrate_digest(str(copy))
    (copy / '__pycache__').mkdir()
    (copy / '__pycache__' / 'traps.cpython-311.pyc').write_bytes(b'\0compiled')
    module = copy / 'traps.py'
    module.write_bytes(module.read_bytes().replace(b'\n', b'\r\n'))
    assert family_table.migrate_digest(str(copy)) == original


def test_a_row_holds_the_scan_the_run_time_and_what_the_second_run_left():
    assert family_table.row(ENTRY) == ('Tiny', '0123456', '9 (1, 2, 3, 2, 1)', '12.3 s',
                                       '4 (2, 1, 1)', 'no', '0', '5')
    changed = dict(ENTRY, second_run=dict(ENTRY['second_run'], unchanged=False))
    assert family_table.row(changed)[5] == 'YES'


def test_the_table_is_a_simple_rst_table_with_a_two_line_header():
    lines = family_table.render({'repositories': [ENTRY]})
    rule = lines[0]
    assert lines == [
        rule,
        'repository  revision  scan: findings (rewrite,  run     second run: left      '
        'second run  files not  imports of',
        '                      delete, port, check, ok)  time    (old_div, check, ok)  '
        'changed     compiling  deleted files',
        rule,
        'Tiny        0123456   9 (1, 2, 3, 2, 1)         12.3 s  4 (2, 1, 1)           '
        'no          0          5',
        rule,
    ]
    assert rule.split() == ['=' * 10, '=' * 8, '=' * 24, '=' * 6, '=' * 20, '=' * 10,
                            '=' * 9, '=' * 13]


def test_writing_the_page_replaces_only_the_table_between_the_markers(tmp_path):
    page = tmp_path / 'page.rst'
    page.write_text('Title\n=====\n\n%s\n\nold table\n\n%s\n\nAfter.\n'
                    % (family_table.BEGIN, family_table.END))
    results = {'repositories': [ENTRY]}
    family_table.write_page(results, str(page))
    text = page.read_text()
    assert text.startswith('Title\n=====\n\n%s\n\n' % family_table.BEGIN)
    assert text.endswith('\n\n%s\n\nAfter.\n' % family_table.END)
    assert 'old table' not in text
    assert family_table.page_table(str(page)) == family_table.render(results)
    family_table.write_page(results, str(page))
    assert page.read_text() == text
