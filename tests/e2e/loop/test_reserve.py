"""`git st reserve` (docs/agent-loop.md, "Reservations"): through the real CLI, real clones of a
bare remote (file:// and `git daemon`) and real processes. A reserved path is refused to a
second session and freed when its owner dies (a killed process); the pre-commit hook refuses
a commit touching another live session's reserved paths unless overridden; N sessions racing
for overlapping globs through the remote leave exactly one winner; `next` reserves an item's
paths and passes over an item whose paths another live session holds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import Sessions, item, session_env, write_plan
from tests.e2e.remote.conftest import clone
from tests.support import git, run, st


def reserve(cwd, session: str, pid: int, *args: str):
    return st("reserve", *args, cwd=cwd, env=session_env(session, pid))


def answer(result) -> dict:
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def owner():
    """A live process standing for the owning agent; ``.end()`` kills it."""
    sessions = Sessions()
    sessions.start()
    yield sessions
    sessions.end()


def test_a_reserved_path_is_refused_to_a_second_session_and_freed_when_its_owner_dies(repo, owner):
    pid_a = owner.proc.pid
    ok_a = reserve(repo, "agent-a", pid_a, "src/api/**", "--format", "json")
    assert ok_a.returncode == 0, ok_a
    first = answer(ok_a)["reserved"][0]
    assert first["pattern"] == "src/api/**" and first["session"] == "agent-a"

    refused = reserve(repo, "agent-b", 1, "src/*/app.py")  # pid 1: live, never this test's
    assert refused.returncode == 3, refused
    assert "agent-a" in refused.stderr and "src/api/**" in refused.stderr and "Traceback" not in refused.stderr

    check = reserve(repo, "agent-b", 1, "--check", "src/api/app.py", "README", "--format", "json")
    assert check.returncode == 3, check
    found = answer(check)
    assert [(c["path"], c["owner"], c["pattern"]) for c in found["conflicts"]] == [
        ("src/api/app.py", "agent-a", "src/api/**")
    ]
    assert reserve(repo, "agent-a", pid_a, "--check", "src/api/app.py").returncode == 0  # its own
    assert reserve(repo, "agent-b", 1, "--check", "docs/x.md").returncode == 0
    (repo / "src" / "api").mkdir(parents=True)  # --check takes paths relative to where it runs
    assert reserve(repo / "src" / "api", "agent-b", 1, "--check", "app.py").returncode == 3

    owner.end()  # the owner is killed (SIGKILL): its reservation is free at once, to the next one who asks
    assert reserve(repo, "agent-b", 1, "--check", "src/api/app.py").returncode == 0
    taken = reserve(repo, "agent-b", 1, "src/*/app.py", "--format", "json")
    assert taken.returncode == 0, taken
    assert answer(taken)["reserved"][0]["session"] == "agent-b"

    # gc releases the dead owner's lease (and the marker stays: agent-b still holds one)
    ok_gc = st("gc", cwd=repo, env=session_env("agent-b", 1))
    assert ok_gc.returncode == 0, ok_gc
    assert [
        r["pattern"] for r in answer(reserve(repo, "agent-b", 1, "--list", "--format", "json"))["reservations"]
    ] == ["src/*/app.py"]
    released = reserve(repo, "agent-b", 1, "--release", "--format", "json")
    assert answer(released)["released"] == ["src/*/app.py"]
    assert not (repo / "state" / "reservations" / "active").exists()  # the hook's marker went with the last one


def _commit(repo, session: str, pid: int, path: str, **extra: str):
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{session}\n")
    git("add", path, cwd=repo)
    return run(["git", "commit", "-q", "-m", f"edit {path}"], cwd=repo, env=session_env(session, pid, **extra))


def test_the_pre_commit_hook_refuses_another_sessions_reserved_paths_with_an_override(repo, owner):
    assert st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo).returncode == 0
    pid_a = owner.proc.pid
    assert reserve(repo, "agent-a", pid_a, "src/api").returncode == 0

    refused = _commit(repo, "agent-b", 1, "src/api/app.py")
    assert refused.returncode == 1, refused
    assert "src/api/app.py" in refused.stderr and "error[HOOK_RESERVED_PATH]" in refused.stderr
    assert "agent-a" in refused.stderr and "ST_ALLOW_RESERVED=1" in refused.stderr
    assert git("status", "--porcelain", cwd=repo).strip() == "A  src/api/app.py"  # nothing committed
    git("reset", "-q", cwd=repo)

    assert _commit(repo, "agent-b", 1, "docs/free.md").returncode == 0  # a path nobody reserves
    overridden = _commit(repo, "agent-b", 1, "src/api/app.py", ST_ALLOW_RESERVED="1")
    assert overridden.returncode == 0, overridden
    assert "ST_ALLOW_RESERVED is set" in overridden.stderr
    assert _commit(repo, "agent-a", pid_a, "src/api/own.py").returncode == 0  # the owner itself

    owner.end()  # a dead owner's reservation refuses nothing
    assert _commit(repo, "agent-b", 1, "src/api/later.py").returncode == 0


def _contend(places, pattern_of, pid: int, *args: str, prefix: str = "racer") -> list[tuple[str, int, str, str]]:
    procs = []
    for i, place in enumerate(places):
        session = f"{prefix}{i}"
        procs.append(
            (
                session,
                subprocess.Popen(
                    ["git-st", "reserve", pattern_of(i), "--format", "json", *args],
                    cwd=place,
                    env=session_env(session, pid, ST_HOST=f"host{i}"),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    out = []
    for session, proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append((session, proc.returncode, stdout, stderr))
    return out


def test_reservations_through_the_remote(tmp_path, remote_kind):
    """Over file://, `git daemon` and smart HTTP (the compare-and-swap of the table, its
    expiry-driven renewal, a dead owner's entry reclaimed with a higher token)."""
    url, bare = remote_kind.url, remote_kind.bare
    one, two = clone(url, tmp_path / "one"), clone(url, tmp_path / "two")
    sessions = Sessions()
    pid_a = sessions.start()
    try:
        took = reserve(one, "agent-a", pid_a, "src/**", "--remote", "--format", "json")
        assert took.returncode == 0, took
        assert answer(took)["reserved"][0]["remote_token"] == 1
        before = json.loads(git("show", "refs/st/reservations/table:reservations.json", cwd=bare))["entries"][0]
        # with st.remote set, a heartbeat leaves a reservation with more than half its lease
        # left alone (no push, as claims), and renews it there when asked for another lease
        git("config", "st.remote", "origin", cwd=one)
        fresh = st("heartbeat", "--format", "json", cwd=one, env=session_env("agent-a", pid_a))
        assert fresh.returncode == 0, fresh
        assert answer(fresh)["reservations_renewed"] == []
        table = "refs/st/reservations/table:reservations.json"
        assert json.loads(git("show", table, cwd=bare))["entries"][0] == before
        beat = st("heartbeat", "--ttl", "3600", "--format", "json", cwd=one, env=session_env("agent-a", pid_a))
        assert beat.returncode == 0, beat
        assert answer(beat)["reservations_renewed"] == ["src/**"]
        after = json.loads(git("show", table, cwd=bare))["entries"][0]
        assert after["token"] == before["token"] and after["renewed_at"] > before["renewed_at"]
        assert after["ttl"] == 3600

        # another clone knows nothing of it here, and still hears of it from the remote
        refused = reserve(two, "agent-b", 1, "src/app.py", "--remote")
        assert refused.returncode == 3, refused
        assert "agent-a" in refused.stderr and "on origin" in refused.stderr
        # --check answers from the table that refusal read: no fetch needed
        assert reserve(two, "agent-b", 1, "--check", "src/app.py").returncode == 3
    finally:
        sessions.end()
    # the owner is dead (same host): its entry is reclaimed, the fencing token grows
    again = reserve(two, "agent-b", 1, "src/app.py", "--remote", "--format", "json")
    assert again.returncode == 0, again
    assert answer(again)["reserved"][0]["remote_token"] == 2
    table = json.loads(git("show", "refs/st/reservations/table:reservations.json", cwd=bare))
    assert [(e["pattern"], e["session"]) for e in table["entries"]] == [("src/app.py", "agent-b")]
    released = reserve(two, "agent-b", 1, "--release", "--remote", "--format", "json")
    assert answer(released)["released"] == ["src/app.py"]
    table = json.loads(git("show", "refs/st/reservations/table:reservations.json", cwd=bare))
    assert table["entries"] == [] and table["token"] == 2  # tokens never go back


