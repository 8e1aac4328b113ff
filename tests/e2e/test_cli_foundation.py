"""The CLI's front door: version, help, `python -m gitst`, `git st` as a git subcommand."""

from __future__ import annotations

import subprocess
import sys

from gitst import __version__
from tests.support import REPO_ROOT, git_st, run, st


def test_version_via_git_subcommand(repo):
    result = git_st("--version", cwd=repo)
    assert result.returncode == 0, result
    assert result.stdout.strip() == f"gitst {__version__}"


def test_python_dash_m_runs_the_same_cli(repo):
    result = run([sys.executable, "-m", "gitst", "--version"], cwd=repo, env={"PYTHONPATH": str(REPO_ROOT)})
    assert result.returncode == 0, result
    assert result.stdout.strip() == f"gitst {__version__}"


def test_help_lists_every_section(repo):
    result = st("--help", cwd=repo)
    assert result.returncode == 0, result
    for title in ("Plan", "Validation", "Git hooks", "Parallel agents", "PRs and pipeline state"):
        assert title in result.stdout
    assert "Usage: git st" in result.stdout


def test_unknown_command_is_a_usage_error(repo):
    result = st("no-such-command", cwd=repo)
    assert result.returncode == 2
    assert "No such command" in result.stderr
    assert "Traceback" not in result.stderr


def test_manpage_renders_roff():
    out = subprocess.run(
        [sys.executable, "-m", "gitst.cli.manpage", "--prog", "git st"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=True,
    ).stdout
    assert out.startswith(".TH GIT-ST 1")
    assert ".SH EXIT STATUS" in out
