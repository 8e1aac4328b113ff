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


def test_the_manual_through_git_st_help_has_no_troff_warning(tmp_path):
    """`git st --help` is git's: it runs `man git-st`, which finds the page beside a PATH
    entry's bin/. At 80 columns (and 40 to 160) troff has nothing to warn about: long words
    (lists of choices, URLs) break at their separators and lines are not justified."""
    import os
    import shutil

    assert shutil.which("man"), "man-db is part of the machine: `git st --help` needs it"
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share" / "man" / "man1").mkdir(parents=True)
    (prefix / "bin" / "git-st").symlink_to(shutil.which("git-st"))
    shutil.copy(REPO_ROOT / "docs" / "man" / "git-st.1", prefix / "share" / "man" / "man1" / "git-st.1")
    for columns in ("80", "40", "60", "100", "160"):
        env = {k: v for k, v in os.environ.items() if k not in ("MANWIDTH", "MANPATH", "MANOPT", "MANROFFOPT")}
        env.update(PATH=f"{prefix / 'bin'}{os.pathsep}{env['PATH']}", COLUMNS=columns, MANPAGER="cat", PAGER="cat")
        shown = subprocess.run(
            ["git", "st", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        assert shown.returncode == 0 and "GIT-ST(1)" in shown.stdout, shown
        assert shown.stderr == "", (columns, shown.stderr)
