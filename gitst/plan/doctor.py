"""THE st plan checker: every rule of seed 000, each finding with its 1-based line.

One pass over the file (orjson per line, the ``st-record`` schema through jsonschema-rs —
``is_valid`` first, ``errors`` only for a record that fails —, then a tight replay):

- every line is JSON (``JSON``, the code every kind uses) and an object, no blank lines
  (``ST_BLANK_LINE``, warning), a last line without newline is a torn write
  (``ST_TORN_TAIL``) or a whole record missing its newline (``ST_MISSING_NEWLINE``, warning);
- every record has the v3 shape (``SCHEMA``, as in every kind; the ``st-record`` schema says
  what that is - a line that is not an object breaks it too);
- checkpoint seq rule: a checkpoint's seq equals the watermark just before it
  (``ST_CHECKPOINT_SEQ``);
- trailing seq rule: the records after the latest checkpoint have strictly increasing seq
  (``ST_TRAILING_SEQ``);
- replay: every event applies (``ST_REPLAY_*``, the reducer's code);
- replay contract: at every checkpoint, the full replay of the events before it equals the
  checkpoint's items (``ST_REPLAY_CONTRACT``), so checkpoint + tail equals full replay;
- dependency rules (:mod:`gitst.plan.rules`, the writers' own): the event - or base
  checkpoint - that makes an item depend on itself (``ST_RULE_SELF_DEP``), on an id that is
  not in the plan (``ST_RULE_UNKNOWN_DEP``) or closes a dependency cycle (``ST_RULE_CYCLE``)
  is named by its line. Only events that change deps or the set of ids are looked at. The
  status policies (one item in progress, in progress with unresolved deps) are the writers'
  (the flag lives in the mutation envelope) and are not file errors.

A checkpoint before any event (a file that starts from a snapshot) is the base the full
replay starts from.

Sealing: a *canonical* checkpoint — seq equal to the watermark and items equal to the full
replay — seals the seq and replay findings before it (historical seq collisions, such as
the file made by concatenating two branches' appends, a stale checkpoint, an event that no
longer applies). ``--repair-seq`` appends exactly such a checkpoint. Line-level findings
(bad JSON, bad shape) are never sealed: the bytes stay wrong.

Incremental mode (:func:`check_appended`, what a commit check runs when the plan extends
its older version): the same scan, started at the first appended line from the state the
older version ends in - read O(tail), as every reader does - instead of from line 1.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

import orjson

from gitst.core.diagnostics import SCHEMA, WARNING, Diagnostic, by_position
from gitst.core.jsonio import JSON_DEPTH
from gitst.plan import reducer, rules
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.store import (
    BAD,
    BLANK,
    ITEM_DEPTH,
    RECORD,
    TORN,
    bad_line_code,
    deep_item_message,
    iter_plan_lines,
    read_tail_bytes,
    schema_problem,
    seq_of,
    too_deep_items,
    touched_items,
)

# Ops that can change what the structural dependency rules see (deps, or which ids exist).
_DEPENDENCY_OPS = frozenset(("replace", "replace_all", "upsert", "upsert_item", "set_deps", "remove"))
# The structural rules of gitst.plan.rules (by violation key) and their diagnostic codes.
_DEPENDENCY_RULES = {"self-dep": "ST_RULE_SELF_DEP", "unknown-dep": "ST_RULE_UNKNOWN_DEP", "cycle": "ST_RULE_CYCLE"}


def _dependency_breaks(state: PlanState) -> dict:
    """``{violation key: message}`` of the structural dependency rules ``state`` breaks."""
    return {
        v.key: v.message
        for v in rules.violations(state.items(), allow_multiple_in_progress=True)
        if v.key[0] in _DEPENDENCY_RULES
    }


@dataclass
class PlanCheck:
    """The result of one full scan."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    state: PlanState = field(default_factory=PlanState)  # full replay (events only)
    watermark: int = 0
    records: int = 0
    checkpoints: int = 0
    lines: int = 0

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def check_plan_bytes(data: bytes, path: str) -> list[Diagnostic]:
    """Every rule of the plan file ``data`` (shown as ``path``), one Diagnostic per finding."""
    return scan(data, path).diagnostics


@dataclass
class _Start:
    """Where a scan starts and the scan's state just before that line."""

    offset: int = 0
    line: int = 1
    state: PlanState = field(default_factory=PlanState)
    watermark: int = 0
    previous: int | None = None  # highest seq since the latest checkpoint (None: no record yet)
    events: int = 0  # events before (only "any or none" matters: a base checkpoint)
    broken: dict = field(default_factory=dict)


