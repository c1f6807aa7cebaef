"""benchmarks/gpu_check.sh without a GPU: it fails fast and names why, and picks the wheel right.

A fake ``nvidia-smi`` on a PATH of its own stands in for the driver; ``--dry-run`` stops after
the plan, so nothing is installed.
"""

import os
import shutil
import subprocess
import sys

import pytest
from paths import REPO

REPO = str(REPO)
SCRIPT = os.path.join(REPO, "benchmarks", "gpu_check.sh")
# What the script runs before its plan; nvidia-smi is whatever the test puts beside them.
TOOLS = ["bash", "timeout", "sed", "grep", "head", "dirname"]

NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu*) printf '0, NVIDIA H200, 550.54.15, 143771 MiB\\n';;
  *) printf '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: %s |\\n';;
esac
"""
BROKEN_NVIDIA_SMI = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
exit 9
"""


def run_script(tmp_path, nvidia_smi=None, *args):
    """Run gpu_check.sh with only TOOLS (and the given fake nvidia-smi) on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    if nvidia_smi is not None:
        fake = bin_dir / "nvidia-smi"
        fake.write_text(nvidia_smi)
        fake.chmod(0o755)
    env = {"PATH": str(bin_dir), "PYTHON": sys.executable, "HOME": str(tmp_path)}
    return subprocess.run(["bash", SCRIPT] + list(args), env=env, cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, check=False)


def test_without_an_nvidia_driver_it_fails_at_once_naming_what_it_needs(tmp_path):
    result = run_script(tmp_path)
    assert result.returncode == 1
    assert "nvidia-smi not found" in result.stderr
    assert "needs a machine with NVIDIA GPUs" in result.stderr
    assert result.stdout == ""


def test_a_driver_it_cannot_reach_is_reported_with_nvidia_smis_own_message(tmp_path):
    result = run_script(tmp_path, BROKEN_NVIDIA_SMI)
    assert result.returncode == 1
    assert "found no usable GPU: NVIDIA-SMI has failed" in result.stderr


@pytest.mark.parametrize("cuda, wheel", [("12.4", "mxnet-cu117"), ("11.7", "mxnet-cu117"),
                                         ("11.4", "mxnet-cu112"), ("11.2", "mxnet-cu112")])
def test_the_mxnet_wheel_follows_the_cuda_version_of_the_driver(tmp_path, cuda, wheel):
    result = run_script(tmp_path, NVIDIA_SMI % cuda, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "1 GPU(s), driver CUDA %s -> %s==1.9.1" % (cuda, wheel) in result.stdout
    assert '"%s==1.9.1" "numpy<1.24"' % wheel in result.stdout


def test_a_driver_older_than_cuda_11_2_is_refused_with_the_fix(tmp_path):
    result = run_script(tmp_path, NVIDIA_SMI % "11.0", "--dry-run")
    assert result.returncode == 1
    assert "supports CUDA 11.0" in result.stderr
    assert "update the NVIDIA driver" in result.stderr
