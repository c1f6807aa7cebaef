"""The quickstart's complete script (examples/quickstart.py, shown in docs/quickstart.rst) runs."""

import re
import subprocess
import sys

import pytest
from paths import REPO

SCRIPT = REPO / "examples" / "quickstart.py"


@pytest.mark.slow  # the example runs as a child Python
def test_the_quickstart_script_trains_on_two_devices_and_scores_its_held_out_images():
    # A process of its own: the script installs the process-global patch.
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         cwd=str(REPO), timeout=300)

    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("PerDeviceIter(48 samples, 6 batches of 2 devices x 4, "), \
        run.stdout
    assert "Epoch[4] Train-accuracy" in run.stderr  # fit's log: five epochs trained
    shapes = re.search(r"last batch: \[\[\((\d+), 3, (\d+), (\d+)\)\], "
                       r"\[\((\d+), 3, (\d+), (\d+)\)", run.stdout)
    assert shapes and shapes.group(1) == shapes.group(4) == "4"  # 4 images on each device
    assert shapes.group(2, 3) != shapes.group(5, 6), "the devices ran their own shapes"
    accuracy = float(re.search(r"test accuracy: ([\d.]+)", run.stdout).group(1))
    assert accuracy >= 0.9, run.stdout


def test_the_quickstart_page_shows_the_script_it_runs():
    page = (REPO / "docs" / "quickstart.rst").read_text()
    assert ".. literalinclude:: ../examples/quickstart.py" in page
