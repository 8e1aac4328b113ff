"""What one `git st worktree add` costs, counted: a logging `git` first on PATH records every
git process gitst starts. Work is counted, never timed: a new worktree is at most
:data:`MOST_GIT` git processes, one listing of the worktrees, no question whose answer gitst
has already (docs/performance.md, "worktree add and next: what git is asked")."""

from __future__ import annotations

import os

from tests.e2e.loop.test_next_cost import NEVER_RUN, _subcommands
from tests.support import git, logging_git, session_env, st

# Measured in round 28: 9 (was 16: check-ref-format, show-ref and rev-parse twice, symbolic-ref,
# a second worktree list, the setup's cat-file).
MOST_GIT = 9


def test_a_new_worktree_asks_git_nothing_twice(repo, tmp_path):
    git("config", "st.worktree.ports", "off", cwd=repo)
    log = tmp_path / "git.log"
    folder = logging_git(tmp_path / "bin", log)
    env = session_env("A", PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
    added = st("worktree", "add", "7", "--print-path", cwd=repo, env=env)
    assert added.returncode == 0, added
    ran = _subcommands(log)
    assert len(ran) <= MOST_GIT, (len(ran), ran)
    assert [name for name in ran if name in NEVER_RUN] == [], ran
    assert ran.count("worktree") == 3, ran  # list, add, lock
    assert ran.count("rev-parse") <= 2 and ran.count("for-each-ref") == 1, ran
    path = added.stdout.strip()
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "st/issue-7"
    assert git("rev-parse", "HEAD", cwd=path) == git("rev-parse", "main", cwd=repo)
    assert "session A" in git("worktree", "list", "--porcelain", cwd=repo)
