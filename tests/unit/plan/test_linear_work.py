"""The full check's work grows linearly with the plan, whatever its shape (issue 15).

Not timed: the check counts the items it looks at one by one in Python (``PlanCheck.work``:
the dependency rules' visits, checkpoint items compared or re-checked), so CI catches a
return of the quadratic — one upsert per item once cost O(items) each — on any machine."""

from __future__ import annotations

import pytest

from gitst.plan import doctor
from gitst.plan.reducer import PlanState
from gitst.plan.store import build_checkpoint, build_event, encode_record

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


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_check_looks_at_each_item_a_bounded_number_of_times(shape):
    def work(items: int) -> tuple[int, int]:
        spec = dict(SHAPES[shape])
        spec["events"] = spec.get("events", 0) * items
        data, records = _plan(items, **spec)
        check = doctor.scan(data, "p")
        assert check.errors == [] and len(check.state) == items
        return check.work, records

    small, _ = work(1_000)
    big, big_records = work(4_000)
    assert big <= 4.4 * small  # 4x the items, at most 4.4x the work: linear (quadratic would be 16x)
    assert big <= 4 * big_records  # a few looks per record, not one per item in the plan


def test_a_replayed_checkpoint_is_not_compared_item_by_item():
    data, _ = _plan(2_000, interval=50)
    check = doctor.scan(data, "p")
    assert check.checkpoints == 40 and check.work <= 3 * 2_000
