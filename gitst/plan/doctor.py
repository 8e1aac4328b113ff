"""THE st plan checker: every rule of seed 000, each finding with its 1-based line.

One pass over the file (orjson per line through ``gitst.core.jsonio``, the ``st-record`` schema through jsonschema-rs —
``is_valid`` first, ``errors`` only for a record that fails; for a small plan the schema compiled
to Python, ``catalog.verdicts`` —, then a tight replay):

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
import io
from pathlib import Path

import orjson

from gitst.core import jsonio
from gitst.core.diagnostics import JSON, SCHEMA, WARNING, Diagnostic, by_position
from gitst.core.jsonio import JSON_DEPTH, MAX_DEPTH, too_deep
from gitst.core.values import Value
from gitst.plan import reducer
from gitst.plan.model import json_type
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.rules import DependencyRules
from gitst.plan.store import (
    CR_ONLY,
    ITEM_DEPTH,
    TOO_DEEP,
    Tail,
    deep_item_message,
    line_blocks,
    read_tail_from,
    reverse_lines,
    schema_problem,
    seq_of,
    too_deep_items,
    touched_items,
)
from gitst.schemas.catalog import specialized, verdicts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    from gitst.plan.rules import Violation

    _Check = Callable[[Any], bool]  # the st-record schema's verdict on one record

__all__ = ["PlanCheck", "check_appended", "check_appended_file", "check_plan_bytes", "scan", "scan_file"]

# Ops that can change what the structural dependency rules see (deps, or which ids exist).
_DEPENDENCY_OPS = frozenset(("replace", "replace_all", "upsert", "upsert_item", "set_deps", "remove"))
_WHOLE_STATE_OPS = frozenset(("replace", "replace_all"))
# The structural rules of gitst.plan.rules (by violation key) and their diagnostic codes.
_DEPENDENCY_RULES = {"self-dep": "ST_RULE_SELF_DEP", "unknown-dep": "ST_RULE_UNKNOWN_DEP", "cycle": "ST_RULE_CYCLE"}
# A line this long may be a checkpoint worth recognising byte for byte (below, parsing it is cheap).
_KNOWN_CHECKPOINT_MIN = 512
# too_deep's cheap guards, on one count of a line's opening brackets: a line nests more than
# MAX_DEPTH only when it holds more than MAX_DEPTH of them (and is longer than 2 * MAX_DEPTH + 1
# bytes). An event can make an item too deep (more than ITEM_DEPTH) only when its line holds at
# least _ITEM_BRACKETS of them: the item nests at most one level deeper than the line (a
# comment: line > comment; item > comments > comment) and every level opens a bracket. A line of
# _ITEM_DEEP_MIN bytes or fewer can do neither: its brackets are not counted.
_ITEM_DEEP_MIN = 2 * ITEM_DEPTH + 1
_ITEM_BRACKETS = ITEM_DEPTH - 1
# Up to this many bytes of lines to check, records are checked by the st-record schema compiled
# to Python (catalog.verdicts): a 200-item plan is ~100 kB, and importing and building
# jsonschema-rs would cost its check more than the records do.
_FEW_BYTES = 256 << 10
# At most this many record kinds (lane, op) get a check of their own (catalog.specialized); a
# plan has a dozen, a hostile file may have millions of made-up ops: those get the whole schema.
_KINDS = 16


class _ByKind(dict[tuple[object, object], "_Check"]):
    """The st-record check for each kind ``(lane, op)`` of record a plan has: jsonschema-rs's
    for the schema with that kind's ``if`` s decided (catalog.specialized), or the whole
    schema's (``full``: a small plan's compiled schema, a kind that is not two strings, more
    kinds than ``_KINDS``)."""

    def __init__(self, full: _Check, few: bool) -> None:
        super().__init__()
        self.full = full
        self.few = few

    def __missing__(self, key: tuple[object, object]) -> _Check:
        if len(self) >= _KINDS:
            return self.full  # not kept: made-up kinds never fill memory
        lane, op = key
        check = self.full
        if not self.few and type(lane) is str:
            check = specialized("st-record", (("lane", lane), ("op", op)) if type(op) is str else (("lane", lane),))
        self[key] = check
        return check


class PlanCheck(Value):
    """The result of one full scan."""

    __slots__ = ("checkpoints", "diagnostics", "lines", "records", "state", "watermark", "work")

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.state = PlanState()  # full replay (events only)
        self.watermark = 0
        self.records = 0
        self.checkpoints = 0
        self.lines = 0
        # Items the check looked at one by one (dependency rules, checkpoint items validated
        # or compared): the number the tests hold linear, whatever the shape of the plan.
        self.work = 0

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def check_plan_bytes(data: bytes, path: str) -> list[Diagnostic]:
    """Every rule of the plan file ``data`` (shown as ``path``), one Diagnostic per finding."""
    return scan(data, path).diagnostics


class _Start(Value):
    """Where a scan starts and the scan's state just before that line."""

    __slots__ = ("events", "line", "offset", "previous", "rules", "state", "watermark")

    def __init__(
        self,
        offset: int = 0,
        line: int = 1,
        state: PlanState | None = None,
        watermark: int = 0,
        previous: int | None = None,  # highest seq since the latest checkpoint (None: no record yet)
        events: int = 0,  # events before (only "any or none" matters: a base checkpoint)
        rules: DependencyRules | None = None,  # the dependency rules the state breaks already
    ):
        self.offset = offset
        self.line = line
        self.state = PlanState() if state is None else state
        self.watermark = watermark
        self.previous = previous
        self.events = events
        self.rules = rules


