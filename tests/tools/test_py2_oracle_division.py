"""Python 2's numbers after the port, proven by running both sides (tests/py2_oracle.py):
the '/' rewrite (``//`` by form, ``old_div``, ``old_idiv``, the marker), files that already
divide truly, NumPy's integer arrays, and round / floor / ceil, which returned floats."""

import pytest
from py2_oracle import assert_python3_file_unchanged_in_meaning, assert_same_output, compare

pytest.importorskip("fissix")
pytest.importorskip("libcst")


def test_integers_by_form_divide_to_the_floor_as_in_python_2(tmp_path):
    outputs = assert_same_output(tmp_path, {"main.py": """\
        class Image(object):
            shape = (7, 3)

        boxes = [1, 2, 3, 4, 5]
        print repr((len(boxes) / 2, -len(boxes) / 2, 7 / 2, -7 / 2, 7 / -2))
        print repr((int('9') / int('4'), (len(boxes) + 1) / 4, Image().shape[0] / 2))
        print repr(((Image.shape[0] * 3 - 1) / 4, len(boxes) % 3 / 2, 2.0 / 4, 1 / 4.0))
        """})
    assert "old_div" not in outputs.ported["main.py"]


def test_operands_of_unknown_type_divide_by_python_2s_rule_at_run_time(tmp_path):
    outputs = assert_same_output(tmp_path, {"main.py": """\
        def half(x):
            return x / 2

        a, b, f, flag = 7, -2, 7.5, True
        print repr((a / b, b / a, f / a, a / f, half(9), half(9.0), half(-9), flag / 2))
        print repr(([x / 3 for x in range(-4, 5)], sum([a, b]) / 2, max(a, f) / 2))
        ratio = a / float(b)
        print repr((ratio, a / (b + 0.0), (a + 1) / (b * 2)))
        """})
    assert "old_div(a, b)" in outputs.ported["main.py"]


def test_in_place_division_keeps_python_2s_quotient_and_the_objects_other_names(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        class Counter(object):
            def __init__(self):
                self.count = 9
                self.mean = 9.0

        total, scale = 17, 4.0
        total /= 2
        scale /= 2
        counter = Counter()
        counter.count /= 2
        counter.mean /= 2
        counts = [9, 8.0, -9]
        counts[0] /= 2
        counts[1] /= 2
        counts[2] /= 2
        counts[1:] = counts[1:]
        print repr((total, scale, counter.count, counter.mean, counts))
        """})


def test_in_place_division_of_numpy_arrays_keeps_the_array_and_its_views(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import numpy as np
        boxes = np.array([[9, 12], [5, 7]])
        row = boxes[1]
        row /= 2
        scales = np.array([3.0, 5.0])
        alias = scales
        scales /= 2
        print repr((boxes.tolist(), row.tolist(), alias is scales, alias.tolist()))
        """}, modules=("numpy",))


MARKED = """\
    values = [{first}, 8]


    def get():
        return values


    get()[0] /= 2
    print values
    """


def test_a_marked_in_place_division_of_a_float_prints_the_same(tmp_path):
    outputs = assert_same_output(tmp_path, {"main.py": MARKED.format(first="9.0")})
    assert "get()[0] /= 2  # migrate: check '/'" in outputs.ported["main.py"]


def test_a_marked_in_place_division_of_an_integer_is_a_check_every_run_lists(tmp_path):
    # migrate marks the line and lists it as [check] rather than call get() twice in
    # 'get()[0] = old_idiv(get()[0], 2)': unproven, so no rewrite; the marked port divides
    # truly (4.5 where Python 2 printed 4) until a person writes '//' or '/'
    outputs = compare(tmp_path, {"main.py": MARKED.format(first="9")})
    assert (outputs.python2.stdout, outputs.python3.stdout) == ("[4, 8]\n", "[4.5, 8]\n")
    assert "get()[0] /= 2  # migrate: check '/'" in outputs.ported["main.py"]
    from mxpatch_bind import migrate
    again = migrate.scan(tmp_path / "python3")
    assert [(f.path, f.action) for f in again if "delete the marker" in f.message] == [
        ("main.py", "check")]


