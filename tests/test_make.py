"""The two commands refuse a bad run mode at once, before any environment is built or anything runs."""

import os
import sys
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["test", "book"])
def test_a_bogus_mode_stops_make_at_once(target):
    result = subprocess.run(["make", "-C", str(ROOT), target], env={**os.environ, "ICLLIB_MODE": "bogus"},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "ICLLIB_MODE='bogus' is not a run mode; allowed values: quick, default, full" in result.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["test", "book", "paper-scale"])
def test_a_bogus_device_stops_make_at_once(target):
    result = subprocess.run(["make", "-C", str(ROOT), target, "CHAPTER=balance"],
                            env={**os.environ, "ICLLIB_DEVICE": "gpu"}, capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "ICLLIB_DEVICE='gpu' is not a device; allowed values: cpu, cuda, cuda:N, auto" in result.stderr


def test_cuda_without_cuda_stops_before_running():
    """``python -m icllib.config`` (which ``make paper-scale`` calls first) refuses CUDA where there is none."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = subprocess.run([sys.executable, "-m", "icllib.config"], env={**os.environ, "ICLLIB_DEVICE": "cuda"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "sees no CUDA device" in result.stderr


def test_a_bogus_mode_stops_pytest_at_once():
    result = subprocess.run([str(Path(sys.executable).parent / "pytest"), "-p", "no:cacheprovider",
                             str(ROOT / "tests" / "test_config.py")],
                            env={**os.environ, "ICLLIB_MODE": "bogus"}, capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 4  # pytest's usage-error exit code
    assert "ICLLIB_MODE='bogus' is not a run mode" in result.stderr
