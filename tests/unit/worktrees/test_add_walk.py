"""``git st worktree add`` parses each identifier once at its edge (issue 22, point 1): the
inner code - the claim, the locks, the registry, the state paths - trusts the parsed values."""

from __future__ import annotations

import collections
import os
import subprocess

from gitst.statedir import paths


def test_worktree_add_validates_each_identifier_once(repo, monkeypatch):
    from gitst.cli.main import main
    from gitst.git import repo as git_repo

    monkeypatch.setenv("ST_SESSION_ID", "walk-session")
    monkeypatch.setenv("ST_SESSION_PID", str(os.getpid()))
    monkeypatch.chdir(repo)
    assert main(["init"]) == 0
    git_repo.clear_cache()
    paths.clear_cache()
    import gitst.cli.worktree  # the modules' constants are parsed when they load
    import gitst.worktrees.manager  # noqa: F401

    seen: collections.Counter[str] = collections.Counter()
    real = paths.validate_identifier

    def counting(value, *args, **kwargs):
        seen[value] += 1
        return real(value, *args, **kwargs)

    monkeypatch.setattr(paths, "validate_identifier", counting)
    assert main(["worktree", "add", "7"]) == 0
    assert seen["7"] == 1 and seen["walk-session"] == 1
    assert set(seen.values()) == {1}, seen
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True)
    assert "issue-7" in listed.stdout
