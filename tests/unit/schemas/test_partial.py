"""A schema specialized for records of one kind (gitst.schemas.partial, catalog.specialized)
gives the whole schema's verdict on every record of that kind - through jsonschema-rs and
through the reference validator alike - and asks less."""

from __future__ import annotations

import json

import jsonschema
import orjson
import referencing
import referencing.jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.plan.store import build_checkpoint, build_event
from gitst.schemas import catalog
from gitst.schemas.partial import discriminator, specialize
from tests.unit.validate.strategies import json_values, mutated

TS = "2026-02-09T20:00:00Z"
ITEM = {"id": "st-1", "step": "Write", "status": "pending", "deps": [], "notes": "", "comments": []}
RECORDS = [
    build_event("init", 1, {}, ts=TS),
    build_event("upsert", 2, {"item": ITEM}, ts=TS),
    build_event("upsert_item", 2, {"item": {**ITEM, "deps": [{"id": "st-0", "type": "blocks"}]}}, ts=TS),
    build_event("replace", 3, {"items": [ITEM]}, ts=TS),
    build_event("replace_all", 3, {"items": []}, ts=TS),
    build_event("set_status", 4, {"id": "st-1", "status": "completed"}, ts=TS),
    build_event("set_deps", 5, {"id": "st-1", "deps": [{"id": "st-2", "type": "blocks"}]}, ts=TS),
    build_event("set_notes", 6, {"id": "st-1", "notes": "n"}, ts=TS),
    build_event("add_comment", 7, {"id": "st-1", "comment": {"ts": TS, "author": "a", "text": "t"}}, ts=TS),
    build_event("remove", 8, {"id": "st-1"}, ts=TS),
    build_checkpoint([ITEM], 8, ts=TS),
    {**build_event("set_status", 9, {"id": "st-1", "status": "done"}, ts=TS), "mutation": {"pid": 1, "x": 2}},
]
RECORDS = [orjson.loads(orjson.dumps(record)) for record in RECORDS]


def _known(record) -> tuple[tuple[str, str], ...] | None:
    """What the doctor derives from a record: its lane, and its op when that is a string."""
    if type(record) is not dict or type(record.get("lane")) is not str:
        return None
    op = record.get("op")
    return (("lane", record["lane"]), ("op", op)) if type(op) is str else (("lane", record["lane"]),)


def _reference(known: tuple) -> jsonschema.Draft202012Validator:
    resources = [
        (
            uri,
            referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT202012),
        )
        for uri, schema in ((s["$id"], s) for s in catalog._needed("st-record").values())
    ]
    registry = referencing.Registry().with_resources(resources)
    return jsonschema.Draft202012Validator(specialize(catalog.load("st-record"), dict(known)), registry=registry)


def _same(record) -> None:
    known = _known(record)
    if known is None:
        return
    whole = catalog.validator("st-record").is_valid(record)
    assert catalog.specialized("st-record", known)(record) == whole, (known, record)
    assert _reference(known).is_valid(record) == whole, (known, record)


def test_every_kind_of_record_gets_the_whole_schemas_verdict():
    valid = 0
    for record in RECORDS:
        _same(record)
        valid += catalog.validator("st-record").is_valid(record)
    assert valid == len(RECORDS) - 1  # the alias "done" is not a stored status


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(RECORDS, max_mutations=3))
def test_a_record_near_the_edge_gets_the_whole_schemas_verdict(record):
    _same(record)


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.fixed_dictionaries(
        {"lane": st.sampled_from(["event", "checkpoint", "other"]), "op": st.one_of(st.text(max_size=12), json_values)},
        optional={"v": st.just(3), "ts": st.just(TS), "seq": st.integers(), "items": json_values, "id": json_values},
    )
)
def test_any_lane_and_op_get_the_whole_schemas_verdict(record):
    _same(record)


def test_the_specialized_schema_decides_every_if_its_fields_answer():
    schema = specialize(catalog.load("st-record"), {"lane": "event", "op": "set_status"})
    text = json.dumps(schema["allOf"])
    assert '"if"' not in text  # every lane and op condition was decided
    assert '["id", "status"]' in text  # set_status's branch is kept ...
    for other in ('"deps"', '"notes"', '"comment"', '"item"', '"items"'):
        assert other not in text  # ... and no other op's or lane's
    checkpoint = json.dumps(specialize(catalog.load("st-record"), {"lane": "checkpoint"})["allOf"])
    assert '"items"' in checkpoint
    assert '"op"' not in checkpoint


def test_only_one_field_questions_are_decided():
    assert discriminator({"properties": {"op": {"const": "a"}}, "required": ["op"]}) == ("op", frozenset({"a"}))
    assert discriminator({"properties": {"op": {"enum": ["a", "b"]}}, "required": ["op"], "title": "t"}) == (
        "op",
        frozenset({"a", "b"}),
    )
    for other in (
        {"properties": {"op": {"const": "a"}}},  # not required: a missing op passes too
        {"properties": {"op": {"const": 3}}, "required": ["op"]},
        {"properties": {"op": {"const": "a", "type": "string"}}, "required": ["op"]},
        {"properties": {"op": {"const": "a"}, "x": {}}, "required": ["op"]},
        {"properties": {"op": {"const": "a"}}, "required": ["op"], "type": "object"},
        {"properties": {"op": {"enum": ["a", 1]}}, "required": ["op"]},
    ):
        assert discriminator(other) is None, other
    # a condition on a field that is not known stays in the schema
    kept = specialize({"if": {"properties": {"x": {"const": "a"}}, "required": ["x"]}, "then": False}, {"op": "a"})
    assert "if" in kept
    # an anchor or a pointer at nothing is left for the validator, never read as the root
    for ref in ("#anchor", "#/$defs/missing"):
        assert specialize({"$defs": {}, "$ref": ref, "type": "object"}, {"op": "a"})["$ref"] == ref
    # a $ref cycle on the instance is left as a reference, not inlined for ever
    looped = specialize({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, {"op": "a"})
    assert "$ref" in json.dumps(looped)
