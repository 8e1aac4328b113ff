"""Every example record of the seeds, extracted under tests/fixtures/seeds/, validates:
each record against its schema (fast and reference validators), each file as its kind."""

from __future__ import annotations

import json

import pytest

from gitst.aide.stream import replay
from gitst.schemas import catalog as schemastore
from gitst.validate import detect, kinds
from tests.support import FIXTURES

SEEDS = FIXTURES / "seeds"
WIRE_LINES = [line for line in (SEEDS / "002" / "wire-examples.jsonl").read_text().splitlines() if line]


def _both_accept(schema: str, instance) -> None:
    assert schemastore.validator(schema).is_valid(instance), schemastore.validator(schema).errors(instance)
    assert schemastore.reference_validator(schema).is_valid(instance)


def test_seed_002_has_every_primitive_among_its_examples():
    types = {json.loads(line)["t"] for line in WIRE_LINES}
    assert len(types) == 17
    assert len(WIRE_LINES) == 40  # every `{"t":...}` line of seed 002


@pytest.mark.parametrize("line", WIRE_LINES)
def test_every_seed_002_wire_line_validates_as_wire_and_as_its_primitive(line):
    record = json.loads(line)
    _both_accept("aide-wire", record)
    _both_accept("aide-" + record["t"].replace(".", "-"), record)


@pytest.mark.parametrize("name", ["full-examples.aide.jsonl", "batch.aide.jsonl"])
def test_seed_002_streams_replay_without_a_rejected_line(name):
    path = SEEDS / "002" / name
    assert kinds.check("aide-wire", path.read_bytes(), str(path)) == []


def test_seed_002_full_examples_build_the_graduation_page():
    state = replay((SEEDS / "002" / "full-examples.aide.jsonl").read_bytes(), "x").state
    [page] = state.tree()
    assert page["id"] == "page" and page["props"]["title"] == "Sophie's Graduation 2026"
    assert [c["id"] for c in page["children"]] == ["ceremony", "guests", "food", "travel", "todos"]
    guests = page["children"][1]
    assert [g["id"] for g in guests["children"]] == ["guest_linda", "guest_steve"]
    assert guests["children"][0]["effective_display"] == "table"  # inherited from the parent
    assert list(state.links) == [("guest_linda", "bringing", "food_potato_salad")]
    assert state.meta["title"] == "Sophie's Graduation 2026" and state.style["font_family"] == "Inter"
    assert [e["tier"] for e in state.escalations] == ["L4"]


def test_seed_002_batch_moves_both_dishes_under_the_new_list():
    state = replay((SEEDS / "002" / "batch.aide.jsonl").read_bytes(), "x").state
    assert state.entities["food_mains"].children == ["food_ribs", "food_chicken"]
    assert state.entities["food"].children == ["food_mains"]


def test_seed_002_envelope_validates_and_replays():
    path = SEEDS / "002" / "seed.aide.events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    seed_event = events[-1]
    assert seed_event["id"] == "evt_20260522_007" and seed_event["payload"]["props"]["name"] == "Aunt Linda"
    for event in events:
        _both_accept("aide-envelope", event)
    assert kinds.check("aide-envelope", path.read_bytes(), str(path)) == []
    assert replay(path.read_bytes(), "x", "aide-envelope").state.entities["guest_linda"].parent == "guests"


def test_seed_001_pipeline_example_validates():
    path = SEEDS / "001" / "state" / "pipeline" / "42.json"
    document = json.loads(path.read_text())
    _both_accept("pipeline-file", document)
    _both_accept("pipeline-state", document["42"])
    assert detect.kind_for_path("state/pipeline/42.json") == "pipeline"
    assert kinds.check("pipeline", path.read_bytes(), str(path)) == []


def test_seed_003_state_json_validates():
    path = SEEDS / "003" / "state.json"
    _both_accept("sdlc-state", json.loads(path.read_text()))
    assert kinds.check("sdlc-state", path.read_bytes(), str(path)) == []


def test_seed_000_records_and_item_validate():
    records = [json.loads(line) for line in (SEEDS / "000" / "records.jsonl").read_text().splitlines()]
    assert [r["lane"] for r in records] == ["event", "checkpoint", "event"]
    for record in records:
        _both_accept("st-record", record)
    _both_accept("st-mutation", records[2]["mutation"])
    item = json.loads((SEEDS / "000" / "item.json").read_text())
    _both_accept("st-item", item)
    _both_accept("st-edge", item["deps"][0])
    _both_accept("st-comment", item["comments"][0])
    assert detect.kind_for_path(".step/st-plan.jsonl") == "st-plan"


def test_a_plan_built_from_the_seed_000_item_validates_as_a_file():
    item = json.loads((SEEDS / "000" / "item.json").read_text())
    ts = "2026-02-09T20:00:00Z"
    records = [
        {"v": 3, "ts": ts, "seq": 1, "lane": "event", "op": "init"},
        {
            "v": 3,
            "ts": ts,
            "seq": 2,
            "lane": "event",
            "op": "upsert",
            "item": {
                "id": "st-002",
                "step": "Write tests",
                "status": "pending",
                "deps": [],
                "notes": "",
                "comments": [],
            },
        },
        {"v": 3, "ts": ts, "seq": 3, "lane": "event", "op": "upsert", "item": item},
        {
            "v": 3,
            "ts": ts,
            "seq": 4,
            "lane": "event",
            "op": "set_status",
            "id": "st-002",
            "status": "in_progress",
            "mutation": {"allow_multiple_in_progress": False, "actor": "tk", "pid": 12345},
        },
    ]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    assert kinds.check("st-plan", data, ".step/st-plan.jsonl") == []
