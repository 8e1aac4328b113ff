"""Issue 20, points 4, 6 and 8 (and two of its low items), through the real CLI on real
clones of one bare remote (file:// and `git daemon`): claims taken before `st.remote` was
set, releases while the remote is away, and which lost claim a heartbeat answers for."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gitst.sessions import remote_claims
from gitst.sessions.identity import Identity, process_start
from tests.e2e.remote.conftest import clone
from tests.e2e.remote.test_remote_claims import local_claim, remote_record
from tests.support import dead_pid, git, logged_git, logging_git, session_env, st


def _remote(*paths: Path) -> None:
    for path in paths:
        git("config", "st.remote", "origin", cwd=path)


# --- point 4: turning on st.remote covers the claims already held -------------------------------


def test_a_claim_taken_before_st_remote_is_flagged_as_two_owners_then_lost_by_its_heartbeat(bare, tmp_path):
    a, b = clone(bare.as_uri(), tmp_path / "a"), clone(bare.as_uri(), tmp_path / "b")
    env_a = session_env("A", ST_HOST="laptop-a")
    env_b = session_env("B", ST_HOST="laptop-b")
    assert st("claim", "7", cwd=a, env=env_a).returncode == 0  # here only: no remote yet
    assert st("claim", "8", cwd=a, env=env_a).returncode == 0
    _remote(a, b)
    assert st("claim", "7", cwd=b, env=env_b).returncode == 0  # A never published it
    assert remote_record(bare, "7")["session"] == "B"

    shown = st("status", "--format", "json", cwd=a, env=session_env("C"))
    assert shown.returncode == 1, shown
    doubled = json.loads(shown.stdout)["two_owners"]
    assert doubled == [{"issue": "7", "here": "A", "remote": {"session": "B", "host": "laptop-b"}}]
    text = st("status", cwd=a, env=session_env("C"))
    assert "issue 7 has two owners: session A here and session B on host laptop-b on origin" in text.stdout, text
    checked = st("check-issue", "7", cwd=a, env=session_env("C"))
    assert checked.returncode == 1 and "issue 7 has two owners" in checked.stderr, checked

    beat = st("heartbeat", cwd=a, env=env_a)
    assert beat.returncode == 3, beat
    assert "lost the claim on issue 7 on origin (now held by B on host laptop-b)" in beat.stderr
    assert local_claim(a, "7") is None  # given up here: the remote's owner is the issue's owner
    assert remote_record(bare, "8")["session"] == "A"  # the other one is published
    assert st("status", "--format", "json", cwd=a, env=env_a).returncode == 0


def test_the_first_command_that_sees_st_remote_publishes_the_claims_already_held(bare, tmp_path):
    a, b = clone(bare.as_uri(), tmp_path / "a"), clone(bare.as_uri(), tmp_path / "b")
    env_a = session_env("A", ST_HOST="laptop-a")
    env_b = session_env("B", ST_HOST="laptop-b")
    assert st("claim", "7", cwd=a, env=env_a).returncode == 0
    assert st("claim", "5", cwd=a, env=env_a).returncode == 0
    _remote(a, b)
    # B takes 5 first; A's next claim publishes 7 and learns 5 is taken.
    assert st("claim", "5", cwd=b, env=env_b).returncode == 0
    got = st("claim", "9", cwd=a, env=env_a)
    assert got.returncode == 0, got
    assert "published the claim on issue 7 on origin" in got.stderr, got
    assert "lost the claim on issue 5 on origin (now held by B on host laptop-b)" in got.stderr, got
    assert remote_record(bare, "7")["session"] == "A" and remote_record(bare, "9")["session"] == "A"
    assert local_claim(a, "5") is None
    refused = st("claim", "7", cwd=b, env=env_b)
    assert refused.returncode == 3 and "by session A on host laptop-a" in refused.stderr, refused
    # check-issue in A no longer says A holds 5
    checked = st("check-issue", "5", cwd=a, env=env_a)
    assert checked.returncode == 1 and "claimed on origin by session B on host laptop-b" in checked.stdout, checked


# --- point 6: leaving is never silent when the remote is away -----------------------------------


def _pending(path: Path, issue: str) -> dict | None:
    record = path / "state" / "pending-releases" / f"{issue}.json"
    return json.loads(record.read_text()) if record.exists() else None


def test_worktree_remove_with_the_remote_away_says_so_and_the_next_command_releases_it(bare, tmp_path, daemon):
    a = clone(daemon.url(), tmp_path / "a")
    _remote(a)
    env = session_env("A")
    added = st("worktree", "add", "7", "--print-path", cwd=a, env=env)
    assert added.returncode == 0, added
    assert remote_record(bare, "7")["session"] == "A"
    daemon.stop()
    removed = st("worktree", "remove", "7", cwd=a, env=env)
    assert removed.returncode == 4, removed
    assert "issue 7 is still claimed on origin by session A" in removed.stderr, removed
    assert "Traceback" not in removed.stderr
    assert remote_record(bare, "7") is not None and local_claim(a, "7") is None
    assert _pending(a, "7")["session"] == "A"
    shown = st("status", "--format", "json", cwd=a, env=env)
    assert [r["issue"] for r in json.loads(shown.stdout)["pending_releases"]] == ["7"], shown
    assert st("validate", str(a / "state" / "pending-releases" / "7.json"), cwd=a).returncode == 0
    daemon.start()
    beat = st("heartbeat", cwd=a, env=env)
    assert beat.returncode == 0, beat
    assert "released issue 7 on origin (its release was pending since" in beat.stderr, beat
    assert remote_record(bare, "7") is None and _pending(a, "7") is None
    assert remote_record(bare, "7", "fence")["token"] == 1


def test_a_second_release_after_an_offline_one_is_not_silent_and_finishes_it(bare, tmp_path, daemon):
    a = clone(daemon.url(), tmp_path / "a")
    env = session_env("A")
    assert st("claim", "7", "--remote", cwd=a, env=env).returncode == 0
    daemon.stop()
    first = st("release", "7", cwd=a, env=env)
    assert first.returncode == 4 and "remembered" in first.stderr, first
    again = st("release", "7", cwd=a, env=env)
    assert again.returncode == 4, again
    assert "issue 7 is still claimed on origin by session A" in again.stderr, again
    assert "was not held" not in again.stdout
    assert remote_record(bare, "7") is not None
    daemon.start()
    done = st("release", "7", cwd=a, env=env)
    assert done.returncode == 0, done
    assert "released issue 7 on origin (its release was pending since" in done.stdout, done
    assert remote_record(bare, "7") is None and _pending(a, "7") is None


def test_gc_retries_pending_releases_and_deletes_dead_and_stale_claims_on_the_remote(bare, tmp_path, daemon):
    a = clone(daemon.url(), tmp_path / "a")
    _remote(a)
    env = session_env("A")
    assert st("claim", "7", cwd=a, env=env).returncode == 0
    # A session whose process is gone (killed mid-work) left a live-looking claim on the remote.
    assert st("claim", "8", cwd=a, env=session_env("D", pid=dead_pid())).returncode == 0
    assert remote_record(bare, "8")["session"] == "D"
    daemon.stop()
    assert st("release", "7", cwd=a, env=env).returncode == 4
    offline = st("gc", cwd=a, env=env)
    assert offline.returncode == 4 and "issue 7 is still claimed on origin" in offline.stderr, offline
    daemon.start()
    collected = st("gc", "--format", "json", cwd=a, env=env)
    assert collected.returncode == 0, collected
    report = json.loads(collected.stdout)
    assert [r["issue"] for r in report["remote_released"]] == ["7"]
    assert [(c["issue"], c["state"]) for c in report["remote_dropped"]] == [("8", "dead")]
    assert remote_record(bare, "7") is None and remote_record(bare, "8") is None
    assert remote_record(bare, "8", "fence")["token"] == 1  # the next owner still gets a higher token
    listed = st("sessions", "--remote", "--format", "json", cwd=a, env=env)
    assert json.loads(listed.stdout)["claims"] == []


# --- point 8: heartbeat says which claim was lost -----------------------------------------------


def test_heartbeat_exit_status_is_about_the_claims_asked_and_names_the_lost_one(bare, tmp_path):
    a, b = clone(bare.as_uri(), tmp_path / "a"), clone(bare.as_uri(), tmp_path / "b")
    _remote(a, b)
    env_a = session_env("A", ST_HOST="laptop-a")
    old = st("worktree", "add", "7", "--print-path", cwd=a, env=env_a)
    new = st("worktree", "add", "9", "--print-path", cwd=a, env=env_a)
    assert old.returncode == 0 and new.returncode == 0, (old, new)
    old_path, new_path = old.stdout.strip().splitlines()[-1], new.stdout.strip().splitlines()[-1]
    # A's old claim on 7 is gone from the remote (say, collected elsewhere) and B took 7.
    git("update-ref", "-d", "refs/st/claims/7", cwd=bare)
    assert st("claim", "7", "--remote", cwd=b, env=session_env("B", ST_HOST="laptop-b")).returncode == 0

    # In 9's worktree the session's work is valid: exit 0, 7 named as a warning.
    beat = st("heartbeat", "--format", "json", cwd=new_path, env=env_a)
    assert beat.returncode == 0, beat
    data = json.loads(beat.stdout)
    assert data["asked"] == ["9"]
    assert [(item["issue"], item["asked"], (item["owner"] or {}).get("session")) for item in data["lost"]] == [
        ("7", False, "B")
    ]
    text = st("heartbeat", cwd=new_path, env=env_a)
    assert text.returncode == 0 and "warning: lost the claim on issue 7" in text.stderr, text
    # Asked about 7 (from its worktree, or by name): exit 3, naming it.
    there = st("heartbeat", cwd=old_path, env=env_a)
    assert there.returncode == 3 and "error: lost the claim on issue 7 on origin (now held by B" in there.stderr, there
    named = st("heartbeat", "7", cwd=new_path, env=env_a)
    assert named.returncode == 3 and "error: issue 7 is not held by this session" in named.stderr, named
    both = st("heartbeat", "9", cwd=a, env=env_a)
    assert both.returncode == 0, both
    assert remote_record(bare, "9")["session"] == "A"


# --- low items -----------------------------------------------------------------------------------


def test_release_of_another_sessions_claim_does_not_say_pick_another_issue(repo):
    assert st("claim", "7", cwd=repo, env=session_env("A")).returncode == 0
    refused = st("release", "7", cwd=repo, env=session_env("B"))
    assert refused.returncode == 3, refused
    assert "pick another issue" not in refused.stderr
    assert "only session A can release it" in refused.stderr, refused
    claimed = st("claim", "7", cwd=repo, env=session_env("B"))
    assert claimed.returncode == 3 and "pick another issue" in claimed.stderr


def test_a_takeover_from_a_dead_owner_says_so_not_that_its_lease_had_ended(bare, tmp_path):
    a = clone(bare.as_uri(), tmp_path / "a")
    assert st("claim", "7", "--remote", cwd=a, env=session_env("D", pid=dead_pid())).returncode == 0
    taken = st("claim", "7", "--remote", cwd=a, env=session_env("E"))
    assert taken.returncode == 0, taken
    assert "taken over on origin from session D" in taken.stdout, taken
    assert "whose lease had ended" not in taken.stdout
    assert "whose process had ended, with 29m" in taken.stdout or "whose process had ended, with 30m" in taken.stdout


def test_worktree_remove_of_another_sessions_issue_does_not_say_pick_another_issue(repo):
    added = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert added.returncode == 0, added
    refused = st("worktree", "remove", "7", cwd=repo, env=session_env("B"))
    assert refused.returncode == 3, refused
    assert "pick another issue" not in refused.stderr, refused
    assert "only session A can remove its worktree" in refused.stderr, refused


# --- releasing: a lease on the commit the session pushed, read only when that moved ------------


def test_a_release_deletes_the_claim_it_pushed_without_reading_it_first(bare, tmp_path):
    """The session record keeps the claim commit the session pushed: the release is one push
    with a lease on it, no fetch."""

    a = clone(str(bare), tmp_path / "a")
    env = session_env("A")
    assert st("claim", "7", "--remote", cwd=a, env=env).returncode == 0
    log = tmp_path / "git.log"
    folder = logging_git(tmp_path / "bin", log)
    done = st("release", "7", cwd=a, env={**env, "PATH": f"{folder}:{os.environ['PATH']}"})
    assert done.returncode == 0, done
    assert "released issue 7" in done.stdout and "on origin" in done.stdout, done
    ran = [words[0] for words in logged_git(log)]
    assert ran.count("push") == 1 and "fetch" not in ran, ran
    assert remote_record(bare, "7") is None
    assert remote_record(bare, "7", "fence")["token"] == 1  # the counter stays: the next owner gets 2


def test_a_claim_that_moved_since_the_session_pushed_it_is_read_then_released(bare, tmp_path):
    """Renewed behind the record's back (its commit is not the one the record keeps): the lease
    on the recorded commit is refused, nothing deleted; the release reads the claim, sees it is
    still the session's, and deletes that."""
    a = clone(str(bare), tmp_path / "a")
    env = session_env("A")
    assert st("claim", "7", "--remote", cwd=a, env=env).returncode == 0
    before = git("rev-parse", "refs/st/claims/7", cwd=bare)
    pid = int(env["ST_SESSION_PID"])
    me = Identity(session="A", pid=pid, host=os.uname().nodename, actor="test", pid_start=process_start(pid))
    renewed = remote_claims.renew("7", me, remote="origin", ttl=600, cwd=a)
    assert renewed.acquired is not None
    assert git("rev-parse", "refs/st/claims/7", cwd=bare) != before  # the record still keeps `before`
    done = st("release", "7", cwd=a, env=env)
    assert done.returncode == 0, done
    assert remote_record(bare, "7") is None
