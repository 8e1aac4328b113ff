"""`git st claim | check-issue | release | heartbeat | sessions` through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from tests.support import assert_valid, dead_pid, git, read_json, reclaim_log, run, session_env, st


def test_claim_records_the_session_and_check_issue_answers(repo):
    claimed = st("claim", "7", "--desc", "fix the login", cwd=repo, env=session_env("A", ST_ACTOR="alice"))
    assert claimed.returncode == 0, claimed
    assert "issue 7 claimed by session A (token 1, branch main" in claimed.stdout
    chat = read_json(repo / "state" / "active-chats" / "A.json")
    assert_valid(chat, "state-active-chat")
    assert chat["pid"] == os.getpid() and chat["actor"] == "alice"
    [claim] = chat["claims"]
    assert claim["issue"] == "7" and claim["branch"] == "main" and claim["description"] == "fix the login"
    assert claim["worktree"] == str(repo) and claim["token"] == 1 and claim["lock"] == "issue-7"
    lock = read_json(repo / "state" / "locks" / "issue-7.json")
    assert lock["owner"]["session"] == "A"

    assert st("check-issue", "7", cwd=repo, env=session_env("A")).returncode == 0
    assert st("check-issue", "8", cwd=repo, env=session_env("B")).returncode == 0
    taken = st("check-issue", "7", cwd=repo, env=session_env("B"))
    assert taken.returncode == 1
    assert "claimed by session A (branch main" in taken.stdout
    data = json.loads(st("check-issue", "7", "--format", "json", cwd=repo, env=session_env("B")).stdout)
    assert data["state"] == "taken" and data["owner"]["session"] == "A" and data["branch"] == "main"


def test_second_live_session_is_refused_with_exit_3_naming_session_and_branch(repo):
    git("switch", "-q", "-c", "feature/login", cwd=repo)
    assert st("claim", "7", cwd=repo, env=session_env("A")).returncode == 0
    refused = st("claim", "7", cwd=repo, env=session_env("B"))
    assert refused.returncode == 3, refused
    assert "issue 7 is claimed by session A (branch feature/login" in refused.stderr
    assert not (repo / "state" / "active-chats" / "B.json").exists()


def test_release_only_by_owner_and_release_all(repo):
    st("claim", "1", cwd=repo, env=session_env("A"))
    st("claim", "2", cwd=repo, env=session_env("A"))
    other = st("release", "1", cwd=repo, env=session_env("B"))
    assert other.returncode == 3 and "claimed by session A" in other.stderr
    one = st("release", "1", cwd=repo, env=session_env("A"))
    assert one.returncode == 0 and "released issue 1" in one.stdout
    assert [c["issue"] for c in read_json(repo / "state" / "active-chats" / "A.json")["claims"]] == ["2"]
    assert st("claim", "1", cwd=repo, env=session_env("B")).returncode == 0
    every = st("release", cwd=repo, env=session_env("A"))
    assert "released issue 2" in every.stdout
    assert not (repo / "state" / "active-chats" / "A.json").exists()
    assert read_json(repo / "state" / "locks" / "issue-2.json")["owner"] is None
    assert read_json(repo / "state" / "locks" / "issue-1.json")["owner"]["session"] == "B"


def test_heartbeat_renews_locks_and_refreshes_the_record(repo):
    # TTLs far beyond what the next command can take on a loaded machine: renewed, never lost
    st("claim", "7", "--ttl", "300", cwd=repo, env=session_env("A"))
    st("lock", "acquire", "deploy", "--ttl", "300", cwd=repo, env=session_env("A"))
    before_lock = read_json(repo / "state" / "locks" / "issue-7.json")
    before_chat = read_json(repo / "state" / "active-chats" / "A.json")
    time.sleep(0.05)
    beat = st("heartbeat", "--format", "json", cwd=repo, env=session_env("A"))
    assert beat.returncode == 0, beat
    assert sorted(json.loads(beat.stdout)["renewed"]) == ["deploy", "issue-7"]
    after_lock = read_json(repo / "state" / "locks" / "issue-7.json")
    after_chat = read_json(repo / "state" / "active-chats" / "A.json")
    assert after_lock["expires_at"] > before_lock["expires_at"] and after_lock["token"] == before_lock["token"]
    assert after_chat["heartbeat_at"] > before_chat["heartbeat_at"]
    assert read_json(repo / "state" / "locks" / "deploy.json")["expires_at"] > before_lock["expires_at"]


def test_heartbeat_reports_a_lost_claim_with_exit_3(repo):
    st("claim", "7", "--ttl", "0.3", cwd=repo, env=session_env("A"))
    time.sleep(0.4)
    assert st("claim", "7", cwd=repo, env=session_env("B")).returncode == 0
    beat = st("heartbeat", cwd=repo, env=session_env("A"))
    assert beat.returncode == 3
    assert "lost the claim on issue 7 (now held by B)" in beat.stderr
    assert not (repo / "state" / "active-chats" / "A.json").exists()


def test_sessions_lists_live_stale_dead_with_json_shape(repo):
    st("claim", "1", cwd=repo, env=session_env("live-one"))
    st("claim", "2", "--ttl", "0.2", cwd=repo, env=session_env("stale-one"))
    st("claim", "3", cwd=repo, env=session_env("dead-one", pid=dead_pid()))
    time.sleep(0.3)
    text = st("sessions", cwd=repo, env=session_env("live-one"))
    assert text.returncode == 0, text
    lines = {line.split()[0]: line.split() for line in text.stdout.splitlines()[1:]}
    assert lines["live-one"][1:3] == ["*", "live"]  # the current session is starred
    assert lines["stale-one"][1] == "stale" and lines["dead-one"][1] == "dead"
    data = json.loads(st("sessions", "--format", "json", cwd=repo, env=session_env("live-one")).stdout)
    by = {s["session"]: s for s in data["sessions"]}
    assert {k: v["state"] for k, v in by.items()} == {"dead-one": "dead", "live-one": "live", "stale-one": "stale"}
    assert by["live-one"]["current"] is True and by["dead-one"]["current"] is False
    assert by["live-one"]["claims"][0]["issue"] == "1"
    assert set(by["live-one"]) >= {"session", "state", "pid", "host", "actor", "heartbeat_at", "expires_at", "claims"}


def test_owner_killed_with_sigkill_is_reclaimable_at_once(repo):
    agent = subprocess.Popen(["sleep", "300"])
    try:
        assert st("claim", "9", cwd=repo, env=session_env("doomed", pid=agent.pid)).returncode == 0
        assert st("claim", "9", cwd=repo, env=session_env("B")).returncode == 3
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait()
        check = st("check-issue", "9", cwd=repo, env=session_env("B"))
        assert check.returncode == 0 and "is dead" in check.stdout
        took = st("claim", "9", cwd=repo, env=session_env("B"))
        assert took.returncode == 0, took
        assert "taken over from dead session doomed" in took.stdout
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    lock = read_json(repo / "state" / "locks" / "issue-9.json")
    assert lock["owner"]["session"] == "B" and lock["token"] == 2
    assert lock["reclaimed_from"]["reason"] == "dead" and lock["reclaimed_from"]["owner"]["session"] == "doomed"
    [entry] = reclaim_log(repo / "state")
    assert entry["reason"] == "dead" and entry["previous"]["token"] == 1 and entry["token"] == 2
    [old_claim] = read_json(repo / "state" / "active-chats" / "doomed.json")["claims"]
    assert old_claim["lost"]["to"] == "B"
    # Once its locks are gone, prune drops the dead session's record.
    assert st("worktree", "prune", cwd=repo).returncode == 0
    assert not (repo / "state" / "active-chats" / "doomed.json").exists()


def test_lock_from_another_host_is_reclaimable_only_after_its_ttl(repo):
    # The other host's pid means nothing here: even a dead-looking pid does not free the lock.
    far = session_env("remote", pid=dead_pid(), ST_HOST="elsewhere")
    assert st("claim", "11", "--ttl", "1.5", cwd=repo, env=far).returncode == 0
    started = time.monotonic()
    early = st("claim", "11", cwd=repo, env=session_env("B"))
    if time.monotonic() - started < 1.2:  # only meaningful while the TTL has surely not passed
        assert early.returncode == 3, early
        assert "claimed by session remote" in early.stderr
    time.sleep(max(0.0, 1.6 - (time.monotonic() - started)))
    late = st("claim", "11", cwd=repo, env=session_env("B"))
    assert late.returncode == 0, late
    assert read_json(repo / "state" / "locks" / "issue-11.json")["reclaimed_from"]["reason"] == "stale"


def test_session_pid_skips_shells_git_and_wrappers_up_to_the_agent(repo):
    """Without ST_SESSION_PID the claim is kept alive by the agent (here: this Python test
    process), not by the shell that ran the command nor git, git-st or a wrapper."""
    env = {k: v for k, v in os.environ.items() if k != "ST_SESSION_PID"}
    env["ST_SESSION_ID"] = "shell-session"
    shell = run(["sh", "-c", "env nohup git st claim 5 >/dev/null 2>&1; echo $$"], cwd=repo, env=env)
    assert shell.returncode == 0, shell
    record = read_json(repo / "state" / "active-chats" / "shell-session.json")
    assert record["pid"] == os.getpid() != int(shell.stdout.strip())
    assert record["rule"] == "agent" and record["liveness"] == "pid"
    # Through a git alias (git -> sh -c -> git-st), the shell git started is skipped too.
    git("config", "alias.grab", "!git-st claim 6", cwd=repo)
    env["ST_SESSION_ID"] = "alias-session"
    via_alias = run(["bash", "-c", "git grab >/dev/null; echo $$"], cwd=repo, env=env)
    assert via_alias.returncode == 0, via_alias
    assert read_json(repo / "state" / "active-chats" / "alias-session.json")["pid"] == os.getpid()


def test_bad_st_session_pid_is_a_usage_error(repo):
    result = st("claim", "5", cwd=repo, env={"ST_SESSION_ID": "A", "ST_SESSION_PID": "abc"})
    assert result.returncode == 2 and "ST_SESSION_PID" in result.stderr
    assert not (repo / "state").exists()


def test_session_ids_from_the_environment_in_order(repo):
    env = {"ST_SESSION_PID": str(os.getpid()), "CLAUDE_SESSION_ID": "claude-1", "CODEX_THREAD_ID": "codex-1"}
    st("claim", "1", cwd=repo, env=env)
    assert (repo / "state" / "active-chats" / "claude-1.json").exists()
    st("claim", "2", cwd=repo, env={**env, "ST_SESSION_ID": "st-1"})
    assert (repo / "state" / "active-chats" / "st-1.json").exists()
    st("claim", "3", "--session", "flag-1", cwd=repo, env={**env, "ST_SESSION_ID": "st-1"})
    assert (repo / "state" / "active-chats" / "flag-1.json").exists()
    default = {"ST_SESSION_PID": str(os.getpid())}
    st("claim", "4", cwd=repo, env=default)
    names = sorted(p.name for p in (repo / "state" / "active-chats").glob("pid-*.json"))
    assert names == [f"pid-{os.getpid()}@{os.uname().nodename}.json"]


def test_check_issue_answers_from_the_lock_when_the_owners_records_cannot_be_read(repo, tmp_path):
    """The branch and worktree only decorate the verdict: the owner's corrupt session record
    and a link where the worktree entry should be leave them unknown, never fail the check."""
    assert st("claim", "7", cwd=repo, env=session_env("A")).returncode == 0
    (repo / "state" / "active-chats" / "A.json").write_text("{broken")
    (tmp_path / "elsewhere.json").write_text("{}")
    entries = repo / "state" / "active-worktrees"
    entries.mkdir(exist_ok=True)
    (entries / "7.json").symlink_to(tmp_path / "elsewhere.json")
    taken = st("check-issue", "7", cwd=repo, env=session_env("B"))
    assert taken.returncode == 1, taken
    assert "claimed by session A (no branch recorded" in taken.stdout
    data = json.loads(st("check-issue", "7", "--format", "json", cwd=repo, env=session_env("B")).stdout)
    assert data["state"] == "taken" and data["branch"] is None and data["worktree"] is None
