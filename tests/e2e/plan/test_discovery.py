"""The plan is found the way git finds the repository: from any subdirectory of a work tree
(main or linked), the plan at that work tree's top; `--file` stays relative to the current
directory; outside git, the current directory (the original st's behaviour)."""

from __future__ import annotations

import json

from tests.support import git, git_st, plan_path, records


def _items(result) -> list[str]:
    assert result.returncode == 0, result
    return [item["step"] for item in json.loads(result.stdout)["items"]]


def test_a_subdirectory_of_the_main_worktree_uses_the_plan_at_its_top(repo):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--step", "At the top", cwd=repo).returncode == 0
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert _items(git_st("show", "--format", "json", cwd=deep)) == ["At the top"]
    added = git_st("add", "--step", "From below", cwd=deep)
    assert added.returncode == 0, added
    # init from below does not start a second plan: it finds the one at the top
    again = git_st("init", cwd=deep)
    assert again.returncode == 0, again
    assert again.stdout.splitlines()[0] == "already initialized: ../../.step/st-plan.jsonl"
    assert not (deep / ".step").exists() and not (repo / "src" / ".step").exists()
    assert [r["item"]["step"] for r in records(plan_path(repo)) if r.get("op") == "upsert"] == [
        "At the top",
        "From below",
    ]
    markdown = git_st("show", cwd=deep)
    assert "From below" in markdown.stdout and "At the top" in markdown.stdout


def test_a_linked_worktree_uses_its_own_plan_from_any_subdirectory(repo, tmp_path):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--step", "main's", cwd=repo).returncode == 0
    git("add", ".step", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", "-b", "feature", str(linked), cwd=repo)
    sub = linked / "docs" / "deep"
    sub.mkdir(parents=True)
    added = git_st("add", "--step", "feature's", cwd=sub)
    assert added.returncode == 0, added
    assert _items(git_st("show", "--format", "json", cwd=sub)) == ["main's", "feature's"]
    assert _items(git_st("show", "--format", "json", cwd=repo)) == ["main's"]  # per branch
    assert not (sub / ".step").exists()
    assert (linked / ".step" / "st-plan.jsonl").is_file()


def test_file_is_relative_to_the_current_directory_and_shown_normalized(repo):
    sub = repo / "sub"
    sub.mkdir()
    made = git_st("init", "--file", "./plans//mine.jsonl", cwd=sub)
    assert made.returncode == 0, made
    assert made.stdout.splitlines()[0] == "initialized plans/mine.jsonl"  # the original prints it so
    assert (sub / "plans" / "mine.jsonl").is_file()
    added = git_st("add", "--file", "./plans/mine.jsonl", "--step", "x", cwd=sub)
    assert added.returncode == 0 and added.stdout.startswith("upserted st-001")


def test_outside_git_the_plan_is_in_the_current_directory(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    made = git_st("init", cwd=outside)
    assert made.returncode == 0, made
    assert (outside / ".step" / "st-plan.jsonl").is_file()
    assert _items(git_st("show", "--format", "json", cwd=outside)) == []
