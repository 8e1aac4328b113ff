"""The schema compiled to Python (gitst.schemas.compiled): what it refuses, what JSON equality
means to it, references, and the choice catalog.verdicts makes. Its verdicts on every shipped
schema are held equal to jsonschema-rs's and python-jsonschema's in test_differential.py."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitst.schemas import catalog
from gitst.schemas.compiled import Unsupported, compile_schema
from tests.unit.validate.strategies import json_values

BASE = "https://example.test/s.json"


def _compile(schema: dict, *others: dict):
    documents = {BASE: {"$id": BASE, **schema}}
    documents.update({other["$id"]: other for other in others})
    return compile_schema(BASE, documents)


@pytest.mark.parametrize(
    "schema",
    [
        {"propertyNames": {"pattern": "^x"}},
        {"patternProperties": {"^x": True}},
        {"patternProperties": {"^x": True}, "additionalProperties": False},  # which members are "additional"
        {"uniqueItems": True},
        {"items": [{"type": "string"}]},  # the array form of drafts before 2020-12
        {"$ref": "other.json"},  # a document not given
        {"$ref": "#/$defs/missing"},
        {"$ref": "#anchor"},
        {"properties": {"a": {"$id": "https://example.test/nested.json"}}},
        {"type": "date"},
        {"minLength": 1.5},
        {"requird": ["a"]},  # a typo is refused too: nothing is silently ignored
    ],
)
def test_a_keyword_outside_the_subset_is_refused(schema):
    with pytest.raises(Unsupported):
        _compile(schema)


def test_verdicts_fall_back_to_jsonschema_rs_for_a_schema_that_does_not_compile():
    refused = [name for name in catalog.names() if catalog.compiled(name) is None]
    assert refused, "some shipped schema uses a keyword outside the subset (uniqueItems, patternProperties)"
    name = refused[0]
    assert catalog.verdicts(name, few=True) == catalog.validator(name).is_valid
    assert catalog.verdicts("st-record", few=True) is catalog.compiled("st-record")
    assert catalog.verdicts("st-record", few=False) == catalog.validator("st-record").is_valid


def test_annotations_never_change_a_verdict():
    check = _compile({"title": "t", "description": "d", "x-gitst-code": "C", "format": "date-time", "type": "string"})
    assert check("not a date")
    assert not check(3)


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        ({"const": 3}, [3, 3.0], [True, "3", [3], 3.5]),
        ({"const": True}, [True], [1, 1.0, "true"]),
        ({"const": [1, {"a": False}]}, [[1.0, {"a": False}]], [[True, {"a": False}], [1, {"a": 0}], [1]]),
        ({"enum": [1, "a", None]}, [1, 1.0, "a", None], [True, False, "b", 0]),
        ({"enum": ["a", "b"]}, ["a", "b"], ["c", 1, None, ["a"]]),
        ({"type": "integer"}, [1, -5, 2.0, 10**30], [1.5, True, "1", None]),
        ({"type": ["string", "null"]}, ["", None], [0, False, []]),
        ({"minimum": 0, "maximum": 2**53 - 1}, [0, 2**53 - 1, "x", True], [-1, 2**53, 2**70, -0.5]),
        ({"exclusiveMinimum": 0}, [1, 0.1], [0, -1]),
        ({"minLength": 2, "maxLength": 3}, ["ab", "\u00e9\u00e9", 5], ["a", "abcd"]),
        ({"minItems": 1, "maxItems": 1}, [[0], {}], [[], [1, 2]]),
        ({"required": ["a"], "properties": {"a": {"type": "string"}}}, [{"a": "x"}, 5], [{}, {"a": 1}]),
        ({"items": {"type": "integer"}}, [[], [1, 2], "x"], [[1, "2"]]),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [-1, "x"], [1]),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, [1, None], ["x"]),
        ({"not": {"type": "string"}}, [1], ["x"]),
        ({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}}, ["ab", 3], ["a", 3.5]),
        ({"then": {"type": "string"}}, [1], []),  # then without if: no effect
        ({"pattern": "^[0-9]+(?!\\n)$"}, ["12", 12], ["12\n", "x"]),
        ({"additionalProperties": False}, [{}, [1], "x"], [{"a": 1}]),
        (
            {"properties": {"a": True}, "additionalProperties": {"type": "integer"}},
            [{"a": "x"}, {"a": "x", "b": 1}, {"b": 2.0}],
            [{"b": "1"}, {"a": 1, "c": None}],
        ),
        (
            {"minProperties": 1, "maxProperties": 2},
            [{"a": 1}, {"a": 1, "b": 2}, [], "x"],
            [{}, {"a": 1, "b": 2, "c": 3}],
        ),
        (
            {"if": {"properties": {"op": {"const": "a"}}, "required": ["op"]}, "then": {"required": ["x"]}},
            [{"op": "b"}, {"op": "a", "x": 1}, {}, "not an object"],
            [{"op": "a"}],
        ),
        (
            {"if": {"properties": {"op": {"enum": ["a", "b"]}}, "required": ["op"]}, "then": {"required": ["x"]}},
            [{"op": "c"}, {"op": ["a"]}, {"op": "b", "x": 1}],
            [{"op": "a"}, {"op": "b"}],
        ),
    ],
)
def test_verdicts_are_draft_2020_12s(schema, valid, invalid):
    check = _compile(schema)
    reference = jsonschema.Draft202012Validator(schema)
    for instance in valid:
        assert check(instance), instance
        assert reference.is_valid(instance), instance
    for instance in invalid:
        assert not check(instance), instance
        assert not reference.is_valid(instance), instance


TREE = {"type": "object", "required": ["name"], "properties": {"children": {"items": {"$ref": "#"}}}}
OTHER = {"$id": "https://example.test/dir/leaf.json", "$defs": {"n": {"type": "integer", "minimum": 0}}}


def test_references_within_a_document_to_itself_and_to_another_document():
    check = _compile(TREE)
    assert check({"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]})
    assert not check({"name": "a", "children": [{"name": "b", "children": [{}]}]})
    relative = _compile({"$ref": "dir/leaf.json#/$defs/n"}, OTHER)
    assert relative(3)
    assert not relative(-1)


@settings(max_examples=300, deadline=None, database=None)
@given(json_values)
def test_a_recursive_schema_gets_the_reference_verdict(instance):
    schema = {"$id": BASE, **TREE}
    assert _compile(TREE)(instance) == jsonschema.Draft202012Validator(schema).is_valid(instance)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(json_values, st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_json_equality_is_the_reference_validators(value):
    for target in (3, 3.0, True, None, "3", [1, True], {"a": [0.0]}):
        schema = {"const": target}
        assert _compile(schema)(value) == jsonschema.Draft202012Validator(schema).is_valid(value)


def test_a_str_subclass_is_the_string_it_writes():
    """A lock record about to be written holds a LockName (a str subclass): every string
    keyword — type, pattern, not-pattern, length, const, enum — judges it as its JSON string,
    so the record is checked once, never again after a JSON round trip."""
    from gitst.schemas.catalog import verdicts
    from gitst.sessions.locks import LockName

    stamp = "2026-11-26T09:30:13.442Z"
    owner = {"session": "a", "pid": 1, "host": "vm", "actor": "x", "pid_start": 1, "process": "bash"}
    record = {"version": 1, "resource": LockName("issue-st-002"), "token": 1, "owner": owner, "ttl": 1800.0}
    record |= {"acquired_at": stamp, "renewed_at": stamp, "expires_at": stamp}
    assert verdicts("state-lock", few=True)(record)
    assert verdicts("state-lock", few=True)({**record, "resource": "issue-st-002"})
    assert not verdicts("state-lock", few=True)({**record, "resource": str.__new__(LockName, "a..b")})
