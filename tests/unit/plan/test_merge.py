"""merge_plan on generated histories: ours kept byte for byte, nothing lost or doubled, the
result passes the doctor, contradictions refused with the item and field named; auto ids
(st-NNN) that both sides allocated for different items are renumbered on their side."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitst.plan.doctor import check_plan_bytes
from gitst.plan.merge import MergeConflict, merge, merge_plan
from gitst.plan.model import next_id
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
            event = build_event(
                "add_comment", high, {"id": target, "comment": {"ts": ts, "author": side, "text": value}}, ts=ts
            )
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
@given(
    ours_ops=side_ops(["st-001", "st-002"], "ours"),
    theirs_ops=side_ops(["st-003", "st-004"], "theirs"),
    interval=st.integers(1, 6),
)
def test_disjoint_changes_merge_cleanly(ours_ops, theirs_ops, interval):
    base = base_records()
    ours = encode(extend(base, ours_ops, "ours"))
    theirs = encode(extend(base, theirs_ops, "theirs"))
    merged = merge_plan(encode(base), ours, theirs, interval=interval)

    assert merged.startswith(ours)
    assert [d for d in check_plan_bytes(merged, "merged") if d.is_error] == []
    appended = [json.loads(x) for x in merged[len(ours) :].splitlines()]
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


# --- auto ids allocated on both sides ------------------------------------------------------


def extend_auto(
    records: list[dict], ops: list[tuple], side: str, own: list[str] | None = None, interval: int = 4
) -> tuple[list[dict], int, list[str]]:
    """``records`` plus what ``git st add`` without --id and friends would append: new items
    get ``next_id`` of the plan (so both sides allocate the same ids), maybe depending on an
    earlier one of the side's own; the other ops touch the side's own new items (the k-th
    one, modulo how many there are). Returns the records, how many events were appended and
    the side's own new ids (``own``: those of earlier calls)."""
    out = list(records)
    high = max(r["seq"] for r in out)
    trailing = events = 0
    own = list(own or [])
    for n, (op, k, value) in enumerate(ops):
        ts = f"2026-02-10T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
        state = replay([r for r in out if r["lane"] == "event"])
        if op == "auto":
            new_id = next_id(state.ids())
            new_item = item(new_id, f"{side} new {len(own) + 1}")
            if own and value is not None:
                new_item["deps"] = [{"id": own[value % len(own)], "type": "blocks"}]
            own.append(new_id)
            fields, op_name = {"item": new_item}, "upsert"
        elif not own:
            continue
        elif op == "auto_status":
            fields, op_name = {"id": own[k % len(own)], "status": value}, "set_status"
        elif op == "auto_comment":
            fields = {"id": own[k % len(own)], "comment": {"ts": ts, "author": "a", "text": value}}
            op_name = "add_comment"
        else:  # auto_deps: the k-th item depends on an earlier one (never a cycle)
            index = k % len(own)
            if index == 0:
                continue
            fields, op_name = {"id": own[index], "deps": [{"id": own[value % index], "type": "blocks"}]}, "set_deps"
        high += 1
        out.append(build_event(op_name, high, fields, ts=ts))
        events += 1
        trailing += 1
        if trailing >= interval:
            out.append(build_checkpoint(replay([r for r in out if r["lane"] == "event"]).items(), high, ts=ts))
            trailing = 0
    return out, events, own


def auto_ops(max_size: int = 10):
    """Adds without --id, and status/deps/comment changes among the side's own new items.
    Both sides use the same timestamps by position, so identical-looking events on the two
    sides' different st-005 are generated too."""
    add = st.tuples(st.just("auto"), st.just(0), st.none() | st.integers(0, 5))
    op = st.one_of(
        add,
        add,
        st.tuples(st.just("auto_status"), st.integers(0, 5), st.sampled_from(["in_progress", "completed", "blocked"])),
        st.tuples(st.just("auto_deps"), st.integers(0, 5), st.integers(0, 5)),
        st.tuples(st.just("auto_comment"), st.integers(0, 5), st.sampled_from(["x", "y"])),
    )
    return st.lists(op, max_size=max_size)


def portable(data: bytes) -> dict:
    """The items by step (steps are unique here), with deps named by step: what a merge must
    keep whatever ids it gives."""
    items = state_of(data)
    return {
        i["step"]: {
            **{k: v for k, v in i.items() if k not in ("id", "deps")},
            "deps": [items[d["id"]]["step"] for d in i["deps"]],
        }
        for i in items.values()
    }


