"""A checkpoint line that holds the replayed items byte for byte is recognised without parsing
or re-checking those items (``doctor._Scan._known_checkpoint``): the findings, the state and
the watermark are exactly those of the full check of that line, whatever the line — and the
one assumption it rests on (replayed items follow the ``st-item`` schema) holds."""

from __future__ import annotations

import re
import sys

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from gitst.plan import doctor
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.store import build_checkpoint, build_event, encode_record
from gitst.schemas.catalog import load, validator
from tests.reference_schema import reference_validator

TS = "2026-02-09T20:00:00Z"
IDS = ["a", "b", "c"]
# Text with the characters the schemas and the normalizer could disagree on.
texts = hs.text(alphabet=hs.sampled_from(["x", "é", " ", "\t", "\u2028", "\x1c", "\u3000", "-", "Z"]), max_size=4)


def _scan(data: bytes, *, fast: bool) -> doctor.PlanCheck:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doctor, "_KNOWN_CHECKPOINT_MIN", 0 if fast else sys.maxsize)
        return doctor.scan(data, "p")


def _found(check: doctor.PlanCheck) -> tuple:
    diagnostics = [(d.line, d.code, d.severity, d.message) for d in check.diagnostics]
    return diagnostics, check.state.items(), check.watermark, check.records, check.checkpoints


items = hs.lists(
    hs.fixed_dictionaries(
        {"id": hs.sampled_from(IDS), "step": texts, "deps": hs.lists(hs.sampled_from(IDS), max_size=2)},
        optional={"status": hs.sampled_from(["pending", "completed", "done"]), "notes": texts, "extra": texts},
    ),
    max_size=3,
)


def _checkpoint_variants(state: PlanState, seq: int) -> list[bytes]:
    """The canonical checkpoint and lines that look like it but are not (all must be judged
    as the full check judges them)."""
    canonical = encode_record(build_checkpoint(state.items(), seq, ts=TS))
    body = canonical.rstrip(b"\n")
    encoded = orjson.dumps(state.items())
    return [
        canonical,
        body.replace(b'"lane":"checkpoint"', b'"lane": "checkpoint"') + b"\n",  # other spacing: parsed in full
        body[:-1] + b',"items":[]}\n',  # a later duplicate key wins
        body.replace(b'"v":3', b'"v":3,"items":[]') + b"\n",  # an earlier duplicate key loses
        body[:-1] + b',"nested":{"x":1,"items":' + encoded + b"}}\n",  # the items again, nested
        body.replace(b'"lane":"checkpoint",', b'"lane":"checkpoint","x":{"y":1,"items":' + encoded + b"},")[:-1]
        + b"}\n",
        body.replace(b'"seq":', b'"seq":1' + b"0" * 25 + b',"s":') + b"\n",  # a big integer elsewhere
        body.replace(b'"ts":"' + TS.encode(), b'"ts":"' + TS.encode() + b"\\n") + b"\n",  # breaks the schema
        body.replace(b'"lane":"checkpoint"', b'"lane":"checkpoin\\u0074"') + b"\n",  # an escape
        body.replace(b'"lane":"checkpoint"', b'"lane":"event"') + b"\n",  # not a checkpoint at all
        body[:-1] + b',"items":' + encoded + b"}\n",  # the same items twice (last wins)
        body + b"\n" + body + b"\n",  # the same checkpoint twice
        body,  # without its newline (the last line)
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.lists(hs.tuples(hs.sampled_from(["upsert", "status", "notes", "remove", "comment"]), items), max_size=8))
def test_a_known_checkpoint_is_judged_as_the_full_check_judges_it(steps):
    state = PlanState()
    lines = [encode_record(build_event("init", 1, ts=TS))]
    seq = 1
    for op, raw_items in steps:
        seq += 1
        if op == "upsert" and raw_items:
            record = build_event("upsert", seq, {"item": raw_items[0]}, ts=TS)
        elif op == "status":
            record = build_event("set_status", seq, {"id": "a", "status": "completed"}, ts=TS)
        elif op == "notes":
            record = build_event("set_notes", seq, {"id": "b", "notes": "n" * seq}, ts=TS)
        elif op == "comment":
            record = build_event("add_comment", seq, {"id": "a", "comment": {"ts": TS, "author": " x", "text": "t"}})
        else:
            record = build_event("remove", seq, {"id": "c"}, ts=TS)
        lines.append(encode_record(record))
        try:
            if validator("st-record").is_valid(record):
                state.apply_event(record)
        except ReplayError:
            pass
    for variant in _checkpoint_variants(state, seq):
        data = b"".join(lines) + variant
        assert _found(_scan(data, fast=True)) == _found(_scan(data, fast=False)), variant


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items, hs.lists(hs.tuples(hs.sampled_from(["set_deps", "set_notes", "add_comment", "set_status"]), texts)))
def test_replayed_items_always_follow_the_item_schema(raw_items, changes):
    """What the known-checkpoint path assumes: every item a replay of schema-valid records puts
    in the state is a valid ``st-item`` (normalizing never makes a valid item invalid)."""
    record_valid = validator("st-record").is_valid
    state = PlanState()
    records = [build_event("replace", 1, {"items": raw_items}, ts=TS)]
    for op, text in changes:
        fields = {
            "set_deps": {"id": "a", "deps": [{"id": text or "b", "type": "Blocks" if text else ""}]},
            "set_notes": {"id": "a", "notes": text},
            "add_comment": {"id": "a", "comment": {"ts": text or TS, "author": text or "x", "text": text or "y"}},
            "set_status": {"id": "a", "status": text or "pending"},
        }[op]
        records.append(build_event(op, len(records) + 1, fields, ts=TS))
    item_valid, item_reference = validator("st-item").is_valid, reference_validator("st-item").is_valid
    for record in records:
        if not record_valid(record):
            continue
        try:
            state.apply_event(record)
        except ReplayError:
            continue
        for item in state.items():
            assert item_valid(item) and item_reference(item), item


def test_the_schemas_whitespace_is_what_strip_removes():
    """Normalizing trims ids, steps, comment authors and timestamps with ``str.strip``; the
    schemas' patterns name whitespace with one character class. They must be the same set."""
    pattern = load("st-item")["properties"]["id"]["pattern"]
    whitespace = re.search(r"\[\^([^\]]+)\]", pattern)
    assert whitespace is not None
    space = re.compile("[" + whitespace.group(1) + "]")
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    assert {c for c in every if space.fullmatch(c)} == {c for c in every if c.isspace()}


@pytest.mark.parametrize("items_count", [40, 400])
def test_a_gitst_written_checkpoint_takes_the_known_path(items_count, monkeypatch):
    state = PlanState()
    lines = [encode_record(build_event("init", 1, ts=TS))]
    for n in range(items_count):
        record = build_event("upsert", n + 2, {"item": {"id": f"i{n}", "step": "s", "deps": []}}, ts=TS)
        state.apply_event(record)
        lines.append(encode_record(record))
    lines.append(encode_record(build_checkpoint(state.items(), items_count + 1, ts=TS)))
    calls = []
    real = doctor._Scan._checkpoint

    def spy(self, line, record, *, known):
        calls.append(known)
        return real(self, line, record, known=known)

    monkeypatch.setattr(doctor._Scan, "_checkpoint", spy)
    check = doctor.scan(b"".join(lines), "p")
    assert calls == [True] and check.diagnostics == [] and check.state.items() == state.items()
