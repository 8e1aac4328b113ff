"""The pure parts: statuses, derived fields, update_plan translation, the reducer's ops and
error codes, and the st-* schemas."""

from __future__ import annotations

import json

import pytest

from gitst.core.errors import UsageError
from gitst.plan import model
from gitst.plan.reducer import PlanState, ReplayError, replay
from gitst.schemas.catalog import load, schema_text, validator
from tests.reference_schema import reference_validator

ST_SCHEMAS = ("st-record", "st-item", "st-edge", "st-comment", "st-mutation")


def _item(item_id, status="pending", deps=()):
    return model.normalize_item({"id": item_id, "step": f"Step {item_id}", "status": status, "deps": list(deps)})


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("pending", "pending"),
        ("open", "pending"),
        ("TODO", "pending"),
        ("doing", "in_progress"),
        ("In Progress", "in_progress"),
        ("in-progress", "in_progress"),
        ("done", "completed"),
        ("Closed", "completed"),
        ("cancelled", "canceled"),
        ("on hold", "deferred"),
        ("blocked", "blocked"),
    ],
)
def test_normalize_status_aliases(raw, expected):
    assert model.normalize_status(raw) == expected


def test_normalize_status_rejects_unknown_with_exit_2():
    with pytest.raises(UsageError) as info:
        model.normalize_status("someday")
    assert info.value.exit_code == 2
    assert info.value.message == (
        "invalid status 'someday'; expected one of: pending, in_progress, completed, blocked, deferred, canceled"
    )


def test_derive_and_update_plan_translation():
    items = [
        _item("a", "completed"),
        _item("b", "in_progress", ["a"]),
        _item("c", "in_progress", ["b", "a", "b"]),
        _item("d", "blocked", ["zz"]),
        _item("e", "deferred", ["b"]),
        _item("f", "canceled"),
        _item("g", "pending", ["zz"]),
    ]
    rows = model.derive(items)
    assert [(r["id"], r["dep_state"], r["waiting_on"]) for r in rows] == [
        ("a", "n/a", []),
        ("b", "ready", []),
        ("c", "waiting_on_deps", ["b"]),
        ("d", "blocked_manual", ["zz"]),
        ("e", "n/a", ["b"]),
        ("f", "n/a", []),
        ("g", "waiting_on_deps", ["zz"]),
    ]
    assert items[0] == _item("a", "completed")  # derive copies
    assert (
        model.to_update_plan(items)
        == model.to_update_plan(rows)
        == {
            "plan": [
                {"step": "Step a", "status": "completed"},
                {"step": "Step b", "status": "in_progress"},
                {"step": "Step c", "status": "pending"},  # the guardrail: waiting on deps is never in_progress
                {"step": "Step d", "status": "pending"},
                {"step": "Step e", "status": "pending"},
                {"step": "Step f", "status": "pending"},
                {"step": "Step g", "status": "pending"},
            ]
        }
    )
    assert [r["id"] for r in model.ready_items(items)] == []
    assert [r["id"] for r in model.blocked_items(items)] == ["d", "g"]


def test_next_id():
    assert model.next_id([]) == "st-001"
    assert model.next_id(["st-009", "kt-010", "x-99", "ST-002"]) == "st-011"
    assert model.next_id(["st-1234"]) == "st-1235"


def _event(seq, op, **fields):
    return {"v": 3, "ts": "2026-02-09T20:00:00Z", "seq": seq, "lane": "event", "op": op, **fields}


def test_replay_handles_every_op_and_the_compatibility_names():
    records = [
        _event(1, "init"),
        _event(2, "replace_all", items=[{"id": "a", "step": "A", "deps": []}, {"id": "b", "step": "B", "deps": ["a"]}]),
        _event(3, "upsert_item", item={"id": "c", "step": "C", "deps": [], "extra": 1}),
        _event(4, "set_status", id="a", status="done"),
        _event(5, "set_deps", id="c", deps=[{"id": "a"}, "a"]),
        _event(6, "set_notes", id="c", notes=" kept "),
        _event(7, "add_comment", id="c", comment={"ts": "t", "author": "me", "text": "hi"}),
        _event(8, "remove", id="b"),
        _event(9, "remove", id="never-there"),
        {"v": 3, "ts": "2026-02-09T20:00:00Z", "seq": 9, "lane": "checkpoint", "items": []},
        _event(10, "upsert", item={"id": "d", "step": "D", "deps": []}),
    ]
    events_only = replay(records, events_only=True)
    assert [(i["id"], i["status"]) for i in events_only.items()] == [
        ("a", "completed"),
        ("c", "pending"),
        ("d", "pending"),
    ]
    c = events_only.get("c")
    assert c["deps"] == [{"id": "a", "type": "blocks"}] and c["notes"] == " kept " and c["extra"] == 1
    assert c["comments"] == [{"ts": "t", "author": "me", "text": "hi"}]
    assert replay(records).ids() == ["d"]  # the (empty) checkpoint resets a normal replay
    assert replay(records[:3]).get("a") == replay(records[:3]).copy().get("a")