@settings(max_examples=50, deadline=None)
@given(ours_ops=auto_ops(), theirs_ops=auto_ops(), later_ops=auto_ops(5), interval=st.integers(1, 6))
def test_auto_ids_allocated_on_both_sides_are_renumbered(ours_ops, theirs_ops, later_ops, interval):
    base = base_records()
    ours_records, _, _ = extend_auto(base, ours_ops, "ours")
    theirs_records, their_events, their_own = extend_auto(base, theirs_ops, "theirs")
    ours, theirs = encode(ours_records), encode(theirs_records)
    result = merge(encode(base), ours, theirs, interval=interval)
    merged = result.data

    assert merged.startswith(ours)
    assert [d for d in check_plan_bytes(merged, "merged") if d.is_error] == []
    appended = [json.loads(x) for x in merged[len(ours) :].splitlines()]
    assert len([r for r in appended if r["lane"] == "event"]) == their_events  # none lost, none doubled

    # every item of both sides, ours under its own id, theirs' deps following their renames
    final, ours_state, theirs_state = state_of(merged), state_of(ours), state_of(theirs)
    assert portable(merged) == {**portable(theirs), **portable(ours)}
    for item_id, ours_item in ours_state.items():
        assert final[item_id] == ours_item
    renamed = {r.old: r.new for r in result.renumbered}
    for old, new in renamed.items():
        assert theirs_state[old]["step"] == final[new]["step"] != final[old]["step"]
        assert new not in ours_state and new not in theirs_state
    colliding = {i for i in set(ours_state) & set(theirs_state) if ours_state[i]["step"] != theirs_state[i]["step"]}
    assert set(renamed) == colliding

    # merging theirs again adds nothing; their side merging the result back gets the same items
    assert merge_plan(encode(base), merged, theirs, interval=interval) == merged
    back = merge_plan(theirs, theirs, merged, interval=interval)
    assert back.startswith(theirs)
    assert [d for d in check_plan_bytes(back, "back") if d.is_error] == []
    assert portable(back) == portable(merged)
    # ...and our side merging that back again gets nothing new
    assert merge_plan(merged, merged, back, interval=interval) == merged

    # a rebase's next pick: their next commit (base: their previous one, which ours holds
    # renumbered) lands on the items it means
    later = encode(extend_auto(theirs_records, later_ops, "theirs", their_own)[0])
    picked = merge_plan(theirs, merged, later, interval=interval)
    assert picked.startswith(merged)
    assert [d for d in check_plan_bytes(picked, "picked") if d.is_error] == []
    assert portable(picked) == {**portable(later), **portable(ours)}


def added(step: str, item_id: str, seq: int, ts: str = TS, deps=()) -> dict:
    record = item(item_id, step)
    record["deps"] = [{"id": d, "type": "blocks"} for d in deps]
    return build_event("upsert", seq, {"item": record}, ts=ts)


def test_renumbered_events_carry_a_note_and_the_rename_is_reported():
    base = base_records()
    ours = encode([*base, added("Write tests", "st-005", 6), added("Run tests", "st-006", 7)])
    theirs = encode(
        [
            *base,
            added("Write docs", "st-005", 6, ts="2026-02-09T21:00:00Z"),
            added("Review docs", "st-006", 7, ts="2026-02-09T21:00:00Z", deps=["st-005"]),
            build_event("set_status", 8, {"id": "st-005", "status": "completed"}, ts="2026-02-09T21:00:00Z"),
        ]
    )
    result = merge(encode(base), ours, theirs, interval=50)
    assert [r.line() for r in result.renumbered] == [
        """gitst merge: theirs' st-005 "Write docs" is now st-007 (ours created st-005 too)""",
        """gitst merge: theirs' st-006 "Review docs" is now st-008 (ours created st-006 too)""",
    ]
    appended = [json.loads(x) for x in result.data[len(ours) :].splitlines()]
    assert [r.get("merge") for r in appended[:3]] == [
        {"renamed": {"st-005": "st-007"}},
        {"renamed": {"st-006": "st-008", "st-005": "st-007"}},
        {"renamed": {"st-005": "st-007"}},
    ]
    final = state_of(result.data)
    assert final["st-005"]["step"] == "Write tests" and final["st-005"]["status"] == "pending"
    assert final["st-007"]["step"] == "Write docs" and final["st-007"]["status"] == "completed"
    assert final["st-008"]["deps"] == [{"id": "st-007", "type": "blocks"}]
    assert [d for d in check_plan_bytes(result.data, "m") if d.is_error] == []


def test_the_same_looking_event_on_the_two_sides_different_items_is_kept():
    """`set-status st-005 completed` written alike on both sides means two items here."""
    base = base_records()
    done = build_event("set_status", 7, {"id": "st-005", "status": "completed"}, ts=TS)
    ours = encode([*base, added("Write tests", "st-005", 6), done])
    theirs = encode([*base, added("Write docs", "st-005", 6, ts="2026-02-09T21:00:00Z"), done])
    final = state_of(merge_plan(encode(base), ours, theirs, interval=50))
    assert [(i["step"], i["status"]) for i in final.values()][-2:] == [
        ("Write tests", "completed"),
        ("Write docs", "completed"),
    ]


