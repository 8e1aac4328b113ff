"""`git st land` on one machine (docs/agent-loop.md, "Landing without a remote"): no
`st.remote`, the slot a local lease, the base branch fast-forwarded by a compare-and-swap —
in the main worktree where it is checked out, so its files follow — the item completed,
the claim released, the worktree removed. Agents landing at once queue for the slot."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.loop.conftest import item, land_all, session_env, write_plan
from tests.e2e.loop.test_land import _next, _work
from tests.e2e.loop.test_land_queue import _until_said
from tests.support import git, run


def _plan(repo: Path, count: int) -> None:
    git("config", "st.worktree.ports", "off", cwd=repo)
    write_plan(repo, [item(n) for n in range(1, count + 1)])


def _statuses(repo: Path) -> dict[str, str]:
    shown = run(["git-st", "show", "--format", "json"], cwd=repo)
    return {i["id"]: i["status"] for i in json.loads(shown.stdout)["items"]}


def test_land_without_a_remote_fast_forwards_the_checked_out_base_never_a_dirty_one(repo):
    _plan(repo, 2)
    keeper = subprocess.Popen(["sleep", "3600"])
    try:
        env = session_env("agent-a", keeper.pid)
        mine = _next(repo, env)
        _work(mine["path"], "a.txt")
        before = git("rev-parse", "main", cwd=repo)
        landed = run(["git-st", "land", "--format", "json"], cwd=mine["path"], env=env)
    finally:
        keeper.kill()
        keeper.wait()
    assert landed.returncode == 0, landed
    answer = json.loads(landed.stdout)
    assert answer["base"] == "main" and answer["removed"] is True and answer["pushes_rejected"] == 0
    assert answer["slot_token"] == 1 and answer["queue"] == {"places": [], "first_place": 0}
    after = git("rev-parse", "main", cwd=repo)
    assert after == answer["commit"] != before
    assert git("merge-base", "--is-ancestor", before, after, cwd=repo) == ""  # a fast-forward: never a non-ff move
    # main is checked out here: its files and index followed the move (no phantom changes)
    assert (repo / "a.txt").read_text() == "work\n"
    assert git("status", "--porcelain", "--untracked-files=no", cwd=repo) == ""
    assert _statuses(repo) == {"st-001": "completed", "st-002": "pending"}
    assert not Path(mine["path"]).exists()
    assert "st/issue-st-001" not in git("branch", "--list", cwd=repo)
    locks = json.loads(run(["git-st", "lock", "list", "--format", "json"], cwd=repo).stdout)
    assert all(lock["state"] != "live" for lock in locks.get("locks", locks)), locks  # slot and claim given back
    env = session_env("agent-b", os.getpid())
    took = _next(repo, env)
    assert took["id"] == "st-002"  # the completed item is never handed out again
    # A checkout of main with a change in the way of the fast-forward: refused, nothing moves.
    _work(took["path"], "b.txt", "from the agent\n")
    (repo / "b.txt").write_text("a person's unsaved edit\n")  # untracked in main, where the ff would write
    before = git("rev-parse", "main", cwd=repo)
    refused = run(["git-st", "land"], cwd=took["path"], env=env)
    assert refused.returncode == 3, refused
    assert "would not fast-forward it there" in refused.stderr and "Traceback" not in refused.stderr
    assert git("rev-parse", "main", cwd=repo) == before
    assert (repo / "b.txt").read_text() == "a person's unsaved edit\n"
    (repo / "b.txt").unlink()
    again = run(["git-st", "land"], cwd=took["path"], env=env)
    assert again.returncode == 0, again
    assert (repo / "b.txt").read_text() == "from the agent\n"


def test_agents_landing_at_once_on_one_machine_all_land_in_turn(repo):
    agents = 2
    _plan(repo, agents)
    keeper = subprocess.Popen(["sleep", "3600"])
    try:
        taken = []
        for i in range(agents):
            env = session_env(f"agent{i}", keeper.pid)
            got = _next(repo, env)
            _work(got["path"], f"file-{i}.txt")
            taken.append((got, env))
        outs = land_all(taken)
    finally:
        keeper.kill()
        keeper.wait()
    for proc, stdout, stderr in outs:
        assert proc.returncode == 0, (stdout, stderr)
    answers = [json.loads(stdout) for _, stdout, _ in outs]
    assert sorted(a["slot_token"] for a in answers) == [1, 2]  # one holder at a time, fenced
    assert _statuses(repo) == {f"st-{n:03d}": "completed" for n in range(1, agents + 1)}
    assert {f"file-{i}.txt" for i in range(agents)} <= set(git("ls-tree", "--name-only", "main", cwd=repo).split())
    assert git("status", "--porcelain", "--untracked-files=no", cwd=repo) == ""


def test_next_wait_takes_the_item_its_dependency_frees_once_it_lands(repo, tmp_path):
    """`next --wait` while the only pending item waits on one another agent holds: it says
    what it waits for, and takes the item once the other agent's `land` completes the first."""
    git("config", "st.worktree.ports", "off", cwd=repo)
    write_plan(repo, [item(1), item(2, [1])])
    holder = session_env("agent-a", os.getpid())
    mine = _next(repo, holder)
    log = tmp_path / "waiter.err"
    waiter = subprocess.Popen(
        ["git-st", "next", "--wait", "600", "--format", "json"],
        cwd=repo,
        env=session_env("agent-b", os.getpid()),
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    _until_said(
        log,
        "gitst: waiting for an item on main: held by live sessions: st-001; waiting on dependencies: st-002",
        waiter,
    )
    _work(mine["path"], "a.txt")
    assert run(["git-st", "land"], cwd=mine["path"], env=holder).returncode == 0
    stdout, _ = waiter.communicate(timeout=600)
    assert waiter.returncode == 0, (stdout, log.read_text())
    answer = json.loads(stdout)
    assert answer["id"] == "st-002" and answer["waited"] > 0
    # it tried at least once before (that try said what it waits for), then took the item
    assert answer["tries"] >= 2 and answer["polled"] > 0
