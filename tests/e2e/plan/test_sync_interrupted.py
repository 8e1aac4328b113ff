"""After a sync killed mid-merge (issue 21, low): the next `git st sync` names what it found —
git's `index.lock`, a merge left in progress (`MERGE_HEAD`) — with the fix, before fetching or
merging anything, instead of "failed and was undone". The leftovers are made as SIGKILL leaves
them: the lock file git holds while it writes the index, and a merge stopped before its commit."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.remote.conftest import clone, make_bare
from tests.e2e.remote.test_sync import ENV, branch_with, host_merge, plan_project
from tests.support import git, st


def agent_on_a_pr_behind_main(tmp_path: Path) -> Path:
    """A fresh clone on pr-b, whose plan conflicts on the host with main (pr-a landed)."""
    bare = make_bare(tmp_path)
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "pr-a", "Write the parser")
    branch_with(dev, "pr-b", "Write the docs")
    host_merge(bare, "pr-a")
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    return agent


def test_sync_names_the_leftovers_of_an_interrupted_sync(tmp_path):
    agent = agent_on_a_pr_behind_main(tmp_path)
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


def test_a_sync_killed_during_its_merge_leaves_a_lock_the_next_sync_names(tmp_path):
    """A real SIGKILL: the plan merge driver of sync's merge (its only run: sync makes no
    trial merge with the driver first) waits until the whole sync process group is killed,
    so git's index.lock stays behind; the next sync names it instead of failing the merge."""
    import os
    import shutil
    import signal
    import subprocess
    import time

    agent = agent_on_a_pr_behind_main(tmp_path)
    real = shutil.which("git-st")
    assert real is not None
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    ready = tmp_path / "driver-waiting"
    (slow / "git-st").write_text(
        f'#!/bin/sh\nif [ "$1" = merge-driver ]; then touch "{ready}"; exec sleep 600; fi\nexec "{real}" "$@"\n'
    )
    (slow / "git-st").chmod(0o755)
    env = {**os.environ, **ENV, "PATH": f"{slow}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen([real, "sync", "main"], cwd=agent, env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), "the merge driver of sync's merge never started"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    lock = agent / ".git" / "index.lock"
    assert lock.exists()  # what the kill left

    after = st("sync", "main", cwd=agent, env=ENV)
    assert after.returncode == 4, after
    assert "index.lock exists" in after.stderr and "failed and was undone" not in after.stderr, after
    lock.unlink()
    git("reset", "-q", "--hard", cwd=agent)
    done = st("sync", "main", cwd=agent, env=ENV)
    assert done.returncode == 0, done
