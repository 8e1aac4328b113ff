"""The append-only store: cadence of checkpoints, untouched prefixes, O(tail) reads, torn tails,
unknown fields surviving, broken tails refused for writes but readable."""

from __future__ import annotations

import json

import pytest

from gitst.plan import store
from gitst.plan.reducer import replay


def _write_big_plan(path, events_count: int, interval: int = 50) -> None:
    state = {}
    lines = []
    since = 0
    for i in range(events_count):
        seq = i + 1
        item_id = f"st-{i % 7 + 1:03d}"
        if item_id not in state:
            state[item_id] = {
                "id": item_id,
                "step": f"Step {item_id}",
                "status": "pending",
                "deps": [],
                "notes": "",
                "comments": [],
            }
            rec = {
                "v": 3,
                "ts": "2026-01-01T00:00:00Z",
                "seq": seq,
                "lane": "event",
                "op": "upsert",
                "item": state[item_id],
            }
        else:
            state[item_id] = {**state[item_id], "notes": f"n{i}"}
            rec = {
                "v": 3,
                "ts": "2026-01-01T00:00:00Z",
                "seq": seq,
                "lane": "event",
                "op": "set_notes",
                "id": item_id,
                "notes": f"n{i}",
            }
        lines.append(store.encode_record(rec))
        since += 1
        if since == interval:
            lines.append(store.encode_record(store.build_checkpoint(list(state.values()), seq)))
            since = 0
    path.write_bytes(b"".join(lines))


def test_reads_look_only_at_the_tail(tmp_path):
    path = tmp_path / "big.jsonl"
    _write_big_plan(path, 100_000 + 17)
    size = path.stat().st_size
    tail = store.read_tail(path)
    assert tail.bytes_read < 64 * 1024 + 4096 < size // 100  # one block from the end, not the file
    assert tail.trailing_events == 17 and tail.watermark == 100_017 and tail.checkpoint_seq == 100_000
    assert tail.state.items() == store.read_full(path).items() == store.read_full(path, events_only=True).items()
    assert tail.problems == [] and tail.torn is None


def test_a_huge_checkpoint_line_is_read_whole(tmp_path):
    path = tmp_path / "wide.jsonl"
    items = [
        {"id": f"i{n}", "step": "x" * 200, "status": "pending", "deps": [], "notes": "", "comments": []}
        for n in range(3000)
    ]  # a ~700 kB checkpoint line, far more than one read block
    path.write_bytes(
        store.encode_record(store.build_event("replace", 1, {"items": items}))
        + store.encode_record(store.build_checkpoint(items, 1))
        + store.encode_record(store.build_event("remove", 2, {"id": "i0"}))
    )
    tail = store.read_tail(path)
    assert len(tail.state) == 2999 and tail.checkpoint_seq == 1 and tail.problems == []


def test_an_unusable_latest_checkpoint_falls_back_to_the_one_before(tmp_path):
    path = tmp_path / "p.jsonl"
    _write_big_plan(path, 120)
    lines = path.read_bytes().splitlines(keepends=True)
    cp_index = max(i for i, line in enumerate(lines) if b'"checkpoint"' in line)
    lines[cp_index] = b'{"v":3,"ts":"2026-01-01T00:00:00Z","seq":100,"lane":"checkpoint","items":[{"id":""}]}\n'
    path.write_bytes(b"".join(lines))
    tail = store.read_tail(path)
    assert tail.checkpoint_seq == 50
    # an item without an id breaks the st-record schema: SCHEMA, the code doctor gives the line too
    assert [p.code for p in tail.problems] == ["SCHEMA"]
    assert "unusable checkpoint, an earlier one is used" in tail.problems[0].message
    good = [json.loads(line) for i, line in enumerate(lines) if i != cp_index]
    assert tail.state.items() == replay(good).items()


def test_encode_and_parse_round_trip_with_line_numbers():
    recs = [
        store.build_event("init", 1),
        store.build_event("upsert", 2, {"item": {"id": "é", "step": "ü", "deps": []}}),
    ]
    data = b"".join(store.encode_record(r) for r in recs)
    assert "é".encode() in data and data.count(b"\n") == 2
    parsed = store.parse_plan_bytes(data + b"\n" + b"[1]\n" + b'{"v":3')
    assert [line for line, _ in parsed.records] == [1, 2]
    assert parsed.blank == [3] and [(line, why[:27]) for line, why, _ in parsed.bad] == [
        (4, "a record must be a JSON obj")
    ]
    assert parsed.torn == store.TornTail(offset=len(data) + 1 + 4, data=b'{"v":3', line=5)
    assert store.watermark(parsed.only_records()) == 2
    assert store.trailing_events(parsed.only_records()) == 2
    assert store.needs_checkpoint(parsed.only_records(), 2) and not store.needs_checkpoint(parsed.only_records(), 3)


@pytest.mark.parametrize("raw", ["0", "-3", "x"])
def test_bad_checkpoint_interval_is_rejected(raw, monkeypatch, tmp_path):
    monkeypatch.setenv("ST_CHECKPOINT_INTERVAL", raw)
    from gitst.core.errors import UsageError

    with pytest.raises(UsageError, match="expected an integer > 0"):
        store.checkpoint_interval(tmp_path)
