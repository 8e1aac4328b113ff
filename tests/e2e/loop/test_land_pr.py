"""`git st land --pr` (docs/agent-loop.md, "Landing through a PR"): the item's branch pushed,
a PR opened through `gh` and merged per st.land.prMerge, exactly once, under the merge slot.

Git is real (a bare remote, clones, worktrees); GitHub is the fake `gh` of tests/support.py
first on PATH: it records its calls, answers `gh pr list|view --json` with the real field
names, and `gh pr merge` (or `FakeGh.github("merge-queued")`, GitHub acting later) really
merges the PR's branch into the bare repository's main, as GitHub would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import item, land_all, session_env
from tests.e2e.loop.test_land import _clones
from tests.support import FakeGh, git, make_pr, run


@pytest.fixture
def keeper():
    """The agents' session process: live throughout the test."""
    proc = subprocess.Popen(["sleep", "3600"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _world(tmp_path: Path, bare: Path, items: list[dict], clones: int = 1, url: str | None = None, **config: str):
    """A plan on the bare remote's main, ``clones`` clones (reaching it at ``url``, default its
    path) landing through PRs, the fake gh."""
    _landing, places = _clones(tmp_path, bare, items, count=clones, url=url)
    for place in places:
        for key, value in config.items():
            git("config", key, value, cwd=place)
    gh = FakeGh(tmp_path)
    gh.set([], remote=str(bare))
    return places, gh


def _env(gh: FakeGh, session: str, pid: int) -> dict:
    return session_env(
        session, pid, FAKE_GH_WORLD=str(gh.world_path), PATH=f"{gh.bindir}{os.pathsep}{os.environ['PATH']}"
    )


def _take_and_work(place: Path, env: dict, name: str) -> dict:
    took = run(["git-st", "next", "--format", "json"], cwd=place, env=env)
    assert took.returncode == 0, took
    taken = json.loads(took.stdout)
    Path(taken["path"], name).write_text(f"{name}\n")
    git("add", name, cwd=taken["path"])
    git("commit", "-q", "-m", f"work on {name}", cwd=taken["path"])
    return taken


def _land(path: str, env: dict, *args: str) -> tuple[int, dict, str]:
    done = run(["git-st", "land", "--format", "json", *args], cwd=path, env=env)
    assert "Traceback" not in done.stderr, done
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else {}), done.stderr


def _shown_status(bare: Path, item_id: str) -> str:
    scratch = bare.parent / f"main-plan-{item_id}.jsonl"
    scratch.write_text(git("show", "main:.step/st-plan.jsonl", cwd=bare) + "\n")
    shown = run(["git-st", "show", "--format", "json", "--file", str(scratch)], cwd=bare.parent)
    return next(i["status"] for i in json.loads(shown.stdout)["items"] if i["id"] == item_id)


def _claims(bare: Path) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()


def _verbs(gh: FakeGh) -> list[str]:
    return [" ".join(call[:2]) for call in gh.calls()]


def test_pr_route_lands_the_item_exactly_once(tmp_path, bare, keeper):
    hostile = "fix it \x1b[31mred\x1b[0m $(touch pwned) `touch pwned2`"
    (place,), gh = _world(tmp_path, bare, [item(1, step=hostile)], **{"st.land.mode": "pr", "st.land.prMerge": "now"})
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0, err
    assert (landed["route"], landed["landed"], landed["removed"]) == ("pr", True, True)
    assert landed["pr"] == {
        "number": 101,
        "url": "https://github.com/acme/widgets/pull/101",
        "state": "MERGED",
        "merged_at": landed["pr"]["merged_at"],
        "merge": "now",
    }
    assert landed["pr"]["merged_at"] and landed["slot_token"] >= 1
    assert landed["commit"] == git("rev-parse", "main", cwd=bare)
    assert _shown_status(bare, "st-001") == "completed"
    assert "a.txt" in git("ls-tree", "--name-only", "main", cwd=bare).split()
    assert git("log", "--format=%s", "main", cwd=bare).splitlines().count("st: land st-001") == 1
    assert _claims(bare) == [] and not Path(taken["path"]).exists()
    assert _verbs(gh) == ["pr list", "pr create", "pr view", "pr merge", "pr view"]
    create = next(call for call in gh.calls() if call[:2] == ["pr", "create"])
    title = next(arg for arg in create if arg.startswith("--title="))
    assert title == "--title=st-001: fix it \\x1b[31mred\\x1b[0m $(touch pwned) `touch pwned2`"  # escaped, no shell
    assert "--head" in create and "st/issue-st-001" in create
    assert not list(tmp_path.rglob("pwned*"))
    assert len(gh.world()["prs"]) == 1


def test_a_forks_pr_from_a_branch_of_the_items_name_is_never_merged(tmp_path, bare, keeper):
    """The remote is untrusted input: `gh pr list --head st/issue-st-001` lists a fork's PR from
    a branch of that name too. It is neither reused nor merged (its head is another
    repository's); the landing opens its own PR, and GitHub merges only the commit it pushed."""
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "now"})
    fork = make_pr(
        7, head="st/issue-st-001", oid="f" * 40, title="st-001: mine", repo=("mallory", "widgets"), cross=True
    )
    gh.update(prs=[fork])
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0, err
    assert (landed["landed"], landed["pr"]["number"], landed["pr"]["state"]) == (True, 101, "MERGED")
    world = {pr["number"]: pr for pr in gh.world()["prs"]}
    assert world[7]["state"] == "OPEN" and world[101]["isCrossRepository"] is False
    merges = [call for call in gh.calls() if call[:2] == ["pr", "merge"]]
    assert len(merges) == 1 and merges[0][2] == "101", merges
    pushed = world[101]["headRefOid"]
    assert merges[0][merges[0].index("--match-head-commit") + 1] == pushed
    assert git("rev-parse", "main^2", cwd=bare) == pushed  # GitHub's merge commit: the base, our commit


