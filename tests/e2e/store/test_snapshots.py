"""`git st snapshot save|load|list`: one chat saves its context, the next (another session, a
fresh shell) loads it with the git state and the pipeline status gitst filled in."""

from __future__ import annotations

import json
import multiprocessing

from tests.support import assert_valid, git, read_json, session_env, st


def _chat(name: str) -> dict:
    """The environment of a Claude Code chat: its own session id (every command a fresh shell)."""
    return {"CLAUDE_SESSION_ID": name}


def test_save_in_one_session_load_in_another_returns_the_content_and_the_git_state(repo):
    git("checkout", "-q", "-b", "st/issue-41", cwd=repo)
    (repo / "README").write_text("changed\n")  # unstaged
    (repo / "new.txt").write_text("new\n")  # untracked
    (repo / "staged.txt").write_text("s\n")
    git("add", "staged.txt", cwd=repo)
    (repo / ".gitignore").write_text("*.log\nstate/\n")  # untracked too; the ignored files are not dirt
    (repo / "debug.log").write_text("x\n")
    assert st("pipeline", "set", "41", "current_phase", "building", cwd=repo).returncode == 0
    assert st("pipeline", "set", "41", "pr_number", "42", cwd=repo).returncode == 0
    head = git("rev-parse", "HEAD", cwd=repo)

    saved = st(
        "snapshot",
        "save",
        "--summary",
        "Retry loop capped; backoff test next.",
        "--completed",
        "Capped the retry loop",
        "--decision",
        "Exponential backoff: the API rate-limits bursts",
        "--gotcha",
        "tests need FAKE_CLOCK=1",
        "--next",
        "Add the backoff test",
        cwd=repo,
        env=_chat("chat-1"),
    )
    assert saved.returncode == 0, saved
    assert "saved the snapshot of session chat-1" in saved.stdout
    path = repo / "state" / "session-snapshots" / "chat-1.json"
    record = read_json(path)
    assert_valid(record, "state-session-snapshot")
    assert record["git"] == {"branch": "st/issue-41", "head": head, "dirty": 4, "worktree": str(repo)}
    assert record["pipeline"] == [
        {
            "issue": 41,
            "current_phase": "building",
            "active_agent": None,
            "issue_type": "feature",
            "pr_number": 42,
            "last_updated": record["pipeline"][0]["last_updated"],
            "verdict": None,
        }
    ]

    git("commit", "-q", "-m", "work", cwd=repo)  # the next chat finds HEAD moved
    loaded = st("snapshot", "load", "--format", "json", cwd=repo, env=_chat("chat-2"))
    assert loaded.returncode == 0, loaded
    got = json.loads(loaded.stdout)
    assert got["session_id"] == "chat-1" and got["snapshot"] == record
    assert got["git_now"]["head"] != head and got["git_now"]["branch"] == "st/issue-41"
    text = st("snapshot", "load", cwd=repo, env=_chat("chat-2"))
    assert text.returncode == 0
    for line in (
        "  Retry loop capped; backoff test next.",
        "  - Capped the retry loop",
        "  - Exponential backoff: the API rate-limits bursts",
        "  - tests need FAKE_CLOCK=1",
        "  - Add the backoff test",
        f"  at save: branch st/issue-41, HEAD {head[:12]}, 4 dirty file(s)",
        f"  HEAD moved since the save: {head[:12]} -> {got['git_now']['head'][:12]}",
        "  #41: phase building, PR #42",
    ):
        assert line in text.stdout.splitlines(), (line, text.stdout)


def test_load_with_no_snapshot_from_another_session_exits_1_with_a_clear_message(repo):
    empty = st("snapshot", "load", cwd=repo, env=_chat("chat-2"))
    assert empty.returncode == 1 and empty.stdout == ""
    assert "error: no session snapshot from another session in" in empty.stderr
    assert "this session is chat-2" in empty.stderr and "fix: save one with `git st snapshot save`" in empty.stderr
    assert st("snapshot", "save", "--summary", "mine", cwd=repo, env=_chat("chat-2")).returncode == 0
    own_only = st("snapshot", "load", cwd=repo, env=_chat("chat-2"))
    assert own_only.returncode == 1 and "(only this session's own)" in own_only.stderr
    missing = st("snapshot", "load", "--session", "chat-9", cwd=repo, env=_chat("chat-2"))
    assert missing.returncode == 1 and "no session snapshot of session chat-9" in missing.stderr
    assert "Traceback" not in empty.stderr + own_only.stderr + missing.stderr


