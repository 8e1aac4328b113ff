"""merge_plan on generated histories: ours kept byte for byte, nothing lost or doubled, the
result passes the doctor, contradictions refused with the item and field named."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitst.plan.doctor import check_plan_bytes
from gitst.plan.merge import MergeConflict, merge_plan
from gitst.plan.reducer import replay
from gitst.plan.store import build_checkpoint, build_event, encode_record

TS = "2026-02-09T20:00:00Z"
BASE_IDS = ["st-001", "st-002", "st-003", "st-004"]


def item(item_id: str, step: str) -> dict:
    return {"id": item_id, "step": step, "status": "pending", "deps": [], "notes": "", "comments": []}


def base_records() -> list[dict]:
    out = [build_event("upsert", i + 1, {"item": item(x, f"step {x}")}, ts=TS) for i, x in enumerate(BASE_IDS)]
    state = replay(out)
    out.append(build_checkpoint(state.items(), len(out), ts=TS))
    return out


def encode(records: list[dict]) -> bytes:
    return b"".join(encode_record(r) for r in records)


def extend(records: list[dict], ops: list[tuple], side: str, interval: int = 4) -> list[dict]:
    """``records`` plus the events ``ops`` describe, seq after the watermark, checkpoints every
    ``interval`` events (what the store would write)."""
    out = list(records)
    high = max(r["seq"] for r in out)
    trailing = 0
    for n, (op, target, value) in enumerate(ops):
        high += 1
        ts = f"2026-02-10T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
        if op == "status":
            event = build_event("set_status", high, {"id": target, "status": value}, ts=ts)
        elif op == "notes":
            event = build_event("set_notes", high, {"id": target, "notes": value}, ts=ts)
        elif op == "comment":
            event = build_event("add_comment", high, {"id": target, "comment": {"ts": ts, "author": side, "text": value}}, ts=ts)
        else:  # add a new item
            event = build_event("upsert", high, {"item": item(target, value)}, ts=ts)
        out.append(event)
        trailing += 1
        if trailing >= interval:
            out.append(build_checkpoint(replay([r for r in out if r["lane"] == "event"]).items(), high, ts=ts))
            trailing = 0
    return out


def side_ops(owned: list[str], side: str):
    """Mutations touching only the items ``owned`` (plus new ones named after ``side``)."""
    op = st.one_of(
        st.tuples(st.just("status"), st.sampled_from(owned), st.sampled_from(["in_progress", "completed", "blocked"])),
        st.tuples(st.just("notes"), st.sampled_from(owned), st.text("abc xyz", max_size=6)),
        st.tuples(st.just("comment"), st.sampled_from(owned), st.text("abc", min_size=1, max_size=4)),
        st.tuples(st.just("add"), st.integers(0, 3).map(lambda i: f"{side}-{i}"), st.just(f"{side} step")),
    )
    return st.lists(op, max_size=12)


def state_of(data: bytes) -> dict:
    return {i["id"]: i for i in replay([json.loads(x) for x in data.splitlines()], events_only=True).items()}


def last_touch(ops, item_id):
    return [o for o in ops if o[1] == item_id]


@settings(max_examples=60, deadline=None)
@given(ours_ops=side_ops(["st-001", "st-002"], "ours"), theirs_ops=side_ops(["st-003", "st-004"], "theirs"), interval=st.integers(1, 6))
def test_disjoint_changes_merge_cleanly(ours_ops, theirs_ops, interval):
    base = base_records()
    ours = encode(extend(base, ours_ops, "ours"))
    theirs = encode(extend(base, theirs_ops, "theirs"))
    merged = merge_plan(encode(base), ours, theirs, interval=interval)

    assert merged.startswith(ours)
    assert [d for d in check_plan_bytes(merged, "merged") if d.is_error] == []
    appended = [json.loads(x) for x in merged[len(ours):].splitlines()]
    new_events = [r for r in appended if r["lane"] == "event"]
    assert len(new_events) == len(theirs_ops)  # every one of theirs, none twice
    if appended:
        assert appended[-1]["lane"] == "checkpoint"
        trailing = 0
        for r in appended:
            trailing = 0 if r["lane"] == "checkpoint" else trailing + 1
            assert trailing <= interval  # a checkpoint at least every `interval` events

    # independent oracle: an item touched by one side only ends as that side has it
    final, ours_state, theirs_state = state_of(merged), state_of(ours), state_of(theirs)
    for item_id in set(ours_state) | set(theirs_state):
        touched_by_theirs = bool(last_touch(theirs_ops, item_id))
        expected = theirs_state[item_id] if touched_by_theirs else ours_state[item_id]
        assert final[item_id] == expected, item_id

    # merging the other way round reaches the same items
    other = merge_plan(encode(base), theirs, ours, interval=interval)
    assert state_of(other) == final


@settings(max_examples=30, deadline=None)
@given(ops=side_ops(["st-001", "st-003"], "x"))
def test_theirs_already_merged_adds_nothing(ops):
    base = encode(base_records())
    theirs = encode(extend(base_records(), ops, "theirs"))
    merged = merge_plan(base, theirs, theirs, interval=3)
    assert merged == theirs
    # ours merged theirs earlier (re-sequenced copy); merging theirs again adds nothing
    ours = merge_plan(base, encode(extend(base_records(), [("notes", "st-002", "o")], "ours")), theirs, interval=3)
    assert merge_plan(base, ours, theirs, interval=3) == ours


def test_same_field_set_differently_is_a_conflict_naming_item_and_field():
    base = base_records()
    ours = encode(extend(base, [("status", "st-002", "completed")], "ours"))
    theirs = encode(extend(base, [("status", "st-002", "blocked"), ("notes", "st-003", "fine")], "theirs"))
    with pytest.raises(MergeConflict) as caught:
        merge_plan(encode(base), ours, theirs, interval=50)
    message = caught.value.message
    assert "item 'st-002' changed on both sides: status" in message
    assert '"completed"' in message and '"blocked"' in message
    assert caught.value.exit_code == 1


def test_same_change_on_both_sides_is_not_a_conflict():
    base = base_records()
    ours = encode(extend(base, [("status", "st-002", "completed")], "ours"))
    theirs = encode(extend(base, [("status", "st-002", "completed"), ("notes", "st-002", "n")], "theirs"))
    merged = merge_plan(encode(base), ours, theirs, interval=50)
    assert state_of(merged)["st-002"]["status"] == "completed"
    assert state_of(merged)["st-002"]["notes"] == "n"


def test_both_sides_commenting_on_one_item_keeps_every_comment():
    base = base_records()
    ours = encode(extend(base, [("comment", "st-001", "o1"), ("comment", "st-001", "o2")], "ours"))
    theirs = encode(extend(base, [("comment", "st-001", "t1")], "theirs"))
    merged = merge_plan(encode(base), ours, theirs, interval=50)
    assert [c["text"] for c in state_of(merged)["st-001"]["comments"]] == ["o1", "o2", "t1"]


def test_an_upsert_that_would_undo_our_change_is_refused():
    base = base_records()
    ours = encode(extend(base, [("status", "st-001", "completed")], "ours"))
    # theirs re-adds st-001 whole (its step changes, its status is still pending)
    theirs_records = extend(base, [], "theirs")
    theirs_records.append(build_event("upsert", 6, {"item": item("st-001", "renamed")}, ts=TS))
    with pytest.raises(MergeConflict) as caught:
        merge_plan(encode(base), ours, encode(theirs_records), interval=50)
    assert "st-001" in caught.value.message and "status" in caught.value.message


def test_removed_on_one_side_changed_on_the_other():
    base = base_records()
    ours_records = extend(base, [], "ours")
    ours_records.append(build_event("remove", 6, {"id": "st-004"}, ts=TS))
    theirs = encode(extend(base, [("notes", "st-004", "still here")], "theirs"))
    with pytest.raises(MergeConflict) as caught:
        merge_plan(encode(base), encode(ours_records), theirs, interval=50)
    assert "item 'st-004': removed on our side but changed on their side (notes)" in caught.value.message


def test_a_torn_side_is_refused_with_its_line():
    base = encode(base_records())
    with pytest.raises(MergeConflict) as caught:
        merge_plan(base, base, base + b'{"v":3,"ts":', interval=50)
    assert "their side: line 6 is a torn write" in caught.value.message


def test_ours_missing_its_last_newline_gets_one_and_keeps_every_byte():
    base = base_records()
    ours = encode(extend(base, [("notes", "st-001", "x")], "ours"))[:-1]
    theirs = encode(extend(base, [("notes", "st-002", "y")], "theirs"))
    merged = merge_plan(encode(base), ours, theirs, interval=50)
    assert merged.startswith(ours + b"\n")
    assert [d for d in check_plan_bytes(merged, "m") if d.is_error] == []