def test_a_gh_too_old_to_tell_a_forks_pr_stops_before_anything_is_done(tmp_path, bare, keeper):
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "now"})
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    gh.update(mode="old-gh")  # no isCrossRepository field
    before = git("rev-parse", "main", cwd=bare)
    code, _landed, err = _land(taken["path"], env)
    assert code == 4 and 'Unknown JSON field: "isCrossRepository"' in err, err
    assert "fix: update the GitHub CLI" in err, err
    assert _verbs(gh) == ["pr list"] and git("rev-parse", "main", cwd=bare) == before


def test_a_commit_pushed_to_the_prs_branch_before_the_merge_is_never_merged_unseen(tmp_path, bare, keeper):
    """Somebody pushes to the PR's branch between this landing's push and its merge: GitHub
    refuses the merge (the head is not the commit pushed); exit 3, nothing on main, the PR
    open, and the next `land` says what to merge first."""
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "now"})
    gh.update(push_before_merge=True)
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    before = git("rev-parse", "main", cwd=bare)
    code, _landed, err = _land(taken["path"], env)
    assert code == 3, err
    assert "somebody pushed to its branch; nothing merged" in err and "fix: `git st land` again" in err, err
    assert git("rev-parse", "main", cwd=bare) == before
    assert [pr["state"] for pr in gh.world()["prs"]] == ["OPEN"]
    assert _claims(bare) == ["refs/st/claims/st-001"] and Path(taken["path"]).is_dir()  # nothing given up
    gh.update(push_before_merge=False)
    code, _landed, err = _land(taken["path"], env)
    assert code == 3 and "has commits this worktree does not" in err, err  # theirs: merge it first
    assert git("rev-parse", "main", cwd=bare) == before