def test_load_takes_the_latest_of_another_session_and_anonymous_is_the_seeds_key(repo):
    for chat, summary in (("chat-1", "first"), ("chat-2", "second"), ("chat-3", "mine")):
        assert st("snapshot", "save", "--summary", summary, cwd=repo, env=_chat(chat)).returncode == 0
    latest = json.loads(st("snapshot", "load", "--format", "json", cwd=repo, env=_chat("chat-3")).stdout)
    assert latest["session_id"] == "chat-2"  # chat-3's own, though newer, is not another session's
    given = json.loads(st("snapshot", "load", "--session", "chat-1", "--format", "json", cwd=repo).stdout)
    assert given["snapshot"]["summary"] == "first"
    # no session id at all: the seed's `anonymous`, and an anonymous chat may load it
    assert st("snapshot", "save", "--summary", "anon", cwd=repo).returncode == 0
    assert (repo / "state" / "session-snapshots" / "anonymous.json").exists()
    anon = json.loads(st("snapshot", "load", "--format", "json", cwd=repo).stdout)
    assert anon["session_id"] == "anonymous" and anon["snapshot"]["summary"] == "anon"
    # ST_SESSION_ID names the session too (any harness)
    assert st("snapshot", "save", cwd=repo, env=session_env("codex-7")).returncode == 0
    listed = json.loads(st("snapshot", "list", "--format", "json", cwd=repo).stdout)["snapshots"]
    assert [s["session_id"] for s in listed] == ["chat-1", "chat-2", "chat-3", "anonymous", "codex-7"]


def test_a_document_on_stdin_keeps_its_fields_but_gitst_fills_in_its_own(repo):
    document = {
        "summary": "from a file",
        "completed": ["a", {"text": "b", "pr": 42}],
        "decisions": ["d1"],
        "x-harness": {"model": "opus"},
        "git": "not yours",
        "session_id": "someone-else",
        "saved_at": "1999-01-01T00:00:00Z",
    }
    first = st(
        "snapshot", "save", "--from", "-", "--decision", "d2", cwd=repo, env=_chat("c"), input=json.dumps(document)
    )
    assert first.returncode == 0, first
    record = read_json(repo / "state" / "session-snapshots" / "c.json")
    assert record["completed"] == ["a", {"text": "b", "pr": 42}] and record["decisions"] == ["d1", "d2"]
    assert record["x-harness"] == {"model": "opus"} and record["session_id"] == "c"
    assert record["git"]["branch"] == "main" and record["saved_at"] != "1999-01-01T00:00:00Z"
    assert record["saves"] == 1
    assert st("snapshot", "save", "--summary", "again", cwd=repo, env=_chat("c")).returncode == 0
    again = read_json(repo / "state" / "session-snapshots" / "c.json")
    assert again["saves"] == 2 and again["created_at"] == record["created_at"]
    assert "x-harness" not in again  # a save replaces the snapshot: it is the session's latest context
    bad = st("snapshot", "save", "--from", "-", cwd=repo, env=_chat("c"), input='{"gotchas": "not a list"}')
    assert bad.returncode == 2 and "/gotchas" in bad.stderr
    assert read_json(repo / "state" / "session-snapshots" / "c.json") == again  # nothing written
    assert st("validate", cwd=repo).returncode == 0


def test_outside_a_git_work_tree_the_git_state_is_null(tmp_path):
    state = tmp_path / "state"
    env = {"ST_STATE_DIR": str(state), "CLAUDE_SESSION_ID": "c"}
    assert st("snapshot", "save", "--summary", "x", cwd=tmp_path, env=env).returncode == 0
    assert read_json(state / "session-snapshots" / "c.json")["git"] is None


def _save(args) -> int:
    import os

    repo, index = args
    os.chdir(repo)
    from gitst.snapshots import store

    store.save({"completed": [f"step {index}"]}, session="shared", root=repo / "state")
    return index


def test_eight_processes_saving_one_session_leave_one_whole_snapshot(repo):
    with multiprocessing.get_context("fork").Pool(8) as pool:
        assert sorted(pool.map(_save, [(repo, i) for i in range(8)])) == list(range(8))
    record = read_json(repo / "state" / "session-snapshots" / "shared.json")
    assert record["saves"] == 8  # every read-modify-write saw the previous one (the flock)
    assert len(record["completed"]) == 1 and record["completed"][0].startswith("step ")
    assert_valid(record, "state-session-snapshot")


def test_the_pipeline_status_names_unreadable_files_and_can_be_limited_to_issues(repo):
    assert st("pipeline", "set", "41", "active_agent", "builder", cwd=repo).returncode == 0
    (repo / "state" / "pipeline" / "43.json").write_text('{"43": ')
    assert st("snapshot", "save", cwd=repo, env=_chat("c")).returncode == 0
    pipeline = read_json(repo / "state" / "session-snapshots" / "c.json")["pipeline"]
    assert [entry["issue"] for entry in pipeline] == [41, 43]
    assert pipeline[0]["active_agent"] == "builder" and pipeline[0]["current_phase"] == "unknown"
    assert pipeline[1] == {"issue": 43, "error": pipeline[1]["error"]} and pipeline[1]["error"].startswith("JSON: ")
    assert st("snapshot", "save", "--issue", "41", "--issue", "#44", cwd=repo, env=_chat("c")).returncode == 0
    limited = read_json(repo / "state" / "session-snapshots" / "c.json")["pipeline"]
    assert [entry["issue"] for entry in limited] == [41, 44] and "no pipeline state" in limited[1]["error"]
    assert st("snapshot", "save", "--issue", "x", cwd=repo, env=_chat("c")).returncode == 2
