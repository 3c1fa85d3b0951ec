"""The code passes the pinned ruff linter (the version in the `test` extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_passes() -> None:
    if shutil.which("ruff") is None and subprocess.run(
            [sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode != 0:
        pytest.skip("ruff is not installed (pip install '.[test]' installs it)")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "pimsolve", "tests",
                           "benchmarks", "--output-format", "concise"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
