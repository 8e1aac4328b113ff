"""The full check's work grows linearly with the plan, whatever its shape (issue 15).

Not timed, counted, so CI catches a return of the quadratic — one upsert per item once cost
O(items) each — on any machine. Two counts: the items the check looks at one by one
(``PlanCheck.work``: the dependency rules' visits, checkpoint items compared or re-checked),
and every line of Python the check runs (``sys.settrace``), which also sees work that
``PlanCheck.work`` does not name - and is shown to see the quadratic check of old."""

from __future__ import annotations

import sys
from unittest import mock

import pytest

from gitst.plan import doctor, rules
from gitst.plan.reducer import PlanState
from gitst.plan.store import build_checkpoint, build_event, encode_record
from gitst.schemas import catalog

TS = "2026-02-09T20:00:00Z"


def _plan(items: int, *, chain: bool = False, interval: int = 0, events: int = 0) -> tuple[bytes, int]:
    """init, one upsert per item (each depending on the one before with ``chain``), then
    ``events`` status changes, a checkpoint every ``interval`` events (0: never)."""
    state = PlanState()
    lines = [encode_record(build_event("init", 1, ts=TS))]
    seq = since = 1

    def add(record: dict) -> None:
        nonlocal since
        state.apply_event(record)
        lines.append(encode_record(record))
        since += 1
        if interval and since >= interval:
            lines.append(encode_record(build_checkpoint(state.items(), seq, ts=TS)))
            since = 0

    for n in range(items):
        seq += 1
        deps = [{"id": f"i{n - 1}", "type": "blocks"}] if chain and n else []
        add(build_event("upsert", seq, {"item": {"id": f"i{n}", "step": "s", "deps": deps}}, ts=TS))
    for n in range(events):
        seq += 1
        add(build_event("set_status", seq, {"id": f"i{n % items}", "status": "completed"}, ts=TS))
    return b"".join(lines), len(lines)


SHAPES = {
    "one upsert per item, no checkpoint": {},
    "a deps chain, no checkpoint": {"chain": True},
    "checkpoints of every item": {"interval": 50},
    "a deps chain, checkpoints": {"chain": True, "interval": 50},
    "status changes, checkpoints": {"interval": 50, "events": 3},
}


def _scan_counting_lines(data: bytes) -> tuple[doctor.PlanCheck, int]:
    """The full check of ``data`` and the number of Python lines it ran - with the record
    schema compiled to Python whatever the size (so its checks count too, and a small and a
    large plan are checked alike), compiled before the count starts."""
    catalog.compiled("st-record")
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame, event, arg):
        return local

    with mock.patch.object(doctor, "_FEW_BYTES", 1 << 40):
        measuring = sys.gettrace()  # coverage's tracer: put back after, or the rest of this
        sys.settrace(calls)  # test process would go unmeasured (the coverage floor saw it)
        try:
            check = doctor.scan(data, "p")
        finally:
            sys.settrace(measuring)
    return check, count


def _spec(shape: str, items: int) -> dict:
    spec = dict(SHAPES[shape])
    spec["events"] = spec.get("events", 0) * items
    return spec


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_check_looks_at_each_item_a_bounded_number_of_times(shape):
    def work(items: int) -> tuple[int, int, int]:
        data, records = _plan(items, **_spec(shape, items))
        check, lines = _scan_counting_lines(data)
        assert check.errors == [] and len(check.state) == items
        return check.work, lines, records

    small, small_lines, _ = work(1_000)
    big, big_lines, big_records = work(4_000)
    assert big <= 4.4 * small  # 4x the items, at most 4.4x the work: linear (quadratic would be 16x)
    assert big <= 4 * big_records  # a few looks per record, not one per item in the plan
    assert small_lines > 1_000  # (the count sees the check)
    assert big_lines <= 4.4 * small_lines  # every line of Python the check runs: linear too


def test_the_line_count_sees_the_quadratic_check_of_old(monkeypatch):
    """What the check did before: every rule over every item after each change of deps or ids.
    The line count grows ~16x for 4x the items there, and the bound above would fail."""
    linear = doctor._Scan._dependencies

    def quadratic(self, line, record, op):
        linear(self, line, record, op)
        rules.violations(self.state.items())

    monkeypatch.setattr(doctor._Scan, "_dependencies", quadratic)
    small = _scan_counting_lines(_plan(250)[0])[1]
    big = _scan_counting_lines(_plan(1_000)[0])[1]
    assert big > 10 * small


def test_a_replayed_checkpoint_is_not_compared_item_by_item():
    data, _ = _plan(2_000, interval=50)
    check = doctor.scan(data, "p")
    assert check.checkpoints == 40 and check.work <= 3 * 2_000
