"""After a sync killed mid-merge (issue 21, low): the next `git st sync` names what it found —
git's `index.lock`, a merge left in progress (`MERGE_HEAD`) — with the fix, before fetching or
merging anything, instead of "failed and was undone". The leftovers are made as SIGKILL leaves
them: the lock file git holds while it writes the index, and a merge stopped before its commit."""

from __future__ import annotations

from tests.e2e.remote.conftest import clone, make_bare
from tests.e2e.remote.test_sync import ENV, branch_with, host_merge, plan_project
from tests.support import git, st


def test_sync_names_the_leftovers_of_an_interrupted_sync(tmp_path):
    bare = make_bare(tmp_path)
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "pr-a", "Write the parser")
    branch_with(dev, "pr-b", "Write the docs")
    host_merge(bare, "pr-a")
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    before = git("rev-parse", "HEAD", cwd=agent)

    lock = agent / ".git" / "index.lock"
    lock.write_bytes(b"")
    locked = st("sync", "main", cwd=agent, env=ENV)
    assert locked.returncode == 4, locked
    assert "index.lock exists" in locked.stderr and f"rm {lock}" in locked.stderr, locked
    assert "failed and was undone" not in locked.stderr and "Traceback" not in locked.stderr
    lock.unlink()

    git("fetch", "-q", "origin", cwd=agent)
    git(
        "-c",
        "merge.gitst-plan.driver=git-st merge-driver %O %A %B %P",
        "merge",
        "--no-commit",
        "origin/main",
        cwd=agent,
    )
    assert (agent / ".git" / "MERGE_HEAD").exists()
    stuck = st("sync", "main", cwd=agent, env=ENV)
    assert stuck.returncode == 3, stuck
    assert "a merge is in progress" in stuck.stderr and "MERGE_HEAD" in stuck.stderr, stuck
    assert "git merge --abort" in stuck.stderr and "failed and was undone" not in stuck.stderr
    assert git("rev-parse", "HEAD", cwd=agent) == before  # nothing synced

    git("merge", "--abort", cwd=agent)
    done = st("sync", "main", cwd=agent, env=ENV)
    assert done.returncode == 0, done
