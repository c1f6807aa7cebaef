"""argparse value types with ranges, a parser whose usage errors are one line, and the one
way a command runs and fails (private).

Shared by ``mxpatch-bind`` (``python -m mxpatch_bind``) and its subcommands, by ``python -m
mxpatch_bind.launch`` and by ``python -m benchmarks``: a bad value (``--epochs 0``,
``--rounds -1``, ``--min-accuracy nan``) is an argparse usage error, exit status 2, never a
traceback from deeper in. Every error has one form, ``PROG: error: MESSAGE``: usage errors
exit 2 and add ``(see PROG --help)``; a broken MXNet environment exits 1 and its message
ends with the fix.

The streams, as pip and ruff treat them: output piped into a reader that stops early
(``mxpatch-bind migrate TREE | head -1``) ends the command quietly with status 1, no
traceback, whatever the buffering; a closed stdout or stderr (``>&-``) discards what would
go there; a file name the output encoding cannot show (``PYTHONIOENCODING=ascii``) is
printed escaped (``\\xe9``), not a ``UnicodeEncodeError`` halfway through.
"""

import argparse
import contextlib
import math
import os
import re
import sys
from typing import Callable, Iterator, NoReturn, Optional, Sequence, TextIO

__all__ = ["Parser", "UsageError", "run_parsed", "report_error", "plain", "description",
           "positive_int", "nonneg_int", "fraction", "positive_float", "nonneg_float",
           "console", "discard_output", "CLOSED_PIPE_STATUS"]

CLOSED_PIPE_STATUS = 1  # pip's status when its reader went away


@contextlib.contextmanager
def console() -> Iterator[None]:
    """Where a command-line entry runs: unencodable characters escaped, a closed pipe quiet.

    :func:`run_parsed` runs every command in it, so every entry point (``mxpatch-bind``,
    ``python -m mxpatch_bind`` and its subcommands, ``python -m mxpatch_bind.migrate``,
    ``python -m mxpatch_bind.launch``, ``python -m mxpatch_bind.demo``) treats the streams
    one way; nested uses are harmless.

    * A standard stream that is closed (``>&-``, ``2>&-``: Python gives ``None``) becomes
      ``os.devnull``, on its own descriptor when that is free, so that output is discarded
      and nothing the command opens (a file it writes) can take descriptor 1 or 2.
    * ``errors='backslashreplace'`` on ``sys.stdout`` and ``sys.stderr`` (once: a stream that
      already escapes is left alone).
    * A ``BrokenPipeError`` (the reader of the output went away: ``| head -1``) ends the
      command quietly with :data:`CLOSED_PIPE_STATUS`; output still buffered is flushed on the
      way out, inside the guard, so that the pipe breaks here and not at interpreter exit
      (which would print ``Exception ignored ...`` and exit 120). A stream whose pipe broke is
      pointed at ``os.devnull``, as the Python documentation recommends. An exit already under
      way keeps its status: ``--help`` printed into a closed pipe exits 0 whether the pipe
      broke while argparse wrote (which argparse ignores) or at the last flush (which
      depends on the buffering, ``PYTHONUNBUFFERED``).

    Examples
    --------
    >>> with console():
    ...     print("r\u00e9sum\u00e9")
    résumé
    """
    _open_closed_streams()
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    except BrokenPipeError as error:
        _broken_streams_to_devnull()
        exiting = error.__context__
        raise SystemExit(exiting.code if isinstance(exiting, SystemExit)
                         else CLOSED_PIPE_STATUS) from None


def _open_closed_streams() -> None:
    for name, fileno in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            setattr(sys, name, open(_devnull_at(fileno), "w", errors="backslashreplace"))


def _devnull_at(fileno: int) -> int:
    """A descriptor open on ``os.devnull``: ``fileno`` itself when nothing holds it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fileno and not _is_open(fileno):
        os.dup2(devnull, fileno)
        os.close(devnull)
        return fileno
    return devnull


def _is_open(fileno: int) -> bool:
    try:
        os.fstat(fileno)
    except OSError:
        return False
    return True


def _broken_streams_to_devnull() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            discard_output(stream)


def discard_output(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at ``os.devnull``, once its reader went away: what it
    still buffers, and whatever is written or flushed to it later (at interpreter exit too),
    goes nowhere instead of failing again.

    Examples
    --------
    >>> import io
    >>> discard_output(io.StringIO())  # not a file: nothing to do
    """
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a test's capture): nothing is flushed to a descriptor at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that reports a usage error in one line on stderr, exit status 2.

    Argparse's default repeats the whole usage first, which for a command with many options
    is several lines above the one that matters.

    Examples
    --------
    >>> parser = Parser(prog="demo")
    >>> _ = parser.add_argument("--epochs", type=positive_int)
    >>> parser.parse_args(["--epochs", "2"]).epochs
    2
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class UsageError(Exception):
    """A command line that parsed but does not make sense; :func:`run_parsed` reports it.

    Examples
    --------
    >>> str(UsageError("--samples 7 is less than one batch of 8 images"))
    '--samples 7 is less than one batch of 8 images'
    """