def test_auto_merge_later_then_land_again_finishes(tmp_path, bare, keeper):
    (place,), gh = _world(tmp_path, bare, [item(1), item(2)])
    gh.update(checks_pending=True)  # GitHub waits for the checks: --auto queues the merge
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    before = git("rev-parse", "main", cwd=bare)
    code, landed, err = _land(taken["path"], env, "--pr")
    assert code == 0, err
    assert (landed["landed"], landed["pr"]["state"], landed["pr"]["merge"]) == (False, "OPEN", "auto")
    assert "PR #101 is open" in landed["kept_because"] and Path(taken["path"]).is_dir()
    assert git("rev-parse", "main", cwd=bare) == before  # nothing on main until GitHub merges
    assert _claims(bare) == ["refs/st/claims/st-001"]  # the claim stays; the slot was given back
    assert git("rev-parse", "refs/heads/st/issue-st-001", cwd=bare) == git("rev-parse", "HEAD", cwd=taken["path"])

    took = run(["git-st", "next", "--format", "json"], cwd=place, env=env)  # the agent moves on
    assert took.returncode == 0, took
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-002" and not answer["resumed"]
    assert any(p["id"] == "st-001" and "PR #101" in p["why"] for p in answer["passed"]), answer

    gh.github("merge-queued")  # the checks passed: GitHub merges it
    code, landed, err = _land(taken["path"], env)  # the mode is push: the remembered PR decides
    assert code == 0, err
    assert (landed["landed"], landed["already_landed"], landed["removed"]) == (True, True, True)
    assert landed["pr"]["state"] == "MERGED" and landed["slot_token"] is None
    assert _shown_status(bare, "st-001") == "completed"
    assert _claims(bare) == ["refs/st/claims/st-002"]
    assert _verbs(gh).count("pr create") == 1 and _verbs(gh).count("pr merge") == 1
    assert len(gh.world()["prs"]) == 1


def test_open_only_then_a_person_squashes_it(tmp_path, bare, keeper):
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "none"})
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0, err
    assert (landed["landed"], landed["pr"]["state"], landed["pr"]["merge"]) == (False, "OPEN", "none")
    assert "pr merge" not in _verbs(gh)
    gh.github("merge", "101", "squash")  # a reviewer squashes it through the web page
    code, landed, err = _land(taken["path"], env)
    assert code == 0, err
    assert (landed["landed"], landed["already_landed"], landed["removed"]) == (True, True, True)
    assert _shown_status(bare, "st-001") == "completed" and _claims(bare) == []
    assert git("log", "-1", "--format=%s", "main", cwd=bare) == "st-001: step 1 (#101)"
    assert git("branch", "--list", "st/issue-st-001", cwd=place)  # squashed: its own commits kept on the branch


def test_closed_pr_gives_the_item_back(tmp_path, bare, keeper):
    places, gh = _world(tmp_path, bare, [item(1)], clones=2, **{"st.land.mode": "pr"})
    gh.update(checks_pending=True)
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(places[0], env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0 and landed["pr"]["state"] == "OPEN", err
    before = git("rev-parse", "main", cwd=bare)
    gh.github("close", "101")  # a reviewer closes it unmerged

    code, landed, err = _land(taken["path"], env)
    assert code == 3, err
    assert (landed["given_back"], landed["landed"], landed["pr"]["state"]) == (True, False, "CLOSED")
    assert "closed without merging" in err
    assert _claims(bare) == [] and git("rev-parse", "main", cwd=bare) == before
    assert _shown_status(bare, "st-001") == "pending"
    assert "st/issue-st-001" not in git("branch", "--list", "st/*", cwd=bare)  # deleted; its work is in PR #101
    assert Path(taken["path"]).is_dir()  # and in the worktree, kept

    other = _env(gh, "agent-b", keeper)  # another agent takes the item back and lands it
    gh.update(checks_pending=False)
    again = _take_and_work(places[1], other, "b.txt")
    assert again["id"] == "st-001"
    code, landed, err = _land(again["path"], other)
    assert code == 0, err
    assert (landed["landed"], landed["pr"]["number"], landed["pr"]["state"]) == (True, 102, "MERGED")
    assert _shown_status(bare, "st-001") == "completed"
    assert git("log", "--format=%s", "main", cwd=bare).splitlines().count("st: land st-001") == 1


def test_gh_missing_unauthenticated_or_failing_then_a_retry_recovers(tmp_path, bare, keeper):
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "now"})
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    before = git("rev-parse", "main", cwd=bare)

    only_git = tmp_path / "only-git"  # no gh at all: refused before anything is done
    only_git.mkdir()
    for name in ("git", "git-st", "sleep"):
        (only_git / name).symlink_to(shutil.which(name))
    code, _landed, err = _land(taken["path"], {**env, "PATH": str(only_git)})
    assert code == 4 and "gh is not installed" in err and "fix: install the GitHub CLI" in err, err
    assert "st/issue-st-001" not in git("branch", "--list", "st/*", cwd=bare)

    gh.update(mode="unauthenticated")
    code, _landed, err = _land(taken["path"], env)
    assert code == 4 and "not authenticated" in err and "gh auth login" in err, err

    gh.update(mode="ok", fail=["pr create"])  # GitHub fails after the branch was pushed
    code, _landed, err = _land(taken["path"], env)
    assert code == 4 and "could not open a PR" in err and "HTTP 502" in err and "fix:" in err, err
    assert _claims(bare) == ["refs/st/claims/st-001"]  # the slot given back, the claim kept
    assert git("rev-parse", "refs/heads/st/issue-st-001", cwd=bare) == git("rev-parse", "HEAD", cwd=taken["path"])
    assert git("rev-parse", "main", cwd=bare) == before

    gh.update(fail=[])
    code, landed, err = _land(taken["path"], env)
    assert code == 0, err
    assert (landed["landed"], landed["pr"]["number"], landed["removed"]) == (True, 101, True)
    assert len(gh.world()["prs"]) == 1 and _claims(bare) == []
    assert _shown_status(bare, "st-001") == "completed"


