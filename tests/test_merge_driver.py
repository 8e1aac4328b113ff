"""The plan merge driver through real `git merge` and `git rebase` (must show 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hooks_helpers import mutate, ok
from tests.helpers import git, git_st, run, st

PLAN = Path(".step") / "st-plan.jsonl"


def records(repo: Path) -> list[dict]:
    return [json.loads(line) for line in (repo / PLAN).read_bytes().splitlines()]


def events(repo: Path) -> list[dict]:
    return [r for r in records(repo) if r["lane"] == "event"]





@pytest.fixture
def plan_repo(repo):
    """A repo with gitst's hooks + merge driver and a committed plan of two items."""
    ok(st("hooks", "install", cwd=repo))
    ok(st("init", cwd=repo))
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    mutate(repo, "add", "--id", "st-002", "--step", "second")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    return repo


def comment_texts(repo: Path) -> list[str]:
    return [e["comment"]["text"] for e in events(repo) if e["op"] == "add_comment"]


def diverge(repo: Path, *, feature_commits: int = 10) -> None:
    """feature: 10 mutations, one commit each; main: 10 mutations in one commit."""
    git("checkout", "-q", "-b", "feature", cwd=repo)
    for i in range(feature_commits):
        if i % 2:
            mutate(repo, "add-comment", "st-001", f"feature {i}")
        else:
            mutate(repo, "add", "--id", f"feat-{i}", "--step", f"feature step {i}")
        git("commit", "-q", "-am", f"feature {i}", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    for i in range(10):
        if i % 2:
            mutate(repo, "add-comment", "st-002", f"main {i}")
        elif i == 4:
            mutate(repo, "set-status", "st-002", "in_progress")
        else:
            mutate(repo, "add", "--id", f"main-{i}", "--step", f"main step {i}")
    git("commit", "-q", "-am", "main work", cwd=repo)


def assert_all_twenty(repo: Path) -> None:
    texts = comment_texts(repo)
    for i in range(1, 10, 2):
        assert texts.count(f"feature {i}") == 1, texts
        assert texts.count(f"main {i}") == 1, texts
    added = {e["item"]["id"] for e in events(repo) if e["op"] == "upsert"}
    assert {f"feat-{i}" for i in range(0, 10, 2)} <= added
    assert {"main-0", "main-2", "main-6", "main-8"} <= added
    assert any(e["op"] == "set_status" and e["id"] == "st-002" for e in events(repo))
    seqs = [r["seq"] for r in records(repo)]
    doctor = ok(git_st("doctor", cwd=repo))
    assert "seq contract ok" in doctor.stdout
    assert doctor.stderr == ""
    show = json.loads(ok(st("show", "--format", "json", cwd=repo)).stdout)
    items = show["items"] if isinstance(show, dict) else show
    ids = {item["id"] for item in items}
    assert {"st-001", "st-002", "feat-0", "feat-8", "main-0", "main-8"} <= ids
    assert seqs == sorted(seqs) or records(repo)[-1]["lane"] == "checkpoint"


def test_merge_of_two_appending_branches_needs_no_hand_editing(plan_repo):
    repo = plan_repo
    diverge(repo)
    ours_before = (repo / PLAN).read_bytes()
    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode == 0, merged
    assert "CONFLICT" not in merged.stdout
    assert git("status", "--porcelain", cwd=repo) == ""
    after = (repo / PLAN).read_bytes()
    assert after.startswith(ours_before)  # ours byte for byte
    appended = after[len(ours_before):].splitlines()
    assert json.loads(appended[-1])["lane"] == "checkpoint"
    watermark = max(r["seq"] for r in (json.loads(x) for x in ours_before.splitlines()))
    assert [json.loads(x)["seq"] for x in appended if json.loads(x)["lane"] == "event"][0] == watermark + 1
    assert_all_twenty(repo)


def test_rebase_of_an_appending_branch_needs_no_hand_editing(plan_repo):
    repo = plan_repo
    diverge(repo)
    git("checkout", "-q", "feature", cwd=repo)
    rebased = run(["git", "rebase", "main"], cwd=repo)
    assert rebased.returncode == 0, rebased
    assert git("status", "--porcelain", cwd=repo) == ""
    assert git("rev-list", "--count", "main..feature", cwd=repo) == "10"
    assert_all_twenty(repo)
    # every rebased commit holds a valid plan, not only the last one
    from gitst.gitops.core import run_git
    from gitst.plan.doctor import check_plan_bytes

    for commit in git("rev-list", "main..feature", cwd=repo).split():
        blob = run_git(["show", f"{commit}:{PLAN.as_posix()}"], repo).stdout
        assert [d for d in check_plan_bytes(blob, "plan") if d.is_error] == [], commit


def test_merging_the_same_branch_again_later_appends_only_what_is_new(plan_repo):
    repo = plan_repo
    diverge(repo, feature_commits=2)
    assert run(["git", "merge", "--no-edit", "feature"], cwd=repo).returncode == 0
    git("checkout", "-q", "feature", cwd=repo)
    mutate(repo, "add-comment", "st-001", "late feature")
    git("commit", "-q", "-am", "late", cwd=repo)
    # feature merges main back (main holds feature's first records re-sequenced)...
    assert run(["git", "merge", "--no-edit", "main"], cwd=repo).returncode == 0
    git("checkout", "-q", "main", cwd=repo)
    # ...and main merges feature again: nothing may arrive twice
    assert run(["git", "merge", "--no-edit", "feature"], cwd=repo).returncode == 0
    texts = comment_texts(repo)
    assert texts.count("feature 1") == 1 and texts.count("late feature") == 1
    assert texts.count("main 1") == 1
    ok(git_st("doctor", cwd=repo))


def test_a_contradictory_merge_fails_naming_the_item_and_field(plan_repo):
    repo = plan_repo
    git("checkout", "-q", "-b", "feature", cwd=repo)
    mutate(repo, "set-status", "st-001", "blocked")
    git("commit", "-q", "-am", "block it", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "set-status", "st-001", "completed")
    git("commit", "-q", "-am", "finish it", cwd=repo)
    ours = (repo / PLAN).read_bytes()

    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode != 0, merged
    assert "item 'st-001' changed on both sides: status" in merged.stderr
    assert '"completed"' in merged.stderr and '"blocked"' in merged.stderr
    assert "fix: keep our plan (git checkout --ours -- .step/st-plan.jsonl)" in merged.stderr
    assert "Traceback" not in merged.stderr
    assert "UU .step/st-plan.jsonl" in git("status", "--porcelain", cwd=repo)
    assert (repo / PLAN).read_bytes() == ours  # left as ours, no markers inside the JSONL


def test_merge_driver_command_directly(plan_repo, tmp_path):
    """`git st merge-driver %O %A %B %P` as git calls it: result in %A, exit 0."""
    repo = plan_repo
    base = (repo / PLAN).read_bytes()
    mutate(repo, "add-comment", "st-001", "ours")
    ours = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(base)
    mutate(repo, "add-comment", "st-002", "theirs")
    theirs = (repo / PLAN).read_bytes()
    files = {}
    for name, data in (("O", base), ("A", ours), ("B", theirs)):
        files[name] = tmp_path / name
        files[name].write_bytes(data)
    result = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert result.returncode == 0, result
    merged = files["A"].read_bytes()
    assert merged.startswith(ours) and b'"theirs"' in merged
    again = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert again.returncode == 0 and files["A"].read_bytes() == merged  # idempotent

    files["B"].write_bytes(b'{"not": "a record"\n')
    broken = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert broken.returncode == 1, broken
    assert "their side: line 1" in broken.stderr and ".step/st-plan.jsonl" in broken.stderr
    assert files["A"].read_bytes() == merged