def check_appended(data: bytes, prefix_len: int, path: str) -> list[Diagnostic]:
    """The rules for the lines ``data`` appends to its first ``prefix_len`` bytes (an older
    version, whole lines): the scan starts from the state the prefix ends in, read the O(tail)
    way (latest checkpoint + the records after it, :func:`gitst.plan.store.read_tail_bytes`).
    Line numbers are ``data``'s. When the prefix's tail cannot be read that way (a bad line,
    an unusable checkpoint, a trailing record that breaks a rule), it is the full scan.

    When the full scan of the prefix is clean, the findings equal the full scan's on the lines
    after the prefix; earlier lines are not looked at (``git st doctor`` checks them).
    """
    start = _start_after(data[:prefix_len]) if prefix_len else _Start()
    if start is None:
        return check_plan_bytes(data, path)
    return scan(data, path, start=start).diagnostics


def _start_after(prefix: bytes) -> _Start | None:
    """The scan state at the end of ``prefix`` (ending in a newline), from its tail; None when
    the tail is not clean enough to stand for the whole prefix."""
    from gitst.schemas.catalog import validator

    if not prefix.endswith(b"\n"):
        return None
    tail = read_tail_bytes(prefix)
    if tail.problems or tail.torn is not None:
        return None
    is_valid = validator("st-record").is_valid
    if not all(is_valid(record) for _, record in tail.records):
        return None  # the full scan skips such a record, the tail read does not
    events = tail.trailing_events
    if not events and tail.checkpoint_offset is not None:
        events = _any_event_before(prefix, tail.checkpoint_offset, is_valid)
    return _Start(
        offset=len(prefix),
        line=prefix.count(b"\n") + 1,
        state=tail.state,
        watermark=tail.watermark,
        previous=tail.watermark if tail.records else None,
        events=events,
        broken=_dependency_breaks(tail.state),
    )


def _any_event_before(data: bytes, end: int, is_valid) -> int:
    """1 when a record before offset ``end`` is an event, else 0 (walks back to the first one:
    a checkpoint normally follows an event, so this reads one line)."""
    while end > 0:
        begin = data.rfind(b"\n", 0, end - 1) + 1
        raw = data[begin:end]
        end = begin
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(value) is dict and is_valid(value) and value["lane"] != "checkpoint":
            return 1
    return 0


def describe_difference(checkpoint: list[dict], replayed: list[dict]) -> str:
    """Plain words for the first difference between a checkpoint and the full replay."""
    cp_by_id = {item["id"]: item for item in checkpoint}
    rp_by_id = {item["id"]: item for item in replayed}
    missing = [i for i in rp_by_id if i not in cp_by_id]
    extra = [i for i in cp_by_id if i not in rp_by_id]
    if missing:
        return f"item '{missing[0]}' is in the full replay but not in the checkpoint"
    if extra:
        return f"item '{extra[0]}' is in the checkpoint but not in the full replay"
    for item_id, replay_item in rp_by_id.items():
        cp_item = cp_by_id[item_id]
        if cp_item != replay_item:
            for key in dict.fromkeys([*replay_item, *cp_item]):
                if cp_item.get(key, "<missing>") != replay_item.get(key, "<missing>"):
                    return (
                        f"item '{item_id}' field '{key}': checkpoint has {_short(cp_item.get(key, '<missing>'))}, "
                        f"full replay has {_short(replay_item.get(key, '<missing>'))}"
                    )
    return "the items are in a different order"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def scan(data: bytes, path: str, *, start: _Start | None = None) -> PlanCheck:
    """The full check; also gives the full-replay state and the watermark (for repair).
    With ``start`` (:func:`check_appended`), only the lines from there on are checked."""
    # A million small dicts make the cyclic GC run again and again for nothing (the records
    # are dropped as soon as they are applied): a third of the time. Off for the scan.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _scan(data, path, start or _Start())
    finally:
        if was_enabled:
            gc.enable()


