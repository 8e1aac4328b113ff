"""The board's snapshot: columns, the plan cache, versions, the parent watch (in process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitst.board.parent import ParentWatch
from gitst.board.server import IDLE_AFTER, Board
from gitst.board.snapshot import COLUMNS, column_of, snapshot
from gitst.plan.store import Target
from tests.support import REPO_ROOT, dead_pid, git, st_quick


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ({"status": "pending", "dep_state": "ready"}, "ready"),
        ({"status": "pending", "dep_state": "waiting_on_deps"}, "blocked"),
        ({"status": "blocked", "dep_state": "blocked_manual"}, "blocked"),
        ({"status": "in_progress", "dep_state": "ready"}, "in_progress"),
        ({"status": "completed", "dep_state": "n/a"}, "done"),
        ({"status": "deferred", "dep_state": "n/a"}, "parked"),
        ({"status": "canceled", "dep_state": "n/a"}, "parked"),
    ],
)
def test_every_status_lands_in_one_column(row, column):
    assert column_of(row) == column and column in COLUMNS


def test_a_new_version_only_when_something_changed(repo, monkeypatch):
    monkeypatch.chdir(repo)
    st_quick("init", "-q", cwd=repo)
    st_quick("add", "-q", "--step", "one", cwd=repo)
    board = Board(Target.of(None))
    board.build()
    first = json.loads(board.body)
    assert first["version"] == 1 and [i["id"] for i in first["plan"]["items"]] == ["st-001"]
    board.build()  # nothing changed: same version (the page gets 304)
    assert json.loads(board.body)["version"] == 1
    st_quick("add", "-q", "--step", "two", "--deps", "st-001", cwd=repo)  # an append: the cache reads again
    board.build()
    second = json.loads(board.body)
    assert second["version"] == 2
    assert [(i["id"], i["column"], i["waiting_on"]) for i in second["plan"]["items"]] == [
        ("st-001", "ready", []),
        ("st-002", "blocked", ["st-001"]),
    ]
    assert second["reservations"] == {"available": True, "items": []} and second["remote"] is None


def test_a_broken_plan_is_a_problem_on_the_page_not_a_crash(repo, monkeypatch):
    monkeypatch.chdir(repo)
    (repo / ".step").mkdir()
    (repo / ".step" / "st-plan.jsonl").write_text('{"not": "a record"\n')
    doc = snapshot(Target.of(None))
    assert doc["plan"]["items"] == [] and doc["plan"]["problems"]


def test_the_parent_watch_sees_a_dead_parent():
    watch = ParentWatch(lambda: None)
    assert watch.parents and watch.parents[0][0] == os.getppid() and not watch.gone()
    watch.parents.append((dead_pid(), None))
    assert watch.gone()


def test_the_parent_watch_looks_through_git(tmp_path):
    """`git st board`: git-st's parent is git; the process that ran git is watched too."""
    probe = tmp_path / "git-probe"
    probe.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "from gitst.board.parent import ParentWatch\n"
        "print(json.dumps([os.getppid(), [pid for pid, _ in ParentWatch(lambda: None).parents]]))\n"
    )
    probe.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["git", "probe"], env=env, capture_output=True, text=True, check=True).stdout
    git_pid, watched = json.loads(out)
    assert watched == [git_pid, os.getpid()]  # git, then the process that ran it: this one


def test_a_worktree_shows_dirty_merged_and_its_ports(repo, monkeypatch):
    monkeypatch.chdir(repo)
    monkeypatch.setenv("ST_SESSION_ID", "agent-w")
    git("config", "st.worktree.ports", "42000-42999/10", cwd=repo)
    st_quick("worktree", "add", "7", cwd=repo)
    [row] = snapshot(Target.of(None))["worktrees"]
    assert (row["issue"], row["session"], row["dirty"], row["merge"]) == ("7", "agent-w", False, "merged")
    # the block is the lowest free one: a port of 42000-42009 may be a client connection's (the
    # kernel hands out 32768-60999), so the block is checked for its shape, not its place
    first, last = (int(port) for port in row["ports_text"].split("-"))
    assert first >= 42000 and first % 10 == 0 and last == first + 9 <= 42999
    tree = Path(row["path"])
    (tree / "new.txt").write_text("work\n")
    git("add", "new.txt", cwd=tree)
    git("commit", "-qm", "work", cwd=tree)
    (tree / "scratch.txt").write_text("not yet\n")
    [row] = snapshot(Target.of(None))["worktrees"]
    assert (row["dirty"], row["merge"], row["ahead"]) == (True, "unmerged", 1)


def test_a_claim_on_the_remote_names_its_owner_and_the_remote(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    git("init", "-q", "--bare", str(tmp_path / "origin.git"), cwd=tmp_path)
    git("remote", "add", "origin", str(tmp_path / "origin.git"), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    git("config", "st.remote", "origin", cwd=repo)
    st_quick("init", "-q", cwd=repo)
    st_quick("add", "-q", "--id", "st-001", "--step", "one", cwd=repo)
    st_quick("claim", "st-001", cwd=repo, env={"ST_SESSION_ID": "remote-agent"})
    doc = snapshot(Target.of(None))
    [item] = doc["plan"]["items"]
    assert item["holder"]["session"] == "remote-agent" and item["holder"]["where"] == "origin"
    assert [c["issue"] for c in doc["remote"]["claims"]] == ["st-001"] and doc["remote"]["error"] is None


def test_a_page_back_from_idle_gets_a_fresh_read(repo, monkeypatch):
    monkeypatch.chdir(repo)
    st_quick("init", "-q", cwd=repo)
    board = Board(Target.of(None))
    board.build()
    st_quick("add", "-q", "--step", "while nobody looked", cwd=repo)
    board.asked()  # a page within IDLE_AFTER: the refresher's job, nothing read here
    assert json.loads(board.body)["plan"]["items"] == []
    monkeypatch.setattr(board, "_asked", board._asked - IDLE_AFTER)
    board.asked()  # the first ask after a pause reads at once
    assert [i["step"] for i in json.loads(board.body)["plan"]["items"]] == ["while nobody looked"]
