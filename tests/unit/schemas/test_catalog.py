"""The shipped schemas: well-formed 2020-12, self-describing, written so that the fast and
the reference validator cannot disagree, and holding the seeds' examples."""

from __future__ import annotations

import re

import jsonschema
import pytest

from gitst.schemas import catalog as schemastore
from gitst.validate import detect, kinds
from tests.reference_schema import reference_validator
from tests.support import REPO_ROOT
from tests.unit.validate.strategies import schema_patterns as _patterns
from tests.unit.validate.strategies import walk as _walk

NAMES = schemastore.names()
VALIDATE_SCHEMAS = [
    "common",
    "pipeline-file",
    "pipeline-state",
    "live-session",
    "watch-list",
    "aide-common",
    "aide-wire",
    "aide-envelope",
    "sdlc-state",
    "state-deliberation",
    "state-session-snapshot",
    "state-circuit",
] + [
    f"aide-{t}"
    for t in (
        "entity-create",
        "entity-update",
        "entity-remove",
        "entity-move",
        "entity-reorder",
        "rel-set",
        "rel-remove",
        "rel-constrain",
        "style-set",
        "style-entity",
        "meta-set",
        "meta-annotate",
        "meta-constrain",
        "escalate",
        "voice",
        "batch-start",
        "batch-end",
    )
]


def test_every_validate_schema_is_shipped():
    assert set(VALIDATE_SCHEMAS) <= set(NAMES)
    assert (
        len(
            [
                n
                for n in VALIDATE_SCHEMAS
                if n.startswith("aide-") and n not in ("aide-common", "aide-wire", "aide-envelope")
            ]
        )
        == 17
    )


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_2020_12_and_self_describing(name):
    schema = schemastore.load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://gitst.dev/schemas/{name}.schema.json"
    assert schema.get("title") and schema.get("description")


@pytest.mark.parametrize("name", NAMES)
def test_schema_uses_no_format_and_portable_patterns(name):
    schema = schemastore.load(name)
    for path, node in _walk(schema):
        if isinstance(node, dict) and "format" in node and "examples" not in path and path[-1:] != ("properties",):
            pytest.fail(f"{name}: `format` at {path}: use a pattern (format is annotation-only)")
    for path, pattern in _patterns(schema):
        re.compile(pattern)
        # \d \w \s match non-ASCII in Python's re but not in ECMA-262; `.` differs on \r and
        # U+2028; `$` also matches before a final newline in Python.
        assert not re.search(r"\\[dDwWsS]", pattern), f"{name} {path}: {pattern!r} uses a shorthand class"
        bare = re.sub(r"\\.", "", re.sub(r"\[(\\.|[^\]])*\]", "", pattern))
        assert "." not in bare, f"{name} {path}: {pattern!r} uses `.`"
        if pattern.endswith("$"):
            assert pattern.endswith("(?!\\n)$"), f"{name} {path}: {pattern!r} must end with (?!\\n)$"


@pytest.mark.parametrize("name", [n for n in VALIDATE_SCHEMAS if n not in ("common", "aide-common")])
def test_schema_examples_validate_in_both_validators(name):
    schema = schemastore.load(name)
    assert schema.get("examples"), f"{name} has no examples"
    for example in schema["examples"]:
        assert schemastore.validator(name).is_valid(example), schemastore.validator(name).errors(example)
        assert reference_validator(name).is_valid(example)


def test_every_kind_names_a_shipped_schema_and_the_registry_follows_the_names():
    assert tuple(kinds.REGISTRY) == detect.KIND_NAMES
    for name, kind in kinds.REGISTRY.items():
        assert kind.name == name
        assert kind.schema in NAMES
        assert kind.summary
        assert kinds.patterns_of(name), name  # every kind is found by path too


def test_code_annotations_resolve_through_refs():
    [error] = schemastore.validator("aide-wire").errors({"t": "voice", "text": "x" * 101})
    assert error.code == "AIDE_VOICE_TOO_LONG"
    assert error.keyword_location.endswith("aide-voice.schema.json#/properties/text/maxLength")
    [error] = schemastore.validator("aide-wire").errors({"t": "voice", "text": 5})
    assert error.code is None  # the annotation names maxLength only: a type error is plain SCHEMA


def test_every_diagnostic_code_is_documented():

    doc = (REPO_ROOT / "docs" / "validate.md").read_text()
    codes = set()
    for name in VALIDATE_SCHEMAS:
        for _, node in _walk(schemastore.load(name)):
            if isinstance(node, dict) and "x-gitst-code" in node:
                value = node["x-gitst-code"]
                codes.update(value.values() if isinstance(value, dict) else [value])
    root = REPO_ROOT / "gitst"
    for source in [
        *(root / "validate").glob("*.py"),
        *(root / "aide").glob("*.py"),
        *(root / "schemas").glob("*.py"),
        root / "plan" / "check.py",
        root / "pipeline" / "check.py",
        root / "sdlc" / "check.py",
        root / "core" / "diagnostics.py",
    ]:
        codes.update(
            re.findall(
                r'"((?:AIDE|SDLC|PIPELINE|ST)_[A-Z_]+|JSON|SCHEMA|TIMESTAMP|NO_KIND|UNKNOWN_KIND|UNMERGED|READ|NO_SCHEMA)"',
                source.read_text(),
            )
        )
    missing = sorted(code for code in codes if f"`{code}`" not in doc)
    assert not missing, f"codes not documented in docs/validate.md: {missing}"