def test_three_agents_land_through_prs_at_once(tmp_path, bare, keeper):
    places, gh = _world(tmp_path, bare, [item(n) for n in (1, 2, 3)], clones=3, **{"st.land.prMerge": "now"})
    agents = []
    for i, place in enumerate(places):
        env = _env(gh, f"agent{i}", keeper)
        agents.append((_take_and_work(place, env, f"file-{i}.txt"), env))
    outs = land_all([(taken, {**env, "ST_LAND_MODE": "pr"}) for taken, env in agents])
    answers = []
    for proc, stdout, stderr in outs:
        assert proc.returncode == 0, (stdout, stderr)
        answers.append(json.loads(stdout))
    assert all(a["landed"] and a["pr"]["state"] == "MERGED" for a in answers)
    assert sorted(a["pr"]["number"] for a in answers) == [101, 102, 103]
    assert len({a["slot_token"] for a in answers}) == 3  # one holder of the slot at a time
    log = git("log", "--format=%s", "main", cwd=bare).splitlines()
    for n in (1, 2, 3):
        assert _shown_status(bare, f"st-00{n}") == "completed"
        assert log.count(f"st: land st-00{n}") == 1
    assert {f"file-{i}.txt" for i in range(3)} <= set(git("ls-tree", "--name-only", "main", cwd=bare).split())
    assert _claims(bare) == [] and _verbs(gh).count("pr create") == 3


def _ended(how: str, place: Path, env: dict, owner: subprocess.Popen) -> None:
    """The agent's session ends: `git st release` of everything (the harness's SessionEnd
    does the same), or its process is killed (no hook runs)."""
    if how == "released":
        done = run(["git-st", "release"], cwd=place, env=env)
        assert done.returncode == 0, done
    owner.kill()
    owner.wait()


