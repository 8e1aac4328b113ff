"""The records of a plan file (seed 000, JSONL v3): each one a line, parsed, numbered, built.

- :func:`iter_plan_lines` / :func:`parse_plan_bytes` — every line with its 1-based number,
  bad lines and a torn last line reported, never raised (:func:`line_blocks` /
  :func:`iter_lines`: the same on an open file, block by block);
- :func:`seq_of`, :func:`watermark`, :func:`trailing_events`, :func:`needs_checkpoint`,
  :func:`build_event`, :func:`build_checkpoint`, :func:`checkpoint_interval`;
- what a checkpoint can hold (:func:`too_deep_items`, :func:`too_deep_touched`);
- the whole file: :func:`open_plan` (the one way every reader opens it), :func:`read_bytes`,
  :func:`read_full` (replayed block by block: doctor, tests, benchmarks).

:mod:`gitst.plan.tail` reads a plan O(tail) with these, :mod:`gitst.plan.append` writes
them (``encode_record``: one record, one line); the rest of gitst imports all three from
:mod:`gitst.plan.store`.
"""

from __future__ import annotations

import datetime
import io
import os
from pathlib import Path

import orjson

from gitst.core.errors import EnvironmentProblem
from gitst.core.jsonio import MAX_DEPTH, MAX_SAFE_INTEGER, MIN_DEEP_BYTES, too_deep
from gitst.core.safepaths import open_fd
from gitst.core.values import Value
from gitst.plan.model import json_type
from gitst.plan.reducer import PlanState, replay
from gitst.settings import int_setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, BinaryIO, Final, Literal, Protocol

    class Readable(Protocol):
        """What the block reads need of a file: ``read`` and ``seek`` (an open file, a reader
        that counts the bytes it reads)."""

        def read(self, size: int = -1, /) -> bytes: ...
        def seek(self, pos: int, /) -> int: ...

    # What iter_plan_lines yields, ``(kind, line, value, raw)``: the value is the record of a
    # ``record`` line, why a ``bad`` or ``torn`` line is one, None for a ``blank`` line.
    PlanLine = (
        tuple[Literal["record"], int, dict[str, Any], bytes]
        | tuple[Literal["bad", "torn"], int, str, bytes]
        | tuple[Literal["blank"], int, None, bytes]
    )

__all__ = [
    "BAD",
    "BLANK",
    "CR_ONLY",
    "ITEM_DEPTH",
    "MAX_SEQ",
    "RECORD",
    "TOO_DEEP",
    "TORN",
    "VERSION",
    "ParsedPlan",
    "TornTail",
    "build_checkpoint",
    "build_event",
    "checkpoint_interval",
    "deep_item_message",
    "iter_lines",
    "iter_plan_lines",
    "line_blocks",
    "needs_checkpoint",
    "now_ts",
    "open_plan",
    "parse_plan_bytes",
    "read_bytes",
    "read_full",
    "schema_problem",
    "seq_of",
    "too_deep_items",
    "too_deep_touched",
    "touched_items",
    "trailing_events",
    "watermark",
]

VERSION = 3
MAX_SEQ = MAX_SAFE_INTEGER  # seq numbers stay exact in every JSON reader (the schema's maximum)
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"  # why a line that parses is still refused
CR_ONLY = "holds CR (\\r) line breaks: not a torn write but a file whose lines end in CR only"
_CHUNK = 1 << 22  # bytes per slice when scanning a whole file


