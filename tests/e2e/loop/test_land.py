"""`git st land` (docs/agent-loop.md, "land"): agents on clones of one bare remote land at
once through the merge slot and none of their pushes is rejected; a code conflict stops with
the files named and nothing pushed; a land SIGKILLed at each stage is finished by the next
land (or cleaned by gc) with main, the slot, the claim and the worktree consistent."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import item, land_all, session_env, write_plan
from tests.e2e.remote.conftest import clone
from tests.e2e.remote.test_remote_claims import remote_record
from tests.support import git, run

AGENTS = 6


def _clones(
    tmp_path: Path, bare: Path, items: list[dict], count: int = 3, url: str | None = None
) -> tuple[Path, list[Path]]:
    """A plan of ``items`` pushed to ``bare``, and ``count`` clones of it with st.remote set,
    reaching it at ``url`` (default: its path)."""
    url = url or str(bare)
    landing = clone(url, tmp_path / "landing")
    write_plan(landing, items)
    git("push", "-q", "origin", "main", cwd=landing)
    clones = []
    for i in range(count):
        path = clone(url, tmp_path / f"clone{i}")
        git("config", "st.worktree.ports", "off", cwd=path)
        git("config", "st.remote", "origin", cwd=path)
        clones.append(path)
    return landing, clones


def _next(place: Path, env: dict, *args: str) -> dict:
    took = run(["git-st", "next", "--format", "json", *args], cwd=place, env=env)
    assert took.returncode == 0, took
    return json.loads(took.stdout)


def _work(worktree: str, name: str, text: str = "work\n") -> None:
    Path(worktree, name).write_text(text)
    git("add", name, cwd=worktree)
    git("commit", "-q", "-m", f"work on {name}", cwd=worktree)


@contextlib.contextmanager
def _two_agents_at_work(clones: list[Path]) -> Iterator[tuple[dict, dict, dict, dict]]:
    """Agents a and b (each a live session process for the block) took an item each, on the
    first two clones, and committed work on it: (a's env, b's env, a's item, b's item)."""
    agent, other_agent = subprocess.Popen(["sleep", "3600"]), subprocess.Popen(["sleep", "3600"])
    try:
        env, other = session_env("agent-a", agent.pid), session_env("agent-b", other_agent.pid)
        mine, theirs = _next(clones[0], env), _next(clones[1], other)
        _work(mine["path"], "a.txt")
        _work(theirs["path"], "b.txt")
        yield env, other, mine, theirs
    finally:
        for proc in (agent, other_agent):
            proc.kill()
            proc.wait()


def _main_items(bare: Path) -> dict[str, str]:
    plan = git("show", "main:.step/st-plan.jsonl", cwd=bare)
    scratch = bare.parent / "main-plan.jsonl"
    scratch.write_text(plan + "\n")
    shown = run(["git-st", "show", "--format", "json", "--file", str(scratch)], cwd=bare.parent)
    return {i["id"]: i["status"] for i in json.loads(shown.stdout)["items"]}


def _remote_refs(bare: Path) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()


def _assert_consistent(bare: Path, clones: list[Path], landed: list[str]) -> None:
    """Main holds each landed item completed exactly once and passes doctor; no claim and no
    slot is left on the remote; no worktree of a landed item is left in any clone."""
    statuses = _main_items(bare)
    for item_id in landed:
        assert statuses[item_id] == "completed", statuses
    log = git("log", "--format=%s", "main", cwd=bare).splitlines()
    for item_id in landed:
        assert log.count(f"st: land {item_id}") == 1, log
    assert _remote_refs(bare) == [], _remote_refs(bare)
    for place in clones:
        listed = git("worktree", "list", "--porcelain", cwd=place)
        for item_id in landed:
            assert f"issue-{item_id}" not in listed, listed
        doctor = run(["git-st", "doctor"], cwd=place)
        assert doctor.returncode == 0, doctor


def test_six_agents_land_at_once(tmp_path, remote_kind):
    """Over file://, `git daemon` and smart HTTP: the slot's compare-and-swap, the queue's
    tickets and the push of main with a lease serialize six landings; none is rejected."""
    bare = remote_kind.bare
    _landing, clones = _clones(tmp_path, bare, [item(n) for n in range(1, AGENTS + 1)], url=remote_kind.url)
    keeper = subprocess.Popen(["sleep", "3600"])  # the agents' session process: live throughout
    try:
        agents = []
        for i in range(AGENTS):
            place = clones[i % len(clones)]
            env = session_env(f"agent{i}", keeper.pid)
            taken = _next(place, env)
            _work(taken["path"], f"file-{i}.txt")
            agents.append((taken, env))
        outs = land_all(agents)
    finally:
        keeper.kill()
        keeper.wait()
    for proc, stdout, stderr in outs:
        assert proc.returncode == 0, (stdout, stderr)
        assert "Traceback" not in stderr
        assert json.loads(stdout)["pushes_rejected"] == 0
    tokens = sorted(json.loads(stdout)["slot_token"] for _, stdout, _ in outs)
    assert len(set(tokens)) == AGENTS  # each landing held the slot under its own fencing token
    files = git("ls-tree", "--name-only", "main", cwd=bare).split()
    assert {f"file-{i}.txt" for i in range(AGENTS)} <= set(files)
    _assert_consistent(bare, clones, [t["id"] for t, _ in agents])


def test_code_conflict_stops_with_files_named_and_nothing_pushed(tmp_path, bare):
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2)], count=2)
    envs = [session_env(f"agent{i}", os.getpid()) for i in range(2)]
    first, second = _next(clones[0], envs[0]), _next(clones[1], envs[1])
    _work(first["path"], "shared.txt", "one\n")
    _work(second["path"], "shared.txt", "two\n")
    assert run(["git-st", "land"], cwd=first["path"], env=envs[0]).returncode == 0
    before = git("rev-parse", "main", cwd=bare)
    refused = run(["git-st", "land"], cwd=second["path"], env=envs[1])
    assert refused.returncode == 3, refused
    assert "shared.txt" in refused.stderr and "Traceback" not in refused.stderr
    assert git("rev-parse", "main", cwd=bare) == before
    assert _remote_refs(bare) == ["refs/st/claims/st-002"]  # still the agent's; the slot was never taken
    assert Path(second["path"]).is_dir()


def _hold_main_pushes(bare: Path, go: Path) -> Path:
    """A pre-receive hook in ``bare`` that holds every push updating main until ``go`` exists
    (at most 600 s); returns the file it touches when one is held."""
    held = bare / "main-push-held"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "grep -q ' refs/heads/main$' || exit 0\n"
        f"touch '{held}'\n"
        f"i=0; while [ ! -e '{go}' ] && [ $i -lt 6000 ]; do sleep 0.1; i=$((i+1)); done\n"
    )
    hook.chmod(0o755)
    return held


def test_a_conflict_with_the_landing_ahead_in_line_stops_with_files_named_and_nothing_pushed(tmp_path, remote_kind):
    """B waits in line while A lands a change to the file B changed too: B's sync with the new
    base (run beside its take of the slot, docs/agent-loop.md) stops with the file named, the
    slot given back, nothing pushed, B's worktree and claim kept. Over file://, `git daemon`
    and smart HTTP (the hook holds A's push on the remote whatever serves it)."""
    bare = remote_kind.bare
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2)], count=2, url=remote_kind.url)
    envs = [session_env(f"agent{i}", os.getpid()) for i in range(2)]
    first, second = _next(clones[0], envs[0]), _next(clones[1], envs[1])
    _work(first["path"], "shared.txt", "one\n")
    _work(second["path"], "shared.txt", "two\n")
    go = tmp_path / "go"
    held = _hold_main_pushes(bare, go)
    a = subprocess.Popen(
        ["git-st", "land"], cwd=first["path"], env=envs[0], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for(held, a)  # A holds the slot, its landing push held at the remote
    b = subprocess.Popen(
        ["git-st", "land"], cwd=second["path"], env=envs[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    end = time.monotonic() + 600
    while not any("st.land.q-" in ref for ref in _remote_refs(bare)):  # B's ticket: it waits in line
        assert b.poll() is None, b.communicate()
        assert time.monotonic() < end, "B never queued"
        time.sleep(0.05)
    go.touch()
    assert a.wait(600) == 0, a.communicate()
    landed = git("rev-parse", "main", cwd=bare)
    _out, err = b.communicate(timeout=600)
    assert b.returncode == 3, err
    assert "shared.txt" in err and "Traceback" not in err
    assert git("rev-parse", "main", cwd=bare) == landed  # nothing of B pushed
    assert _remote_refs(bare) == ["refs/st/claims/st-002"]  # the slot and B's ticket given back; B's claim kept
    assert Path(second["path"]).is_dir()
    assert git("status", "--porcelain", cwd=second["path"]) == ""  # the merge undone: nothing half-merged


def _wait_for(path: Path, proc: subprocess.Popen, deadline: float = 600) -> None:
    """Until ``path`` exists (the land reached its stage); the process must still run."""
    end = time.monotonic() + deadline
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "land never reached its stage"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("stage", "kind"),
    [(stage, "path") for stage in ("before-sync", "after-sync", "holding-slot", "after-push")]
    + [("holding-slot", "daemon"), ("holding-slot", "http")],
)
def test_land_killed_at_each_stage_is_finished_by_the_next(tmp_path, request, stage, kind):
    """Every stage over the remote's path; holding the slot (a dead holder's slot taken over
    through the compare-and-swap, then main pushed with a lease) over `git daemon` and smart
    HTTP as well."""
    if kind == "path":
        bare, url = request.getfixturevalue("bare"), None
    else:
        served = request.getfixturevalue("servers").served(kind)
        bare, url = served.bare, served.url
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2)], count=2, url=url)
    agent = subprocess.Popen(["sleep", "3600"])  # the killed agent's session process
    other_agent = subprocess.Popen(["sleep", "3600"])
    try:
        env = session_env("agent-a", agent.pid)
        other = session_env("agent-b", other_agent.pid)
        mine, theirs = _next(clones[0], env), _next(clones[1], other)
        _work(mine["path"], "a.txt")
        _work(theirs["path"], "b.txt")
        marker = tmp_path / "stopped"
        killed = subprocess.Popen(
            ["git-st", "land"],
            cwd=mine["path"],
            env={**env, "ST_LAND_STOP_AT": stage, "ST_LAND_STOP_FILE": str(marker)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(marker, killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        agent.kill()  # the agent died with its command: its claim and any slot it held are dead
        agent.wait()
        # Another agent lands meanwhile: a slot the dead one held is taken over at once.
        landed = run(["git-st", "land", "--format", "json"], cwd=theirs["path"], env=other)
        assert landed.returncode == 0, landed
        # The killed agent's successor (a new process of the same session) finishes the land.
        again = subprocess.Popen(["sleep", "3600"])
        try:
            resumed = run(
                ["git-st", "land", "--format", "json"], cwd=mine["path"], env=session_env("agent-a", again.pid)
            )
        finally:
            again.kill()
            again.wait()
        assert resumed.returncode == 0, resumed
        assert json.loads(resumed.stdout)["already_landed"] is (stage == "after-push")
    finally:
        for proc in (agent, other_agent):
            proc.kill()
            proc.wait()
    _assert_consistent(bare, clones, ["st-001", "st-002"])


def test_gc_clears_a_dead_lander(tmp_path, bare):
    """A lander killed after its push whose agent never comes back: gc deletes its claim on the
    remote; the item is completed on main, so no `next` hands it out again."""
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2)], count=1)
    agent = subprocess.Popen(["sleep", "3600"])
    env = session_env("agent-a", agent.pid)
    mine = _next(clones[0], env)
    _work(mine["path"], "a.txt")
    marker = tmp_path / "stopped"
    killed = subprocess.Popen(
        ["git-st", "land"],
        cwd=mine["path"],
        env={**env, "ST_LAND_STOP_AT": "holding-slot", "ST_LAND_STOP_FILE": str(marker)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(marker, killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    agent.kill()
    agent.wait()
    gc = run(["git-st", "gc"], cwd=clones[0])
    assert gc.returncode == 0, gc
    assert _remote_refs(bare) == []  # the dead agent's claim and its slot are gone
    took = _next(clones[0], session_env("agent-b", os.getpid()))
    assert took["id"] == "st-001"  # not landed (killed before its push): free for the next agent


def test_a_slot_whose_push_landed_unanswered_is_given_back_by_the_next_command(tmp_path, servers):
    """The push that takes the merge slot reached the remote, but its answer never came back
    (smart HTTP drops the connection after the backend applied it): `land` exits 4 holding
    nothing, and the slot there is given back by the next command of this clone that reaches
    the remote (a pending release, as a claim's) — not left to hold off every other agent for
    the slot's TTL while the session lives."""
    served = servers.served("http")
    _landing, clones = _clones(tmp_path, served.bare, [item(1), item(2)], count=2, url=served.url)
    with _two_agents_at_work(clones) as (env, other, mine, theirs):
        served.http.stall = "drop-after"  # every push lands; its answer is lost
        try:
            failed = run(["git-st", "land"], cwd=mine["path"], env=env)
        finally:
            served.http.stall = None
        assert failed.returncode == 4, failed
        assert "Traceback" not in failed.stderr, failed
        assert "released by the next command that reaches origin" in failed.stderr, failed
        assert remote_record(served.bare, "st.land")["session"] == "agent-a"  # it landed
        shown = run(["git-st", "status", "--format", "json"], cwd=clones[0], env=env)
        assert shown.returncode == 0, shown
        assert remote_record(served.bare, "st.land") is None  # given back
        landed = run(["git-st", "land", "--wait", "120", "--format", "json"], cwd=theirs["path"], env=other)
        assert landed.returncode == 0, landed
        assert json.loads(landed.stdout)["landed"] is True
        again = run(["git-st", "land", "--format", "json"], cwd=mine["path"], env=env)
        assert again.returncode == 0, again  # and the agent's own landing finishes as well
        assert _main_items(served.bare) == {"st-001": "completed", "st-002": "completed"}


def test_a_failing_check_stops_the_landing_and_a_passing_one_lets_it_through(tmp_path, bare):
    _landing, clones = _clones(tmp_path, bare, [item(1)], count=1)
    env = session_env("agent-a", os.getpid())
    mine = _next(clones[0], env)
    _work(mine["path"], "a.txt")
    before = git("rev-parse", "main", cwd=bare)
    git("config", "st.land.check", "echo checking >&1; test -f missing.txt", cwd=clones[0])
    failed = run(["git-st", "land", "--format", "json"], cwd=mine["path"], env=env)
    assert failed.returncode == 1, failed
    assert failed.stdout == "" and "checking" in failed.stderr  # the check's output never mixes into the JSON
    assert "the check `echo checking >&1; test -f missing.txt` failed (exit 1); nothing pushed" in failed.stderr
    assert git("rev-parse", "main", cwd=bare) == before
    assert _remote_refs(bare) == ["refs/st/claims/st-001"]  # still held; the slot given back
    git("config", "st.land.check", "test -f a.txt", cwd=clones[0])
    landed = run(["git-st", "land", "--format", "json"], cwd=mine["path"], env=env)
    assert landed.returncode == 0, landed
    assert json.loads(landed.stdout)["id"] == "st-001"
    _assert_consistent(bare, clones, ["st-001"])


def test_a_slot_the_remote_would_not_take_back_is_given_back_by_the_next_command(tmp_path, bare):
    """The landing is done but the merge slot's give-back fails on the remote (its
    pre-receive hook refuses the deletion, as a remote that went away would fail it): the slot
    is remembered as a pending release with its token and given back by the next command of
    this clone that reaches the remote, not left holding off every other agent for the slot's
    TTL while the session lives."""
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2)], count=2)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "while read old new ref; do\n"
        '  if [ "$ref" = refs/st/claims/st.land ] && [ "$new" = 0000000000000000000000000000000000000000 ]; then\n'
        '    echo "the slot stays today" >&2; exit 1\n'
        "  fi\n"
        "done\n"
    )
    hook.chmod(0o755)
    with _two_agents_at_work(clones) as (env, other, mine, theirs):
        kept = run(["git-st", "land", "--format", "json"], cwd=mine["path"], env=env)
        assert kept.returncode == 0, kept  # landed: only the slot's give-back failed, said as a warning
        assert json.loads(kept.stdout)["landed"] is True, kept
        assert "could not give the merge slot back" in kept.stderr, kept
        assert "Traceback" not in kept.stderr, kept
        assert _main_items(bare)["st-001"] == "completed"  # the landing itself is done
        assert remote_record(bare, "st.land")["session"] == "agent-a"  # the slot stayed there
        assert "released by the next command that reaches origin" in kept.stderr, kept
        hook.unlink()
        shown = run(["git-st", "status", "--format", "json"], cwd=clones[0], env=env)
        assert shown.returncode == 0, shown
        assert remote_record(bare, "st.land") is None  # given back
        landed = run(["git-st", "land", "--wait", "120", "--format", "json"], cwd=theirs["path"], env=other)
        assert landed.returncode == 0 and json.loads(landed.stdout)["landed"] is True, landed
        assert _main_items(bare) == {"st-001": "completed", "st-002": "completed"}


def test_the_base_is_never_pushed_to_a_commit_that_does_not_hold_its_tip(tmp_path, bare):
    """`land` pushes the base with a lease on the tip it merged, and git lets a push whose lease
    holds rewind the ref (`--force-with-lease`): a commit that does not hold that tip (a sync
    that merged another view of the base) is never pushed; the landing reads and syncs again."""
    from gitst.loop import base as bases
    from gitst.loop import land as lands
    from gitst.loop import slot
    from tests.e2e.loop.test_slot_look import _who

    _landing, clones = _clones(tmp_path, bare, [item(1)], count=1)
    place = clones[0]
    tip = git("rev-parse", "main", cwd=bare)
    git("checkout", "-q", "--orphan", "stray", cwd=place)
    git("commit", "-q", "-m", "a history without the base's tip", cwd=place)
    head = git("rev-parse", "HEAD", cwd=place)
    where = lands._Where(str(place), "stray", "st-001", str(place), place / "state", place / ".git")
    leases = slot.remote_leases(_who("agent"), "origin", place)
    assert not lands._advance(where, bases.Base("main", "origin", tip), head, leases)
    assert git("rev-parse", "main", cwd=bare) == tip  # not rewound
