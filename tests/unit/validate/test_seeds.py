"""Every example record of the seeds, extracted under tests/fixtures/seeds/, validates:
each record against its schema (fast and reference validators), each file as its kind."""

from __future__ import annotations

import json

import pytest

from gitst.aide.stream import replay
from gitst.schemas import catalog as schemastore
from gitst.validate import detect, kinds
from tests.reference_schema import reference_validator
from tests.support import FIXTURES, jsonl

SEEDS = FIXTURES / "seeds"
WIRE_LINES = [line for line in (SEEDS / "002" / "wire-examples.jsonl").read_text().splitlines() if line]


def _both_accept(schema: str, instance) -> None:
    assert schemastore.validator(schema).is_valid(instance), schemastore.validator(schema).errors(instance)
    assert reference_validator(schema).is_valid(instance)


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
    data = jsonl(*records)
    assert kinds.check("st-plan", data, ".step/st-plan.jsonl") == []


# --- seed 001: the rest of the store ------------------------------------------------------------

STATE = SEEDS / "001" / "state"
# Seed 001's field lists, as it words them.
DELIBERATION_FIELDS = [
    "role",
    "timestamp",
    "status",
    "response",
    "model",
    "endpoint",
    "pr",
    "issue",
    "phase",
    "command",
    "duration_ms",
    "tokens",
]
SNAPSHOT_FIELDS = [
    "completed",
    "decisions",
    "gotchas",
    "git",
    "pipeline",
]  # work, decisions, gotchas, git state, pipeline


def test_every_file_of_the_seed_001_store_is_found_by_its_path_and_validates():
    files = sorted(p for p in STATE.rglob("*") if p.is_file())
    found = {}
    for path in files:
        kind = detect.kind_for_path("state/" + path.relative_to(STATE).as_posix())
        assert kind is not None, path
        assert kinds.check(kind, path.read_bytes(), str(path)) == [], path
        _both_accept(kinds.get(kind).schema, json.loads(path.read_text()))
        found.setdefault(kind, []).append(path.name)
    # every directory of the store the seed names, and its two UI files
    assert set(found) == {
        "pipeline",
        "deliberation",
        "session-snapshot",
        "lock",
        "circuit",
        "active-chat",
        "active-worktree",
        "live-session",
        "watch-list",
    }
    # the seed's own examples of names: one circuit file per service, `anonymous` without a session id
    assert sorted(found["circuit"]) == ["api-ollama-com.json", "codex.json", "gemini.json"]
    assert "anonymous.json" in found["session-snapshot"]


def test_the_seed_001_field_lists_are_what_the_records_hold():
    for path in (STATE / "deliberations").glob("*.json"):
        record = json.loads(path.read_text())
        assert [name for name in DELIBERATION_FIELDS if name not in record] == [], path
    schema = schemastore.load("state-deliberation")
    assert set(DELIBERATION_FIELDS) <= set(schema["properties"])
    assert set(SNAPSHOT_FIELDS) <= set(schemastore.load("state-session-snapshot")["properties"])
    snapshot = json.loads((STATE / "session-snapshots" / "9f1c2d4e-agent-a.json").read_text())
    assert [name for name in SNAPSHOT_FIELDS if not snapshot.get(name)] == []
    assert {"branch", "head", "dirty"} <= set(snapshot["git"])
    # a lock has the seed's default TTL
    assert json.loads((STATE / "locks" / "issue-7.json").read_text())["ttl"] == 1800


@pytest.mark.parametrize("state", ["closed", "open", "half_open"])
def test_each_circuit_state_of_the_seed_validates(state):
    examples = {e["state"]: e for e in schemastore.load("state-circuit")["examples"]}
    _both_accept("state-circuit", examples[state])


# --- seed 003: every field of the template, every value of its enumerations ------------------------

