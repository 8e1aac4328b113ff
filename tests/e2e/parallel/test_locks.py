"""`git st lock …`: acquire, renew, release, list, gc — real CLI, real state files."""

from __future__ import annotations

import json
import os
import time

from tests.support import assert_valid, dead_pid, git, init_repo, read_json, reclaim_log, session_env, st


def test_acquire_records_owner_and_token_and_the_state_dir_is_ignored(repo):
    result = st("lock", "acquire", "deploy", "--ttl", "60", cwd=repo, env=session_env("A", ST_ACTOR="alice"))
    assert result.returncode == 0, result
    assert "lock deploy acquired: token 1" in result.stdout
    assert "made git ignore it" in result.stderr
    record = read_json(repo / "state" / "locks" / "deploy.json")
    assert_valid(record, "state-lock")
    assert record["resource"] == "deploy"
    assert record["token"] == 1
    assert record["ttl"] == 60
    assert record["owner"]["session"] == "A"
    assert record["owner"]["actor"] == "alice"
    assert record["owner"]["pid"] > 0 and record["owner"]["host"]
    # state/ is runtime-only: git does not see it.
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""
    assert (repo / "state" / ".gitignore").read_text().strip().endswith("*")


def test_another_session_gets_exit_3_naming_the_owner(repo):
    assert st("lock", "acquire", "deploy", cwd=repo, env=session_env("A")).returncode == 0
    busy = st("lock", "acquire", "deploy", cwd=repo, env=session_env("B"))
    assert busy.returncode == 3, busy
    assert "held by session A" in busy.stderr and "Traceback" not in busy.stderr
    for verb in ("renew", "release"):
        other = st("lock", verb, "deploy", cwd=repo, env=session_env("B"))
        assert other.returncode == 3, other
        assert "held by session A" in other.stderr
    assert read_json(repo / "state" / "locks" / "deploy.json")["owner"]["session"] == "A"


def test_fencing_token_grows_with_every_new_owner_and_survives_release(repo):
    tokens = []
    for owner in ("A", "B", "A", "C"):
        got = st("lock", "acquire", "db", "--format", "json", cwd=repo, env=session_env(owner))
        assert got.returncode == 0, got
        tokens.append(json.loads(got.stdout)["lock"]["token"])
        assert st("lock", "release", "db", cwd=repo, env=session_env(owner)).returncode == 0
    assert tokens == [1, 2, 3, 4]
    released = read_json(repo / "state" / "locks" / "db.json")
    assert_valid(released, "state-lock")
    assert released["owner"] is None and released["token"] == 4 and released["last_owner"]["session"] == "C"
    # gc does not forget the token either
    assert st("lock", "gc", cwd=repo).returncode == 0
    again = st("lock", "acquire", "db", "--format", "json", cwd=repo, env=session_env("D"))
    assert json.loads(again.stdout)["lock"]["token"] == 5


def test_same_session_reacquire_keeps_token_and_extends(repo):
    first = json.loads(
        st("lock", "acquire", "x", "--ttl", "30", "--format", "json", cwd=repo, env=session_env("A")).stdout
    )
    time.sleep(0.01)
    second = json.loads(
        st("lock", "acquire", "x", "--ttl", "300", "--format", "json", cwd=repo, env=session_env("A")).stdout
    )
    assert second["renewed"] is True
    assert second["lock"]["token"] == first["lock"]["token"] == 1
    assert second["lock"]["expires_at"] > first["lock"]["expires_at"]
    assert second["lock"]["acquired_at"] == first["lock"]["acquired_at"]


def test_renew_pushes_expiry_and_keeps_ttl(repo):
    st("lock", "acquire", "x", "--ttl", "120", cwd=repo, env=session_env("A"))  # live until renewed, however slow
    before = read_json(repo / "state" / "locks" / "x.json")
    time.sleep(0.05)
    renewed = st("lock", "renew", "x", cwd=repo, env=session_env("A"))
    assert renewed.returncode == 0, renewed
    after = read_json(repo / "state" / "locks" / "x.json")
    assert after["expires_at"] > before["expires_at"] and after["ttl"] == 120 and after["token"] == 1


def test_renew_of_a_lock_nobody_holds_is_a_conflict(repo):
    result = st("lock", "renew", "nothing", cwd=repo, env=session_env("A"))
    assert result.returncode == 3 and "not held" in result.stderr
    released = st("lock", "release", "nothing", cwd=repo, env=session_env("A"))
    assert released.returncode == 0 and "was not held" in released.stdout


