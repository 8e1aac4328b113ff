"""Lint, format and types are part of the test command, so CI and a developer run the same
checks (pyproject.toml configures ruff and mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

BIN = Path(sys.executable).parent


def tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", "gitst", "tests", "benchmarks"),
        ("ruff", "format", "--check", "gitst", "tests", "benchmarks"),
        pytest.param(("mypy",), marks=pytest.mark.slow(20)),  # starts first (tests/conftest.py)
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_clean(command):
    result = tool(*command)
    assert result.returncode == 0, result.stdout + result.stderr
