"""The demo from a user's first minutes: what it needs is checked first, what it does is
said first, and it ends with what to read or run next (the training itself: test_bench.py)."""

import sys

import pytest

from mxpatch_bind import __main__ as cli

TINY = ["--epochs", "1", "--samples", "16", "--sizes", "16,24", "--progress", "none",
        "--min-accuracy", "0"]


@pytest.mark.parametrize("options, named, module, extra", [
    (["--plot", "chart.png"], "--plot", "matplotlib", "plot"),
    (["--progress", "tqdm"], "--progress tqdm", "tqdm", "progress"),
])
def test_a_missing_extra_is_a_one_line_usage_error_naming_the_fix_before_any_work(
        monkeypatch, capsys, options, named, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import fails, as when not installed

    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", *TINY, *options])

    out, err = capsys.readouterr()
    assert exited.value.code == 2  # as every other usage error of the command line
    assert out == ""  # nothing trained, nothing announced
    assert err.count("\n") == 1
    assert err.startswith(f"python -m mxpatch_bind demo: error: {named} needs {module} (")
    assert f'pip install ".[{extra}]"' in err


def test_the_demo_says_first_what_it_does_and_ends_with_what_to_read_next(capsys):
    assert cli.main(["demo", *TINY]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Training a small CNN on 16 images of 16-24 px for 1 epoch on "
                               "2 CPU contexts, twice from the same start: stock")
    assert "1 epoch," in next(line for line in lines if line.startswith("speed-up"))
    assert lines[-1].startswith("Next: docs/quickstart.rst")
    assert "python examples/quickstart.py" in lines[-1]
