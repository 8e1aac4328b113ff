"""`git st deliberation add|list|show`: one record per agent invocation, from flags or a JSON
document on stdin, written once and never lost, read back with filters."""

from __future__ import annotations

import json
import multiprocessing
import re

from tests.support import assert_valid, read_json, session_env, snapshot, st

ID = re.compile(r"^[0-9]{8}T[0-9]{9}Z-[0-9a-f]{8}$")


def _dir(repo):
    return repo / "state" / "deliberations"


def test_add_from_flags_records_every_field_of_the_seed(repo):
    result = st(
        "deliberation",
        "add",
        "--role",
        "judge",
        "--status",
        "completed",
        "--response",
        "REQUEST_CHANGES: cap the retry loop",
        "--model",
        "gpt-5-codex",
        "--endpoint",
        "codex",
        "--pr",
        "42",
        "--issue",
        "41",
        "--phase",
        "review",
        "--iteration",
        "2",
        "--command",
        "/jkz:review 42",
        "--duration-ms",
        "48210",
        "--tokens-in",
        "18250",
        "--tokens-out",
        "912",
        cwd=repo,
        env=session_env("agent-a"),
    )
    assert result.returncode == 0, result
    ident = result.stdout.strip()
    assert ID.match(ident), result.stdout
    record = read_json(_dir(repo) / f"{ident}.json")
    assert record == {
        "version": 1,
        "role": "judge",
        "status": "completed",
        "response": "REQUEST_CHANGES: cap the retry loop",
        "model": "gpt-5-codex",
        "endpoint": "codex",
        "pr": 42,
        "issue": 41,
        "phase": "review",
        "iteration": 2,
        "command": "/jkz:review 42",
        "duration_ms": 48210.0,
        "tokens": {"input": 18250, "output": 912},
        "timestamp": record["timestamp"],
        "session": "agent-a",
    }
    assert_valid(record, "state-deliberation")
    assert st("validate", cwd=repo).returncode == 0  # the state dir's records are checked by kind


def test_add_from_a_json_document_on_stdin_keeps_unknown_fields_and_flags_win(repo):
    document = {
        "role": "builder",
        "status": "failed",
        "timestamp": "2026-04-10T12:50:00Z",
        "issue": "41",
        "response": {"verdict": "FAIL", "reasons": ["tests red"]},
        "tokens": {"input": 10, "cache_read": 5},
        "x-pipeline": {"run": "run-42"},
    }
    result = st(
        "deliberation",
        "add",
        "--from",
        "-",
        "--status",
        "timeout",
        "--tokens-out",
        "3",
        "--format",
        "json",
        cwd=repo,
        input=json.dumps(document),
    )
    assert result.returncode == 0, result
    shown = json.loads(result.stdout)
    record = read_json(_dir(repo) / f"{shown['id']}.json")
    assert shown["record"] == record
    assert record["status"] == "timeout"  # the flag wins
    assert record["x-pipeline"] == {"run": "run-42"} and record["response"]["verdict"] == "FAIL"
    assert record["tokens"] == {"input": 10, "cache_read": 5, "output": 3}
    assert record["timestamp"] == "2026-04-10T12:50:00Z" and record["issue"] == "41"


def test_bad_input_is_refused_with_exit_2_and_nothing_is_written(repo):
    cases = [
        (["--status", "completed"], None, "a deliberation needs role"),
        (["--role", "judge", "--status", "ok", "--timestamp", "yesterday"], None, "/timestamp"),
        (["--from", "-"], "[1, 2]", "must hold one JSON object, found an array"),
        (["--from", "-"], "{not json", "is not JSON"),
        (["--from", "-", "--role", "r"], '{"status": "x", "duration_ms": -1}', "/duration_ms"),
        (["--role", "judge", "--status", "ok", "--pr", "0"], None, "--pr"),
        (["--role", "judge", "--status", "ok", "--session", "../x"], None, "invalid session id"),
    ]
    for args, stdin, message in cases:
        result = st("deliberation", "add", *args, cwd=repo, input=stdin)
        assert result.returncode == 2, (args, result)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert not _dir(repo).exists() or not list(_dir(repo).iterdir())


def _add(repo, *args, env=None) -> str:
    result = st("deliberation", "add", *args, cwd=repo, env=env)
    assert result.returncode == 0, result
    return result.stdout.strip()