def run_parsed(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]] = None,
               run: Optional[Callable[[argparse.Namespace], int]] = None) -> int:
    """Parse ``argv``, run the command, and report its errors in one line.

    The command is ``run``, or the ``run`` a subparser put in the namespace with
    ``set_defaults(run=..., parser=subparser)``; errors are reported under that subparser's
    program name, which the command also finds in ``args.prog``. It runs inside
    :func:`console` (closed streams, a reader that went away). A :class:`UsageError` is a
    usage error (exit status 2); a broken MXNet environment
    (:class:`~mxpatch_bind._mxnet_env.MXNetEnvironmentError`) prints
    ``PROG: error: ...; fix: ...`` and returns 1.

    Returns
    -------
    int
        The command's exit status, or 1.

    Examples
    --------
    >>> parser = Parser(prog="count")
    >>> _ = parser.add_argument("n", type=positive_int)
    >>> run_parsed(parser, ["3"], lambda args: args.n - 3)
    0
    """
    from ._mxnet_env import MXNetEnvironmentError
    with console():
        args, unknown = parser.parse_known_args(argv)
        owner: argparse.ArgumentParser = getattr(args, "parser", parser)
        if unknown:  # named by the command they were given to, not by the top-level parser
            owner.error(f'unrecognized arguments: {" ".join(unknown)}')
        args.prog = owner.prog
        command = run if run is not None else args.run
        try:
            return int(command(args))
        except UsageError as error:
            owner.error(str(error))
        except MXNetEnvironmentError as error:
            report_error(owner.prog, str(error))
            return 1


def report_error(prog: str, message: str) -> None:
    """Print ``PROG: error: MESSAGE`` on stderr: the one form of every command's errors.

    Examples
    --------
    >>> report_error("mxpatch-bind demo", "no")  # doctest: +SKIP
    mxpatch-bind demo: error: no
    """
    print(f"{prog}: error: {message}", file=sys.stderr)


# reStructuredText a docstring uses and a terminal should not show: ``literal``,
# :role:`~dotted.name` or :role:`text <target>`, *emphasis*, a literal block's "::".
_ROLE = re.compile(r":[a-z]+:`(?:~?([^`<]*?)\s*<[^`>]*>|(~?[^`]*))`")  # "~" kept: _short_name
_LITERAL = re.compile(r"``(.*?)``")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")


def plain(text: str) -> str:
    """``text`` without its reStructuredText markup, for a terminal.

    Examples
    --------
    >>> plain("``--write`` rewrites to :mod:`mxpatch_bind.compat`, see :func:`~a.b.run`::")
    '--write rewrites to mxpatch_bind.compat, see run:'
    """
    text = _ROLE.sub(lambda match: _short_name(match.group(1) or match.group(2)), text)
    text = _LITERAL.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return re.sub(r"(?<=\S)::$", ":", text, flags=re.MULTILINE)


def description(docstring: Optional[str]) -> str:
    """A command's ``--help`` text from its module docstring: plain, without the first line
    (the synopsis, which names a program) and without the numpydoc sections.

    Examples
    --------
    >>> description('''``x``: one line.
    ...
    ... What ``x`` does.
    ...
    ... Examples
    ... --------
    ... >>> x()
    ... ''')
    'What x does.'
    """
    lines = (docstring or "").strip().splitlines()[1:]
    for index, (line, underline) in enumerate(zip(lines, lines[1:] + [""])):
        if line.strip() and set(underline.strip()) == {"-"}:
            lines = lines[:index]
            break
    return plain("\n".join(lines).strip())


def _short_name(reference: str) -> str:
    return reference.strip().rpartition(".")[2] if reference.startswith("~") else reference


def positive_int(text: str) -> int:
    """An integer >= 1.

    Examples
    --------
    >>> positive_int("3")
    3
    """
    return _int_at_least(text, 1)


def nonneg_int(text: str) -> int:
    """An integer >= 0.

    Examples
    --------
    >>> nonneg_int("0")
    0
    """
    return _int_at_least(text, 0)


def positive_float(text: str) -> float:
    """A finite number > 0.

    Examples
    --------
    >>> positive_float("0.5")
    0.5
    """
    value = _finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def nonneg_float(text: str) -> float:
    """A finite number >= 0.

    Examples
    --------
    >>> nonneg_float("0")
    0.0
    """
    value = _finite_float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1 inclusive.

    Examples
    --------
    >>> fraction("0.85")
    0.85
    """
    value = _finite_float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1, got {text!r}")
    return value


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value
