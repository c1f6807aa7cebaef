"""``mxpatch_bind._cli_types``, in-process: the help text's markup, the typed options, the
one-line errors of :func:`run_parsed` and the console guard's streams.

What a whole command prints and exits with is checked in subprocesses by ``test_cli.py`` and
``test_cli_streams.py``; here each piece is pinned on its own, on both sides of each edge.
"""

import argparse
import io
import os
import sys

import pytest

from mxpatch_bind import _cli_types
from mxpatch_bind._cli_types import (
    CLOSED_PIPE_STATUS,
    Parser,
    UsageError,
    console,
    description,
    discard_output,
    plain,
    run_parsed,
)
from mxpatch_bind._mxnet_env import MXNetEnvironmentError


def is_devnull(fileno):
    return os.path.samestat(os.fstat(fileno), os.stat(os.devnull))


# --------------------------------------------------------------------------- help text
@pytest.mark.parametrize("text, shown", [
    (":func:`~a.b.run`", "run"),
    (":meth:`~mxpatch_bind.PerDeviceModule.bind`", "bind"),
    (":mod:`mxpatch_bind.compat`", "mxpatch_bind.compat"),
    (":class:`the error <mxpatch_bind.DataLoadError>`", "the error"),
    (":doc:`install`", "install"),
    ("``--write``", "--write"),
    ("``a`` and ``b``", "a and b"),
    ("*once*", "once"),
    ("**twice**", "twice"),
    ("a*b*c", "a*b*c"),
    ("2 * 3 * 4", "2 * 3 * 4"),
    ("Example::", "Example:"),
    ("first::\nsecond::", "first:\nsecond:"),
    ("a::b", "a::b"),
    ("  ::", "  ::"),
])
def test_plain_drops_each_kind_of_markup_and_only_markup(text, shown):
    assert plain(text) == shown


def test_a_description_is_the_docstring_without_its_first_line_and_its_sections():
    docstring = """``x``: the synopsis.

    What ``x`` does, in *two*
    lines.

    Parameters
    ----------
    y : int
    """
    assert description(docstring) == "What x does, in two\n    lines."


def test_a_description_without_sections_is_the_whole_body_and_none_is_empty():
    assert description("x: synopsis.\n\nBody one.\n\nBody two.\n") == "Body one.\n\nBody two."
    assert description(None) == ""
    assert description("only a synopsis") == ""


def test_a_description_stops_at_the_first_section_only_when_a_titled_line_is_underlined():
    docstring = "synopsis\n\nkeep\n\n----\nstill kept\n\nNotes\n=====\nkept\n\nSee\n---\ncut"
    assert description(docstring) == "keep\n\n----\nstill kept\n\nNotes\n=====\nkept"


# --------------------------------------------------------------------------- typed options
@pytest.mark.parametrize("helper, text, message", [
    (_cli_types.positive_int, "0", "expected an integer >= 1, got '0'"),
    (_cli_types.positive_int, "2.5", "expected an integer >= 1, got '2.5'"),
    (_cli_types.nonneg_int, "-1", "expected an integer >= 0, got '-1'"),
    (_cli_types.positive_float, "x", "expected a number, got 'x'"),
    (_cli_types.positive_float, "nan", "expected a finite number, got 'nan'"),
    (_cli_types.positive_float, "-inf", "expected a finite number, got '-inf'"),
    (_cli_types.positive_float, "0", "expected a number > 0, got '0'"),
    (_cli_types.nonneg_float, "-1e-9", "expected a number >= 0, got '-1e-9'"),
    (_cli_types.fraction, "1.5", "expected a fraction from 0 to 1, got '1.5'"),
    (_cli_types.fraction, "-0.5", "expected a fraction from 0 to 1, got '-0.5'"),
])
def test_a_refused_option_value_is_named_with_the_form_expected(helper, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        helper(text)
    assert str(refused.value) == message


@pytest.mark.parametrize("helper, text, value", [
    (_cli_types.positive_int, "1", 1), (_cli_types.positive_int, " 7 ", 7),
    (_cli_types.nonneg_int, "0", 0), (_cli_types.nonneg_float, "-0.0", 0.0),
    (_cli_types.positive_float, "5e-324", 5e-324), (_cli_types.fraction, "0.5", 0.5),
    (_cli_types.fraction, "0", 0.0), (_cli_types.fraction, "1", 1.0),
])
def test_option_values_at_and_inside_each_edge_are_taken(helper, text, value):
    assert helper(text) == value and type(helper(text)) is type(value)


# --------------------------------------------------------------------------- run_parsed
def test_a_usage_error_is_one_line_naming_the_program_and_its_help(capsys):
    with pytest.raises(SystemExit) as stopped:
        Parser(prog="tool sub").error("no such thing")
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "tool sub: error: no such thing (see tool sub --help)\n"


def subcommands(run):
    parser = Parser(prog="tool")
    sub = parser.add_subparsers().add_parser("sub", prog="tool sub")
    sub.add_argument("--n", type=int, default=0)
    sub.set_defaults(run=run, parser=sub)
    return parser


def test_the_subcommand_s_run_gets_its_program_name_and_its_status_is_returned():
    seen = []
    parser = subcommands(lambda args: seen.append(args.prog) or args.n)
    assert run_parsed(parser, ["sub", "--n", "3"]) == 3
    assert seen == ["tool sub"]


def test_a_run_given_to_run_parsed_goes_before_the_namespace_s():
    parser = subcommands(lambda args: 5)
    assert run_parsed(parser, ["sub"], run=lambda args: 7) == 7


def test_a_command_s_usage_error_and_an_unknown_option_are_named_by_the_subcommand(capsys):
    def refuse(args):
        raise UsageError("--n 0 is not enough")

    for argv in (["sub"], ["sub", "--bogus"]):
        with pytest.raises(SystemExit) as stopped:
            run_parsed(subcommands(refuse), argv)
        assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "tool sub: error: --n 0 is not enough (see tool sub --help)",
        "tool sub: error: unrecognized arguments: --bogus (see tool sub --help)"]