def test_numpy_integer_and_float_arrays_divide_as_numpy_did_on_python_2(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import numpy as np
        boxes = np.array([[7, -7], [9, 10]])
        image = np.array([0, 128, 255], dtype=np.uint8)
        floats = np.array([7.0, -7.0])
        print repr(((boxes / 2).tolist(), (boxes / 2.0).tolist(), (floats / 2).tolist()))
        print repr(((image / 255).tolist(), (image / 255.0).round(3).tolist()))
        print repr((np.int32(7) / np.int64(2), np.float32(7) / 2, np.int64(-7) / 2))
        print repr(((boxes[:, 0] / boxes[:, 1]).tolist(), boxes.shape[0] / 2))
        flags = np.array([True, False])
        print repr(((boxes / np.array([2, 4])).tolist(), (flags / 2).tolist()))
        """}, modules=("numpy",))


FUTURE_MODULE = """\
    from __future__ import division
    from __future__ import print_function


    def scales(a, b):
        share = a / b
        share_of_ints = 600 / 1000
        floored = a // b
        total = a
        total /= b
        return share, share_of_ints, floored, total, len([1, 2, 3]) / 2
    """


def test_a_file_with_future_division_keeps_dividing_truly(tmp_path):
    assert_same_output(tmp_path, {"main.py": "import scale\nprint scale.scales(7, 2)\n",
                                  "scale.py": FUTURE_MODULE})


def test_a_future_division_script_on_its_own_keeps_dividing_truly(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        from __future__ import division
        a, b = 3, 4
        print repr((a / b, 600 / 1000, len('abc') / 2))
        """})


# Python 2's round, math.floor and math.ceil returned floats, and round took halves away
# from zero: an integer result then divided to the floor where Python 2 divided truly.
ROUNDING = {
    "round": ("", "round"),
    "import math": ("import math", "math.floor"),
    "import math (ceil)": ("import math", "math.ceil"),
    "from math import": ("from math import ceil, floor", "ceil"),
    "from math import floor": ("from math import ceil, floor", "floor"),
    "import math as m": ("import math as m", "m.ceil"),
    "from math import ceil as up": ("from math import ceil as up", "up"),
}


@pytest.mark.parametrize("header, function", ROUNDING.values(), ids=ROUNDING.keys())
def test_round_floor_and_ceil_keep_python_2s_float_results(tmp_path, header, function):
    assert_same_output(tmp_path, {"main.py": f"""\
        {header}
        x = 7.0
        print repr(({function}(x) / 2, {function}(6.5) / 2, {function}(-2.5) / 4))
        print repr(({function}(2.5), {function}(-0.5), int({function}(3.7))))
        """})


def test_round_takes_halves_away_from_zero_as_python_2_did(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        print repr((round(0.5), round(1.5), round(2.5), round(-2.5), round(3.0)))
        print repr((round(0.125, 2), round(0.375, 2), round(2.675, 2), round(-0.125, 2)))
        print repr((round(5, 0), round(25, -1), int(round(4.5)), [round(v) for v in (.5, 1.5)]))
        """})


def test_numpy_rounding_through_python_2s_round_prints_the_same(tmp_path):
    assert_same_output(tmp_path, {"main.py": """\
        import numpy as np
        import math
        x = np.float64(2.5)
        print repr((round(x), round(x) / 2, math.floor(np.float32(2.5))))
        print repr((np.round(np.array([0.5, 1.5, 2.5])).tolist(), np.floor(7.5) / 2))
        """}, modules=("numpy",))


def test_a_python_3_only_file_in_a_python_2_tree_keeps_its_true_division(tmp_path, form):
    # it never ran on Python 2: what it printed unported under Python 3 is the reference
    outputs = assert_same_output(tmp_path, {"main.py": "print 'python 2 code', repr(7 / 2)\n",
                                            "report.py": form})
    assert_python3_file_unchanged_in_meaning(outputs, tmp_path, "report.py")


PYTHON3_ONLY = {
    "f-string": """\
        hits, total = 7, 10
        print(f"recall {hits / total:.2f}")
        """,
    "keyword-only argument": """\
        def recall(hits, *, total):
            return hits / total
        print(recall(7, total=10))
        """,
    "return annotation": """\
        def recall(hits, total) -> float:
            return hits / total
        print(recall(7, 10))
        """,
    "nonlocal": """\
        def recall(hits):
            total = 0
            def count():
                nonlocal total
                total = 10
            count()
            return hits / total
        print(recall(7))
        """,
    "raise from": """\
        try:
            raise KeyError('x')
        except KeyError as error:
            print(7 / 10, error)
            if not error:
                raise ValueError('y') from error
        """,
}


@pytest.fixture(params=PYTHON3_ONLY.values(), ids=PYTHON3_ONLY.keys())
def form(request):
    """A file only Python 3 parses, which divides two integers."""
    return request.param
