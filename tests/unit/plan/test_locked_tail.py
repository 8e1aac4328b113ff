"""``gitst.plan.tail.locked_tail``: a writer's read under the plan lock opens the plan once, and
``append_records`` appends through that descriptor (issue 22, point 1: the plan is opened and
checked once per mutation, not once to read and again to append)."""

from __future__ import annotations

import os

import pytest

from gitst.core.errors import EnvironmentProblem
from gitst.plan import engine, store
from gitst.plan.location import PlanLocation


def _location(tmp_path) -> PlanLocation:
    return PlanLocation.at(tmp_path / "plan.jsonl", "plan.jsonl")


def _item(item_id: str, step: str) -> dict:
    return {"id": item_id, "step": step, "status": "pending", "deps": [], "notes": "", "comments": []}


def test_the_records_go_through_the_descriptor_that_read_the_plan(tmp_path):
    where = _location(tmp_path)
    engine.add(where, step="one")
    with store.locked_tail(where) as tail:
        fd = tail.fd
        assert fd is not None and os.fstat(fd).st_ino == os.stat(where.path).st_ino
        assert [item["step"] for item in tail.state.items()] == ["one"]
        # the plan's name now points at another file: the append still goes to the one read
        os.rename(where.path, tmp_path / "read.jsonl")
        where.path.write_bytes(b"")
        store.append_records(where.path, [store.build_event("upsert", 2, {"item": _item("st-002", "two")})], tail)
    assert tail.fd is None  # a tail kept after the lock holds no descriptor
    assert where.path.read_bytes() == b""
    read = store.read_tail(tmp_path / "read.jsonl")
    assert read.watermark == 2 and [item["step"] for item in read.state.items()] == ["one", "two"]


def test_a_torn_tail_is_set_aside_and_cut_through_the_same_descriptor(tmp_path):
    where = _location(tmp_path)
    engine.add(where, step="one")
    whole = where.path.read_bytes()
    where.path.write_bytes(whole + b'{"v":3,"ts":"2026-01-0')  # a write cut short
    outcome = engine.add(where, step="two")
    assert outcome.torn_path is not None and outcome.torn_path.read_bytes() == b'{"v":3,"ts":"2026-01-0'
    data = where.path.read_bytes()
    assert data.startswith(whole) and data.endswith(b"\n") and b'"ts":"2026-01-0' not in data[len(whole) :]
    assert [item["step"] for item in store.read_tail(where.path).state.items()] == ["one", "two"]


def test_no_plan_yet_is_an_empty_tail_and_the_append_makes_the_file(tmp_path):
    where = _location(tmp_path)
    with store.locked_tail(where) as tail:
        assert tail.fd is None and not tail.exists and tail.watermark == 0
        store.append_records(where.path, [store.build_event("upsert", 1, {"item": _item("st-001", "one")})], tail)
    assert store.read_tail(where.path).watermark == 1


def test_a_plan_that_cannot_be_opened_for_writing_is_read_and_reported_as_before(tmp_path):
    where = _location(tmp_path)
    where.path.mkdir()
    with pytest.raises(EnvironmentProblem, match=r"cannot read plan .*: it is a directory"), store.locked_tail(where):
        pass
