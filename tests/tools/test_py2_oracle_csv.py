"""migrate's port of a Python 2 file whose binary files go to ``csv`` (migrate/csv_files.py),
proven by running both sides (tests/py2_oracle.py): 3DCE_new's ``DL_info.csv`` read through
``open(path, 'rb')``, and the other spellings of reading and writing a csv file."""

from textwrap import dedent, indent

import pytest
from py2_oracle import assert_same_output, compare

pytest.importorskip("fissix")
pytest.importorskip("libcst")

# DeepLesion's shape: quoted fields holding commas, Windows line ends
INFO = ('File_name,Bounding_boxes,Spacing_mm_px_,Train_Val_Test\r\n'
        '000001_01_01_103.png,"226.2, 90.7, 241.0, 104.3","0.78, 0.78, 5",1\r\n'
        '000002_02_01_022.png,"50.0, 61.5, 72.9, 80.1","0.66, 0.66, 2.5",3\r\n')

READS = {
    "with, as 3DCE_new reads DL_info.csv": """\
        with open(path, 'rb') as csvfile:
            reader = csv.reader(csvfile)
            for row in reader:
                rows.append(row)
        """,
    "assignment and close": """\
        f = open(path, 'rb')
        rows.extend(csv.reader(f, delimiter=','))
        f.close()
        """,
    "the open inside the call": """\
        rows.extend(csv.reader(open(path, 'rb')))
        """,
    "a DictReader, by keyword": """\
        with open(path, mode='rb') as f:
            rows.extend(sorted(r.items()) for r in csv.DictReader(f=f))
        """,
    "from csv import reader": """\
        with open(path, 'rb') as csvfile:
            rows.extend(reader(csvfile))
        """,
}


@pytest.mark.parametrize("body", READS.values(), ids=READS.keys())
def test_a_csv_file_opened_rb_reads_the_same_rows(tmp_path, body):
    indented = indent(dedent(body), "    ")
    assert_same_output(tmp_path, {"info.csv": INFO, "main.py": (
        "import csv\nfrom csv import reader\n\n\ndef load(path):\n    rows = []\n"
        + indented + "    return rows\n\n\nprint repr(load('info.csv'))\n")})


def test_rows_written_through_a_wb_file_read_back_the_same(tmp_path):
    outputs = assert_same_output(tmp_path, {"main.py": """\
        import csv

        with open('out.csv', 'wb') as f:
            writer = csv.writer(f)
            writer.writerow(['name', 'box'])
            writer.writerows([['a.png', '1, 2, 3, 4'], ['b.png', 'x"y']])
        with open('out.csv', 'rb') as f:
            print list(bytearray(f.read()))
        """})
    # the first open is csv's alone: no 'b', newline=''; the second reads the bytes back
    assert "open('out.csv', 'w', newline='')" in outputs.ported["main.py"]
    assert "open('out.csv', 'rb')" in outputs.ported["main.py"]


def test_a_binary_file_used_otherwise_too_keeps_its_mode_and_is_a_check(tmp_path):
    outputs = compare(tmp_path, {"info.csv": INFO, "main.py": """\
        import csv

        with open('info.csv', 'rb') as f:
            header = f.readline()
            rows = list(csv.reader(f))
        print repr(header), len(rows)
        """})
    assert "open('info.csv', 'rb')" in outputs.ported["main.py"]
    assert [f.line for f in outputs.findings
            if f.action == "check" and "given to csv and used otherwise too" in f.message] == [3]
