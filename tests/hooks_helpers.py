"""Helpers shared by the hooks and merge-driver tests."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path


def ok(result):
    """``result`` (a tests.helpers.Result), after asserting it exited 0."""
    assert result.returncode == 0, result
    return result


def mutate(repo: Path, *args: str) -> None:
    """A plan mutation through the real CLI entry point, run in this process.

    Setting up branches with many plan mutations is most of these tests' work; an
    interpreter start per mutation would dominate their time. The hooks, merges and rebases
    under test still run as real processes started by git.
    """
    from gitst.cli.main import main

    here = os.getcwd()
    os.chdir(repo)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(list(args))
    finally:
        os.chdir(here)
    assert code == 0, (args, err.getvalue())
