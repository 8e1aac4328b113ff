"""jsonschema-rs (the fast path), python-jsonschema (the reference) and the schema compiled to
Python (``catalog.compiled``, the verdicts of small checks) give the same verdict on every
shipped schema: for every fixture, every example, generated instances, and - where the
engines differ most - every regular expression the schemas use, as each engine runs it."""

from __future__ import annotations

import contextlib
import json

import jsonschema
import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.schemas import catalog as schemastore
from tests.reference_schema import reference_validator
from tests.unit.validate.strategies import FIXTURES, INTERESTING_STRINGS, json_values, mutated, schema_patterns

NAMES = schemastore.names()


def _fixture_instances() -> list:
    instances = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        try:
            instances.append(json.loads(data))
            continue
        except ValueError:
            pass
        for line in data.splitlines():
            with contextlib.suppress(ValueError):
                instances.append(json.loads(line))
    return instances


EXAMPLES = [example for name in NAMES for example in schemastore.load(name).get("examples", [])]
INSTANCES = _fixture_instances() + EXAMPLES
SETTINGS = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def _same_verdict(instance, names=NAMES) -> None:
    for name in names:
        fast = schemastore.validator(name).is_valid(instance)
        reference = reference_validator(name).is_valid(instance)
        assert fast == reference, f"{name}: jsonschema-rs says {fast}, jsonschema says {reference} for {instance!r}"
        compiled = schemastore.compiled(name)
        if compiled is not None:
            verdict = compiled(instance)
            assert verdict == reference, (
                f"{name}: compiled says {verdict}, jsonschema says {reference} for {instance!r}"
            )
        if not fast:
            assert schemastore.validator(name).errors(instance), f"{name}: invalid but no error listed"


def test_fixtures_and_examples_get_the_same_verdict():
    assert len(INSTANCES) > 150
    valid_somewhere = 0
    for instance in INSTANCES:
        _same_verdict(instance)
        valid_somewhere += any(schemastore.validator(n).is_valid(instance) for n in NAMES)
    assert valid_somewhere > 50  # the corpus holds valid and invalid instances


@settings(max_examples=300, **SETTINGS)
@given(json_values)
def test_random_json_gets_the_same_verdict(instance):
    _same_verdict(instance)


def _corpus(name: str) -> list:
    """The instances valid under ``name``: its examples and the fixtures it accepts."""
    valid = [i for i in INSTANCES if reference_validator(name).is_valid(i)]
    return valid or [{}]


@pytest.mark.parametrize("name", NAMES)
def test_instances_near_the_edge_of_each_schema_get_the_same_verdict(name):
    corpus = _corpus(name)

    @settings(max_examples=60, **SETTINGS)
    @given(mutated(corpus, max_mutations=2))
    def check(instance):
        _same_verdict(instance, [name])

    check()


PATTERNS = sorted({pattern for name in NAMES for _, pattern in schema_patterns(schemastore.load(name))})


def _tweaks(text: str):
    return st.sampled_from(
        [
            text,
            text + "\n",
            "\n" + text,
            text + "\r",
            text.upper(),
            text.lower(),
            text[:-1],
            text + "x",
            text.replace("0", "\u0660").replace("1", "\u0661"),
            text.replace("_", "-"),
            text + "\u2028",
        ]
    )


def test_the_compiled_schemas_include_the_plan_record_and_all_it_refers_to():
    """A small plan's records are checked by the compiled st-record schema (no jsonschema-rs)."""
    assert schemastore.compiled("st-record") is not None
    compiled = [name for name in NAMES if schemastore.compiled(name) is not None]
    assert {"st-record", "st-item", "st-comment", "st-edge", "st-mutation"} <= set(compiled)


def test_only_patterns_are_ported_for_rust_never_data():
    """A const, enum, example or default that holds a "pattern" key is a value to compare,
    not a regular expression: it reaches jsonschema-rs unchanged."""
    value = {"pattern": "^a(?!\\n)$"}
    schema = {"properties": {"x": {"pattern": "^a(?!\\n)$"}}, "const": value, "enum": [value], "examples": [value]}
    ported = schemastore._for_rust(schema)
    assert ported["properties"]["x"]["pattern"] == "^a$"
    assert ported["const"] == ported["enum"][0] == ported["examples"][0] == value
    assert jsonschema_rs.Draft202012Validator({"const": ported["const"]}).is_valid(value)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_matches_the_same_strings_in_both_engines(pattern):
    # jsonschema-rs runs each pattern as the catalog hands it over: its final (?!\n)$ made $
    ported = schemastore._for_rust({"pattern": pattern})["pattern"]
    assert ported != pattern or not pattern.endswith("(?!\\n)$")
    schema = {"type": "string", "pattern": ported}
    fast, reference = (
        jsonschema_rs.Draft202012Validator(schema),
        jsonschema.Draft202012Validator({"type": "string", "pattern": pattern}),
    )
    core = pattern.removeprefix("^").removesuffix("(?!\\n)$")
    strings = st.one_of(st.from_regex(core, fullmatch=True), st.sampled_from(INTERESTING_STRINGS), st.text(max_size=8))

    @settings(max_examples=60, **SETTINGS)
    @given(strings.flatmap(_tweaks))
    def check(text):
        assert fast.is_valid(text) == reference.is_valid(text), f"{pattern!r} on {text!r}"

    check()
    assert PATTERNS