def test_stale_lock_is_reclaimed_and_logged_and_wait_waits_for_it(repo):
    # Held for an hour at first: B's try without --wait is refused however slow the machine.
    assert st("lock", "acquire", "x", "--ttl", "3600", cwd=repo, env=session_env("A")).returncode == 0
    assert st("lock", "acquire", "x", cwd=repo, env=session_env("B")).returncode == 3
    # Then A's lease is cut to 2 s; B waits (a generous 120 s) and takes the lock once stale.
    renewed = st("lock", "renew", "x", "--ttl", "2", "--format", "json", cwd=repo, env=session_env("A"))
    assert renewed.returncode == 0, renewed
    expires = json.loads(renewed.stdout)["lock"]["expires_at"]
    got = st("lock", "acquire", "x", "--wait", "120", "--format", "json", cwd=repo, env=session_env("B"))
    assert got.returncode == 0, got  # a wait that ran out would exit 3
    data = json.loads(got.stdout)
    assert data["lock"]["token"] == 2 and data["lock"]["owner"]["session"] == "B"
    assert data["lock"]["reclaimed_from"]["reason"] == "stale"
    assert data["lock"]["reclaimed_from"]["expires_at"] == expires
    assert_valid(data["lock"], "state-lock")
    log = reclaim_log(repo / "state")
    assert len(log) == 1
    assert log[0]["action"] == "reclaim" and log[0]["reason"] == "stale"
    assert log[0]["previous"]["owner"]["session"] == "A" and log[0]["owner"]["session"] == "B"
    assert log[0]["at"] >= expires  # never taken before A's lease ended (same UTC format: text order)


def test_wait_gives_up_with_exit_3(repo):
    st("lock", "acquire", "x", cwd=repo, env=session_env("A"))
    started = time.monotonic()
    result = st("lock", "acquire", "x", "--wait", "0.5", cwd=repo, env=session_env("B"))
    assert result.returncode == 3
    assert time.monotonic() - started >= 0.5


def test_ttl_from_env_and_git_config_and_bad_values_are_usage_errors(repo):
    git("config", "st.lockTtl", "120", cwd=repo)
    st("lock", "acquire", "a", cwd=repo, env=session_env("A"))
    assert read_json(repo / "state" / "locks" / "a.json")["ttl"] == 120
    st("lock", "acquire", "b", cwd=repo, env=session_env("A", ST_LOCK_TTL="45"))
    assert read_json(repo / "state" / "locks" / "b.json")["ttl"] == 45
    for bad in (["--ttl", "0"], ["--ttl", "soon"], ["--ttl", "-5"]):
        result = st("lock", "acquire", "c", *bad, cwd=repo, env=session_env("A"))
        assert result.returncode == 2, result
    assert st("lock", "acquire", "c", cwd=repo, env=session_env("A", ST_LOCK_TTL="x")).returncode == 2
    assert not (repo / "state" / "locks" / "c.json").exists()


def test_list_shows_live_stale_dead_and_json_shape(repo):
    st("lock", "acquire", "live-one", cwd=repo, env=session_env("A"))
    st("lock", "acquire", "stale-one", "--ttl", "0.2", cwd=repo, env=session_env("B"))
    st("lock", "acquire", "dead-one", cwd=repo, env=session_env("C", pid=dead_pid()))
    st("lock", "acquire", "gone", cwd=repo, env=session_env("D"))
    st("lock", "release", "gone", cwd=repo, env=session_env("D"))
    time.sleep(0.3)
    text = st("lock", "list", cwd=repo)
    assert text.returncode == 0, text
    states = {line.split()[0]: line.split()[1] for line in text.stdout.splitlines()[1:]}
    assert states == {"dead-one": "dead", "live-one": "live", "stale-one": "stale"}
    data = json.loads(st("lock", "list", "--all", "--format", "json", cwd=repo).stdout)
    by_name = {lock["name"]: lock for lock in data["locks"]}
    assert by_name["gone"]["state"] == "released" and by_name["gone"]["owner"] is None
    assert set(by_name["live-one"]) >= {"name", "state", "path", "token", "owner", "acquired_at", "expires_at", "ttl"}


def test_gc_releases_stale_and_dead_only_and_dry_run_writes_nothing(repo):
    st("lock", "acquire", "live-one", cwd=repo, env=session_env("A"))
    st("lock", "acquire", "dead-one", cwd=repo, env=session_env("C", pid=dead_pid()))
    before = (repo / "state" / "locks" / "dead-one.json").read_bytes()
    dry = st("lock", "gc", "--dry-run", cwd=repo)
    assert "would release lock dead-one (dead" in dry.stdout
    assert (repo / "state" / "locks" / "dead-one.json").read_bytes() == before
    assert reclaim_log(repo / "state") == []
    done = st("lock", "gc", "--format", "json", cwd=repo)
    assert [e["resource"] for e in json.loads(done.stdout)["released"]] == ["dead-one"]
    assert read_json(repo / "state" / "locks" / "dead-one.json")["owner"] is None
    assert read_json(repo / "state" / "locks" / "live-one.json")["owner"]["session"] == "A"
    assert [e["action"] for e in reclaim_log(repo / "state")] == ["gc"]