def test_a_broken_mxnet_is_one_error_line_and_status_1(capsys):
    def broken(args):
        raise MXNetEnvironmentError("libmxnet.so cannot be loaded", "pip install mxnet")

    assert run_parsed(subcommands(broken), ["sub"]) == 1
    assert capsys.readouterr().err == (
        "tool sub: error: libmxnet.so cannot be loaded; fix: pip install mxnet\n")


# --------------------------------------------------------------------------- console
def ascii_stream(errors):
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors=errors)


def test_the_console_escapes_what_a_strict_stream_cannot_encode_and_leaves_others(monkeypatch):
    strict, replacing = ascii_stream("strict"), ascii_stream("replace")
    monkeypatch.setattr(sys, "stdout", strict)
    monkeypatch.setattr(sys, "stderr", replacing)
    with console():
        print("r\u00e9sum\u00e9")
        print("r\u00e9sum\u00e9", file=sys.stderr)
    assert strict.buffer.getvalue() == b"r\\xe9sum\\xe9\n"
    assert replacing.buffer.getvalue() == b"r?sum?\n"


@pytest.mark.parametrize("name", ["stdout", "stderr"])
def test_a_closed_standard_stream_becomes_devnull_that_escapes(monkeypatch, name):
    monkeypatch.setattr(sys, name, None)
    with console():
        print("r\u00e9sum\u00e9", file=getattr(sys, name))
    opened = getattr(sys, name)
    try:
        assert is_devnull(opened.fileno())
        assert opened.errors == "backslashreplace"
    finally:
        opened.close()


def test_a_free_descriptor_is_itself_pointed_at_devnull_and_a_held_one_is_left_alone(tmp_path):
    # A number nothing holds, far above the lowest free one (which os.open returns).
    free = next(number for number in range(900, 1000) if not _cli_types._is_open(number))
    assert _cli_types._devnull_at(free) == free and is_devnull(free)
    os.close(free)
    with open(tmp_path / "held", "w") as held:
        got = _cli_types._devnull_at(held.fileno())
        assert got != held.fileno() and is_devnull(got)
        assert not is_devnull(held.fileno())
        os.close(got)


@pytest.mark.parametrize("status, expected", [(None, CLOSED_PIPE_STATUS), (0, 0), (3, 3)])
def test_a_broken_pipe_ends_quietly_keeping_an_exit_already_under_way(capsys, status, expected):
    with pytest.raises(SystemExit) as stopped:
        with console():
            try:
                if status is not None:
                    raise SystemExit(status)
            finally:
                raise BrokenPipeError(32, "Broken pipe")
    assert stopped.value.code == expected
    assert stopped.value.__cause__ is None and stopped.value.__suppress_context__


def test_a_stream_that_cannot_flush_after_its_pipe_broke_is_pointed_at_devnull(tmp_path,
                                                                               monkeypatch):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away
    broken = open(write_end, "w")
    monkeypatch.setattr(sys, "stdout", broken)
    try:
        with pytest.raises(SystemExit) as stopped:
            with console():
                print("lost")
        assert stopped.value.code == CLOSED_PIPE_STATUS
        assert is_devnull(write_end)
        print("goes nowhere", flush=True)  # no second BrokenPipeError
    finally:
        monkeypatch.undo()
        broken.close()


def test_discard_output_points_a_file_s_descriptor_at_devnull_and_skips_what_is_not_one(
        tmp_path):
    with open(tmp_path / "out", "w") as stream:
        discard_output(stream)
        assert is_devnull(stream.fileno())
    closed = open(tmp_path / "closed", "w")
    closed.close()
    discard_output(closed)  # ValueError from fileno(): nothing to do
    discard_output(io.StringIO())  # no descriptor: nothing to do


def open_descriptors():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_pointing_descriptors_at_devnull_leaves_no_descriptor_open_behind(tmp_path):
    free = next(number for number in range(900, 1000) if not _cli_types._is_open(number))
    with open(tmp_path / "out", "w") as stream:
        before = open_descriptors()
        discard_output(stream)
        assert open_descriptors() == before
        assert _cli_types._devnull_at(free) == free
        assert open_descriptors() == before | {str(free)}
        os.close(free)


def test_a_synopsis_followed_at_once_by_text_keeps_that_text():
    assert description("x: synopsis.\nWhat x does.\n") == "What x does."
