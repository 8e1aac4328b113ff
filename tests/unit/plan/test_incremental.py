"""The doctor's incremental mode (``doctor.check_appended``, what a commit check runs when the
plan extends its older version) reports exactly what the full scan reports on the appended
lines, whenever the older version is clean; ``gitst.plan.check.check`` uses it with
``against``."""

from __future__ import annotations

import contextlib
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from gitst.plan import check as st_kind
from gitst.plan import doctor
from gitst.plan.doctor import check_appended, check_plan_bytes
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.store import build_checkpoint, build_event, encode_record

TS = "2026-02-09T20:00:00Z"
IDS = [f"st-{i}" for i in range(1, 6)]
STATUSES = ("pending", "in_progress", "completed", "blocked")


def _edges(ids: list[str]) -> list[dict]:
    return [{"id": i, "type": "blocks"} for i in ids]


def _item(item_id: str, deps: list[str], status: str = "pending") -> dict:
    return {
        "id": item_id,
        "step": f"step {item_id}",
        "status": status,
        "deps": _edges(deps),
        "notes": "",
        "comments": [],
    }


def _found(diagnostics) -> list[tuple]:
    return [(d.line, d.code, d.severity, d.message) for d in diagnostics]


class _Writer:
    """Builds plan bytes line by line, keeping the replayed state and the watermark."""

    def __init__(self, state: PlanState | None = None, high: int = 0):
        self.lines: list[bytes] = []
        self.state = state or PlanState()
        self.high = high
        self.snapshots: list[list[dict]] = [self.state.items()]

    def event(self, op: str, fields: dict, seq: int | None = None) -> None:
        record = build_event(op, self.high + 1 if seq is None else seq, fields, ts=TS)
        self.high = max(self.high, record["seq"])
        self.lines.append(encode_record(record))
        with contextlib.suppress(ReplayError):  # the full replay skips it
            self.state.apply_event(record)
        self.snapshots.append(self.state.items())

    def checkpoint(self, items: list[dict] | None = None, seq: int | None = None) -> None:
        items = self.state.items() if items is None else items
        self.lines.append(encode_record(build_checkpoint(items, self.high if seq is None else seq, ts=TS)))

    def data(self) -> bytes:
        return b"".join(self.lines)


def _dependents(state: PlanState, item_id: str) -> bool:
    return any(edge["id"] == item_id for item in state.items() for edge in item["deps"])


@hs.composite
def valid_plans(draw) -> _Writer:
    """A plan doctor passes: events on a few items (deps only on earlier ids, so no cycle),
    canonical checkpoints anywhere, sometimes a base checkpoint first or only checkpoints."""
    plan = _Writer()
    if draw(hs.booleans()):  # a file that starts from a snapshot
        base = [_item(i, []) for i in IDS[: draw(hs.integers(1, 3))]]
        plan.state = PlanState(base)
        plan.checkpoint(base, 0)
    for _ in range(draw(hs.integers(0, 18))):
        ids = plan.state.ids()
        choice = draw(hs.sampled_from(["upsert", "upsert", "status", "notes", "deps", "remove", "checkpoint", "init"]))
        if choice == "upsert" or not ids:
            item_id = draw(hs.sampled_from(IDS))
            earlier = [i for i in ids if i < item_id]
            deps = draw(hs.lists(hs.sampled_from(earlier), max_size=2, unique=True)) if earlier else []
            plan.event("upsert", {"item": _item(item_id, deps, draw(hs.sampled_from(STATUSES)))})
        elif choice == "status":
            plan.event("set_status", {"id": draw(hs.sampled_from(ids)), "status": draw(hs.sampled_from(STATUSES))})
        elif choice == "notes":
            plan.event("set_notes", {"id": draw(hs.sampled_from(ids)), "notes": draw(hs.text(max_size=5))})
        elif choice == "deps":
            item_id = draw(hs.sampled_from(ids))
            earlier = [i for i in ids if i < item_id]
            deps = draw(hs.lists(hs.sampled_from(earlier), max_size=2, unique=True)) if earlier else []
            plan.event("set_deps", {"id": item_id, "deps": _edges(deps)})
        elif choice == "remove":
            free = [i for i in ids if not _dependents(plan.state, i)]
            if free:
                plan.event("remove", {"id": draw(hs.sampled_from(free))})
        elif choice == "checkpoint":
            plan.checkpoint()
        else:
            plan.event("init", {})
    return plan


