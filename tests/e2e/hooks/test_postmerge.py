"""post-merge / post-rewrite (doctor, st.autoRepair), pre-push (the pushed range),
post-checkout (hand-over) — in real repositories with the installed shims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import git, git_st, mutate, ok, run, st

PLAN = ".step/st-plan.jsonl"


@pytest.fixture
def union_repo(repo):
    """All hooks installed, but plans merged line-wise by git's `union` driver — what a
    repository without gitst's driver gets: both sides' appends, seq numbers colliding."""
    ok(st("hooks", "install", "--no-merge-driver", cwd=repo))
    (repo / ".gitattributes").write_text(".step/*.jsonl merge=union\n")
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    mutate(repo, "add-comment", "st-001", "from feature")
    git("commit", "-q", "-am", "feature", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "set-notes", "st-001", "from main")
    git("commit", "-q", "-am", "main", cwd=repo)
    return repo


def test_post_merge_names_the_broken_seq_and_the_command(union_repo):
    repo = union_repo
    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode == 0, merged  # git's merge is done; the hook reports
    assert f"{PLAN}:" in merged.stderr and "ST_TRAILING_SEQ" in merged.stderr
    assert f"fix: git st doctor --repair-seq --file {PLAN}" in merged.stderr
    assert "st.autoRepair" in merged.stderr
    assert git_st("doctor", cwd=repo).returncode == 1  # left as git made it
    ok(st("doctor", "--repair-seq", cwd=repo))  # the printed command works
    ok(git_st("doctor", cwd=repo))


def test_post_merge_repairs_with_auto_repair(union_repo):
    repo = union_repo
    git("config", "st.autoRepair", "true", cwd=repo)
    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode == 0, merged
    assert "repaired seq contract via checkpoint" in merged.stderr
    assert f"commit it: git add -- {PLAN}" in merged.stderr
    ok(git_st("doctor", cwd=repo))
    last = json.loads((repo / PLAN).read_bytes().splitlines()[-1])
    assert last["lane"] == "checkpoint"
    assert git("status", "--porcelain", cwd=repo) == f" M {PLAN}"


def test_post_rewrite_checks_plans_after_a_rebase(union_repo):
    repo = union_repo
    git("checkout", "-q", "feature", cwd=repo)
    rebased = run(["git", "rebase", "main"], cwd=repo)
    assert rebased.returncode == 0, rebased
    assert "ST_TRAILING_SEQ" in rebased.stderr
    assert f"gitst post-rewrite: {PLAN} breaks the plan's rules after this rewrite" in rebased.stderr


def test_post_merge_is_quiet_when_the_plan_is_fine(repo):
    ok(st("hooks", "install", cwd=repo))
    mutate(repo, "init")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    mutate(repo, "add", "--id", "a", "--step", "a")
    git("commit", "-q", "-am", "a", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "add", "--id", "b", "--step", "b")
    git("commit", "-q", "-am", "b", cwd=repo)
    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode == 0, merged
    assert "gitst post-merge" not in merged.stderr


@pytest.fixture
def pushing_repo(repo, tmp_path):
    ok(st("hooks", "install", "--hook", "pre-push", "--hook", "pre-commit", cwd=repo))
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=repo)
    mutate(repo, "init")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    ok(run(["git", "push", "-q", "origin", "main"], cwd=repo))
    return repo


def test_pre_push_refuses_an_invalid_plan_in_the_pushed_range(pushing_repo):
    repo = pushing_repo
    with open(repo / PLAN, "ab") as handle:
        handle.write(b'{"v":3,"lane":"event","seq":"x"}\n')
    git("commit", "-q", "--no-verify", "-am", "bad plan, hook skipped", cwd=repo)
    (repo / "README").write_text("later commit\n")
    git("commit", "-q", "-am", "unrelated", cwd=repo)
    pushed = run(["git", "push", "origin", "main"], cwd=repo)
    assert pushed.returncode != 0, pushed
    assert f"{PLAN}:2:" in pushed.stderr and "gitst pre-push: failed" in pushed.stderr
    # a new branch: everything not on the remote yet is checked
    refused = run(["git", "push", "origin", "main:refs/heads/other"], cwd=repo)
    assert refused.returncode != 0 and f"{PLAN}:2:" in refused.stderr


def test_pre_push_passes_valid_work_and_deletions(pushing_repo):
    repo = pushing_repo
    mutate(repo, "add", "--id", "x", "--step", "x")
    git("commit", "-q", "-am", "good", cwd=repo)
    ok(run(["git", "push", "-q", "origin", "main", "main:refs/heads/topic"], cwd=repo))
    ok(run(["git", "push", "-q", "origin", ":refs/heads/topic"], cwd=repo))


def test_post_checkout_hands_a_new_worktree_to_the_worktree_manager(repo, tmp_path):
    """`git worktree add` of a branch matching the template: the shim runs gitst's
    post-checkout, which hands over to gitst.worktrees.manager (it registers the worktree)."""
    from gitst.sessions.registry import read_worktree_entry

    ok(st("hooks", "install", "--hook", "post-checkout", "--no-merge-driver", cwd=repo))
    wt = tmp_path / "by-hand"
    added = run(["git", "worktree", "add", "-q", "-b", "st/issue-7", str(wt)], cwd=repo)
    assert added.returncode == 0, added
    entry = read_worktree_entry("7", repo)
    assert entry is not None, added
    assert Path(entry["path"]).resolve() == wt.resolve()
    # an ordinary branch switch is not a new worktree: nothing happens, nothing printed
    switched = run(["git", "checkout", "-q", "-b", "other"], cwd=repo)
    assert switched.returncode == 0 and switched.stderr == "", switched