def test_n_sessions_racing_for_overlapping_globs_through_the_remote_leave_exactly_one_winner(
    tmp_path, remote_kind, owner
):
    """Six clones (over file://, `git daemon` and smart HTTP) race for globs that all cover
    src/app.py: one compare-and-swap of the table lands, the five others name its winner."""
    places = [clone(remote_kind.url, tmp_path / f"c{i}") for i in range(6)]
    globs = ["src/**", "src/app.py", "src/*.py", "**/app.py", "src/app.py", "src"]  # all cover src/app.py
    won = _one_winner(_contend(places, globs.__getitem__, owner.proc.pid, "--remote"))
    table = json.loads(git("show", "refs/st/reservations/table:reservations.json", cwd=remote_kind.bare))
    assert [e["session"] for e in table["entries"]] == [won]


def test_n_sessions_racing_for_overlapping_globs_on_one_clone_leave_exactly_one_winner(tmp_path, bare, owner):
    """On one clone without a remote the state dir's flock decides: globs that all cover
    lib/x.c, one winner."""
    alone = clone(bare.as_uri(), tmp_path / "alone")
    local = ["lib/*.c", "lib/?.c", "lib/[xy].c", "lib/**/*.c", "lib/x*", "lib/*x.c"]
    won = _one_winner(_contend([alone] * 6, local.__getitem__, owner.proc.pid, prefix="local"))
    listed = answer(reserve(alone, "someone", 1, "--list", "--offline", "--format", "json"))["reservations"]
    assert [r["session"] for r in listed if r["pattern"] in local and r["remote"] is None] == [won]


