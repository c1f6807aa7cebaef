"""The rest of the class, hunted with the oracle (tests/py2_oracle.py): Python 2 behaviour
that the port may change without a word. Each test is one behaviour, a small program that
Python 2.7 ran; the port must print what it printed."""

import pytest
from py2_oracle import assert_same_output

pytest.importorskip("fissix")
pytest.importorskip("libcst")


def test_dict_and_set_iteration_give_python_2s_order(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        classes = {'person': 1, 'bicycle': 2, 'car': 3, 'motorbike': 4, 'aeroplane': 5}
        print classes.keys()
        for name in classes:
            print name,
        print
        print list(set(['dog', 'cat', 'bird', 'horse']))
        """})


def test_sorted_and_sort_with_a_cmp_function_order_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        def by_area(a, b):
            return cmp(a[0] * a[1], b[0] * b[1])

        boxes = [(3, 4), (1, 2), (2, 2)]
        print sorted(boxes, cmp=by_area), sorted(boxes, by_area, reverse=True)
        boxes.sort(cmp=lambda a, b: cmp(b[1], a[1]))
        print boxes, cmp(1, 2), cmp('b', 'a')
        """})


def test_a_str_hashed_with_hashlib_gives_the_same_digest(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import hashlib
        name = 'voc_2007_trainval'
        print hashlib.md5(name).hexdigest(), hashlib.sha1(name + '_gt').hexdigest()[:8]
        """})


def test_str_packed_and_unpacked_with_struct_gives_the_same_values(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import struct
        header = struct.pack('<4sI', 'PIEH', 7)
        with open('flow.flo', 'wb') as f:
            f.write(header)
        with open('flow.flo', 'rb') as f:
            magic, width = struct.unpack('<4sI', f.read(8))
        print magic == 'PIEH', width, len(header)
        """})


def test_str_through_base64_gives_the_same_text(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import base64
        encoded = base64.b64encode('counts')
        print encoded, base64.b64decode(encoded) + '!'
        """})


def test_lines_of_two_files_zipped_pair_up_the_same(tmp_path):
    assert_same_output(tmp_path, {"images.txt": "a.jpg\nb.jpg\n", "labels.txt": "1\n2\n",
                                  "main.py": """\
        pairs = zip(open('images.txt'), open('labels.txt'))
        print len(pairs), [(i.strip(), int(l)) for i, l in pairs]
        """})


def test_a_member_read_from_a_zip_archive_splits_into_the_same_names(tmp_path):
    assert_same_output(tmp_path, {
        "write_zip.py": """\
            import zipfile
            archive = zipfile.ZipFile('images.zip', 'w')
            archive.writestr('ImageSets/train.txt', '000001\\n000002\\n')
            archive.close()
            """,
        "main.py": """\
            import zipfile
            archive = zipfile.ZipFile('images.zip')
            names = archive.read('ImageSets/train.txt').strip().split('\\n')
            print names, ['%s.jpg' % name for name in names]
            """}, prepare="write_zip.py")


def test_floor_division_and_modulo_of_negatives_are_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import numpy as np
        print repr((-7 // 2, -7 % 3, 7 % -3, divmod(-7, 2), -7.5 // 2, -7 % 2.5, -1 // 10))
        print repr((np.int64(-7) // 2, (np.array([-7, 7]) % 3).tolist(), -7 / 2, -1 / 10))
        """}, modules=("numpy",))


def test_map_with_none_pairs_the_lists_as_python_2_did(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        print map(None, [1, 2, 3], ['a', 'b']), map(None, [1, 2])
        """})


def test_a_float_printed_or_made_a_str_shows_python_2s_twelve_digits(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        loss = 1.0 / 3
        print loss, 0.1 + 0.2
        print 'loss: ' + str(loss), '%s' % (2.0 / 3), '{}'.format(loss), [loss]
        """})


def test_print_with_a_trailing_comma_spaces_and_ends_lines_as_python_2_did(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import sys
        for i in range(3):
            print i,
        print
        print 'line\\n',
        print 'next'
        print 'written',
        sys.stdout.write('|\\n')
        print 'last',
        """})


def test_print_writes_each_item_before_evaluating_the_next(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        def loaded():
            print 'loading'
            return 3

        print 'images:', loaded()
        """})


def test_time_clock_still_measures(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import time
        t = time.clock()
        print type(t).__name__, time.clock() >= t
        """})


def test_a_generators_next_method_still_advances_it(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        batches = (i * 2 for i in range(3))
        print batches.next(), batches.next()
        """})


def test_filter_of_a_str_is_a_str(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        print repr(filter(str.isdigit, 'img_0042.jpg'))
        """})


def test_values_of_different_types_compare_as_python_2_compared_them(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        print sorted([3, None, 1]), max(None, 2), None < 0, sorted([{'a': 1}, {'a': 0}])
        """})


def test_a_class_dividing_with_div_divides_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        class Box(object):
            def __init__(self, size):
                self.size = size

            def __div__(self, k):
                return Box(self.size / k)

        print 'size', (Box(9) / 2).size
        """})


def test_indexing_bytes_read_from_a_binary_file_gives_the_same_characters(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        with open('image.bin', 'wb') as f:
            f.write('\\x89PNG')
        with open('image.bin', 'rb') as f:
            data = f.read()
        print ord(data[0]), data[1:] == 'PNG'
        """})


def test_python_2_source_run_by_exec_runs_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        exec 'print "from exec", 6 * 7'
        """})