def now_ts() -> str:
    """UTC ISO-8601 with a Z, second precision (``2026-02-09T20:00:00Z``)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- parsing a whole file -----------------------------------------------------------------


class TornTail(Value):
    """The bytes of a torn last line: where it starts, what it holds, its line number."""

    __slots__ = ("data", "line", "offset")

    def __init__(self, offset: int, data: bytes, line: int | None = None):
        self.offset = offset
        self.data = data
        self.line = line


class ParsedPlan(Value):
    """A whole plan file, line by line."""

    __slots__ = ("bad", "blank", "missing_newline", "records", "size", "torn")

    def __init__(self, size: int = 0):
        self.records: list[tuple[int, dict[str, Any]]] = []  # (line, record)
        self.bad: list[tuple[int, str, bytes]] = []  # (line, why, raw)
        self.blank: list[int] = []
        self.torn: TornTail | None = None
        self.missing_newline = False  # the last record is whole but lacks its newline
        self.size = size

    def only_records(self) -> list[dict[str, Any]]:
        return [record for _, record in self.records]


# kinds yielded by iter_plan_lines
RECORD: Final = "record"
BAD: Final = "bad"
BLANK: Final = "blank"
TORN: Final = "torn"


def line_blocks(handle: Readable, start: int, end: int, size: int = _CHUNK) -> Iterator[bytes]:
    """The bytes of ``handle`` from ``start`` (where a line begins) to ``end``, in blocks of
    whole lines: each block ends with a newline, except a last one, which is then the final
    line alone, without its newline. Only one block is held at a time (at least one line)."""
    handle.seek(start)
    pos = start
    carry: list[bytes] = []  # the beginning of a line longer than what was read so far
    while pos < end:
        chunk = handle.read(min(size, end - pos))
        if not chunk:
            break  # the file shrank under us: what was read is all there is
        pos += len(chunk)
        cut = chunk.rfind(b"\n")
        if cut < 0:
            carry.append(chunk)
            continue
        if carry:
            carry.append(chunk[: cut + 1])
            block = b"".join(carry)
            carry.clear()
        else:
            block = chunk if cut == len(chunk) - 1 else chunk[: cut + 1]
        if cut + 1 < len(chunk):
            carry.append(chunk[cut + 1 :])
        yield block
    if carry:
        yield b"".join(carry)


def iter_lines(handle: Readable, start: int, end: int, first_line: int = 1) -> Iterator[PlanLine]:
    """:func:`iter_plan_lines` of a file's bytes from ``start`` to ``end``, read block by block."""
    # orjson plus the nesting bound every reader applies; integers beyond 2^53-1 are left to the
    # st-record schema (a seq or a value there is a SCHEMA problem of that record, docs/security.md)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    line = first_line - 1
    for block in line_blocks(handle, start, end):
        final = not block.endswith(b"\n")  # then the block is the last line, without its newline
        pieces = [block] if final else block.split(b"\n")[:-1]
        for raw in pieces:
            line += 1
            if not raw or raw.isspace():
                yield (TORN, line, "whitespace without a newline", raw) if final else (BLANK, line, None, raw)
                continue
            try:
                value = loads(raw)
            except decode_error as exc:
                if final and b"\r" not in raw:
                    yield TORN, line, f"not JSON ({exc})", raw
                else:
                    yield BAD, line, CR_ONLY if b"\r" in raw else f"invalid JSON: {exc}", raw
                continue
            if len(raw) > MIN_DEEP_BYTES and too_deep(raw):  # the length guard: free for short lines
                yield BAD, line, TOO_DEEP, raw
                continue
            if type(value) is dict:
                yield RECORD, line, value, raw  # (a final line that parses is a whole record)
            elif final:
                yield TORN, line, "not a JSON object", raw
            else:
                yield BAD, line, f"a record must be a JSON object, got {json_type(value)}", raw


