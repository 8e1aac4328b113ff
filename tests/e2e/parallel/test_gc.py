"""`git st gc` (and `sessions --gc`) clean the state dir and say what they did."""

from __future__ import annotations

import json
import os
import re
import time

from tests.support import dead_pid, read_json, reclaim_log, session_env, st


def test_gc_cleans_dead_sessions_expired_leases_and_stray_temp_files(repo):
    assert st("claim", "1", cwd=repo, env=session_env("live")).returncode == 0
    assert st("claim", "2", cwd=repo, env=session_env("dead", pid=dead_pid())).returncode == 0
    assert st("claim", "3", "--ttl", "0.2", cwd=repo, env=session_env("stale")).returncode == 0
    locks = repo / "state" / "locks"
    old = locks / ".issue-2.json.k3j2l1.tmp"  # what a writer killed between write and rename leaves
    old.write_text("{half")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    young = locks / ".issue-1.json.a8b7c6.tmp"  # may be a write in progress: left alone
    young.write_text("{")
    time.sleep(0.3)

    def keep_young() -> None:  # younger than gc's 60 s however long the commands take on a loaded box
        os.utime(young, (time.time() + 30, time.time() + 30))

    keep_young()
    dry = st("gc", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry
    assert "would release lock issue-2 (dead; session dead, token 1)" in dry.stdout
    assert "would drop the record of dead session dead" in dry.stdout
    assert f"would delete the stray temp file {old}" in dry.stdout
    assert old.exists() and reclaim_log(repo / "state") == []

    keep_young()
    done = st("gc", cwd=repo)
    assert done.returncode == 0, done
    lines = done.stdout.splitlines()
    assert "released lock issue-2 (dead; session dead, token 1)" in lines
    assert "released lock issue-3 (stale; session stale, token 1)" in lines
    assert "dropped the record of dead session dead" in lines
    assert "dropped the record of stale session stale" in lines
    assert f"deleted the stray temp file {old}" in lines
    assert not any("would" in line for line in lines)
    assert not old.exists() and young.exists()
    assert not (repo / "state" / "active-chats" / "dead.json").exists()
    assert read_json(repo / "state" / "active-chats" / "live.json")["claims"][0]["issue"] == "1"
    assert read_json(locks / "issue-1.json")["owner"]["session"] == "live"
    assert sorted(e["resource"] for e in reclaim_log(repo / "state")) == ["issue-2", "issue-3"]

    again = st("sessions", "--gc", "--format", "json", cwd=repo)
    assert json.loads(again.stdout) == {
        "dry_run": False,
        "released_locks": [],
        "dropped_sessions": [],
        "removed_temp_files": [],
    }
    assert st("sessions", "--gc", cwd=repo).stdout.startswith("nothing to clean")


def test_lock_list_never_shows_a_dead_lock_as_expiring_and_wait_says_it_waits(repo):
    assert st("lock", "acquire", "dead-one", cwd=repo, env=session_env("C", pid=dead_pid())).returncode == 0
    assert st("lock", "acquire", "stale-one", "--ttl", "0.2", cwd=repo, env=session_env("D")).returncode == 0
    assert st("lock", "acquire", "live-one", cwd=repo, env=session_env("A")).returncode == 0
    time.sleep(0.3)
    rows = {line.split()[0]: line for line in st("lock", "list", cwd=repo).stdout.splitlines()[1:]}
    assert rows["dead-one"].endswith("owner dead, reclaimable now") and "expires in" not in rows["dead-one"]
    assert "expired " in rows["stale-one"] and rows["stale-one"].endswith(" ago")
    assert re.search(r"expires in 2\dm", rows["live-one"]), rows["live-one"]  # a 30 min TTL, minutes ago at most
    assert st("claim", "9", cwd=repo, env=session_env("E", pid=dead_pid())).returncode == 0
    check = st("check-issue", "9", cwd=repo, env=session_env("B"))
    assert check.returncode == 0 and "owner dead, reclaimable now" in check.stdout and "expires in" not in check.stdout
    waited = st("lock", "acquire", "live-one", "--wait", "0.3", cwd=repo, env=session_env("B"))
    assert waited.returncode == 3, waited
    assert "waiting up to 0.3s for lock live-one: held by session A" in waited.stderr
