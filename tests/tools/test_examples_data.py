"""The detection and segmentation examples train on their generated image files (subprocesses)."""

import os
import re
import subprocess
import sys

import pytest
from paths import REPO

REPO = str(REPO)


def run_example(name, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    completed = subprocess.run([sys.executable, os.path.join(REPO, "examples", name)] + list(args),
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def first_and_last(stdout, what):
    match = re.search(r"%s: first epoch ([\d.]+), last epoch ([\d.]+)" % what, stdout)
    assert match, stdout
    return float(match.group(1)), float(match.group(2))


@pytest.mark.slow  # the example runs as a child Python
def test_the_detection_example_lowers_its_loss_with_padded_box_lists():
    stdout = run_example("detection.py", "--epochs", "3", "--images", "24")

    first, last = first_and_last(stdout, "loss")

    assert last < first
    assert re.search(r"shapes of the last batch \[\[\(4, \d, 5\)\], \[\(4, \d, 5\)\]\]", stdout)


@pytest.mark.slow  # the example runs as a child Python
def test_the_segmentation_example_raises_its_pixel_accuracy_balanced_and_rounded():
    stdout = run_example("segmentation.py", "--epochs", "3", "--images", "24", "--balanced",
                         "--pad-to-multiple", "8")

    first, last = first_and_last(stdout, "pixel accuracy")

    assert last > first
    shapes = re.findall(r"\(\d+, (\d+), (\d+)\)", stdout.split("label shapes")[-1])
    assert shapes and all(int(extent) % 8 == 0 for shape in shapes for extent in shape)