SUFFIX_KINDS = [
    "event",
    "event",
    "event",
    "checkpoint",
    "dup_seq",
    "low_seq",
    "bad_json",
    "not_object",
    "bad_shape",
    "bad_seq_type",
    "blank",
    "stale_checkpoint",
    "wrong_seq_checkpoint",
    "unknown_id",
    "bad_status",
    "unknown_op",
    "set_deps_any",
    "self_dep",
    "unknown_dep",
    "remove_any",
    "upsert_any",
    "cycle",
    "replace_dup",
]


def _append(draw, plan: _Writer, kind: str) -> None:
    ids = plan.state.ids() or ["st-1"]
    any_id = hs.sampled_from(IDS)
    if kind == "event":
        plan.event(
            "set_notes" if plan.state.ids() else "init",
            {"id": draw(hs.sampled_from(ids)), "notes": "x"} if plan.state.ids() else {},
        )
    elif kind == "checkpoint":
        plan.checkpoint()
    elif kind == "dup_seq":
        plan.event("set_status", {"id": draw(hs.sampled_from(ids)), "status": "completed"}, seq=plan.high)
    elif kind == "low_seq":
        plan.event(
            "set_status", {"id": draw(hs.sampled_from(ids)), "status": "pending"}, seq=draw(hs.integers(0, plan.high))
        )
    elif kind == "bad_json":
        plan.lines.append(b'{"v": 3, "seq": oops\n')
    elif kind == "not_object":
        plan.lines.append(b"[1, 2]\n")
    elif kind == "bad_shape":
        plan.lines.append(
            encode_record({"v": 3, "ts": "yesterday", "seq": plan.high + 1, "lane": "event", "op": "init"})
        )
        plan.high += 1
    elif kind == "bad_seq_type":
        plan.lines.append(encode_record({"v": 3, "ts": TS, "seq": "nine", "lane": "event", "op": "init"}))
    elif kind == "blank":
        plan.lines.append(b"\n")
    elif kind == "stale_checkpoint":
        plan.checkpoint(draw(hs.sampled_from(plan.snapshots)))
    elif kind == "wrong_seq_checkpoint":
        plan.checkpoint(seq=plan.high + draw(hs.sampled_from([-1, 1, 5])) if plan.high else 3)
    elif kind == "unknown_id":
        plan.event("set_status", {"id": "st-99", "status": "completed"})
    elif kind == "bad_status":
        plan.event("set_status", {"id": draw(hs.sampled_from(ids)), "status": "nope"})
    elif kind == "unknown_op":
        plan.event("frobnicate", {"id": draw(hs.sampled_from(ids))})
    elif kind == "set_deps_any":  # may close a cycle
        plan.event(
            "set_deps",
            {"id": draw(hs.sampled_from(ids)), "deps": _edges(draw(hs.lists(any_id, max_size=2, unique=True)))},
        )
    elif kind == "self_dep":
        item_id = draw(hs.sampled_from(ids))
        plan.event("set_deps", {"id": item_id, "deps": _edges([item_id])})
    elif kind == "unknown_dep":
        plan.event("set_deps", {"id": draw(hs.sampled_from(ids)), "deps": _edges(["st-99"])})
    elif kind == "remove_any":  # may leave a dangling dependency
        plan.event("remove", {"id": draw(any_id)})
    elif kind == "cycle":
        a, b = draw(hs.sampled_from(IDS)), draw(hs.sampled_from(IDS))
        plan.event("set_deps", {"id": a, "deps": _edges([b])})
        plan.event("set_deps", {"id": b, "deps": _edges([a])})
    elif kind == "replace_dup":
        plan.event("replace", {"items": [_item("st-1", []), _item("st-1", [])]})
    elif kind == "upsert_any":  # may close a cycle
        plan.event("upsert", {"item": _item(draw(any_id), draw(hs.lists(any_id, max_size=2, unique=True)))})


@hs.composite
def appended(draw) -> tuple[bytes, bytes]:
    """(older version, newer version): a valid plan and the lines a commit appends to it."""
    plan = draw(valid_plans())
    prefix = plan.data()
    plan.lines = []
    for kind in draw(hs.lists(hs.sampled_from(SUFFIX_KINDS), max_size=8)):
        _append(draw, plan, kind)
    suffix = plan.data()
    ending = draw(hs.sampled_from(["whole", "whole", "torn", "missing_newline"]))
    if ending == "torn":
        suffix += b'{"v":3,"ts":"2026-02-09T2'
    elif ending == "missing_newline" and suffix.endswith(b"}\n"):
        suffix = suffix[:-1]
    return prefix, prefix + suffix


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appended())
def test_incremental_check_equals_the_full_scan_on_the_appended_lines(case):
    prefix, data = case
    assert check_plan_bytes(prefix, "p") == [], "the generated older version must be clean"
    before = prefix.count(b"\n")
    full = [f for f in _found(check_plan_bytes(data, "p")) if f[0] > before]
    assert _found(check_appended(data, len(prefix), "p")) == full
    # the st kind runs it when the newer version extends the older one
    assert _found(st_kind.check(data, "p", against=prefix)) == full


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appended())
def test_the_full_scan_finds_the_same_through_either_schema_engine(case):
    """A small plan's records are checked by the st-record schema compiled to Python, a large
    one's by jsonschema-rs (doctor._FEW_BYTES): the findings are the same either way."""
    _, data = case
    with mock.patch.object(doctor, "_FEW_BYTES", -1):
        through_rs = doctor.scan(data, "p").diagnostics
    with mock.patch.object(doctor, "_FEW_BYTES", 1 << 40):
        through_compiled = doctor.scan(data, "p").diagnostics
    assert through_compiled == through_rs