def _scan(data: bytes, path: str, start: _Start) -> PlanCheck:
    from gitst.schemas.catalog import validator

    shape = validator("st-record")
    is_valid = shape.is_valid
    result = PlanCheck()
    lasting: list[Diagnostic] = []  # never sealed
    pending: list[Diagnostic] = []  # sealed by the next canonical checkpoint
    trailing: list[Diagnostic] = []  # trailing seq findings since the latest checkpoint
    state = start.state
    apply_event = state.apply_event
    high = start.watermark
    previous = start.previous  # highest seq since the latest checkpoint (trailing rule)
    records = checkpoints = 0
    events = start.events
    line = start.line - 1
    broken = start.broken  # dependency rules the replayed state breaks, by key

    def report_new_breaks(line: int) -> None:
        nonlocal broken
        now = _dependency_breaks(state)
        for key, message in now.items():
            if key not in broken:
                lasting.append(Diagnostic(path, line, _DEPENDENCY_RULES[key[0]], message))
        broken = now

    for item in iter_plan_lines(data, start.offset, start.line):
        line = item[1]
        if item[0] is not RECORD:
            if item[0] is BLANK:
                lasting.append(Diagnostic(path, line, "ST_BLANK_LINE", "blank line", WARNING))
            elif item[0] is TORN:
                lasting.append(
                    Diagnostic(
                        path,
                        line,
                        "ST_TORN_TAIL",
                        f"last line is a torn write: {len(item[3])} bytes without a newline, {item[2]}",
                        fix="run any mutation (or `git st doctor --repair-seq`): "
                        "the writer sets it aside as <plan>.torn-<timestamp>",
                    )
                )
            elif item[0] is BAD:
                why = item[2]
                code = bad_line_code(why)
                lasting.append(Diagnostic(path, line, code, why))
            continue
        records += 1
        record = item[2]
        if not is_valid(record):
            lasting.append(Diagnostic(path, line, SCHEMA, schema_problem(record) or "record does not match st-record"))
            seq = seq_of(record)
            if seq is not None and seq > high:
                high = seq
            continue
        seq = record["seq"]
        if type(seq) is not int:
            seq = int(seq)
        if record["lane"] == "checkpoint":
            checkpoints += 1
            canonical = True
            if seq != high:
                canonical = False
                pending.append(
                    Diagnostic(
                        path,
                        line,
                        "ST_CHECKPOINT_SEQ",
                        f"checkpoint seq {seq} must equal the watermark before it ({high})",
                        fix="git st doctor --repair-seq",
                    )
                )
            if events == 0:
                # A checkpoint before any event is the plan's base snapshot (a file may start
                # from one): the full replay starts from its items.
                try:
                    state = PlanState(reducer.checkpoint_items(record))
                    apply_event = state.apply_event
                except ReplayError:
                    pass
                else:
                    report_new_breaks(line)
            replayed = state.items()
            if record["items"] == replayed:
                pass  # the common case: already canonical and equal, no need to normalize
            else:
                try:
                    items = reducer.checkpoint_items(record)
                except ReplayError as exc:
                    canonical = False
                    pending.append(Diagnostic(path, line, exc.code, f"checkpoint: {exc.message}"))
                    items = replayed
                if items != replayed:
                    canonical = False
                    pending.append(
                        Diagnostic(
                            path,
                            line,
                            "ST_REPLAY_CONTRACT",
                            f"checkpoint differs from the full replay of the events before it: "
                            f"{describe_difference(items, replayed)}",
                            fix="git st doctor --repair-seq",
                        )
                    )
            if canonical:
                pending.clear()
            trailing.clear()
            previous = seq
        else:
            if previous is not None and seq <= previous:
                trailing.append(
                    Diagnostic(
                        path,
                        line,
                        "ST_TRAILING_SEQ",
                        f"seq {seq} is not above the previous seq {previous} after the latest checkpoint",
                        fix="git st doctor --repair-seq",
                    )
                )
            if previous is None or seq > previous:
                previous = seq
            events += 1
            try:
                apply_event(record)
            except ReplayError as exc:
                pending.append(
                    Diagnostic(
                        path,
                        line,
                        exc.code,
                        f"{exc.message} (the full replay skips it)",
                        fix="git st doctor --repair-seq",
                    )
                )
            else:
                if record.get("op") in _DEPENDENCY_OPS:
                    report_new_breaks(line)
                raw = item[3]
                if len(raw) > 2 * ITEM_DEPTH + 1:  # a shorter line cannot hold a too-deep item
                    deep = too_deep_items(touched_items(state, record))
                    if deep:  # sealed once a later event removes the item (its checkpoint fits)
                        pending.append(
                            Diagnostic(path, line, JSON_DEPTH, deep_item_message(deep), fix=f"git st remove {deep[0]}")
                        )
        if seq > high:
            high = seq

    result.diagnostics = by_position(lasting + pending + trailing)
    result.state = state
    result.watermark = high
    result.records = records
    result.checkpoints = checkpoints
    result.lines = line
    if data and not data.endswith(b"\n") and not any(d.code == "ST_TORN_TAIL" for d in lasting):
        result.diagnostics.append(
            Diagnostic(
                path,
                line,
                "ST_MISSING_NEWLINE",
                "the last record has no newline; the next write adds it",
                WARNING,
            )
        )
    return result
