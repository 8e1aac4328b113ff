"""Fuzzing the kind checkers in-process: generated and mutated seed records never raise;
every bad input becomes diagnostics that point inside the file.

The example counts below add up to well over 10,000 inputs per normal test run.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.core.diagnostics import Diagnostic
from gitst.validate import kinds
from tests.unit.validate.strategies import (
    SEEDS,
    dump,
    edited_stream,
    json_values,
    mutated,
    seed_stream_lines,
    seed_wire_records,
)

COMMON = {
    "deadline": None,
    "database": None,
    "derandomize": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}

WIRE_RECORDS = seed_wire_records()
WIRE_BASE = seed_stream_lines("full-examples.aide.jsonl") + seed_stream_lines("batch.aide.jsonl")[3:]
ENVELOPE_LINES = seed_stream_lines("seed.aide.events.jsonl")
ENVELOPES = [json.loads(line) for line in ENVELOPE_LINES]
SDLC = json.loads((SEEDS / "003" / "state.json").read_text())
PIPELINE = json.loads((SEEDS / "001" / "state" / "pipeline" / "42.json").read_text())
PLAN_LINES = [line for line in (SEEDS.parent / "good" / "st-plan" / "plan.jsonl").read_bytes().split(b"\n") if line]
PLAN_RECORDS = [json.loads(line) for line in PLAN_LINES] + [
    json.loads(line) for line in (SEEDS / "000" / "records.jsonl").read_text().splitlines()
]

RUNS = {"n": 0}

# inputs per fuzzer; each test proves its fuzzer really ran that many
QUOTAS = {"wire": 3000, "envelope": 1500, "sdlc": 2000, "pipeline": 1500, "state": 1200, "bytes": 1200, "st": 1000}


def _checked(kind: str, data: bytes, path: str, against: bytes | None = None) -> list[Diagnostic]:
    diagnostics = kinds.check(kind, data, path, against=against)
    lines = data.count(b"\n") + 1
    for diagnostic in diagnostics:
        assert isinstance(diagnostic, Diagnostic)
        assert diagnostic.code and diagnostic.message and diagnostic.path == path
        assert diagnostic.severity in ("error", "warning")
        assert diagnostic.line is None or 1 <= diagnostic.line <= lines, diagnostic
        diagnostic.to_text(), diagnostic.to_github(), json.dumps(diagnostic.to_dict())
    RUNS["n"] += 1
    return diagnostics


def _run(fuzzer, quota: int) -> None:
    RUNS["n"] = 0
    fuzzer()
    assert RUNS["n"] >= quota, f"only {RUNS['n']} inputs of {quota}"


@settings(max_examples=QUOTAS["wire"], **COMMON)
@given(edited_stream(WIRE_BASE, WIRE_RECORDS))
def _fuzz_aide_wire_streams(data):
    _checked("aide-wire", data, "fuzz.aide.jsonl")


@settings(max_examples=QUOTAS["envelope"], **COMMON)
@given(edited_stream(ENVELOPE_LINES, ENVELOPES))
def _fuzz_aide_envelope_streams(data):
    _checked("aide-envelope", data, "fuzz.aide.events.jsonl")


def _document(value) -> st.SearchStrategy[bytes]:
    return st.sampled_from([dump(value), json.dumps(value, indent=2).encode()])


@settings(max_examples=QUOTAS["sdlc"], **COMMON)
@given(mutated([SDLC], max_mutations=4).flatmap(_document), st.one_of(st.none(), mutated([SDLC]).flatmap(_document)))
def _fuzz_sdlc_state_and_transitions(data, against):
    _checked("sdlc-state", data, "state.json", against)


@settings(max_examples=QUOTAS["pipeline"], **COMMON)
@given(
    mutated([PIPELINE], max_mutations=4).flatmap(_document),
    st.sampled_from(["state/pipeline/42.json", "state/pipeline/7.json", "state/pipeline/x.json", "42.json"]),
)
def _fuzz_pipeline_files(data, path):
    _checked("pipeline", data, path)


def _state_file(kind: str):
    """A document of ``kind``: its schema's examples mutated, or any JSON at all."""
    from gitst.schemas import catalog as schemastore

    examples = schemastore.load(kinds.get(kind).schema)["examples"]
    documents = st.one_of(mutated(examples, max_mutations=3), json_values).flatmap(_document)
    return st.tuples(st.just(kind), documents)


@settings(max_examples=QUOTAS["state"], **COMMON)
@given(st.sampled_from(["live-session", "watch-list", "lock", "active-chat", "active-worktree"]).flatmap(_state_file))
def _fuzz_state_files(kind_and_data):
    kind, data = kind_and_data
    _checked(kind, data, f"state/{kind}.json")


@settings(max_examples=QUOTAS["bytes"], **COMMON)
@given(
    st.sampled_from(
        [
            "aide-wire",
            "aide-envelope",
            "sdlc-state",
            "pipeline",
            "live-session",
            "watch-list",
            "st-plan",
            "lock",
            "active-chat",
            "active-worktree",
        ]
    ),
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.lists(json_values.map(dump), max_size=5).map(b"\n".join),
    ),
)
def _fuzz_arbitrary_bytes(kind, data):
    _checked(kind, data, "state/pipeline/42.json" if kind == "pipeline" else "fuzz.json")


def test_fuzzing_quotas_add_up_to_at_least_10000_inputs():
    assert sum(QUOTAS.values()) >= 10_000


@settings(max_examples=QUOTAS["st"], **COMMON)
@given(edited_stream(PLAN_LINES, PLAN_RECORDS), st.one_of(st.none(), edited_stream(PLAN_LINES, PLAN_RECORDS)))
def _fuzz_st_plans(data, against):
    _checked("st-plan", data, ".step/st-plan.jsonl", against)


FUZZERS = {
    "wire": _fuzz_aide_wire_streams,
    "envelope": _fuzz_aide_envelope_streams,
    "sdlc": _fuzz_sdlc_state_and_transitions,
    "pipeline": _fuzz_pipeline_files,
    "state": _fuzz_state_files,
    "bytes": _fuzz_arbitrary_bytes,
    "st": _fuzz_st_plans,
}


# the longest fuzzers start first (tests/conftest.py): seconds on the quiet 2-core box
LONG = {"wire": 70, "sdlc": 30}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=[pytest.mark.slow(LONG[name])] if name in LONG else []) for name in QUOTAS]
)
def test_fuzz_never_raises(name):
    _run(FUZZERS[name], QUOTAS[name])
