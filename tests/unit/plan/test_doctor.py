"""doctor names each broken rule with its line; --repair-seq seals seq collisions by appending
a canonical checkpoint (e.g. the file made by concatenating two branches' appends)."""

from __future__ import annotations

import json

from gitst.plan.doctor import check_plan_bytes, scan
from gitst.plan.store import build_checkpoint, build_event, encode_record
from tests.support import git, plan_path, st_quick

TS = "2026-02-09T20:00:00Z"


ITEM = {"id": "st-001", "step": "A", "status": "pending", "deps": [], "notes": "", "comments": []}


def _line(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


BROKEN = b"".join(
    [
        _line({"v": 3, "ts": TS, "seq": 1, "lane": "event", "op": "init"}),  # 1 ok
        _line({"v": 3, "ts": TS, "seq": 2, "lane": "event", "op": "upsert", "item": ITEM}),  # 2 ok
        b"\n",  # 3 blank
        b"this is not json\n",  # 4
        b"[1, 2]\n",  # 5
        _line({"v": 3, "ts": "yesterday", "seq": -1, "lane": "event", "op": "upsert"}),  # 6 shape
        _line({"v": 3, "ts": TS, "seq": 7, "lane": "checkpoint", "items": [ITEM]}),  # 7 cp seq
        _line(
            {"v": 3, "ts": TS, "seq": 8, "lane": "event", "op": "set_status", "id": "st-404", "status": "blocked"}
        ),  # 8
        _line(
            {"v": 3, "ts": TS, "seq": 8, "lane": "checkpoint", "items": [{**ITEM, "status": "completed"}]}
        ),  # 9 contract
        _line(
            {"v": 3, "ts": TS, "seq": 5, "lane": "event", "op": "set_notes", "id": "st-001", "notes": "x"}
        ),  # 10 trailing
        b'{"v":3,"ts":"2026-02-09T2',  # 11 torn
    ]
)


EXPECTED = [
    (3, "ST_BLANK_LINE", "warning"),
    (4, "JSON", "error"),
    (5, "SCHEMA", "error"),
    (6, "SCHEMA", "error"),
    (7, "ST_CHECKPOINT_SEQ", "error"),
    (8, "ST_REPLAY_UNKNOWN_ID", "error"),
    (9, "ST_REPLAY_CONTRACT", "error"),
    (10, "ST_TRAILING_SEQ", "error"),
    (11, "ST_TORN_TAIL", "error"),
]


def records_after(data: bytes) -> list[dict]:
    out = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _branch_plan(repo, name, commands, env=None):
    git("checkout", "-q", "-b", name, "main", cwd=repo)
    for args in commands:
        st_quick(*args, cwd=repo, env=env)
    git("commit", "-qam", f"plan on {name}", cwd=repo)
    data = plan_path(repo).read_bytes()
    git("checkout", "-q", "main", cwd=repo)
    return data


def _concatenated_branches(repo, env=None):
    """Base plan on main; two branches append; the file a `cat`/union merge would give."""
    st_quick("init", cwd=repo, env=env)
    for step in ("One", "Two", "Three"):
        st_quick("add", "--step", step, cwd=repo, env=env)
    git("add", ".step", cwd=repo)
    git("commit", "-qm", "plan", cwd=repo)
    base = plan_path(repo).read_bytes()
    ours = _branch_plan(repo, "a", [("set-status", "st-001", "done"), ("add", "--id", "a-1", "--step", "From A")], env)
    theirs = _branch_plan(
        repo,
        "b",
        [
            ("set-notes", "st-002", "from B"),
            ("add", "--id", "b-1", "--step", "From B"),
            ("set-status", "st-003", "blocked"),
        ],
        env,
    )
    assert ours.startswith(base) and theirs.startswith(base)
    git("checkout", "-q", "-b", "merged", "main", cwd=repo)
    merged = ours + theirs[len(base) :]
    plan_path(repo).write_bytes(merged)
    return merged


def _union_state(items):
    return {i["id"]: (i["status"], i["notes"]) for i in items}


EXPECTED_UNION = {
    "st-001": ("completed", ""),
    "st-002": ("pending", "from B"),
    "st-003": ("blocked", ""),
    "a-1": ("pending", ""),
    "b-1": ("pending", ""),
}


def test_a_canonical_checkpoint_seals_what_came_before():
    stale = build_checkpoint([], 2)  # says the plan is empty: wrong
    data = b"".join(
        encode_record(r)
        for r in [
            build_event("init", 1),
            build_event("upsert", 2, {"item": ITEM}),
            stale,
            build_event("set_status", 3, {"id": "gone", "status": "completed"}),
        ]
    )
    assert [d.code for d in check_plan_bytes(data, "p")] == ["ST_REPLAY_CONTRACT", "ST_REPLAY_UNKNOWN_ID"]
    result = scan(data, "p")
    sealed = data + encode_record(build_checkpoint(result.state.items(), result.watermark))
    assert check_plan_bytes(sealed, "p") == []
    # a checkpoint at the wrong seq does not seal
    wrong = data + encode_record(build_checkpoint(result.state.items(), result.watermark + 1))
    assert [d.code for d in check_plan_bytes(wrong, "p")] == [
        "ST_REPLAY_CONTRACT",
        "ST_REPLAY_UNKNOWN_ID",
        "ST_CHECKPOINT_SEQ",
    ]


def test_a_plan_may_start_from_a_checkpoint():
    base = build_checkpoint([ITEM], 0)
    data = b"".join(encode_record(r) for r in [base, build_event("set_notes", 1, {"id": "st-001", "notes": "n"})])
    assert check_plan_bytes(data, "p") == []
    result = scan(data, "p")
    assert result.state.items() == [{**ITEM, "notes": "n"}]  # what a repair would seal
    # a compacted file whose base keeps its old seq: the seq rule is reported, the items are not lost
    compacted = b"".join(encode_record(r) for r in [build_checkpoint([ITEM], 40), build_event("init", 41)])
    assert [d.code for d in check_plan_bytes(compacted, "p")] == ["ST_CHECKPOINT_SEQ"]
    assert scan(compacted, "p").state.items() == [ITEM]