def test_corrupt_record_is_reported_never_a_traceback(repo):
    st("lock", "acquire", "ok", cwd=repo, env=session_env("A"))
    locks = repo / "state" / "locks"
    (locks / "broken.json").write_text("{not json")
    (locks / "wrong.json").write_text(json.dumps({"resource": "wrong", "token": 0, "owner": {"pid": "x"}}))
    listed = st("lock", "list", cwd=repo)
    assert listed.returncode == 1, listed
    assert "broken.json: error[JSON]" in listed.stderr and "wrong.json: error[SCHEMA]" in listed.stderr
    assert "ok" in listed.stdout
    taken = st("lock", "acquire", "broken", cwd=repo, env=session_env("A"))
    assert taken.returncode == 1 and "Traceback" not in taken.stderr
    assert (locks / "broken.json").read_text() == "{not json"


def test_lock_works_outside_git_with_st_state_dir(tmp_path):
    state = tmp_path / "somewhere"
    result = st("lock", "acquire", "n", cwd=tmp_path, env=session_env("A", ST_STATE_DIR=str(state)))
    assert result.returncode == 0, result
    assert (state / "locks" / "n.json").exists()


def test_unknown_fields_survive_every_rewrite(repo):
    st("lock", "acquire", "x", cwd=repo, env=session_env("A"))
    path = repo / "state" / "locks" / "x.json"
    record = read_json(path)
    record["note"] = "written by a newer gitst"
    record["owner"]["agent_kind"] = "creative"
    path.write_text(json.dumps(record))
    for args in (["renew", "x"], ["acquire", "x"], ["release", "x"]):
        assert st("lock", *args, cwd=repo, env=session_env("A")).returncode == 0
        assert read_json(path)["note"] == "written by a newer gitst"
    assert st("lock", "acquire", "x", cwd=repo, env=session_env("B")).returncode == 0
    assert read_json(path)["note"] == "written by a newer gitst"


def test_the_schemas_reject_what_gitst_would_never_write():
    from gitst.schemas.catalog import load, validator
    from tests.reference_schema import reference_validator

    held = load("state-lock")["examples"][0]
    bad_locks = [
        {k: v for k, v in held.items() if k != "expires_at"},  # held without expiry
        {**held, "owner": None},  # released without released_at
        {**held, "resource": "a..b"},
        {**held, "resource": "x" * 65},
        {**held, "token": 0},
        {**held, "expires_at": "tomorrow"},
        {**held, "owner": {**held["owner"], "session": "../x"}},
    ]
    for record in bad_locks:
        assert not validator("state-lock").is_valid(record), record
        assert not reference_validator("state-lock").is_valid(record), record
    assert validator("state-lock").is_valid({**held, "resource": "issue-" + "9" * 64})
    chat = load("state-active-chat")["examples"][0]
    for record in (
        {**chat, "claims": [{"issue": "7"}]},
        {**chat, "pid": 0},
        {k: v for k, v in chat.items() if k != "claims"},
    ):
        assert not validator("state-active-chat").is_valid(record)
        assert not reference_validator("state-active-chat").is_valid(record)
    entry = load("state-active-worktree")["examples"][0]
    for record in ({**entry, "issue": "../7"}, {k: v for k, v in entry.items() if k != "session"}):
        assert not validator("state-active-worktree").is_valid(record)
        assert not reference_validator("state-active-worktree").is_valid(record)


def test_an_existing_unignored_state_dir_gets_its_ignore_rule_and_an_ignored_one_is_left_alone(repo, tmp_path):
    (repo / "state" / "pipeline").mkdir(parents=True)
    (repo / "state" / "pipeline" / "1.json").write_text("{}\n")
    assert "state/" in git("status", "--porcelain", cwd=repo)
    result = st("lock", "acquire", "x", cwd=repo, env=session_env("A"))
    assert result.returncode == 0 and "was not ignored by git" in result.stderr
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""

    other = init_repo(tmp_path / "other")
    (other / ".gitignore").write_text("/state/\n")
    (other / "state").mkdir()
    assert st("lock", "acquire", "x", cwd=other, env=session_env("A")).returncode == 0
    assert not (other / "state" / ".gitignore").exists()


def test_library_calls_default_to_the_acting_session_and_the_repos_state_dir(repo, monkeypatch):
    from gitst.sessions import locks

    monkeypatch.setenv("ST_SESSION_ID", "lib-session")
    monkeypatch.setenv("ST_SESSION_PID", str(os.getpid()))
    got = locks.acquire("pipeline-42", cwd=repo)
    assert got.record["owner"]["session"] == "lib-session" and got.record["ttl"] == 1800
    assert locks.renew("pipeline-42", cwd=repo)["token"] == 1
    assert locks.release("pipeline-42", cwd=repo)["owner"] is None
    assert read_json(repo / "state" / "locks" / "pipeline-42.json")["last_owner"]["session"] == "lib-session"