def open_plan(path: Path) -> BinaryIO | None:
    """``path`` opened for reading, the one way every reader opens the plan; None when it does
    not exist, exit 4 when it cannot be read.
    A symbolic link, a FIFO or a device is refused (exit 2, :mod:`gitst.core.safepaths`)."""
    try:
        return os.fdopen(open_fd(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = "it is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror
        raise EnvironmentProblem(f"cannot read plan {path}: {reason}") from None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole plan file (doctor's full scan), opened as :func:`gitst.plan.tail.read_tail` opens it; empty
    when it does not exist."""
    opened = open_plan(path if isinstance(path, Path) else Path(path))
    if opened is None:
        return b""
    with opened as handle:
        return handle.read()


def read_full(path: str | os.PathLike[str], *, events_only: bool = False) -> PlanState:
    """Replay the whole file (a full scan — for doctor, tests and benchmarks, not reads), read
    block by block."""
    handle = open_plan(path if isinstance(path, Path) else Path(path))
    if handle is None:
        return PlanState()
    with handle:
        size = os.fstat(handle.fileno()).st_size
        return replay((item[2] for item in iter_lines(handle, 0, size) if item[0] == RECORD), events_only=events_only)


def iter_plan_lines(data: bytes, start: int = 0, first_line: int = 1) -> Iterator[PlanLine]:
    """``(kind, line, value, raw)`` for every line of ``data``, in order, without raising.

    kind ``record``: value is the parsed dict; ``bad``: value says why (invalid JSON, not an
    object); ``blank``; ``torn``: the last line has no newline and does not parse. A last line
    without newline that parses is yielded as a ``record`` (check ``data.endswith(b"\\n")``).
    ``start`` (the offset of a line's first byte) skips the lines before it; ``first_line`` is
    the number of the line at ``start``.
    """
    return iter_lines(io.BytesIO(data), start, len(data), first_line)


def parse_plan_bytes(data: bytes) -> ParsedPlan:
    """Every line of a plan file: records with their line numbers, bad lines, a torn tail."""
    parsed = ParsedPlan(len(data))
    for item in iter_plan_lines(data):
        line, raw = item[1], item[3]
        if item[0] == RECORD:
            parsed.records.append((line, item[2]))
        elif item[0] == BAD:
            parsed.bad.append((line, item[2], raw))
        elif item[0] == BLANK:
            parsed.blank.append(line)
        else:
            parsed.torn = TornTail(offset=len(data) - len(raw), data=raw, line=line)
    if parsed.torn is None and data and not data.endswith(b"\n"):
        parsed.missing_newline = True
    return parsed


def schema_problem(record: dict[str, Any]) -> str | None:
    """Why ``record`` breaks the ``st-record`` schema (up to three violations, as ``/pointer:
    message``), or None when it matches. One wording for every reader: the doctor's full scan
    and the tail read report such a record as ``SCHEMA`` (docs/validate.md, "Any kind")."""
    from gitst.schemas.catalog import validator  # lazy: not on the fast path's pinned import set

    shape = validator("st-record")
    if shape.is_valid(record):
        return None
    problems = "; ".join((f"{e.pointer}: " if e.pointer else "") + e.message for e in shape.errors(record)[:3])
    return problems or "record does not match st-record"


# --- nesting: what a checkpoint can hold ------------------------------------------------

ITEM_DEPTH = MAX_DEPTH - 2  # an item sits two levels down in a checkpoint: {"items": [item]}


def touched_items(state: PlanState, event: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of ``state`` an applied ``event`` set or changed (none for init/remove)."""
    op = event.get("op")
    if op in ("replace", "replace_all"):
        return state.items()
    item = event.get("item")
    item_id = item.get("id") if op in ("upsert", "upsert_item") and isinstance(item, dict) else event.get("id")
    found = state.get(item_id.strip()) if isinstance(item_id, str) else None
    return [found] if found is not None else []


def too_deep_items(items: Iterable[dict[str, Any]]) -> list[str]:
    """The ids of ``items`` that nest too deep to sit in a checkpoint (more than
    ``MAX_DEPTH - 2`` levels): such an item would make every checkpoint unreadable."""
    found = []
    for item in items:
        raw = orjson.dumps(item)
        if too_deep(raw, ITEM_DEPTH):
            found.append(str(item.get("id")))
    return found


def too_deep_touched(state: PlanState, events: Iterable[dict[str, Any]]) -> list[str]:
    """The ids of the items that ``events``, applied to ``state``, set or changed and that nest
    too deep to sit in a checkpoint (:func:`too_deep_items`)."""
    return too_deep_items(item for event in events for item in touched_items(state, event))


def deep_item_message(ids: list[str]) -> str:
    return (
        f"item {', '.join(repr(i) for i in ids)} nests deeper than {ITEM_DEPTH} levels: a checkpoint holding it "
        f"would nest deeper than {MAX_DEPTH}, which no reader accepts"
    )


# --- seq helpers ---------------------------------------------------------------------------


def seq_of(record: dict[str, Any]) -> int | None:
    """The record's seq when it is a non-negative integer, else None."""
    seq = record.get("seq")
    if type(seq) is int and 0 <= seq <= MAX_SEQ:
        return seq
    if type(seq) is float and seq.is_integer() and 0 <= seq <= MAX_SEQ:
        return int(seq)
    return None


def watermark(records: Iterable[object]) -> int:
    """The largest seq present (0 for none): new events use watermark + 1."""
    high = 0
    for record in records:
        seq = seq_of(record) if isinstance(record, dict) else None
        if seq is not None and seq > high:
            high = seq
    return high


def trailing_events(records: Iterable[dict[str, Any]]) -> int:
    """How many event records follow the latest checkpoint (all of them if there is none)."""
    count = 0
    for record in reversed(list(records)):
        if record.get("lane") == "checkpoint":
            break
        count += 1
    return count


def needs_checkpoint(records: Iterable[dict[str, Any]], interval: int) -> bool:
    """True when the trailing events since the latest checkpoint reach ``interval``."""
    return trailing_events(records) >= interval


def build_event(
    op: str,
    seq: int,
    fields: dict[str, Any] | None = None,
    *,
    mutation: dict[str, Any] | None = None,
    ts: str | None = None,
) -> dict[str, Any]:
    """An event record: ``v, ts, seq, lane, op``, the op's fields, then ``mutation``."""
    record = {"v": VERSION, "ts": ts or now_ts(), "seq": seq, "lane": "event", "op": op}
    if fields:
        record.update(fields)
    if mutation is not None:
        record["mutation"] = mutation
    return record


def build_checkpoint(items: list[dict[str, Any]], seq: int, *, ts: str | None = None, **extra: Any) -> dict[str, Any]:
    """A checkpoint record holding the full ``items`` snapshot at ``seq`` (the watermark)."""
    record = {"v": VERSION, "ts": ts or now_ts(), "seq": seq, "lane": "checkpoint", "items": list(items)}
    record.update(extra)
    return record


def checkpoint_interval(cwd: str | os.PathLike[str] | None = None) -> int:
    """``ST_CHECKPOINT_INTERVAL``, else ``git config st.checkpointInterval``, else 50."""
    return int_setting("checkpoint_interval", cwd)
