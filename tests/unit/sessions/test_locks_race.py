"""Races between real processes: exactly one winner per claim, per reclaim."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import time

import pytest

from tests.support import REPO_ROOT, assert_valid, read_json, reclaim_log, session_env

WORKERS = 8
ROUNDS = 20


def _claim_worker(index: int, root: str, rounds: int, prefix: str, barrier, results) -> None:
    """One agent process: at each round, wait for the others, then claim the round's issue."""
    from pathlib import Path

    from gitst.core.errors import ConflictError
    from gitst.sessions import claims as sessions
    from gitst.sessions.identity import Identity, process_start

    me = Identity(
        session=f"agent-{index}",
        pid=os.getpid(),
        host=os.uname().nodename,
        actor="test",
        pid_start=process_start(os.getpid()),
    )
    for round_no in range(rounds):
        barrier.wait(timeout=60)
        issue = f"{prefix}{round_no}"
        try:
            done = sessions.claim(issue, me, root=Path(root), ttl=600, description=f"round {round_no}")
            results.put((round_no, index, "won", done.lock.record["token"]))
        except ConflictError as exc:
            results.put((round_no, index, "lost", exc.message))
        except Exception as exc:  # reported to the test, which fails on it
            results.put((round_no, index, "error", repr(exc)))
    # Stay alive until every agent has tried: a winner that exits is a dead owner, and its
    # claim may then rightly be reclaimed by a slower agent.
    barrier.wait(timeout=60)


def _run_workers(target_args, rounds: int) -> list[tuple]:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_claim_worker, args=(i, *target_args, barrier, results)) for i in range(WORKERS)]
    for proc in procs:
        proc.start()
    collected = [results.get(timeout=60) for _ in range(WORKERS * rounds)]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    return collected


def test_eight_processes_claim_the_same_issue_twenty_rounds_exactly_one_wins(tmp_path):
    state = tmp_path / "state"
    collected = _run_workers((str(state), ROUNDS, "race-"), ROUNDS)
    assert not [r for r in collected if r[2] == "error"], collected
    for round_no in range(ROUNDS):
        this_round = [r for r in collected if r[0] == round_no]
        winners = [r for r in this_round if r[2] == "won"]
        losers = [r for r in this_round if r[2] == "lost"]
        assert len(winners) == 1, this_round
        assert len(losers) == WORKERS - 1
        winner = f"agent-{winners[0][1]}"
        assert all(f"claimed by session {winner}" in r[3] for r in losers), losers
        lock = read_json(state / "locks" / f"issue-race-{round_no}.json")
        assert_valid(lock, "state-lock")
        assert lock["owner"]["session"] == winner and lock["token"] == 1
        chat = read_json(state / "active-chats" / f"{winner}.json")
        assert_valid(chat, "state-active-chat")
        assert any(c["issue"] == f"race-{round_no}" for c in chat["claims"])
    # Nobody but the winner recorded a claim.
    claims = []
    for path in (state / "active-chats").glob("*.json"):
        claims += [c["issue"] for c in read_json(path)["claims"]]
    assert sorted(claims) == sorted(f"race-{n}" for n in range(ROUNDS))


def test_eight_processes_reclaim_a_stale_lock_exactly_one_wins_and_one_log_line(tmp_path):
    from gitst.sessions import claims as sessions
    from gitst.sessions.identity import Identity

    state = tmp_path / "state"
    old = Identity(session="crashed", pid=os.getpid(), host=os.uname().nodename, actor="test")
    sessions.claim("stale-0", old, root=state, ttl=0.2)
    time.sleep(0.3)
    collected = _run_workers((str(state), 1, "stale-"), 1)
    winners = [r for r in collected if r[2] == "won"]
    assert len(winners) == 1, collected
    assert winners[0][3] == 2  # the token grew by exactly one
    log = reclaim_log(state)
    assert len(log) == 1 and log[0]["previous"]["owner"]["session"] == "crashed" and log[0]["reason"] == "stale"
    [lost] = read_json(state / "active-chats" / "crashed.json")["claims"]
    assert lost["lost"]["to"] == f"agent-{winners[0][1]}"  # the old session is told on its next heartbeat


@pytest.mark.parametrize("round_no", range(2))
def test_cli_race_eight_git_st_claim_processes(repo, round_no):
    """The same race through the real CLI: 8 `git st claim` processes started together."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    procs = [
        subprocess.Popen(
            ["git", "st", "claim", "42"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, **session_env(f"cli-{i}")},
        )
        for i in range(WORKERS)
    ]
    outcomes = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0] + [3] * (WORKERS - 1), outcomes
    winner = read_json(repo / "state" / "locks" / "issue-42.json")["owner"]["session"]
    for code, _, err in outcomes:
        if code == 3:
            assert f"issue 42 is claimed by session {winner}" in err and "Traceback" not in err
