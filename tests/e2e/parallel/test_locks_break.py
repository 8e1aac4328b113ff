"""`git st lock release NAME --force`: breaking a live session's lock (a hung agent)."""

from __future__ import annotations

from tests.support import assert_valid, read_json, reclaim_log, session_env, st


def test_a_live_owners_lock_is_broken_only_with_force_and_the_break_is_logged(repo):
    # Session A is live (its session pid is this test process) and holds issue 7.
    assert st("claim", "7", cwd=repo, env=session_env("A")).returncode == 0

    refused = st("lock", "release", "issue-7", cwd=repo, env=session_env("B"))
    assert refused.returncode == 3, refused
    assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"]["session"] == "A"

    broken = st(
        "lock", "release", "issue-7", "--force", "--reason", "agent stuck in a loop", cwd=repo, env=session_env("B")
    )
    assert broken.returncode == 0, broken
    assert "lock issue-7 broken: it was held by session A" in broken.stdout

    record = read_json(repo / "state" / "locks" / "issue-7.json")
    assert_valid(record, "state-lock")
    assert record["owner"] is None and record["released_by"] == "break" and record["broken_by"] == "B"
    assert record["last_owner"]["session"] == "A" and record["token"] == 1
    [entry] = [e for e in reclaim_log(repo / "state") if e["action"] == "break"]
    assert entry["resource"] == "issue-7" and entry["reason"] == "agent stuck in a loop"
    assert entry["previous"]["owner"]["session"] == "A"

    # The broken owner finds out on its next heartbeat; the next owner gets a bigger token.
    assert st("heartbeat", cwd=repo, env=session_env("A")).returncode == 3
    taken = st("claim", "7", cwd=repo, env=session_env("B"))
    assert taken.returncode == 0, taken
    assert read_json(repo / "state" / "locks" / "issue-7.json")["token"] == 2
    assert st("validate", "state", cwd=repo).returncode == 0
