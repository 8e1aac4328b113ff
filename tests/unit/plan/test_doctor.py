"""The doctor's checkpoint rules, in-process: a canonical checkpoint seals what came before it
and a plan may start from one. The broken-rule and --repair-seq cases run through the CLI in
tests/e2e/plan/test_doctor.py."""

from __future__ import annotations

from gitst.plan.doctor import check_plan_bytes, scan
from gitst.plan.store import build_checkpoint, build_event, encode_record

ITEM = {"id": "st-001", "step": "A", "status": "pending", "deps": [], "notes": "", "comments": []}


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
