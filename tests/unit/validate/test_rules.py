"""Each rule of `git st validate` has a failing fixture: its code, its line, and the line's
text showing the offending value (so the expected line is visibly the right one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitst.core.diagnostics import ERROR, WARNING
from gitst.validate import kinds
from tests.support import FIXTURES

BAD = FIXTURES / "bad"

# (fixture under tests/fixtures/bad, kind, code, line, text on that line, severity)
CASES = [
    # st plan (seed 000): the plan engine's doctor, called by `git st validate`
    ("st-plan/checkpoint-seq.jsonl", "st-plan", "ST_CHECKPOINT_SEQ", 3, '"lane":"checkpoint"', ERROR),
    ("st-plan/trailing-seq.jsonl", "st-plan", "ST_TRAILING_SEQ", 5, '"notes":"y"', ERROR),
    ("st-plan/unknown-id.jsonl", "st-plan", "ST_REPLAY_UNKNOWN_ID", 3, '"id":"st-009"', ERROR),
    ("st-plan/replay-contract.jsonl", "st-plan", "ST_REPLAY_CONTRACT", 3, '"lane":"checkpoint"', ERROR),
    ("st-plan/unknown-dep.jsonl", "st-plan", "ST_RULE_UNKNOWN_DEP", 3, '"id":"st-007"', ERROR),
    ("st-plan/removed-dep.jsonl", "st-plan", "ST_RULE_UNKNOWN_DEP", 4, '"op":"remove"', ERROR),
    ("st-plan/self-dep.jsonl", "st-plan", "ST_RULE_SELF_DEP", 3, '"op":"set_deps"', ERROR),
    ("st-plan/cycle.jsonl", "st-plan", "ST_RULE_CYCLE", 4, '"op":"set_deps"', ERROR),
    ("st-plan/invalid-json.jsonl", "st-plan", "JSON", 2, '"lane":"event",', ERROR),
    ("st-plan/record-shape.jsonl", "st-plan", "SCHEMA", 2, '"v":2', ERROR),
    ("st-plan/torn-tail.jsonl", "st-plan", "ST_TORN_TAIL", 3, '{"v":3,"ts":"2026-02-09T20:', ERROR),
    # aide wire: reducer rules of seed 002
    ("aide-wire/id-exists.aide.jsonl", "aide-wire", "AIDE_ID_EXISTS", 2, '"id":"guests"', ERROR),
    ("aide-wire/no-parent.aide.jsonl", "aide-wire", "AIDE_NO_PARENT", 1, '"parent":"guests"', ERROR),
    ("aide-wire/unknown-ref.aide.jsonl", "aide-wire", "AIDE_UNKNOWN_REF", 2, '"ref":"ghost"', ERROR),
    ("aide-wire/removed-ref.aide.jsonl", "aide-wire", "AIDE_REMOVED_REF", 4, '"ref":"guest_linda"', ERROR),
    ("aide-wire/root.aide.jsonl", "aide-wire", "AIDE_ROOT", 1, '"ref":"root"', ERROR),
    ("aide-wire/move-cycle.aide.jsonl", "aide-wire", "AIDE_MOVE_CYCLE", 3, '"parent":"table_1"', ERROR),
    ("aide-wire/bad-position.aide.jsonl", "aide-wire", "AIDE_BAD_POSITION", 4, '"position":1', ERROR),
    ("aide-wire/reorder-mismatch.aide.jsonl", "aide-wire", "AIDE_REORDER_MISMATCH", 4, '"children":["guest_b"]', ERROR),
    (
        "aide-wire/cardinality-changed.aide.jsonl",
        "aide-wire",
        "AIDE_CARDINALITY_CHANGED",
        4,
        '"cardinality":"many_to_many"',
        ERROR,
    ),
    ("aide-wire/no-such-rel.aide.jsonl", "aide-wire", "AIDE_NO_SUCH_REL", 3, '"t":"rel.remove"', ERROR),
    ("aide-wire/strict-max-children.aide.jsonl", "aide-wire", "AIDE_CONSTRAINT_VIOLATED", 4, '"id":"guest_b"', ERROR),
    (
        "aide-wire/strict-batch-rollback.aide.jsonl",
        "aide-wire",
        "AIDE_CONSTRAINT_VIOLATED",
        8,
        '"t":"batch.end"',
        ERROR,
    ),
    (
        "aide-wire/constraint-unmet.aide.jsonl",
        "aide-wire",
        "AIDE_CONSTRAINT_UNMET",
        4,
        '"rule":"exclude_pair"',
        WARNING,
    ),
    ("aide-wire/unknown-rule.aide.jsonl", "aide-wire", "AIDE_UNKNOWN_RULE", 2, '"rule":"unique_prop"', WARNING),
    ("aide-wire/batch-nested.aide.jsonl", "aide-wire", "AIDE_BATCH_NESTED", 2, '"t":"batch.start"', ERROR),
    ("aide-wire/batch-unopened.aide.jsonl", "aide-wire", "AIDE_BATCH_UNOPENED", 2, '"t":"batch.end"', ERROR),
    ("aide-wire/batch-unclosed.aide.jsonl", "aide-wire", "AIDE_BATCH_UNCLOSED", 1, '"t":"batch.start"', WARNING),
    ("aide-wire/voice-too-long.aide.jsonl", "aide-wire", "AIDE_VOICE_TOO_LONG", 2, '"t":"voice"', ERROR),
    ("aide-wire/voice-style.aide.jsonl", "aide-wire", "AIDE_VOICE_STYLE", 1, "We did great!", WARNING),
    ("aide-wire/unknown-type.aide.jsonl", "aide-wire", "AIDE_UNKNOWN_TYPE", 1, '"t":"entity.destroy"', ERROR),
    ("aide-wire/expanded-field.aide.jsonl", "aide-wire", "AIDE_EXPANDED_FIELD", 2, '"props":', ERROR),
    ("aide-wire/id-format.aide.jsonl", "aide-wire", "AIDE_ID_FORMAT", 1, '"id":"Guest-Linda"', ERROR),
    ("aide-wire/not-json.aide.jsonl", "aide-wire", "JSON", 2, '{"t":"voice",', ERROR),
    ("aide-wire/missing-field.aide.jsonl", "aide-wire", "SCHEMA", 3, '"t":"rel.set"', ERROR),
    # aide envelope
    (
        "aide-envelope/event-id-shape.aide.events.jsonl",
        "aide-envelope",
        "AIDE_EVENT_ID",
        1,
        '"id":"evt_2026-05-22_1"',
        ERROR,
    ),
    (
        "aide-envelope/event-id-date.aide.events.jsonl",
        "aide-envelope",
        "AIDE_EVENT_ID_MISMATCH",
        1,
        '"id":"evt_20260523_007"',
        ERROR,
    ),
    (
        "aide-envelope/event-id-sequence.aide.events.jsonl",
        "aide-envelope",
        "AIDE_EVENT_ID_MISMATCH",
        1,
        '"id":"evt_20260522_008"',
        ERROR,
    ),
    ("aide-envelope/sequence.aide.events.jsonl", "aide-envelope", "AIDE_SEQUENCE", 3, '"sequence":6', ERROR),
    (
        "aide-envelope/timestamp-shape.aide.events.jsonl",
        "aide-envelope",
        "TIMESTAMP",
        1,
        '"timestamp":"2026-05-22 14:30:00"',
        ERROR,
    ),
    (
        "aide-envelope/timestamp-impossible.aide.events.jsonl",
        "aide-envelope",
        "TIMESTAMP",
        1,
        '"2026-02-30T14:30:00Z"',
        ERROR,
    ),
    (
        "aide-envelope/time-backwards.aide.events.jsonl",
        "aide-envelope",
        "AIDE_TIME_BACKWARDS",
        2,
        '"timestamp":"2026-05-22T14:30:00Z"',
        WARNING,
    ),
    ("aide-envelope/source.aide.events.jsonl", "aide-envelope", "AIDE_SOURCE", 1, '"source":"tv"', ERROR),
    (
        "aide-envelope/abbreviated-p.aide.events.jsonl",
        "aide-envelope",
        "AIDE_ABBREVIATED_FIELD",
        2,
        '"p":{"a":1}',
        ERROR,
    ),
    (
        "aide-envelope/abbreviated-t.aide.events.jsonl",
        "aide-envelope",
        "AIDE_ABBREVIATED_FIELD",
        1,
        '"t":"voice"',
        ERROR,
    ),
    ("aide-envelope/reducer-rule.aide.events.jsonl", "aide-envelope", "AIDE_NO_PARENT", 1, '"parent":"guests"', ERROR),
    # pipeline (seed 001)
    ("pipeline/no-key/42.json", "pipeline", "PIPELINE_KEY_COUNT", 1, "{", ERROR),
    ("pipeline/two-keys/42.json", "pipeline", "PIPELINE_KEY_COUNT", 5, '"43"', ERROR),
    ("pipeline/key-mismatch/42.json", "pipeline", "PIPELINE_KEY_MISMATCH", 2, '"41"', ERROR),
    ("pipeline/file-name/issue-42.json", "pipeline", "PIPELINE_FILE_NAME", None, None, ERROR),
    ("pipeline/sibling-type/42.json", "pipeline", "SCHEMA", 5, '"lastActivity": 1712754414', ERROR),
    ("pipeline/sibling-type/42.json", "pipeline", "SCHEMA", 6, '"heartbeat_pid": "47281"', ERROR),
    ("pipeline/scalar-not-string/42.json", "pipeline", "SCHEMA", 4, '"pr_number": 42', ERROR),
    ("pipeline/sub-issues/42.json", "pipeline", "SCHEMA", 4, '"43"', ERROR),
    ("pipeline/opaque-not-object/42.json", "pipeline", "SCHEMA", 4, '"tokens": "none"', ERROR),
    ("pipeline/not-json/42.json", "pipeline", "JSON", 3, '"current_phase": "building",', ERROR),
    # state files with gitst-defined shapes
    ("other/live-session.json", "live-session", "SCHEMA", 3, '"pid": "47281"', ERROR),
    ("other/live-session.json", "live-session", "TIMESTAMP", 4, '"updated_at": "yesterday"', ERROR),
    ("other/watch-list.json", "watch-list", "SCHEMA", 5, '"forty-three"', ERROR),
    ("other/lock.json", "lock", "SCHEMA", 4, '"token": 0', ERROR),
    ("other/active-chat.json", "active-chat", "SCHEMA", 1, "{", ERROR),
    ("other/active-worktree.json", "active-worktree", "SCHEMA", 3, '"issue": "../etc"', ERROR),
    # the rest of seed 001's store: deliberations, session snapshots, circuit breakers (docs/store.md)
    ("deliberation/missing-role.json", "deliberation", "SCHEMA", 1, "{", ERROR),
    ("deliberation/timestamp.json", "deliberation", "TIMESTAMP", 3, '"timestamp": "2026-04-10 13:01"', ERROR),
    ("deliberation/issue-number.json", "deliberation", "SCHEMA", 9, '"issue": "#41"', ERROR),
    ("deliberation/response-type.json", "deliberation", "SCHEMA", 5, '"response": 42', ERROR),
    ("deliberation/duration.json", "deliberation", "SCHEMA", 12, '"duration_ms": -1', ERROR),
    ("deliberation/tokens.json", "deliberation", "SCHEMA", 14, '"input": -5', ERROR),
    ("session-snapshot/missing-saved-at.json", "session-snapshot", "SCHEMA", 1, "{", ERROR),
    ("session-snapshot/session-id.json", "session-snapshot", "SCHEMA", 2, '"session_id": "../etc"', ERROR),
    ("session-snapshot/gotchas-not-a-list.json", "session-snapshot", "SCHEMA", 8, '"gotchas": "beware"', ERROR),
    ("session-snapshot/git-head.json", "session-snapshot", "SCHEMA", 11, '"head": "HEAD"', ERROR),
    ("session-snapshot/git-dirty.json", "session-snapshot", "SCHEMA", 12, '"dirty": -1', ERROR),
    ("session-snapshot/pipeline-issue.json", "session-snapshot", "SCHEMA", 15, "{", ERROR),
    ("circuit/state-enum.json", "circuit", "SCHEMA", 3, '"state": "tripped"', ERROR),
    ("circuit/failures.json", "circuit", "SCHEMA", 4, '"failures": -1', ERROR),
    ("circuit/service-name.json", "circuit", "SCHEMA", 2, '"service": "api..ollama"', ERROR),
    ("circuit/open-without-half-open-at.json", "circuit", "SCHEMA", 1, "{", ERROR),
    ("circuit/half-open-without-trial.json", "circuit", "SCHEMA", 7, '"trial": null', ERROR),
    ("circuit/closed-with-trial.json", "circuit", "SCHEMA", 7, '"trial": {', ERROR),
    ("circuit/timestamps.json", "circuit", "TIMESTAMP", 6, '"half_open_at": "in a minute"', ERROR),
    # SDLC state.json (seed 003)
    ("sdlc/phase-enum.json", "sdlc-state", "SDLC_ENUM", 4, '"phase": "SHIPPING"', ERROR),
    ("sdlc/phase-status-enum.json", "sdlc-state", "SDLC_ENUM", 5, '"phase_status": "paused"', ERROR),
    ("sdlc/issue-status-enum.json", "sdlc-state", "SDLC_ENUM", 34, '"status": "doing"', ERROR),
    ("sdlc/language-enum.json", "sdlc-state", "SDLC_ENUM", 8, '"checkout-api": "rust"', ERROR),
    ("sdlc/run-id-pattern.json", "sdlc-state", "SDLC_RUN_ID", 2, '"run_id": "checkout-v2"', ERROR),
    ("sdlc/run-id-date.json", "sdlc-state", "SDLC_RUN_ID", 2, '"run_id": "2026-02-30-checkout-v2"', ERROR),
    ("sdlc/timestamp-pattern.json", "sdlc-state", "TIMESTAMP", 56, '"updated_at": "March 4th"', ERROR),
    ("sdlc/timestamp-impossible.json", "sdlc-state", "TIMESTAMP", 77, '"ended_at": "2026-02-30T15:10:00Z"', ERROR),
    ("sdlc/issue-id.json", "sdlc-state", "SDLC_ISSUE_ID", 20, '"issues"', ERROR),
    ("sdlc/blocked-by-unknown.json", "sdlc-state", "SDLC_BLOCKED_BY", 50, '"ENG-999"', ERROR),
    ("sdlc/blocked-by-self.json", "sdlc-state", "SDLC_BLOCKED_BY", 50, '"ENG-103"', ERROR),
    ("sdlc/blocked-cycle.json", "sdlc-state", "SDLC_BLOCKED_CYCLE", 37, '"blocked_by"', ERROR),
    ("sdlc/blocker-not-done.json", "sdlc-state", "SDLC_BLOCKER_NOT_DONE", 46, '"status": "ready"', ERROR),
    ("sdlc/should-be-ready.json", "sdlc-state", "SDLC_SHOULD_BE_READY", 34, '"status": "blocked"', WARNING),
    ("sdlc/pr-shape.json", "sdlc-state", "SDLC_PR", 25, '"pr": "https://github.com/acme/checkout-api/pull/31"', ERROR),
    ("sdlc/pr-mismatch.json", "sdlc-state", "SDLC_PR_MISMATCH", 26, '"pr_number": 30', ERROR),
    ("sdlc/pr-half.json", "sdlc-state", "SDLC_PR_MISMATCH", 26, '"pr_number": 31', ERROR),
    ("sdlc/phase-order.json", "sdlc-state", "SDLC_PHASE_ORDER", 71, '"started_at": "2026-03-02T09:00:00Z"', ERROR),
    ("sdlc/phase-times.json", "sdlc-state", "SDLC_PHASE_TIMES", 68, '"duration_s": 60', ERROR),
    (
        "sdlc/phase-ends-before-start.json",
        "sdlc-state",
        "SDLC_PHASE_TIMES",
        77,
        '"ended_at": "2026-03-03T14:00:00Z"',
        ERROR,
    ),
    ("sdlc/phase-future.json", "sdlc-state", "SDLC_PHASE_FUTURE", 85, '"COMPLETED"', ERROR),
    ("sdlc/phase-open.json", "sdlc-state", "SDLC_PHASE_OPEN", 75, '"TRACKING"', ERROR),
    ("sdlc/unknown-issue.json", "sdlc-state", "SDLC_UNKNOWN_ISSUE", 91, '"issue": "ENG-777"', WARNING),
    (
        "sdlc/updated-at-stale.json",
        "sdlc-state",
        "SDLC_UPDATED_AT_STALE",
        104,
        '"started_at": "2026-03-05T09:00:00Z"',
        WARNING,
    ),
    ("sdlc/missing-required.json", "sdlc-state", "SCHEMA", 1, "{", ERROR),
    ("sdlc/not-json.json", "sdlc-state", "JSON", 4, '"phase_status"', ERROR),
]

# (directory under tests/fixtures/bad/sdlc-against holding old.json + new.json, code, line of new.json, text, severity)
TRANSITIONS = [
    ("phase-backwards", "SDLC_PHASE_BACKWARDS", 4, '"phase": "TRACKING"', ERROR),
    ("status-done-to-implementing", "SDLC_STATUS_TRANSITION", 24, '"status": "implementing"', ERROR),
    ("status-awaiting-to-implementing", "SDLC_STATUS_TRANSITION", 34, '"status": "implementing"', ERROR),
    ("updated-at-backwards", "SDLC_UPDATED_AT_BACKWARDS", 56, '"updated_at": "2026-03-04T16:00:00Z"', ERROR),
    ("not-refreshed", "SDLC_UPDATED_AT_NOT_REFRESHED", 56, '"updated_at"', ERROR),
    ("issue-dropped", "SDLC_ISSUE_DROPPED", 20, '"issues"', WARNING),
    ("run-changed", "SDLC_RUN_CHANGED", 2, '"run_id": "2026-03-05-checkout-v3"', WARNING),
]


def _assert_reported(diagnostics, path: Path, code: str, line, text, severity):
    matching = [d for d in diagnostics if d.code == code and d.line == line]
    assert matching, f"no {code} at line {line}; got {[(d.code, d.line, d.message) for d in diagnostics]}"
    assert all(d.severity == severity for d in matching)
    assert all(d.path == str(path) for d in diagnostics)
    if line is not None:
        assert text in path.read_text(encoding="utf-8").splitlines()[line - 1]


@pytest.mark.parametrize("fixture,kind,code,line,text,severity", CASES, ids=[f"{c[2]}:{c[0]}" for c in CASES])
def test_rule_has_a_failing_fixture(fixture, kind, code, line, text, severity):
    path = BAD / fixture
    diagnostics = kinds.check(kind, path.read_bytes(), str(path))
    _assert_reported(diagnostics, path, code, line, text, severity)


@pytest.mark.parametrize("name,code,line,text,severity", TRANSITIONS, ids=[t[0] for t in TRANSITIONS])
def test_transition_rule_has_a_failing_fixture(name, code, line, text, severity):
    directory = BAD / "sdlc-against" / name
    new = directory / "new.json"
    old = (directory / "old.json").read_bytes()
    assert kinds.check("sdlc-state", old, "old.json") == []  # the older version itself is fine
    _assert_reported(
        kinds.check("sdlc-state", new.read_bytes(), str(new), against=old), new, code, line, text, severity
    )
    # Without --against the same file has no transition diagnostics.
    assert not [d for d in kinds.check("sdlc-state", new.read_bytes(), str(new)) if d.code == code]


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "good" / "sdlc-against").iterdir()))
def test_legal_transitions_pass(name):
    directory = FIXTURES / "good" / "sdlc-against" / name
    diagnostics = kinds.check(
        "sdlc-state", (directory / "new.json").read_bytes(), "new.json", against=(directory / "old.json").read_bytes()
    )
    assert diagnostics == []


def test_unknown_fields_pass_in_pipeline_files():
    path = FIXTURES / "good" / "pipeline" / "42.json"
    assert "future_field" in path.read_text() and "schema_version" in path.read_text()
    assert kinds.check("pipeline", path.read_bytes(), str(path)) == []


def test_no_parent_names_the_line_that_creates_the_parent_later():
    path = BAD / "aide-wire" / "no-parent.aide.jsonl"
    [diagnostic] = kinds.check("aide-wire", path.read_bytes(), str(path))
    assert "created later, on line 2" in diagnostic.message


def test_voice_of_exactly_100_characters_passes():
    text = "x" * 100
    data = f'{{"t":"voice","text":"{text}"}}\n'.encode()
    assert kinds.check("aide-wire", data, "v.aide.jsonl") == []
    data = f'{{"t":"voice","text":"{text + "x"}"}}\n'.encode()
    assert [d.code for d in kinds.check("aide-wire", data, "v.aide.jsonl")] == ["AIDE_VOICE_TOO_LONG"]


def test_every_problem_of_a_file_is_reported_not_just_the_first():
    path = BAD / "pipeline" / "sibling-type" / "42.json"
    codes = [(d.code, d.line) for d in kinds.check("pipeline", path.read_bytes(), str(path))]
    assert ("SCHEMA", 5) in codes and ("SCHEMA", 6) in codes


def test_schema_diagnostics_carry_a_column_and_pointer():
    path = BAD / "sdlc" / "phase-enum.json"
    [diagnostic] = kinds.check("sdlc-state", path.read_bytes(), str(path))
    line = path.read_text().splitlines()[3]
    assert line[diagnostic.col - 1 :].startswith('"SHIPPING"')
    assert diagnostic.to_dict()["pointer"] == "/phase"
    assert diagnostic.to_text().startswith(f"{path}:4:{diagnostic.col}: error[SDLC_ENUM]: /phase:")


def test_st_plan_must_extend_the_older_version():
    directory = BAD / "st-plan-against" / "rewrite"
    new = directory / "new.jsonl"
    old = (directory / "old.jsonl").read_bytes()
    _assert_reported(
        kinds.check("st-plan", new.read_bytes(), str(new), against=old),
        new,
        "ST_NOT_APPEND_ONLY",
        3,
        '"step":"Patch the parser"',
        ERROR,
    )
    good = FIXTURES / "good" / "st-plan" / "plan.jsonl"
    prefix = b"".join(good.read_bytes().splitlines(keepends=True)[:3])
    assert kinds.check("st-plan", good.read_bytes(), str(good), against=prefix) == []
    torn_prefix = prefix + b'{"v":3,"ts":"2026-'  # an older torn last line may be set aside
    assert kinds.check("st-plan", good.read_bytes(), str(good), against=torn_prefix) == []


def test_state_records_of_the_parallel_area_validate_with_their_schemas():
    from gitst.schemas import catalog as schemastore

    for kind, schema in (
        ("lock", "state-lock"),
        ("active-chat", "state-active-chat"),
        ("active-worktree", "state-active-worktree"),
    ):
        for example in schemastore.load(schema)["examples"]:
            import json

            assert kinds.check(kind, json.dumps(example, indent=2).encode(), f"{kind}.json") == []


def test_append_only_diagnostic_quotes_the_old_and_the_new_line():
    from gitst.plan.check import check_append_only

    older = b'{"a":1}\n{"b":2}\n{"c":3}\n'
    [rewritten] = check_append_only(b'{"a":1}\n{"b":"changed"}\n{"c":3}\n', older, "p.jsonl")
    assert rewritten.line == 2
    assert 'was: {"b":2}; now: {"b":"changed"}' in rewritten.message
    [truncated] = check_append_only(b'{"a":1}\n', older, "p.jsonl")
    assert truncated.line == 2
    assert 'was: {"b":2}; now: (missing)' in truncated.message