def check_appended(data: bytes, prefix_len: int, path: str) -> list[Diagnostic]:
    """The rules for the lines ``data`` appends to its first ``prefix_len`` bytes (an older
    version, whole lines): the scan starts from the state the prefix ends in, read the O(tail)
    way (latest checkpoint + the records after it, :func:`gitst.plan.store.read_tail_from`).
    Line numbers are ``data``'s. When the prefix's tail cannot be read that way (a bad line,
    an unusable checkpoint, a trailing record that breaks a rule), it is the full scan.

    When the full scan of the prefix is clean, the findings equal the full scan's on the lines
    after the prefix; earlier lines are not looked at (``git st doctor`` checks them).
    """
    return check_appended_file(io.BytesIO(data), len(data), prefix_len, path)


def check_appended_file(
    handle: BinaryIO, size: int, prefix_len: int, path: str, *, prefix_lines: int | None = None
) -> list[Diagnostic]:
    """:func:`check_appended` of the first ``size`` bytes of an open file, read in blocks
    (memory stays bounded however long the plan). ``prefix_lines``: the newlines in the prefix,
    when the caller counted them already."""
    start = _start_after(handle, prefix_len, prefix_lines) if prefix_len else _Start()
    if start is None:
        return scan_file(handle, size, path).diagnostics
    return scan_file(handle, size, path, start=start).diagnostics


def _start_after(handle: BinaryIO, prefix_len: int, lines: int | None = None) -> _Start | None:
    """The scan state at the end of the first ``prefix_len`` bytes (ending in a newline), from
    their tail; None when the tail is not clean enough to stand for the whole prefix."""
    handle.seek(prefix_len - 1)
    if handle.read(1) != b"\n":
        return None
    is_valid = verdicts("st-record", few=prefix_len <= _FEW_BYTES)
    tail = Tail(path=Path("<plan>"), exists=True)
    read_tail_from(handle, prefix_len, tail, accept=is_valid)
    if tail.problems or tail.torn is not None or tail.rejected:
        return None  # (rejected: the full scan skips a record that breaks its schema, the tail read does not)
    events = tail.trailing_events
    if not events and tail.checkpoint_offset is not None:
        events = _any_event_before(handle, tail.checkpoint_offset, is_valid)
    return _Start(
        offset=prefix_len,
        line=(_count_lines(handle, prefix_len) if lines is None else lines) + 1,
        state=tail.state,
        watermark=tail.watermark,
        previous=tail.watermark if tail.record_count else None,
        events=events,
        rules=DependencyRules(tail.state.items()),
    )


def _count_lines(handle: BinaryIO, end: int) -> int:
    """The newlines in the first ``end`` bytes, read in blocks."""
    handle.seek(0)
    count = pos = 0
    while pos < end:
        block = handle.read(min(1 << 22, end - pos))
        if not block:
            break
        count += block.count(b"\n")
        pos += len(block)
    return count