@pytest.mark.parametrize("how", ["released", "killed"])
def test_an_open_pr_holds_its_item_after_its_session_is_gone(tmp_path, remote_kind, keeper, how):
    """An open PR is work in flight: its item is never handed to another agent, on another
    clone, after the session that opened it ended or died — until a `land` in its worktree
    (any session) finishes it (merged) or gives it back (closed). Over file://, `git daemon`
    and smart HTTP."""
    bare = remote_kind.bare
    places, gh = _world(tmp_path, bare, [item(1), item(2)], clones=2, url=remote_kind.url, **{"st.land.mode": "pr"})
    gh.update(checks_pending=True)  # GitHub waits for the checks: the PR stays open
    first = subprocess.Popen(["sleep", "3600"])
    env = _env(gh, "agent-a", first.pid)
    taken = _take_and_work(places[0], env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0 and landed["pr"]["state"] == "OPEN", err
    held = json.loads(git("show", "refs/st/claims/st-001:claim.json", cwd=bare))
    assert held["pr"] == {"number": 101, "url": "https://github.com/acme/widgets/pull/101"}, held
    assert "pid" not in held  # held by the PR, not by a process: its owner's exit does not end it
    (entry,) = [p for p in places[0].rglob("active-worktrees/st-001.json") if ".git" not in p.parts]
    assert json.loads(entry.read_text())["pr"]["number"] == 101  # what this clone's next passes over by
    checked = run(["git-st", "validate", str(entry)], cwd=places[0], env=env)
    assert checked.returncode == 0, checked
    _ended(how, places[0], env, first)
    assert _claims(bare) == ["refs/st/claims/st-001"]

    other = _env(gh, "agent-b", keeper)
    took = run(["git-st", "next", "--format", "json"], cwd=places[1], env=other)
    assert took.returncode == 0, took
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-002", answer
    assert any(p["id"] == "st-001" and "PR #101" in p["why"] for p in answer["passed"]), answer
    listed = run(["git-st", "sessions", "--remote", "--format", "json"], cwd=places[1], env=other)
    assert listed.returncode == 0, listed
    shown = {c["issue"]: c for c in json.loads(listed.stdout)["claims"]}
    assert shown["st-001"]["state"] == "live" and shown["st-001"]["pr"]["number"] == 101, shown
    table = run(["git-st", "sessions", "--remote"], cwd=places[1], env=other)
    assert "held by PR #101" in table.stdout, table

    later = _env(gh, "agent-c", keeper)  # a new session finishes the landing in the worktree
    gh.github("merge-queued")
    code, landed, err = _land(taken["path"], later)
    assert code == 0, err
    assert (landed["landed"], landed["already_landed"], landed["removed"]) == (True, True, True)
    assert _shown_status(bare, "st-001") == "completed"
    assert _claims(bare) == ["refs/st/claims/st-002"]  # the PR's hold ended with it


def test_a_remembered_pr_is_checked_like_the_rest_of_its_registry_entry(tmp_path, bare, keeper):
    (place,), gh = _world(tmp_path, bare, [item(1)], **{"st.land.mode": "pr", "st.land.prMerge": "none"})
    env = _env(gh, "agent-a", keeper)
    taken = _take_and_work(place, env, "a.txt")
    assert _land(taken["path"], env)[0] == 0
    (entry,) = [p for p in place.rglob("active-worktrees/st-001.json") if ".git" not in p.parts]
    good = json.loads(entry.read_text())
    for bad in ({"number": "101"}, {"number": 0}, {"url": "x"}, {**good["pr"], "pushed": "HEAD"}):
        entry.write_text(json.dumps({**good, "pr": bad}))
        checked = run(["git-st", "validate", str(entry)], cwd=place, env=env)
        assert checked.returncode == 1 and "error[" in checked.stderr and "Traceback" not in checked.stderr, checked


def test_a_closed_pr_frees_its_held_item_for_another_clone(tmp_path, bare, keeper):
    places, gh = _world(tmp_path, bare, [item(1)], clones=2, **{"st.land.mode": "pr"})
    gh.update(checks_pending=True)
    first = subprocess.Popen(["sleep", "3600"])
    env = _env(gh, "agent-a", first.pid)
    taken = _take_and_work(places[0], env, "a.txt")
    code, landed, err = _land(taken["path"], env)
    assert code == 0 and landed["pr"]["state"] == "OPEN", err
    _ended("killed", places[0], env, first)

    other = _env(gh, "agent-b", keeper)
    took = run(["git-st", "next", "--format", "json"], cwd=places[1], env=other)
    assert took.returncode == 3 and "st-001" in took.stdout + took.stderr, took  # held by its PR

    gh.github("close", "101")  # a reviewer says no
    code, landed, err = _land(taken["path"], _env(gh, "agent-c", keeper))
    assert code == 3 and landed["given_back"], err
    assert _claims(bare) == []
    again = _take_and_work(places[1], other, "b.txt")
    assert again["id"] == "st-001"