TEMPLATE = json.loads((SEEDS / "003" / "template.json").read_text())
STATE_JSON = json.loads((SEEDS / "003" / "state.json").read_text())
PLACEHOLDERS = {"{repo_name}", "{LINEAR_ID}", "{PHASE_NAME}"}


def _template_paths(node, prefix=()):
    """Every field path of the seed's template; placeholder keys (``{repo_name}``) as ``*``."""
    if isinstance(node, dict):
        for key, value in node.items():
            part = "*" if key in PLACEHOLDERS else key
            yield (*prefix, part)
            yield from _template_paths(value, (*prefix, part))
    elif isinstance(node, list):
        for value in node:
            yield from _template_paths(value, (*prefix, "*"))


def _present(node, path) -> bool:
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head == "*":
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        return any(_present(child, rest) for child in children)
    return isinstance(node, dict) and head in node and _present(node[head], rest)


def test_the_seed_003_state_json_holds_every_field_of_the_template():
    paths = list(_template_paths(TEMPLATE))
    assert len(paths) > 40
    missing = ["/".join(p) for p in paths if not _present(STATE_JSON, p)]
    assert missing == []


def _enum(text: str) -> list[str]:
    """``"BOOTSTRAP | DESIGN | …"`` (the template's way of listing values) as a list."""
    return [value.strip() for value in text.split("|")]


SEED_ENUMS = {
    "phase": _enum(TEMPLATE["phase"]),
    "phase_status": _enum(TEMPLATE["phase_status"]),
    "status": _enum(TEMPLATE["issues"]["{LINEAR_ID}"]["status"]),
    "language": _enum(TEMPLATE["bootstrap"]["languages"]["{repo_name}"]),
}


def test_the_seed_003_enumerations_are_read_from_the_template():
    assert SEED_ENUMS["phase"] == ["BOOTSTRAP", "DESIGN", "PLANNING", "TRACKING", "EXECUTING", "COMPLETED"]
    assert SEED_ENUMS["phase_status"] == ["in_progress", "awaiting_approval", "awaiting_human", "completed"]
    assert len(SEED_ENUMS["status"]) == 7 and SEED_ENUMS["language"] == ["go", "typescript", "python"]


def _minimal(phase="BOOTSTRAP", phase_status="in_progress") -> dict:
    return {
        "run_id": "2026-03-02-checkout-v2",
        "phase": phase,
        "phase_status": phase_status,
        "updated_at": "2026-03-04T16:20:00Z",
    }


@pytest.mark.parametrize("phase", SEED_ENUMS["phase"])
@pytest.mark.parametrize("phase_status", SEED_ENUMS["phase_status"])
def test_every_phase_and_phase_status_of_seed_003_validates(phase, phase_status):
    state = _minimal(phase, phase_status)
    _both_accept("sdlc-state", state)
    assert kinds.check("sdlc-state", json.dumps(state).encode(), "state.json") == []


@pytest.mark.parametrize("status", SEED_ENUMS["status"])
def test_every_issue_status_of_seed_003_validates(status):
    state = _minimal("EXECUTING")
    state["issues"] = {
        "ENG-1": {"repo": "api", "title": "blocker", "status": "done", "pr": None, "pr_number": None, "blocked_by": []},
        "ENG-2": {"repo": "api", "title": "it", "status": status, "pr": None, "pr_number": None, "blocked_by": []},
    }
    if status == "blocked":  # rule 5: blocked only while a blocker is not done
        state["issues"]["ENG-1"]["status"] = "implementing"
        state["issues"]["ENG-2"]["blocked_by"] = ["ENG-1"]
    _both_accept("sdlc-state", state)
    assert kinds.check("sdlc-state", json.dumps(state).encode(), "state.json") == []


@pytest.mark.parametrize("language", SEED_ENUMS["language"])
def test_every_language_of_seed_003_validates(language):
    state = _minimal()
    state["bootstrap"] = {"languages": {"api": language}, "docs_generated": {"api": "acme/api#1"}}
    _both_accept("sdlc-state", state)