def test_list_filters_by_issue_pr_role_phase_and_show_prints_the_response(repo):
    review = ["--status", "completed", "--issue", "41", "--pr", "42", "--phase", "review"]
    judge1 = _add(repo, "--role", "judge", *review, "--iteration", "1", "--timestamp", "2026-04-10T13:00:00Z")
    judge2 = _add(
        repo,
        "--role",
        "Judge",
        *review,
        "--iteration",
        "2",
        "--timestamp",
        "2026-04-10T14:00:00Z",
        "--response",
        "APPROVE\nall good",
    )
    builder = _add(
        repo,
        *["--role", "builder", "--status", "failed", "--issue", "41", "--phase", "building"],
        "--timestamp",
        "2026-04-10T12:00:00Z",
    )
    other = _add(
        repo, *["--role", "judge", "--status", "completed", "--issue", "7", "--timestamp", "2026-04-09T12:00:00Z"]
    )

    def ids(*args):
        result = st("deliberation", "list", "--format", "json", *args, cwd=repo)
        assert result.returncode == 0, result
        return [row["id"] for row in json.loads(result.stdout)["deliberations"]]

    assert ids() == [other, builder, judge1, judge2]  # oldest first, by timestamp
    assert ids("--issue", "41") == [builder, judge1, judge2]
    assert ids("--issue", "41", "--role", "JUDGE") == [judge1, judge2]  # text ignores case
    assert ids("--pr", "42", "--phase", "review", "--limit", "1") == [judge2]
    assert ids("--status", "failed") == [builder]
    assert ids("--issue", "99") == []
    table = st("deliberation", "list", "--issue", "41", cwd=repo)
    assert table.stdout.splitlines()[0].split() == [
        "ID",
        "TIMESTAMP",
        "ROLE",
        "STATUS",
        "ISSUE",
        "PR",
        "PHASE",
        "MODEL",
        "DURATION",
    ]
    assert len(table.stdout.splitlines()) == 4
    shown = st("deliberation", "show", judge2, cwd=repo)
    assert shown.returncode == 0 and shown.stdout.rstrip().endswith("response:\nAPPROVE\nall good")
    as_json = json.loads(st("deliberation", "show", judge2, "--format", "json", cwd=repo).stdout)
    assert as_json["id"] == judge2 and as_json["record"]["iteration"] == 2
    missing = st("deliberation", "show", "20260101T000000000Z-00000000", cwd=repo)
    assert missing.returncode == 1 and "no deliberation 20260101T000000000Z-00000000" in missing.stderr
    assert st("deliberation", "show", "../x", cwd=repo).returncode == 2


def test_a_hostile_response_is_shown_escaped_and_kept_exact_in_json(repo):
    ident = _add(repo, "--role", "judge", "--status", "ok", "--response", "\x1b[31mred\x07")
    shown = st("deliberation", "show", ident, cwd=repo)
    assert "\x1b" not in shown.stdout and "\\x1b[31mred\\x07" in shown.stdout
    exact = json.loads(st("deliberation", "show", ident, "--format", "json", cwd=repo).stdout)
    assert exact["record"]["response"] == "\x1b[31mred\x07"


def test_a_corrupt_record_is_reported_with_its_code_and_the_rest_listed(repo):
    good = _add(repo, "--role", "judge", "--status", "ok")
    (_dir(repo) / "20260101T000000000Z-deadbeef.json").write_text('{"role": "judge"}')
    (_dir(repo) / "20260101T000000001Z-deadbeef.json").write_text("{")
    listed = st("deliberation", "list", cwd=repo)
    assert listed.returncode == 1 and good in listed.stdout
    assert "20260101T000000000Z-deadbeef.json: error[SCHEMA]" in listed.stderr
    assert "20260101T000000001Z-deadbeef.json: error[JSON]" in listed.stderr


def _add_many(args) -> list[str]:
    root, worker, count, now = args
    from gitst.deliberations import store

    made = []
    for index in range(count):
        record = store.build(None, {"role": f"w{worker}", "status": str(index)}, session=f"s{worker}", now=now)
        made.append(store.add(record, root, now=now)[0])  # every process, every add: the same millisecond
    return made


def test_eight_processes_adding_at_once_lose_nothing(repo):
    root = repo / "state"
    with multiprocessing.get_context("fork").Pool(8) as pool:
        made = pool.map(_add_many, [(root, worker, 25, 1775822472.402) for worker in range(8)])
    ids = [ident for batch in made for ident in batch]
    assert len(ids) == len(set(ids)) == 200
    assert all(ident.startswith("20260410T120112402Z-") for ident in ids)
    files = {name for name in snapshot(root / "deliberations") if not name.startswith(".")}
    assert files == {f"{ident}.json" for ident in ids}  # no temp file left, none replaced
    for ident in ids:
        assert_valid(read_json(root / "deliberations" / f"{ident}.json"), "state-deliberation")
