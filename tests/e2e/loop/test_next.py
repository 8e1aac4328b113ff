"""`git st next` (docs/agent-loop.md, "next"): N-way races through the real CLI on one clone
and across clones of a bare remote give each item to exactly one session; a completed,
canceled or held item is never handed out."""

from __future__ import annotations

import fcntl
import json
import os

import pytest

from tests.e2e.loop.conftest import Sessions, item, race, session_env, set_status, winners, write_plan
from tests.e2e.remote.conftest import clone
from tests.support import git, resident_env, run

N = 8
ROUNDS = int(os.environ.get("ST_TEST_ROUNDS", "20"))  # fewer only to debug by hand
PER_ROUND = 3


def _staged_plan() -> list[dict]:
    """ROUNDS groups of PER_ROUND items; each group depends on every item of the one before,
    so exactly PER_ROUND items are ready once the previous group is completed."""
    items = []
    for r in range(ROUNDS):
        first = r * PER_ROUND + 1
        before = list(range(first - PER_ROUND, first)) if r else []
        items += [item(first + k, before) for k in range(PER_ROUND)]
    return items


def _round_ids(r: int) -> set[str]:
    return {f"st-{r * PER_ROUND + k + 1:03d}" for k in range(PER_ROUND)}


def _prepare(repo) -> None:
    git("config", "st.worktree.ports", "off", cwd=repo)


def _run_rounds(places, landing, *, push: bool, env: dict[str, str] | None = None) -> None:
    """ROUNDS rounds of N racing `next`s (``env`` added to theirs); between rounds the round's
    items are completed on main (pushed when ``push``) and the round's sessions die."""
    sessions = Sessions()
    handed: dict[str, str] = {}
    for r in range(ROUNDS):
        pid = sessions.start()
        results = race(places, [f"r{r}s{i}" for i in range(N)], pid, env=env)
        taken = winners(results)
        assert set(taken) == _round_ids(r), (r, taken, results)
        for item_id, session in taken.items():
            assert item_id not in handed, f"{item_id} handed to {handed[item_id]} and to {session}"
            handed[item_id] = session
        sessions.end()
        if push:
            git("pull", "-q", "--ff-only", "origin", "main", cwd=landing)
        set_status(landing, sorted(taken), push=push)
    assert len(handed) == ROUNDS * PER_ROUND


@pytest.mark.slow(40)  # 160 racing `next` processes: starts first (tests/conftest.py)
def test_next_race_on_one_clone(repo):
    _prepare(repo)
    write_plan(repo, _staged_plan())
    _run_rounds([repo], repo, push=False)


@pytest.mark.slow(66)  # 160 racing `next` processes through the remote: starts first
@pytest.mark.parametrize("transport", ["file", "daemon"])
def test_next_race_across_clones(tmp_path, bare, transport, request):
    """Through the remote, every `next` handed to the resident process (ST_RESIDENT=1,
    docs/resident.md): the swarm's way to run gitst, and 160 racing commands each a fork of
    it instead of an interpreter (the race on one clone above runs `git-st` itself)."""
    url = str(bare)
    if transport == "daemon":
        url = request.getfixturevalue("daemon").url()
    seed = clone(url, tmp_path / "landing")
    write_plan(seed, _staged_plan())
    git("push", "-q", "origin", "main", cwd=seed)
    clones = []
    for i in range(3):
        path = clone(url, tmp_path / f"clone{i}")
        _prepare(path)
        git("config", "st.remote", "origin", cwd=path)
        clones.append(path)
    with resident_env() as env:
        _run_rounds(clones, seed, push=True, env=env)
    claimed = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    assert len(claimed) == ROUNDS * PER_ROUND  # each item claimed once on the remote (never released here)