def _one_winner(results: list[tuple[str, int, str, str]]) -> str:
    won = [r for r in results if r[1] == 0]
    assert len(won) == 1, results
    for session, code, _stdout, stderr in results:
        assert "Traceback" not in stderr, stderr
        if code != 0:
            assert code == 3, (session, code, stderr)
            assert won[0][0] in stderr, (won, stderr)  # the winner is named
    return won[0][0]


def test_next_reserves_the_items_paths_and_passes_over_an_item_whose_paths_are_held(repo, owner):
    git("config", "st.worktree.ports", "off", cwd=repo)
    write_plan(
        repo,
        [
            item(1, paths=["src/shared.py"]),
            item(2, notes="touches the shared file\npaths: src/shared.py, docs/api.md"),
            item(3),
        ],
    )
    pid = owner.proc.pid
    first = st("next", "--format", "json", cwd=repo, env=session_env("agent-a", pid))
    assert first.returncode == 0, first
    took = answer(first)
    assert took["id"] == "st-001"
    assert [(r["pattern"], r["item"]) for r in took["reserved"]] == [("src/shared.py", "st-001")]

    second = st("next", "--format", "json", cwd=repo, env=session_env("agent-b", pid))
    assert second.returncode == 0, second
    took_b = answer(second)
    assert took_b["id"] == "st-003", took_b  # st-002 would edit what agent-a holds: told before it starts
    assert [p["id"] for p in took_b["passed"]] == ["st-001", "st-002"]  # claimed; its paths reserved
    assert "src/shared.py is reserved" in took_b["passed"][1]["why"] and "agent-a" in took_b["passed"][1]["why"]
    # st-002's claim was given back: nobody holds it
    assert st("check-issue", "st-002", cwd=repo, env=session_env("agent-c", pid)).returncode == 0

    # the session's end (`git st release`) frees its reservations with its claims
    done = st("release", cwd=repo, env=session_env("agent-a", pid))
    assert done.returncode == 0, done
    assert "released reservation src/shared.py" in done.stdout
    third = st("next", "--format", "json", "--id", "st-002", cwd=repo, env=session_env("agent-c", pid))
    assert third.returncode == 0, third
    assert sorted(r["pattern"] for r in answer(third)["reserved"]) == ["docs/api.md", "src/shared.py"]


def test_land_releases_the_items_reservations_here_and_on_the_remote(tmp_path, bare):
    landing = clone(str(bare), tmp_path / "landing")
    write_plan(landing, [item(1, paths=["src/api/**"]), item(2, paths=["src/api/v2.py"])])
    git("push", "-q", "origin", "main", cwd=landing)
    place = clone(str(bare), tmp_path / "agent")
    git("config", "st.worktree.ports", "off", cwd=place)
    git("config", "st.remote", "origin", cwd=place)
    env_a, env_b = session_env("agent-a", os.getpid()), session_env("agent-b", os.getpid())

    took = run(["git-st", "next", "--format", "json"], cwd=place, env=env_a)
    assert took.returncode == 0, took
    taken = answer(took)
    assert [(r["pattern"], r["remote"]) for r in taken["reserved"]] == [("src/api/**", "origin")]
    blocked = answer(run(["git-st", "next", "--format", "json"], cwd=place, env=env_b))
    assert blocked["item"] is None and [p["id"] for p in blocked["passed"]] == ["st-001", "st-002"], blocked

    work = Path(taken["path"]) / "src" / "api"
    work.mkdir(parents=True)
    (work / "v1.py").write_text("v1\n")
    git("add", "src", cwd=taken["path"])
    git("commit", "-q", "-m", "v1", cwd=taken["path"])
    landed = run(["git-st", "land", "--format", "json"], cwd=taken["path"], env=env_a)
    assert landed.returncode == 0, landed
    table = json.loads(git("show", "refs/st/reservations/table:reservations.json", cwd=bare))
    assert table["entries"] == [] and table["token"] == 1
    assert answer(reserve(place, "agent-b", os.getpid(), "--list", "--format", "json"))["reservations"] == []

    second = run(["git-st", "next", "--format", "json"], cwd=place, env=env_b)
    assert second.returncode == 0, second
    assert answer(second)["id"] == "st-002" and answer(second)["reserved"][0]["remote_token"] == 2