def test_a_small_plan_is_checked_by_the_compiled_schema_and_a_large_one_by_jsonschema_rs():
    from gitst.schemas import catalog

    few = doctor._Scan("p", doctor._Start(), few=True).is_valid
    many = doctor._Scan("p", doctor._Start(), few=False).is_valid
    assert few is catalog.compiled("st-record")
    assert many == catalog.validator("st-record").is_valid


def _plan(*records: dict) -> bytes:
    return b"".join(encode_record(r) for r in records)


UPSERT = build_event("upsert", 1, {"item": _item("st-1", [])}, ts=TS)
NOTES = build_event("set_notes", 2, {"id": "st-1", "notes": "n"}, ts=TS)
CHECKPOINT = build_checkpoint([{**_item("st-1", []), "notes": "n"}], 2, ts=TS)


def test_an_appended_line_has_its_line_number_in_the_new_file():
    older = _plan(UPSERT, NOTES, CHECKPOINT)
    newer = older + _plan(build_event("set_status", 3, {"id": "st-404", "status": "blocked"}, ts=TS))
    found = check_appended(newer, len(older), "p")
    assert [(d.line, d.code) for d in found] == [(4, "ST_REPLAY_UNKNOWN_ID")]


def test_the_committed_prefix_is_not_rescanned_but_doctor_sees_it():
    """What a commit check covers: what the commit adds, on top of the committed prefix."""
    older = b"not json, committed with --no-verify\n" + _plan(UPSERT, NOTES, CHECKPOINT)
    newer = older + _plan(build_event("set_status", 3, {"id": "st-1", "status": "completed"}, ts=TS))
    assert check_appended(newer, len(older), "p") == []
    assert st_kind.check(newer, "p", against=older) == []
    assert [(d.line, d.code) for d in check_plan_bytes(newer, "p")] == [(1, "JSON")]


def test_a_prefix_whose_tail_is_broken_gets_the_full_scan():
    older = b"not json\n" + _plan(UPSERT, build_event("set_status", 2, {"id": "st-9", "status": "blocked"}, ts=TS))
    newer = older + _plan(build_event("set_notes", 3, {"id": "st-1", "notes": "x"}, ts=TS))
    full = check_plan_bytes(newer, "p")
    assert [(d.line, d.code) for d in full] == [(1, "JSON"), (3, "ST_REPLAY_UNKNOWN_ID")]
    assert check_appended(newer, len(older), "p") == full


def test_a_rewrite_is_refused_and_the_whole_file_checked():
    older = _plan(UPSERT, NOTES)
    newer = b"not json\n" + _plan(NOTES)
    found = [(d.line, d.code) for d in st_kind.check(newer, "p", against=older)]
    assert found == [(1, "JSON"), (2, "ST_REPLAY_UNKNOWN_ID"), (1, "ST_NOT_APPEND_ONLY")]


def test_a_checkpoint_appended_after_a_snapshot_only_prefix_is_a_new_base():
    """A prefix without events (only a base checkpoint): an appended checkpoint is the base
    again, as in the full scan — the incremental start knows no event came before."""
    older = _plan(build_checkpoint([_item("st-1", [])], 0, ts=TS))
    newer = older + _plan(build_checkpoint([_item("st-2", [])], 0, ts=TS))
    assert check_appended(newer, len(older), "p") == check_plan_bytes(newer, "p") == []
    with_event = _plan(UPSERT, build_checkpoint([_item("st-1", [])], 1, ts=TS))
    newer = with_event + _plan(build_checkpoint([_item("st-2", [])], 1, ts=TS))
    assert [(d.line, d.code) for d in check_appended(newer, len(with_event), "p")] == [(3, "ST_REPLAY_CONTRACT")]