def test_completed_canceled_held_never_handed_out(repo, tmp_path):
    _prepare(repo)
    write_plan(
        repo,
        [
            item(1, status="completed"),
            item(2, status="canceled"),
            item(3, status="deferred"),
            item(4, status="blocked"),
            item(5, [3]),
            item(6),
        ],
    )
    env = session_env("agent-a", os.getpid())
    for n, status in ((1, "completed"), (2, "canceled"), (3, "deferred"), (4, "blocked")):
        refused = run(["git-st", "next", "--id", f"st-{n:03d}"], cwd=repo, env=env)
        assert refused.returncode == 2, refused
        assert f"st-{n:03d} is {status} on main: a {status} item is never claimed" in refused.stderr
        assert not (repo / "state" / "locks" / f"issue-st-{n:03d}.json").exists()
    waits = run(["git-st", "next", "--id", "st-005"], cwd=repo, env=env)
    assert waits.returncode == 3 and "st-005 waits on st-003" in waits.stderr, waits
    took = run(["git-st", "next", "--format", "json"], cwd=repo, env=env)
    assert took.returncode == 0, took
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-006" and answer["resumed"] is False
    worktree = answer["path"]
    assert git("log", "-1", "--format=%s", cwd=worktree) == "st: take st-006"
    shown = json.loads(run(["git-st", "show", "--format", "json"], cwd=worktree).stdout)
    assert {i["id"]: i["status"] for i in shown["items"]}["st-006"] == "in_progress"
    again = run(["git-st", "next", "--format", "json"], cwd=repo, env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["resumed"] is True, again
    # st-006 completed on main while held: the holder's next never resumes it, nobody takes it.
    set_status(repo, ["st-006"])
    other = run(["git-st", "next", "--format", "json"], cwd=repo, env=session_env("agent-b", os.getpid()))
    for answer in (other, run(["git-st", "next", "--format", "json"], cwd=repo, env=env)):
        assert answer.returncode == 3, answer  # st-005 still waits (on the deferred st-003): nothing to take
        assert json.loads(answer.stdout) | {"base_commit": None} == {
            "item": None,
            "reason": "wait",
            "base": "main",
            "base_commit": None,
            "passed": [],
            "waiting": ["st-005"],
        }
    set_status(repo, ["st-005"], "canceled")
    done = run(["git-st", "next", "--format", "json"], cwd=repo, env=env)
    assert done.returncode == 1 and json.loads(done.stdout)["reason"] == "done", done


def _seeded(tmp_path, bare, name: str):
    """A landing clone that pushed a plan of st-001 and st-002, and a clone ``name`` made
    before anything else happens, claiming through the remote: (landing, clone)."""
    seed = clone(str(bare), tmp_path / "landing")
    write_plan(seed, [item(1), item(2)])
    git("push", "-q", "origin", "main", cwd=seed)
    place = clone(str(bare), tmp_path / name)
    _prepare(place)
    git("config", "st.remote", "origin", cwd=place)
    return seed, place


def test_completed_on_the_remote_is_never_taken_from_a_stale_clone(tmp_path, bare):
    """A clone whose origin/main is old still reads the plan at the remote's tip."""
    seed, stale = _seeded(tmp_path, bare, "stale")
    set_status(seed, ["st-001"], push=True)
    env = session_env("agent-c", os.getpid())
    took = run(["git-st", "next", "--format", "json"], cwd=stale, env=env)
    assert took.returncode == 0, took
    assert json.loads(took.stdout)["id"] == "st-002"


def test_an_item_a_sibling_session_is_claiming_is_passed_over_without_a_push(tmp_path, bare):
    """Sessions of one clone race each other in the file system, not through the remote: while
    one holds an item's ``.claiming`` flock (it is pushing its claim), another `next` of the
    same clone moves on to the next item and pushes nothing for the first."""
    _seed, place = _seeded(tmp_path, bare, "place")
    sidecar = place / "state" / "locks" / "issue-st-001.json.claiming"
    sidecar.parent.mkdir(parents=True)
    with open(sidecar, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # a sibling session, half-way through its claim of st-001
        took = run(["git-st", "next", "--format", "json"], cwd=place, env=session_env("agent-b", os.getpid()))
    assert took.returncode == 0, took
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-002", answer
    assert answer["passed"] == [{"id": "st-001", "why": "being claimed right now by another session of this clone"}], (
        answer
    )
    claimed = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    assert claimed == ["refs/st/claims/st-002"]  # no push for st-001
    again = run(["git-st", "next", "--format", "json"], cwd=place, env=session_env("agent-c", os.getpid()))
    assert again.returncode == 0 and json.loads(again.stdout)["id"] == "st-001", again  # free once let go
    assert git("status", "--porcelain", cwd=place) == ""  # the state dir (and the sidecars) ignored


def _failing_upload_pack(place, tmp_path, times: int) -> None:
    """The clone's fetches and ls-remotes fail the first ``times`` times (git's own "could not
    read from remote repository", as for a dropped connection), then reach the remote again:
    ``remote.origin.uploadpack``, the program git runs on the remote's side, is a script that
    counts its calls."""
    counter = tmp_path / "upload-pack-calls"
    script = tmp_path / "flaky-upload-pack"
    script.write_text(
        "#!/bin/sh\n"
        f'echo x >> "{counter}"\n'
        f'if [ "$(wc -l < "{counter}")" -le {times} ]; then echo "fatal: the connection dropped" >&2; exit 128; fi\n'
        'exec git-upload-pack "$@"\n'
    )
    script.chmod(0o755)
    git("config", "remote.origin.uploadpack", str(script), cwd=place)


def test_next_wait_tries_again_after_a_failure_of_the_remote(tmp_path, bare):
    """`next --wait` rides out a failing remote step (a dropped connection here): it says so on
    stderr and tries again after the backoff's pause, at most 3 times in a row; without --wait
    the failure is the answer at once (exit 4), and so is the 4th failure in a row."""
    _seed, place = _seeded(tmp_path, bare, "place")
    _failing_upload_pack(place, tmp_path, times=1)
    env = session_env("agent-a", os.getpid())
    at_once = run(["git-st", "next", "--format", "json"], cwd=place, env=env)
    assert at_once.returncode == 4 and "error" in at_once.stderr, at_once
    assert "trying again" not in at_once.stderr

    (tmp_path / "upload-pack-calls").unlink()
    took = run(["git-st", "next", "--wait", "60", "--format", "json"], cwd=place, env=env)
    assert took.returncode == 0, took
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-001" and answer["retried"] == 1 and answer["tries"] == 2, answer
    assert took.stderr.count("trying again (1 of 3 in a row)") == 1, took.stderr
    assert git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split() == ["refs/st/claims/st-001"]

    (tmp_path / "upload-pack-calls").unlink()
    _failing_upload_pack(place, tmp_path, times=99)
    down = run(
        ["git-st", "next", "--wait", "60", "--format", "json"], cwd=place, env=session_env("agent-b", os.getpid())
    )
    assert down.returncode == 4, down
    assert [line.split("; ")[-1] for line in down.stderr.splitlines() if "trying again" in line] == [
        f"trying again ({k} of 3 in a row)" for k in (1, 2, 3)
    ], down.stderr
    assert len((tmp_path / "upload-pack-calls").read_text().split()) == 4  # four tries, no more


def test_a_waiting_next_that_loses_a_claim_race_backs_off_instead_of_reading_again(tmp_path, bare):
    """`next --wait` whose claim loses the race (another clone claimed the item between this
    try's fetch and its push) ends the try and looks again after the wait's pause, instead of
    reading the remote again at once to walk on (a swarm's first burst: eight of twelve agents
    lose, docs/agent-loop.md). The next try passes over the item the rival holds and takes the
    next one. Without --wait the lost race is read again and walked on in the same try."""
    seed, place = _seeded(tmp_path, bare, "place")
    rival = clone(str(bare), tmp_path / "rival")
    _prepare(rival)
    git("config", "st.remote", "origin", cwd=rival)
    marker = tmp_path / "rival-claimed"
    script = tmp_path / "upload-pack-then-rival"
    # git runs it for the clone's fetches: the first one serves the refs as they are, then the
    # rival claims st-001 before the fetch returns, so the look this clone takes is stale
    script.write_text(
        "#!/bin/sh\n"
        'git-upload-pack "$@"\n'
        "served=$?\n"
        f'if [ ! -e "{marker}" ]; then\n'
        f'  touch "{marker}"\n'
        f'  (cd "{rival}" && ST_SESSION_ID=rival ST_SESSION_PID={os.getpid()} git-st claim st-001) '
        f'>"{tmp_path / "rival.log"}" 2>&1\n'
        "fi\n"
        "exit $served\n"
    )
    script.chmod(0o755)
    git("config", "remote.origin.uploadpack", str(script), cwd=place)
    waiting = ["git-st", "next", "--wait", "60", "--format", "json"]
    took = run(waiting, cwd=place, env=session_env("agent-a", os.getpid()))
    assert took.returncode == 0, (took, (tmp_path / "rival.log").read_text())
    answer = json.loads(took.stdout)
    assert answer["id"] == "st-002" and answer["tries"] == 2, answer  # the lost race ended the first try
    assert "gitst: waiting for an item on origin/main: held by live sessions: st-001" in took.stderr, took.stderr
    claims = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    assert claims == ["refs/st/claims/st-001", "refs/st/claims/st-002"]

    # without --wait: the same race, read again and walked on within the one try
    marker.unlink()
    write_plan(seed, [item(1, status="completed"), item(2, status="completed"), item(3), item(4)])
    git("push", "-q", "origin", "main", cwd=seed)
    git("pull", "-q", "--ff-only", "origin", "main", cwd=rival)
    script.write_text(script.read_text().replace("git-st claim st-001", "git-st claim st-003"))
    plain = run(["git-st", "next", "--format", "json"], cwd=place, env=session_env("agent-b", os.getpid()))
    assert plain.returncode == 0, (plain, (tmp_path / "rival.log").read_text())
    answer = json.loads(plain.stdout)
    assert answer["id"] == "st-004" and answer["tries"] == 1, answer
    assert [p["id"] for p in answer["passed"]] == ["st-003"], answer