def _any_event_before(handle: BinaryIO, end: int, is_valid: _Check) -> int:
    """1 when a record before offset ``end`` is an event, else 0 (walks back to the first one:
    a checkpoint normally follows an event, so this reads one line)."""
    for _, raw in reverse_lines(handle, end):
        try:
            value = jsonio.loads(raw)
        except jsonio.JSONDecodeError:
            continue
        if type(value) is dict and is_valid(value) and value["lane"] != "checkpoint":
            return 1
    return 0


def describe_difference(checkpoint: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> str:
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


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def scan(data: bytes, path: str, *, start: _Start | None = None) -> PlanCheck:
    """The full check; also gives the full-replay state and the watermark (for repair).
    With ``start`` (:func:`check_appended`), only the lines from there on are checked."""
    return scan_file(io.BytesIO(data), len(data), path, start=start)


def scan_file(handle: BinaryIO, size: int, path: str, *, start: _Start | None = None) -> PlanCheck:
    """:func:`scan` of the first ``size`` bytes of an open file, read block by block: memory
    holds one block and the plan's state, never the file."""
    # A million small dicts make the cyclic GC run again and again for nothing (the records
    # are dropped as soon as they are applied): a third of the time. Off for the scan.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = start or _Start()
        return _Scan(path, start, few=size - start.offset <= _FEW_BYTES).run(handle, size)
    finally:
        if was_enabled:
            gc.enable()


class _Scan:
    """One pass over the lines of a plan (see the module docstring for the rules)."""

    def __init__(self, path: str, start: _Start, *, few: bool) -> None:
        self.path = path
        self.is_valid = verdicts("st-record", few=few)
        self.by_kind = _ByKind(self.is_valid, few)
        self.lasting: list[Diagnostic] = []  # never sealed
        self.pending: list[Diagnostic] = []  # sealed by the next canonical checkpoint
        self.trailing: list[Diagnostic] = []  # trailing seq findings since the latest checkpoint
        self.state = start.state
        self.rules = start.rules or DependencyRules(self.state.items())
        self.high = start.watermark
        self.previous = start.previous  # highest seq since the latest checkpoint (trailing rule)
        self.events = start.events
        self.line = start.line - 1
        self.offset = start.offset
        self.records = self.checkpoints = self.compared = 0
        self.missing_newline = False  # the last record read so far has no newline

    def report(self, line: int, found: list[Violation]) -> None:
        for violation in found:
            self.lasting.append(Diagnostic(self.path, line, _DEPENDENCY_RULES[violation.key[0]], violation.message))

    def run(self, handle: BinaryIO, size: int) -> PlanCheck:
        """Every line from the start offset to ``size``, block by block, then the result."""
        for block in line_blocks(handle, self.offset, size):
            final = not block.endswith(b"\n")  # then the block is the last line, without its newline
            pieces = [block] if final else block.split(b"\n")
            if not final:
                pieces.pop()  # the empty piece after the block's last newline
            self._lines(pieces, final)
        return self._result()

    def _lines(self, pieces: list[bytes], final: bool) -> None:
        """The lines of one block: each parsed, classified and checked. This loop is the hot path
        of every full check: what it touches on each line is held in locals, each kind of line
        other than a valid event has a method of its own, and an event is :meth:`_event`."""
        # orjson plus the nesting bound every reader applies (iter_plan_lines does the same);
        # integers beyond 2^53-1 break the st-record schema's maximum: SCHEMA, below
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        max_depth = MAX_DEPTH
        is_valid = self.is_valid
        by_kind = self.by_kind
        lasting = self.lasting
        event = self._event
        line = self.line
        for raw in pieces:
            line += 1
            if not raw or raw.isspace():
                lasting.append(self._blank(line, raw, final))
                continue
            if len(raw) >= _KNOWN_CHECKPOINT_MIN and self._known_line(line, raw, final):
                continue
            try:
                record = loads(raw)
            except decode_error as exc:
                lasting.append(self._not_json(line, raw, final, exc))
                continue
            # too_deep's cheap guards, inlined, on one count of the line's opening brackets
            # (_ITEM_DEEP_MIN: why a shorter line can nest too deep neither as a line nor as an item)
            brackets = raw.count(b"{") + raw.count(b"[") if len(raw) > _ITEM_DEEP_MIN else 0
            if brackets > max_depth and too_deep(raw):
                lasting.append(Diagnostic(self.path, line, JSON_DEPTH, TOO_DEEP))
                continue
            if type(record) is not dict:
                lasting.append(self._not_object(line, raw, record, final))
                continue
            self.missing_newline = final
            self.records += 1
            try:
                check = by_kind[record.get("lane"), record.get("op")]
            except TypeError:  # a lane or op that is not even hashable: the whole schema says why
                check = is_valid
            if not check(record):
                self._bad_shape(line, record)
            elif record["lane"] == "checkpoint":
                self._checkpoint(line, record, known=False)
            else:
                event(line, record, brackets)
        self.line = line

    def _event(self, line: int, record: dict[str, Any], brackets: int) -> None:
        """A valid event: the trailing seq rule, the replay, the dependency rules of what it
        changed and the depth of the items it touched."""
        seq = record["seq"]
        if type(seq) is not int:
            seq = int(seq)
        previous = self.previous
        if previous is None or seq > previous:
            self.previous = seq
        else:
            self.trailing.append(
                Diagnostic(
                    self.path,
                    line,
                    "ST_TRAILING_SEQ",
                    f"seq {seq} is not above the previous seq {previous} after the latest checkpoint",
                    fix="git st doctor --repair-seq",
                )
            )
        self.events += 1
        try:
            self.state.apply_event(record)
        except ReplayError as exc:
            self.pending.append(
                Diagnostic(
                    self.path,
                    line,
                    exc.code,
                    f"{exc.message} (the full replay skips it)",
                    fix="git st doctor --repair-seq",
                )
            )
        else:
            op = record["op"]
            if op in _DEPENDENCY_OPS:
                self._dependencies(line, record, op)
            if brackets >= _ITEM_BRACKETS:
                self._deep_items(line, record)
        if seq > self.high:
            self.high = seq

    def _known_line(self, line: int, raw: bytes, final: bool) -> bool:
        """True when ``raw`` is a checkpoint of exactly the replayed items (then checked as one:
        :meth:`_known_checkpoint`); only looked for once an event was replayed."""
        if not self.events:
            return False
        record = self._known_checkpoint(raw)
        if record is None:
            return False
        self.missing_newline = final
        self.records += 1
        self._checkpoint(line, record, known=True)
        return True

    def _blank(self, line: int, raw: bytes, final: bool) -> Diagnostic:
        if final:
            return self._torn(line, raw, "whitespace without a newline")
        return Diagnostic(self.path, line, "ST_BLANK_LINE", "blank line", WARNING)

    def _not_json(self, line: int, raw: bytes, final: bool, exc: ValueError) -> Diagnostic:
        if final and b"\r" not in raw:
            return self._torn(line, raw, f"not JSON ({exc})")
        return Diagnostic(self.path, line, JSON, CR_ONLY if b"\r" in raw else f"invalid JSON: {exc}")

    def _not_object(self, line: int, raw: bytes, value: object, final: bool) -> Diagnostic:
        if final:
            return self._torn(line, raw, "not a JSON object")
        return Diagnostic(self.path, line, SCHEMA, f"a record must be a JSON object, got {json_type(value)}")

    def _deep_items(self, line: int, record: dict[str, Any]) -> None:
        """The items an event touched that nest too deep to sit in a checkpoint (sealed once a
        later event removes the item: its checkpoint then fits)."""
        deep = too_deep_items(touched_items(self.state, record))
        if deep:
            self.pending.append(
                Diagnostic(self.path, line, JSON_DEPTH, deep_item_message(deep), fix=f"git st remove {deep[0]}")
            )

    def _result(self) -> PlanCheck:
        result = PlanCheck()
        result.diagnostics = by_position(self.lasting + self.pending + self.trailing)
        result.state = self.state
        result.watermark = self.high
        result.records = self.records
        result.checkpoints = self.checkpoints
        result.lines = self.line
        result.work = self.rules.work + self.compared
        if self.missing_newline:
            result.diagnostics.append(
                Diagnostic(
                    self.path,
                    self.line,
                    "ST_MISSING_NEWLINE",
                    "the last record has no newline; the next write adds it",
                    WARNING,
                )
            )
        return result

    def _dependencies(self, line: int, record: dict[str, Any], op: str) -> None:
        """The dependency rules after an event that may change them: only the item it touched
        is looked at again (a replace starts them again)."""
        if op in _WHOLE_STATE_OPS:
            self.report(line, self.rules.reset(self.state.items()))
            return
        item_id = (record["item"]["id"] if op in ("upsert", "upsert_item") else record["id"]).strip()
        found = self.rules.change(item_id, self.state.get(item_id))
        if found:
            self.report(line, found)

    def _torn(self, line: int, raw: bytes, why: str) -> Diagnostic:
        return Diagnostic(
            self.path,
            line,
            "ST_TORN_TAIL",
            f"last line is a torn write: {len(raw)} bytes without a newline, {why}",
            fix="run any mutation (or `git st doctor --repair-seq`): "
            "the writer sets it aside as <plan>.torn-<timestamp>",
        )

    def _bad_shape(self, line: int, record: dict[str, Any]) -> None:
        self.lasting.append(Diagnostic(self.path, line, SCHEMA, schema_problem(record) or "record breaks st-record"))
        seq = seq_of(record)
        if seq is not None and seq > self.high:
            self.high = seq

    def _known_checkpoint(self, raw: bytes) -> dict[str, Any] | None:
        """The record of ``raw`` when it is a checkpoint whose items are the replayed state byte
        for byte (what gitst writes), found without parsing or re-checking those items one by
        one: the rest of the line is parsed and checked, then the whole line must be exactly
        that record with the replayed items. None for any other line (it is checked in full)."""
        items = self.state.items()
        encoded = orjson.dumps(items)
        at = raw.find(b',"items":' + encoded)
        if at < 0:
            return None
        rest = raw[:at] + b',"items":[]' + raw[at + 9 + len(encoded) :]
        try:
            record = jsonio.loads(rest)
        except jsonio.JSONDecodeError:
            return None
        if (
            type(record) is not dict
            or record.get("lane") != "checkpoint"
            or record.get("items") != []
            or not self.is_valid(record)
        ):
            return None
        record["items"] = items
        # The replayed items follow the st-item schema by construction (every record that
        # changed them did, and normalizing keeps that: tests/unit/plan/test_known_checkpoint.py),
        # so the record is valid as a whole.
        return record if orjson.dumps(record) == raw else None

    def _checkpoint(self, line: int, record: dict[str, Any], *, known: bool) -> None:
        path = self.path
        seq = record["seq"]
        if type(seq) is not int:
            seq = int(seq)
        self.checkpoints += 1
        canonical = True
        if seq != self.high:
            canonical = False
            self.pending.append(
                Diagnostic(
                    path,
                    line,
                    "ST_CHECKPOINT_SEQ",
                    f"checkpoint seq {seq} must equal the watermark before it ({self.high})",
                    fix="git st doctor --repair-seq",
                )
            )
        if self.events == 0:
            # A checkpoint before any event is the plan's base snapshot (a file may start
            # from one): the full replay starts from its items.
            try:
                self.state = PlanState(reducer.checkpoint_items(record))
            except ReplayError:
                pass
            else:
                self.report(line, self.rules.reset(self.state.items()))
        if not known:
            replayed = self.state.items()
            self.compared += len(replayed)
            if record["items"] == replayed:
                pass  # the common case: already canonical and equal, no need to normalize
            else:
                try:
                    items = reducer.checkpoint_items(record)
                except ReplayError as exc:
                    canonical = False
                    self.pending.append(Diagnostic(path, line, exc.code, f"checkpoint: {exc.message}"))
                    items = replayed
                if items != replayed:
                    canonical = False
                    self.pending.append(
                        Diagnostic(
                            path,
                            line,
                            "ST_REPLAY_CONTRACT",
                            f"checkpoint differs from the full replay of the events before it: "
                            f"{describe_difference(items, replayed)}",
                            # events before it were changed or deleted (a hand edit, a tool that
                            # rewrites the file): sealing would adopt the replay and lose them
                            fix=f"restore the changed or deleted lines before line {line} (`git diff -- {path}` "
                            f"shows them; `git checkout -- {path}` brings back the committed plan); not "
                            "--repair-seq, which would adopt the replay and lose what the checkpoint holds",
                        )
                    )
        if canonical:
            self.pending.clear()
        self.trailing.clear()
        self.previous = seq
        if seq > self.high:
            self.high = seq