def test_the_same_item_added_on_both_sides_is_one_item():
    """Both sides added "Write docs" as st-005 (different writes, same item): the creation
    is not appended again, and each side's later change to it is kept."""
    base = base_records()
    ours = encode(
        [
            *base,
            added("Write docs", "st-005", 6),
            build_event("set_status", 7, {"id": "st-005", "status": "completed"}, ts=TS),
        ]
    )
    theirs = encode(
        [
            *base,
            added("Write docs", "st-005", 6, ts="2026-02-09T21:00:00Z"),
            build_event("set_notes", 7, {"id": "st-005", "notes": "n"}, ts=TS),
        ]
    )
    result = merge(encode(base), ours, theirs, interval=50)
    assert result.renumbered == []
    appended = [json.loads(x) for x in result.data[len(ours) :].splitlines()]
    assert [r.get("op") for r in appended] == ["set_notes", None]  # then the checkpoint
    final = state_of(result.data)
    assert (final["st-005"]["status"], final["st-005"]["notes"]) == ("completed", "n")
    # the very same write on both sides: nothing at all is appended
    same = encode([*base, added("Write docs", "st-005", 6)])
    assert merge_plan(encode(base), same, same, interval=50) == same


def test_an_explicit_id_added_differently_on_both_sides_is_still_refused():
    base = base_records()
    ours = encode([*base, added("Write tests", "docs", 6)])
    theirs = encode([*base, added("Write docs", "docs", 6, ts="2026-02-09T21:00:00Z")])
    with pytest.raises(MergeConflict) as caught:
        merge_plan(encode(base), ours, theirs, interval=50)
    assert (
        """item 'docs' added on both sides: step (ours: "Write tests", theirs: "Write docs")""" in caught.value.message
    )


# --- the published side keeps its ids (issue 20, point 1) -----------------------------------


def _collide() -> tuple[list[dict], list[dict], list[dict]]:
    """base, a PR branch and main, each of the two added st-005 for a different item."""
    base = base_records()
    pr = extend(base, [("add", "st-005", "pr item"), ("status", "st-001", "in_progress")], "pr")
    main = extend(base, [("add", "st-005", "main item"), ("comment", "st-002", "main note")], "main")
    return base, pr, main


def _ids(data: bytes) -> dict[str, str]:
    return {
        x["step"]: x["id"]
        for x in replay([r for r in map(json.loads, data.splitlines()) if r["lane"] == "event"]).items()
    }


def test_merging_the_published_branch_in_keeps_its_bytes_and_ids():
    base, pr, main = _collide()
    merged = merge(encode(base), encode(pr), encode(main), interval=50, published=[("origin/main", encode(main))])
    assert merged.kept == "theirs" and merged.data.startswith(encode(main))
    assert _ids(merged.data)["main item"] == "st-005" and _ids(merged.data)["pr item"] == "st-006"
    moved = (
        'gitst merge: this branch\'s st-005 "pr item" is now st-006 '
        "(origin/main created st-005 too; ids on origin/main never change)"
    )
    assert [r.line() for r in merged.renumbered] == [moved]
    assert not [d for d in check_plan_bytes(merged.data, "p") if d.is_error]
    # the other way round (git merge pr on main), the same ids and the same plan
    back = merge(encode(base), encode(main), encode(pr), interval=50, published=[("origin/main", encode(main))])
    assert back.kept == "ours" and _ids(back.data) == _ids(merged.data)


def test_no_published_plan_or_one_holding_neither_side_keeps_ours():
    base, pr, main = _collide()
    for published in ([], [("origin/main", encode(base) + b"not json\n")], [("origin/main", encode(base))]):
        merged = merge(encode(base), encode(pr), encode(main), interval=50, published=published)
        assert merged.kept == "ours" and _ids(merged.data)["pr item"] == "st-005"


def test_untangle_takes_a_union_merge_apart_as_the_driver_merges():
    from gitst.plan.merge import untangle

    base, pr, main = _collide()
    union = encode(pr) + encode(main[len(base) :])  # what `git merge-file --union` writes
    found = untangle(union, interval=50)
    assert found is not None
    assert {x["step"]: x["id"] for x in found.items}["main item"] == "st-006"
    assert [r.old + ">" + r.new for r in found.renumbered] == ["st-005>st-006"]
    assert untangle(encode(pr), interval=50) is None  # a plan nobody concatenated
