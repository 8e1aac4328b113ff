"""Each agent-hook event driven by the payloads the harness sends (tests/fixtures/harness,
unknown fields included), through the real CLI, checked against the harness's contract
(docs/harness.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.harness.payloads import payload, send
from tests.support import git, ok, read_json, show_json, st, st_quick

SESSION = "11111111-aaaa-4bbb-8ccc-000000000001"
OTHER = "22222222-aaaa-4bbb-8ccc-000000000002"


@pytest.fixture
def plan_repo(repo: Path) -> Path:
    st_quick("init", "-q", cwd=repo)
    st_quick("add", "-q", "--step", "Reproduce the bug", cwd=repo)
    st_quick("add", "-q", "--step", "Patch the parser", "--deps", "st-001", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    return repo


def env_of(session: str = SESSION) -> dict:
    # the session's process: this test process (alive for the test's length)
    return {"ST_SESSION_PID": str(os.getpid())}


def clean(result) -> None:
    assert "Traceback" not in result.stderr, result


def context_of(result) -> str:
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result
    data = json.loads(lines[0])
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return data["hookSpecificOutput"]["additionalContext"]


def test_session_start_prints_the_context_as_json_even_with_stdin_left_open(plan_repo):
    data = payload("SessionStart", session=SESSION, cwd=plan_repo)
    assert data["x_future_field"]  # an unknown field rides along
    result = send("SessionStart", data, cwd=plan_repo, env=env_of(), keep_open=True)
    clean(result)
    text = context_of(result)
    assert f"session {SESSION}" in text
    assert "st-001 Reproduce the bug" in text
    assert "st-002" not in text  # waiting on st-001: not ready
    assert "You hold no claims." in text


def test_session_start_stays_in_its_byte_budget(plan_repo):
    for n in range(60):
        st_quick("add", "-q", "--step", f"Ready item number {n} with a longish step text", cwd=plan_repo)
    data = payload("SessionStart", session=SESSION, cwd=plan_repo)
    result = send("SessionStart", data, cwd=plan_repo, env={**env_of(), "ST_AGENT_CONTEXT_BYTES": "1500"})
    text = context_of(result)
    assert len(result.stdout.encode()) <= 1500
    assert "more: `git st ready`" in text
    # git st prime: the same context as text, the same budget
    primed = ok(st("prime", cwd=plan_repo, env={"ST_SESSION_ID": SESSION, "ST_AGENT_CONTEXT_BYTES": "1500"}))
    assert len(primed.stdout.encode()) <= 1500 and f"session {SESSION}" in primed.stdout


def test_post_tool_use_heartbeats_at_most_once_per_ttl_third(plan_repo):
    env = {**env_of(), "ST_SESSION_ID": SESSION, "ST_LOCK_TTL": "900"}
    ok(st("claim", "7", cwd=plan_repo, env=env))
    lock = plan_repo / "state" / "locks" / "issue-7.json"
    before = read_json(lock)["expires_at"]
    data = payload("PostToolUse", session=SESSION, cwd=plan_repo)
    first = send("PostToolUse", data, cwd=plan_repo, env=env)
    clean(first)
    assert first.returncode == 0 and first.stdout == ""
    renewed = read_json(lock)["expires_at"]
    assert renewed >= before
    stamp = Path(os.environ["HOME"]) / ".cache" / "gitst" / "agent" / f"{SESSION}.next"
    assert stamp.is_file()
    mtime = stamp.stat().st_mtime_ns
    lock_mtime = lock.stat().st_mtime_ns
    for _ in range(3):  # within TTL/3 (300 s): no state write at all
        again = send("PostToolUse", data, cwd=plan_repo, env=env)
        assert again.returncode == 0 and again.stderr == "", again
    assert lock.stat().st_mtime_ns == lock_mtime
    assert stamp.stat().st_mtime_ns == mtime


def test_precompact_snapshot_is_what_the_next_session_starts_with(plan_repo):
    env = {**env_of(), "ST_SESSION_ID": SESSION}
    ok(st("claim", "7", cwd=plan_repo, env=env))
    ok(st("set-status", "-q", "st-001", "in_progress", cwd=plan_repo))
    result = send("PreCompact", payload("PreCompact", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of())
    clean(result)
    assert result.returncode == 0 and result.stdout == ""
    snap = read_json(plan_repo / "state" / "session-snapshots" / f"{SESSION}.json")
    assert "PreCompact" in snap["summary"] and "issue 7" in snap["summary"]
    assert snap["trigger"] == "auto"
    assert snap["next_steps"] == ["st-001 Reproduce the bug (in progress)"]
    nxt = send("SessionStart", payload("SessionStart", session=OTHER, cwd=plan_repo), cwd=plan_repo, env=env_of())
    text = context_of(nxt)
    assert f"Snapshot of session {SESSION}" in text
    assert "st-001 Reproduce the bug (in progress)" in text


def test_session_end_snapshots_then_releases_unless_kept(plan_repo):
    env = {**env_of(), "ST_SESSION_ID": SESSION}
    ok(st("claim", "7", cwd=plan_repo, env=env))
    ok(st("claim", "8", cwd=plan_repo, env=env))
    ok(st("reserve", "src/**", cwd=plan_repo, env=env))
    kept = send(
        "SessionEnd",
        payload("SessionEnd", session=SESSION, cwd=plan_repo),
        cwd=plan_repo,
        env={**env_of(), "ST_AGENT_KEEP_CLAIMS": "1"},
    )
    clean(kept)
    assert (plan_repo / "state" / "locks" / "issue-7.json").exists()
    result = send("SessionEnd", payload("SessionEnd", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of())
    clean(result)
    assert result.returncode == 0
    assert "released issue 7" in result.stderr and "released issue 8" in result.stderr
    assert "released reservation src/**" in result.stderr  # the session's end, as `git st release`
    check = st("reserve", "--check", "src/app.py", cwd=plan_repo, env={**env_of(), "ST_SESSION_ID": "another"})
    assert check.returncode == 0, check
    assert read_json(plan_repo / "state" / "locks" / "issue-7.json")["owner"] is None  # released
    assert "SessionEnd" in read_json(plan_repo / "state" / "session-snapshots" / f"{SESSION}.json")["summary"]
    # Stop (every turn's end): a snapshot, the claims stay
    ok(st("claim", "9", cwd=plan_repo, env=env))
    stop = send("Stop", payload("Stop", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of())
    assert stop.returncode == 0, stop
    assert (plan_repo / "state" / "locks" / "issue-9.json").exists()


def test_worktree_create_prints_exactly_one_absolute_path_and_remove_is_safe(plan_repo):
    created = send(
        "WorktreeCreate", payload("WorktreeCreate", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of()
    )
    clean(created)
    assert created.returncode == 0, created
    assert created.stdout.endswith("\n") and created.stdout.count("\n") == 1, created
    path = Path(created.stdout.strip())
    assert path.is_absolute() and path.is_dir()
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "st/issue-bold-oak-a3f2"
    entry = read_json(plan_repo / "state" / "active-worktrees" / "bold-oak-a3f2.json")
    assert entry["session"] == SESSION

    def remove(where: Path):
        data = payload("WorktreeRemove", session=SESSION, cwd=plan_repo, worktree=where)
        result = send("WorktreeRemove", data, cwd=plan_repo, env=env_of())
        clean(result)
        return result

    # dirty work is never deleted
    (path / "work.txt").write_text("unsaved\n")
    removed = remove(path)
    assert removed.returncode == 0 and path.is_dir() and (path / "work.txt").exists(), removed
    assert "work.txt" in removed.stderr
    (path / "work.txt").unlink()
    removed = remove(path)
    assert removed.returncode == 0 and not path.exists(), removed
    # a directory gitst did not make is left alone
    other = plan_repo.parent / "not-ours"
    other.mkdir()
    left = remove(other)
    assert left.returncode == 0 and other.is_dir() and "not a worktree gitst made" in left.stderr


def test_tasks_and_todo_lists_are_mirrored_into_the_plan_with_stable_ids(plan_repo):
    created = send("TaskCreated", payload("TaskCreated", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of())
    clean(created)
    assert created.returncode == 0 and created.stdout == "", created
    items = {i["id"]: i for i in show_json(st, plan_repo)}
    task = items["task-11111111-1"]
    assert task["step"] == "Write the regression test" and task["status"] == "pending"
    assert task["notes"] == "Cover the empty-input case"
    done = send("TaskCompleted", payload("TaskCompleted", session=SESSION, cwd=plan_repo), cwd=plan_repo, env=env_of())
    assert done.returncode == 0, done
    assert {i["id"]: i for i in show_json(st, plan_repo)}["task-11111111-1"]["status"] == "completed"
    todo = payload("PostToolUse-TodoWrite", session=SESSION, cwd=plan_repo)
    ok(send("PostToolUse", todo, cwd=plan_repo, env=env_of()))
    ok(send("PostToolUse", todo, cwd=plan_repo, env=env_of()))  # the same list again: no new items
    mirrored = [i for i in show_json(st, plan_repo) if i["id"].startswith("plan-11111111-")]
    assert sorted((i["step"], i["status"]) for i in mirrored) == [
        ("Patch the parser", "in_progress"),
        ("Reproduce the bug", "completed"),
    ]


def test_codex_update_plan_import_keeps_ids_across_updates(plan_repo, tmp_path):
    source = Path(__file__).parents[2] / "fixtures" / "harness" / "codex" / "update_plan.json"
    env = {"ST_SESSION_ID": "codex-thread-7"}
    first = ok(st("import-update-plan", str(source), "--format", "json", cwd=plan_repo, env=env))
    ids = json.loads(first.stdout)["written"]
    assert len(ids) == 3 and all(i.startswith("plan-codex-th-") for i in ids)
    update = json.loads(source.read_text())
    update["plan"][1]["status"] = "completed"
    update["plan"][2]["status"] = "in_progress"
    again = ok(st("import-update-plan", "-", "--format", "json", cwd=plan_repo, env=env, input=json.dumps(update)))
    result = json.loads(again.stdout)
    assert sorted(result["written"]) == sorted(ids[1:]) and result["unchanged"] == ids[:1]
    statuses = {i["id"]: i["status"] for i in show_json(st, plan_repo)}
    assert [statuses[i] for i in ids] == ["completed", "completed", "in_progress"]
    bad = st("import-update-plan", "-", cwd=plan_repo, env=env, input='{"steps": []}')
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and '"plan"' in bad.stderr


def test_pre_tool_use_refuses_a_write_to_a_path_another_live_session_reserved(plan_repo):
    def check(name: str, harness: str = "claude"):
        return send(
            "PreToolUse", payload(name, session=SESSION, cwd=plan_repo, harness=harness), cwd=plan_repo, env=env_of()
        )

    # no reservations: every call allowed, silently
    for name in ("PreToolUse-Read", "PreToolUse-Edit", "PreToolUse-Bash"):
        result = check(name)
        assert result.returncode == 0 and result.stdout == "" and result.stderr == "", (name, result)
    ok(st("reserve", "src/**", cwd=plan_repo, env={**env_of(), "ST_SESSION_ID": OTHER}))
    for name, harness in (
        ("PreToolUse-Edit", "claude"),
        ("PreToolUse-Bash", "claude"),
        ("PreToolUse-apply_patch", "codex"),
    ):
        refused = check(name, harness)
        clean(refused)
        assert refused.returncode == 2 and refused.stdout == "", (name, refused)
        assert f"src/shared.py is reserved by session {OTHER}" in refused.stderr, refused
    assert check("PreToolUse-Read").returncode == 0  # reading a reserved file is fine
    # the owner itself may edit what it reserved
    own = send("PreToolUse", payload("PreToolUse-Edit", session=OTHER, cwd=plan_repo), cwd=plan_repo, env=env_of())
    assert own.returncode == 0 and own.stderr == "", own


def test_a_broken_gitst_fails_open_with_one_line(tmp_path):
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    for event, name in (("PreCompact", "PreCompact"), ("SessionStart", "SessionStart"), ("TaskCreated", "TaskCreated")):
        result = send(event, payload(name, session=SESSION, cwd=outside), cwd=outside, env=env_of())
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1, result
        assert result.stderr.startswith("gitst hook-agent: ")
    garbage = send("PostToolUse", b"{not json", cwd=outside)
    assert garbage.returncode == 0 and len(garbage.stderr.splitlines()) == 1, garbage
    # WorktreeCreate must not hand the harness a path that is not there: exit 1, nothing on stdout
    failed = send("WorktreeCreate", payload("WorktreeCreate", session=SESSION, cwd=outside), cwd=outside, env=env_of())
    assert failed.returncode == 1 and failed.stdout == "" and "Traceback" not in failed.stderr, failed