@pytest.mark.parametrize(
    "record,code",
    [
        (_event(2, "explode"), "ST_REPLAY_UNKNOWN_OP"),
        (_event(2, "set_status", id="nope", status="done"), "ST_REPLAY_UNKNOWN_ID"),
        (_event(2, "set_status", id="a", status="someday"), "ST_REPLAY_BAD_STATUS"),
        (_event(2, "set_status", id="a"), "ST_REPLAY_BAD_STATUS"),
        (_event(2, "set_deps", id="a", deps="a,b"), "ST_REPLAY_BAD_DEPS"),
        (_event(2, "set_notes", id="a", notes=5), "ST_REPLAY_BAD_NOTES"),
        (_event(2, "add_comment", id="a", comment={"ts": "t", "author": "", "text": "x"}), "ST_REPLAY_BAD_COMMENT"),
        (_event(2, "upsert", item={"id": "x"}), "ST_REPLAY_BAD_ITEM"),
        (_event(2, "replace", items=[{"id": "x", "step": "X"}, {"id": "x", "step": "Y"}]), "ST_REPLAY_DUPLICATE_ID"),
        (_event(2, "set_notes", id="", notes=""), "ST_REPLAY_BAD_ITEM"),
        ({**_event(2, "init"), "v": 2}, "SCHEMA"),
        ({**_event(2, "init"), "lane": "side"}, "SCHEMA"),
    ],
)
def test_replay_errors_have_stable_codes(record, code):
    start = PlanState([_item("a")])
    with pytest.raises(ReplayError) as info:
        replay([_event(1, "init"), record], start=start)
    assert info.value.code == code and info.value.index == 1 and info.value.message


def test_the_reducer_never_changes_an_item_in_place():
    state = PlanState([_item("a")])
    original = state.get("a")
    snapshot = json.loads(json.dumps(original))
    copy = state.copy()
    for record in (
        _event(2, "set_status", id="a", status="blocked"),
        _event(3, "set_deps", id="a", deps=["b"]),
        _event(4, "set_notes", id="a", notes="n"),
        _event(5, "add_comment", id="a", comment={"ts": "t", "author": "x", "text": "y"}),
    ):
        copy.apply(record)
    assert original == snapshot and state.get("a") is original
    assert copy.get("a")["status"] == "blocked"


@pytest.mark.parametrize("name", ST_SCHEMAS)
def test_st_schemas_follow_the_conventions(name):
    schema = load(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://gitst.dev/schemas/{name}.schema.json"
    assert schema["title"] and schema["description"] and schema["examples"]
    assert b'"format"' not in schema_text(name)
    for example in schema["examples"]:
        assert validator(name).is_valid(example) and reference_validator(name).is_valid(example)


def test_fast_and_reference_validators_agree_on_st_records():
    cases = [
        _event(1, "init"),
        _event(2, "upsert", item=_item("a")),
        _event(2, "upsert"),
        _event(2, "set_status", id="a"),
        _event(2, "set_status", id="a", status="done"),
        _event(-1, "init"),
        {**_event(1, "init"), "ts": "2026-02-09"},
        {"v": 3, "ts": "2026-02-09T20:00:00+00:00", "seq": 1, "lane": "checkpoint", "items": [_item("a")]},
        {"v": 3, "ts": "2026-02-09T20:00:00Z", "seq": 1, "lane": "checkpoint"},
        _event(3, "add_comment", id="a", comment={"ts": "x", "author": "y", "text": " "}),
        _event(3, "set_deps", id="a", deps=[{"id": "b", "type": "Bad"}]),
        {**_event(1, "init"), "mutation": {"pid": "12"}},
        {**_event(1, "init"), "x-extra": [1]},
    ]
    verdicts = [validator("st-record").is_valid(c) for c in cases]
    assert verdicts == [reference_validator("st-record").is_valid(c) for c in cases]
    assert verdicts == [True, True, False, False, False, False, False, True, False, False, False, False, True]
