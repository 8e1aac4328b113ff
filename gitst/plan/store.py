"""The st plan file on disk: an append-only JSONL v3 stream (seed 000).

Reusable pieces (the merge driver and the validators build on them):

- :func:`encode_record` — one record as one compact UTF-8 line with its newline;
- :func:`iter_plan_lines` / :func:`parse_plan_bytes` — every line with its 1-based number,
  bad lines and a torn last line reported, never raised;
- :func:`watermark`, :func:`trailing_events`, :func:`needs_checkpoint`,
  :func:`build_event`, :func:`build_checkpoint`, :func:`checkpoint_interval`;
- :func:`read_tail` — the O(tail) read: the file is read *backwards* from its end until
  the latest usable checkpoint; only that checkpoint and the records after it are parsed;
- :func:`plan_lock` + :func:`append_records` — the locked append: one ``write`` of whole
  lines + fsync under ``<plan>.lock``; a torn tail is first set aside as
  ``<plan>.torn-<timestamp>``.

Torn tail: a last line without a newline that does not parse as a JSON object is a write
cut short by a crash (never one holding a CR byte: gitst never writes one, so that is a file
with CR-only line breaks, reported as a bad line and never set aside). Readers skip it with
a warning; the next writer (under the lock) moves
its bytes to ``<plan>.torn-<UTC timestamp>`` and truncates the plan back to the end of the
last whole line before appending. A last line without newline that *does* parse is a whole
record that lost only its newline: readers use it, the next writer adds the newline.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from gitst.core.jsonio import JSON_DEPTH, MAX_DEPTH, MAX_SAFE_INTEGER, MIN_DEEP_BYTES, too_deep
from gitst.core.values import Value
from gitst.plan.model import json_text, json_type
from gitst.plan.reducer import PlanState, ReplayError, apply_record, checkpoint_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO, Final, Literal

    from gitst.core.diagnostics import Severity

    # What iter_plan_lines yields, ``(kind, line, value, raw)``: the value is the record of a
    # ``record`` line, why a ``bad`` or ``torn`` line is one, None for a ``blank`` line.
    PlanLine = (
        tuple[Literal["record"], int, dict, bytes]
        | tuple[Literal["bad", "torn"], int, str, bytes]
        | tuple[Literal["blank"], int, None, bytes]
    )

__all__ = [
    "BAD",
    "BLANK",
    "DEFAULT_PLAN",
    "ITEM_DEPTH",
    "MAX_SEQ",
    "RECORD",
    "TORN",
    "Tail",
    "Target",
    "TornTail",
    "append_records",
    "build_checkpoint",
    "build_event",
    "checkpoint_interval",
    "deep_item_message",
    "encode_record",
    "iter_lines",
    "iter_plan_lines",
    "last_line_state",
    "line_blocks",
    "lock_path",
    "needs_checkpoint",
    "now_ts",
    "open_plan",
    "parse_plan_bytes",
    "plan_lock",
    "read_bytes",
    "read_full",
    "read_tail",
    "read_tail_bytes",
    "read_tail_from",
    "reverse_lines",
    "schema_problem",
    "seq_of",
    "set_aside_torn_tail",
    "shown_path",
    "too_deep_items",
    "torn_glob",
    "touched_items",
    "trailing_events",
    "watermark",
]

VERSION = 3
DEFAULT_PLAN = ".step/st-plan.jsonl"
MAX_SEQ = MAX_SAFE_INTEGER  # seq numbers stay exact in every JSON reader (the schema's maximum)
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"  # why a line that parses is still refused
CR_ONLY = "holds CR (\\r) line breaks: not a torn write but a file whose lines end in CR only"
_CHUNK = 1 << 22  # bytes per slice when scanning a whole file


class Target(Value):
    """A plan file: its path and how to show it in messages."""

    __slots__ = ("path", "shown")

    def __init__(self, path: Path, shown: str):
        self.path = path
        self.shown = shown

    @classmethod
    def of(cls, file: str | os.PathLike | None) -> Target:
        """The plan a command works on, found the way git finds the repository.

        ``--file`` is taken relative to the current directory and shown normalized as the
        original st shows it (``./x`` is ``x``). Without it, the plan is
        ``.step/st-plan.jsonl`` at the top of the current work tree (main or linked), from
        any subdirectory, shown relative to the current directory (``../.step/…``, like
        the paths git prints); outside a git work tree, in the current directory.
        """
        if file:
            shown = shown_path(file)
            return cls(Path(shown), shown)
        from gitst.git.repo import work_tree_top

        top = work_tree_top()
        if top is None:
            return cls(Path(DEFAULT_PLAN), DEFAULT_PLAN)
        shown = os.path.relpath(os.path.join(top, DEFAULT_PLAN))
        return cls(Path(shown), shown)


def shown_path(path: str | os.PathLike) -> str:
    """A path named on the command line as the original st shows it in messages: normalized
    the way ``pathlib`` prints it (``./x`` is ``x``, ``a//b`` is ``a/b``, ``..`` kept)."""
    from pathlib import PurePath

    return str(PurePath(os.fspath(path)))


def now_ts() -> str:
    """UTC ISO-8601 with a Z, second precision (``2026-02-09T20:00:00Z``)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_record(record: dict) -> bytes:
    """One compact UTF-8 JSON line ending in a newline (text kept, never ``\\u`` escaped)."""
    return orjson.dumps(record) + b"\n"


def lock_path(plan: str | os.PathLike) -> Path:
    """The lock sidecar of a plan file: ``<plan>.lock``."""
    plan = Path(plan)
    return plan.with_name(plan.name + ".lock")


def torn_glob(plan: str | os.PathLike) -> str:
    return Path(plan).name + ".torn-*"


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
        self.records: list[tuple[int, dict]] = []  # (line, record)
        self.bad: list[tuple[int, str, bytes]] = []  # (line, why, raw)
        self.blank: list[int] = []
        self.torn: TornTail | None = None
        self.missing_newline = False  # the last record is whole but lacks its newline
        self.size = size

    def only_records(self) -> list[dict]:
        return [record for _, record in self.records]


# kinds yielded by iter_plan_lines
RECORD: Final = "record"
BAD: Final = "bad"
BLANK: Final = "blank"
TORN: Final = "torn"


def line_blocks(handle: BinaryIO, start: int, end: int, size: int = _CHUNK) -> Iterator[bytes]:
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


def iter_lines(handle: BinaryIO, start: int, end: int, first_line: int = 1) -> Iterator[PlanLine]:
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


def schema_problem(record: dict) -> str | None:
    """Why ``record`` breaks the ``st-record`` schema (up to three violations, as ``/pointer:
    message``), or None when it matches. One wording for every reader: the doctor's full scan
    and the tail read report such a record as ``SCHEMA`` (docs/validate.md, "Any kind")."""
    from gitst.schemas.catalog import validator

    shape = validator("st-record")
    if shape.is_valid(record):
        return None
    problems = "; ".join((f"{e.pointer}: " if e.pointer else "") + e.message for e in shape.errors(record)[:3])
    return problems or "record does not match st-record"


# --- nesting: what a checkpoint can hold ------------------------------------------------

ITEM_DEPTH = MAX_DEPTH - 2  # an item sits two levels down in a checkpoint: {"items": [item]}


def touched_items(state: PlanState, event: dict) -> list[dict]:
    """The items of ``state`` an applied ``event`` set or changed (none for init/remove)."""
    op = event.get("op")
    if op in ("replace", "replace_all"):
        return state.items()
    item = event.get("item")
    item_id = item.get("id") if op in ("upsert", "upsert_item") and isinstance(item, dict) else event.get("id")
    found = state.get(item_id.strip()) if isinstance(item_id, str) else None
    return [found] if found is not None else []


def too_deep_items(items) -> list[str]:
    """The ids of ``items`` that nest too deep to sit in a checkpoint (more than
    ``MAX_DEPTH - 2`` levels): such an item would make every checkpoint unreadable."""
    found = []
    for item in items:
        raw = orjson.dumps(item)
        if too_deep(raw, ITEM_DEPTH):
            found.append(str(item.get("id")))
    return found


def deep_item_message(ids: list[str]) -> str:
    return (
        f"item {', '.join(repr(i) for i in ids)} nests deeper than {ITEM_DEPTH} levels: a checkpoint holding it "
        f"would nest deeper than {MAX_DEPTH}, which no reader accepts"
    )


# --- seq helpers ---------------------------------------------------------------------------


def seq_of(record: dict) -> int | None:
    """The record's seq when it is a non-negative integer, else None."""
    seq = record.get("seq")
    if type(seq) is int and 0 <= seq <= MAX_SEQ:
        return seq
    if type(seq) is float and seq.is_integer() and 0 <= seq <= MAX_SEQ:
        return int(seq)
    return None


def watermark(records) -> int:
    """The largest seq present (0 for none): new events use watermark + 1."""
    high = 0
    for record in records:
        seq = seq_of(record) if isinstance(record, dict) else None
        if seq is not None and seq > high:
            high = seq
    return high


def trailing_events(records) -> int:
    """How many event records follow the latest checkpoint (all of them if there is none)."""
    count = 0
    for record in reversed(list(records)):
        if record.get("lane") == "checkpoint":
            break
        count += 1
    return count


def needs_checkpoint(records, interval: int) -> bool:
    """True when the trailing events since the latest checkpoint reach ``interval``."""
    return trailing_events(records) >= interval


def build_event(
    op: str, seq: int, fields: dict | None = None, *, mutation: dict | None = None, ts: str | None = None
) -> dict:
    """An event record: ``v, ts, seq, lane, op``, the op's fields, then ``mutation``."""
    record = {"v": VERSION, "ts": ts or now_ts(), "seq": seq, "lane": "event", "op": op}
    if fields:
        record.update(fields)
    if mutation is not None:
        record["mutation"] = mutation
    return record


def build_checkpoint(items: list[dict], seq: int, *, ts: str | None = None, **extra) -> dict:
    """A checkpoint record holding the full ``items`` snapshot at ``seq`` (the watermark)."""
    record = {"v": VERSION, "ts": ts or now_ts(), "seq": seq, "lane": "checkpoint", "items": list(items)}
    record.update(extra)
    return record


def checkpoint_interval(cwd: str | os.PathLike | None = None) -> int:
    """``ST_CHECKPOINT_INTERVAL``, else ``git config st.checkpointInterval``, else 50."""
    from gitst.settings import int_setting

    return int_setting("checkpoint_interval", cwd)


# --- the O(tail) read -----------------------------------------------------------------------


class TailProblem(Value):
    """Something wrong in the part of the file a tail read looked at (offset of its line)."""

    __slots__ = ("code", "message", "offset", "severity")

    def __init__(self, offset: int, code: str, message: str, severity: Severity = "error"):
        self.offset = offset
        self.code = code
        self.message = message
        self.severity: Severity = severity


class Tail(Value):
    """What a tail read found: the state, the watermark and how to append after it."""

    __slots__ = (
        "bytes_read",
        "checkpoint_offset",
        "checkpoint_seq",
        "exists",
        "missing_newline",
        "path",
        "problems",
        "record_count",
        "records",
        "rejected",
        "size",
        "state",
        "torn",
        "trailing_events",
        "watermark",
    )

    def __init__(self, path: Path, exists: bool = False, *, missing_newline: bool = False):
        self.path = path
        self.exists = exists
        self.size = 0  # bytes of the file that hold whole lines (a torn tail excluded)
        self.state = PlanState()
        self.watermark = 0
        self.checkpoint_seq: int | None = None
        self.checkpoint_offset: int | None = None
        self.trailing_events = 0
        self.problems: list[TailProblem] = []
        self.torn: TornTail | None = None
        self.missing_newline = missing_newline
        self.bytes_read = 0  # bytes actually read from the file
        self.record_count = 0  # records replayed: the checkpoint it starts from (if any) and those after it
        self.rejected = 0  # of those, how many the read's ``accept`` refused
        # with ``keep_records``: those records in file order, as (offset of the line, record)
        self.records: list[tuple[int, dict]] = []

    @property
    def errors(self) -> list[TailProblem]:
        return [p for p in self.problems if p.severity == "error"]

    def diagnostics(self, display_path: str | None = None) -> list:
        """The problems as Diagnostics with line numbers (counts newlines up to each one:
        only done when there is something to report)."""
        shown = display_path or str(self.path)
        found = list(self.problems)
        if self.torn is not None:
            found.append(
                TailProblem(
                    self.torn.offset,
                    "ST_TORN_TAIL",
                    f"last line is a torn write ({len(self.torn.data)} bytes without a newline, not a JSON "
                    f"object); skipped — the next write sets it aside as {self.path.name}.torn-<timestamp>",
                    "warning",
                )
            )
        if not found:
            return []
        from gitst.core.diagnostics import Diagnostic

        lines = _line_numbers(self.path, sorted({p.offset for p in found}))
        return [
            Diagnostic(path=shown, line=lines.get(p.offset), code=p.code, message=p.message, severity=p.severity)
            for p in sorted(found, key=lambda p: p.offset)
        ]


def _line_numbers(path: Path, offsets: list[int]) -> dict[int, int]:
    from gitst.core.errors import GitstError

    result: dict[int, int] = {}
    try:
        opened = open_plan(path)
        if opened is None:
            return result
        with opened as handle:
            count = 0
            pos = 0
            for offset in offsets:
                while pos < offset:
                    block = handle.read(min(_CHUNK, offset - pos))
                    if not block:
                        break
                    count += block.count(b"\n")
                    pos += len(block)
                result[offset] = count + 1
    except (OSError, GitstError):  # gone or replaced since it was checked: no line numbers
        pass
    return result


def _reverse_runs(handle, end: int, block: int = 1 << 16) -> Iterator[tuple[int, bytes]]:
    """``(offset, run)`` for the bytes before ``end`` (which ends a line), last first: each run
    is whole lines, each with its newline, starting at ``offset``. Blocks double (to 16 MiB)
    as the read goes back, so a long line costs few reads."""
    pos = end
    carry = b""  # the end part of a line that starts further back
    while pos > 0:
        step = min(block, pos)
        pos -= step
        handle.seek(pos)
        chunk = handle.read(step) + carry
        block = min(block * 2, 1 << 24)
        if pos == 0:
            yield 0, chunk
            return
        cut = chunk.find(b"\n")
        if cut < 0:
            carry = chunk
            continue
        carry = chunk[: cut + 1]
        if cut + 1 < len(chunk):
            yield pos + cut + 1, chunk[cut + 1 :]
    if carry:
        yield 0, carry


def reverse_lines(handle, size: int, block: int = 1 << 16) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for the newline-terminated lines of the file, last first."""
    for offset, run in _reverse_runs(handle, size, block):
        lines = run.split(b"\n")
        lines.pop()  # after the run's last newline
        ends = offset + len(run)
        for line in reversed(lines):
            ends -= len(line) + 1
            yield ends, line


def read_tail(path: str | os.PathLike) -> Tail:
    """Materialize the plan from its end: latest usable checkpoint + the records after it.

    Never raises for a broken file: what is wrong goes to ``problems`` (bad JSON lines,
    records the reducer cannot apply, trailing seq out of order, an unusable checkpoint —
    then the read falls back to the checkpoint before it) and ``torn``. A missing file is
    an empty plan.
    """
    path = Path(path)
    tail = _read_tail_once(path)
    if tail.torn is not None:
        # A concurrent writer may be mid-write: if the file grew, read again once.
        try:
            if os.stat(path).st_size != tail.size + len(tail.torn.data):
                tail = _read_tail_once(path)
        except OSError:
            pass
    return tail


def read_tail_bytes(
    data: bytes,
    path: str | os.PathLike = "<plan>",
    *,
    keep_records: bool = False,
    accept: Callable[[dict], bool] | None = None,
) -> Tail:
    """:func:`read_tail` of plan bytes already in memory (a blob from git): the same backward
    read, so only the latest usable checkpoint and the lines after it are parsed.
    ``keep_records`` and ``accept``: as :func:`read_tail_from`."""
    tail = Tail(path=Path(path), exists=True)
    read_tail_from(io.BytesIO(data), len(data), tail, keep_records=keep_records, accept=accept)
    return tail


def open_plan(path: Path) -> BinaryIO | None:
    """``path`` opened for reading, the one way every reader opens the plan; None when it does
    not exist, exit 4 when it cannot be read.
    A symbolic link, a FIFO or a device is refused (exit 2, :mod:`gitst.core.safepaths`)."""
    from gitst.core.safepaths import open_fd

    try:
        return os.fdopen(open_fd(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        from gitst.core.errors import EnvironmentProblem

        reason = "it is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror
        raise EnvironmentProblem(f"cannot read plan {path}: {reason}") from None


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole plan file (doctor's full scan), opened as :func:`read_tail` opens it; empty
    when it does not exist."""
    opened = open_plan(Path(path))
    if opened is None:
        return b""
    with opened as handle:
        return handle.read()


def _read_tail_once(path: Path) -> Tail:
    tail = Tail(path=path)
    opened = open_plan(path)
    if opened is None:
        return tail
    tail.exists = True
    with opened:
        read_tail_from(opened, os.fstat(opened.fileno()).st_size, tail)
    return tail


# The lines after the base checkpoint that the backward search keeps to replay (beyond this,
# they are read again, forwards, block by block: memory stays bounded whatever the file).
_KEEP = 1 << 24


def _may_be_checkpoint(raw: bytes) -> bool:
    """False only for a line that cannot be a checkpoint record: a JSON object whose top-level
    ``lane`` is ``"checkpoint"`` holds that word, literally or with a ``\\u`` escape."""
    return b"checkpoint" in raw or b"\\u" in raw


def read_tail_from(
    handle,
    size: int,
    tail: Tail,
    *,
    keep_records: bool = False,
    accept: Callable[[dict], bool] | None = None,
) -> None:
    """The O(tail) read of ``handle``'s first ``size`` bytes into ``tail``.

    Backwards from the end, only lines that may be checkpoints are parsed, until the latest
    usable checkpoint; then the lines after it are parsed and replayed on its items, in file
    order, one at a time (a file without any checkpoint is replayed from its first line with
    bounded memory). ``keep_records`` keeps what was replayed in ``tail.records``;
    ``accept(record)`` is asked of each of them and ``tail.rejected`` counts the refusals.
    """
    handle = _CountingReader(handle)
    tail.size = size
    if size == 0:
        return
    end = size
    last_record: tuple[int, dict] | None = None
    last = _unterminated_last_line(handle, size)
    if last is not None:
        # The last line has no newline: a whole record that lost its newline, or torn.
        start, raw, value = last
        if type(value) is dict:
            tail.missing_newline = True
            last_record = (start, value)
        elif b"\r" in raw:  # CR-only line breaks: never a torn write, never set aside
            tail.problems.append(TailProblem(start, _code("JSON"), f"the last line {CR_ONLY}"))
            last_record = None
        else:
            tail.torn = TornTail(offset=start, data=raw)
            tail.size = start
        end = start

    # 1. backwards: the latest usable checkpoint (unusable ones are reported and skipped)
    kept: list[tuple[int, bytes]] = []  # runs after the base, last first, while they are small
    kept_size = 0
    unusable: set[int] = set()
    base: tuple[int, int, dict, list[dict]] | None = None  # offset, end of its line, record, items
    earlier: tuple[int, list[bytes]] = (0, [])
    for run_offset, run in _reverse_runs(handle, end):
        if base is None and (b"checkpoint" in run or b"\\u" in run):
            lines = run.split(b"\n")
            lines.pop()
            line_end = run_offset + len(run)
            for index in range(len(lines) - 1, -1, -1):
                raw = lines[index]
                offset = line_end - len(raw) - 1
                if _may_be_checkpoint(raw):
                    value = _try_loads(raw)
                    if type(value) is dict and value.get("lane") == "checkpoint":
                        try:
                            items = checkpoint_items(value)
                        except ReplayError as exc:
                            code, why = _replay_problem(value, exc)
                            tail.problems.append(
                                TailProblem(offset, code, f"unusable checkpoint, an earlier one is used: {why}")
                            )
                            unusable.add(offset)
                        else:
                            base = (offset, line_end, value, items)
                            earlier = (run_offset, lines[:index])  # the lines before it in this run
                            after = run[line_end - run_offset :]
                            if after:
                                kept.append((line_end, after))
                            break
                line_end = offset
            if base is not None:
                break
        if kept_size <= _KEEP:
            kept.append((run_offset, run))
            kept_size += len(run)
    tail.bytes_read = handle.count

    # 2. forwards: the records after the base, replayed on its items
    state = PlanState()
    high = 0
    previous: int | None = None
    records: list[tuple[int, dict]] = []
    count = 0
    if base is not None:
        offset, begin, record, items = base
        state = PlanState(items)
        tail.checkpoint_seq = previous = seq_of(record)
        high = previous or 0
        tail.checkpoint_offset = offset
        if previous is not None:
            expected = _watermark_before(_lines_before(handle, *earlier), previous)
            if expected != previous:
                tail.problems.append(
                    TailProblem(
                        offset,
                        "ST_CHECKPOINT_SEQ",
                        f"checkpoint seq {previous} must equal the watermark before it ({expected})",
                    )
                )
        count = 1
        if accept is not None and not accept(record):
            tail.rejected += 1
        if keep_records:
            records.append((offset, record))
    else:
        begin = 0
    if kept_size <= _KEEP:
        runs: Iterator[tuple[int, bytes]] = reversed(kept)
    else:
        runs = _forward_runs(handle, begin, end)
    events = 0
    for line_offset, value in _records_after(runs, begin, unusable, tail, last_record):
        high, previous, events = _replay_one(tail, state, line_offset, value, high, previous, events)
        count += 1
        if accept is not None and not accept(value):
            tail.rejected += 1
        if keep_records:
            records.append((line_offset, value))
    tail.bytes_read = handle.count
    tail.problems.sort(key=lambda problem: problem.offset)
    tail.state = state
    tail.watermark = high
    tail.trailing_events = events
    tail.record_count = count
    tail.records = records


def _records_after(
    runs, begin: int, unusable: set[int], tail: Tail, last_record: tuple[int, dict] | None
) -> Iterator[tuple[int, dict]]:
    """``(offset, record)`` of every line of ``runs`` from ``begin`` on that parses as a JSON
    object (the others go to ``tail.problems``; blank lines and the unusable checkpoints are
    passed over), then the last record without its newline, if any."""
    # orjson plus the nesting bound every reader applies; integers beyond 2^53-1 are left to the
    # st-record schema (a seq or a value there is a SCHEMA problem of that record, docs/security.md)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    for run_offset, run in _chain_runs(runs, begin):
        lines = run.split(b"\n")
        lines.pop()
        offset = run_offset
        for raw in lines:
            line_offset = offset
            offset += len(raw) + 1
            if not raw or raw.isspace() or line_offset in unusable:
                continue
            try:
                value = loads(raw)
            except decode_error:
                tail.problems.append(TailProblem(line_offset, _code("JSON"), "line is not valid JSON; skipped"))
                continue
            if len(raw) > MIN_DEEP_BYTES and too_deep(raw):  # the length guard: free for short lines
                tail.problems.append(TailProblem(line_offset, JSON_DEPTH, f"line is {TOO_DEEP}; skipped"))
                continue
            if type(value) is not dict:
                tail.problems.append(TailProblem(line_offset, _code("SCHEMA"), "line is not a JSON object; skipped"))
                continue
            yield line_offset, value
    if last_record is not None:
        yield last_record


def _code(name: str) -> str:
    """A generic diagnostic code (``JSON``, ``SCHEMA``) from gitst.core.diagnostics, imported
    only when a read finds a problem (a clean read never builds a Diagnostic)."""
    from gitst.core import diagnostics

    code: str = getattr(diagnostics, name)
    return code


def _chain_runs(runs, begin: int) -> Iterator[tuple[int, bytes]]:
    """The runs from offset ``begin`` on (the first one may start before it: it is cut)."""
    for run_offset, run in runs:
        if run_offset + len(run) <= begin:
            continue
        if run_offset < begin:
            yield begin, run[begin - run_offset :]
        else:
            yield run_offset, run


def _forward_runs(handle, begin: int, end: int) -> Iterator[tuple[int, bytes]]:
    offset = begin
    for block in line_blocks(handle, begin, end):
        yield offset, block
        offset += len(block)


def _replay_one(
    tail: Tail, state: PlanState, offset: int, record: dict, high: int, previous: int | None, events: int
) -> tuple[int, int | None, int]:
    """One record after the base: the trailing seq rule, then the replay (events only)."""
    seq = seq_of(record)
    if seq is None:
        tail.problems.append(
            TailProblem(
                offset, _code("SCHEMA"), f"seq must be a non-negative integer, got {json_text(record.get('seq'))}"
            )
        )
    else:
        if previous is not None and seq <= previous:
            tail.problems.append(
                TailProblem(
                    offset,
                    "ST_TRAILING_SEQ",
                    f"seq {seq} after the latest checkpoint is not above the previous seq {previous}",
                )
            )
        previous = seq if previous is None else max(previous, seq)
        high = max(high, seq)
    if record.get("lane") == "event":
        events += 1
    try:
        apply_record(state, record, events_only=True)
    except ReplayError as exc:
        code, why = _replay_problem(record, exc)
        tail.problems.append(TailProblem(offset, code, f"{why}; record skipped"))
    return high, previous, events


def _lines_before(handle, run_offset: int, lines: list[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` going back from the checkpoint: first the ``lines`` of its run before
    it (already read), then the file before the run, read only if needed."""
    end = run_offset + sum(len(line) + 1 for line in lines)
    for line in reversed(lines):
        end -= len(line) + 1
        yield end, line
    yield from reverse_lines(handle, run_offset, 1 << 12)


def _replay_problem(record: dict, exc: ReplayError) -> tuple[str, str]:
    """The code and message of a record the reducer refused: the code ``SCHEMA`` when the
    record breaks the ``st-record`` schema (the code doctor gives the same line), else the
    reducer's own; the reducer's message either way (it names the value and guesses what was
    meant: ``did you mean 'done'?``). Only looked at for a refused record: a read that applies
    every record never loads a schema."""
    code = _code("SCHEMA") if schema_problem(record) is not None else exc.code
    return code, exc.message


def _watermark_before(lines: Iterator[tuple[int, bytes]], seq: int) -> int:
    """The watermark just before a checkpoint at ``seq`` (the checkpoint seq rule), reading
    back only as far as needed: ``seq`` itself as soon as a record before it has that seq (in
    a file gitst wrote, the very line before: the event the checkpoint follows), a higher seq
    as soon as one shows up, else the highest seq back to the previous checkpoint (whose own
    seq is the watermark before it; doctor checks that one) or the start of the file."""
    high = 0
    for _offset, raw in lines:
        if not raw.strip():
            continue
        value = _try_loads(raw)
        if type(value) is not dict:
            continue
        found = seq_of(value)
        if found is None:
            continue
        if found >= seq:
            return found
        high = max(high, found)
        if value.get("lane") == "checkpoint":
            return high
    return high


class _CountingReader:
    """A binary file that counts the bytes read through it (proof that reads are O(tail))."""

    def __init__(self, handle: BinaryIO):
        self._handle = handle
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.count += len(data)
        return data

    def seek(self, pos: int) -> int:
        return self._handle.seek(pos)


_NOT_JSON = object()
_TOO_DEEP = object()


def _try_loads(raw: bytes):
    """The JSON value of ``raw``, or ``_NOT_JSON`` when it does not parse (``_TOO_DEEP`` when
    it nests deeper than every reader accepts)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    if len(raw) > MIN_DEEP_BYTES and too_deep(raw):
        return _TOO_DEEP
    return value


def _unterminated_last_line(handle, size: int) -> tuple[int, bytes, object] | None:
    """``(offset, bytes, JSON value or _NOT_JSON)`` of the last line when it has no newline."""
    if size == 0:
        return None
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return None
    start = _last_line_start(handle, size)
    handle.seek(start)
    raw = handle.read(size - start)
    return start, raw, _try_loads(raw)


def last_line_state(handle: BinaryIO, size: int) -> tuple[TornTail | None, bool]:
    """How the file's first ``size`` bytes end: its torn last line (a last line without newline
    that is not a JSON object; the writer sets it aside), and whether the last line is instead
    a whole record that only lacks its newline."""
    last = _unterminated_last_line(handle, size)
    if last is None:
        return None, False
    start, raw, value = last
    if type(value) is dict:
        return None, True
    return TornTail(offset=start, data=raw), False


def _last_line_start(handle, size: int) -> int:
    pos = size
    block = 1 << 16
    while pos > 0:
        step = min(block, pos)
        pos -= step
        handle.seek(pos)
        chunk = handle.read(step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos + cut + 1
        block = min(block * 2, 1 << 24)
    return 0


# --- appending --------------------------------------------------------------------------------


def plan_lock(plan: str | os.PathLike, timeout: float | None = None):
    """The plan's write lock (``<plan>.lock``; ``ST_LOCK_TIMEOUT``; exit 3 when busy)."""
    from gitst.core.filelocks import locked
    from gitst.settings import lock_timeout

    return locked(lock_path(plan), lock_timeout() if timeout is None else timeout)


def set_aside_torn_tail(path: Path, torn: TornTail) -> Path:
    """Move a torn tail's bytes to ``<plan>.torn-<UTC timestamp>`` and cut the plan back to
    its last whole line. Caller holds the lock. Both steps are fsynced, in that order."""
    from gitst.core.jsonio import fsync_dir

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.torn-{stamp}")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.torn-{stamp}-{counter}")
        counter += 1
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        _write_all(fd, torn.data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(target)  # a full disk: no empty or partial copy is left behind, the plan untouched
        raise
    os.close(fd)
    from gitst.core.safepaths import open_fd

    fd = open_fd(path, os.O_WRONLY)
    try:
        current = os.fstat(fd).st_size
        if current >= torn.offset + len(torn.data):
            os.ftruncate(fd, torn.offset)
            os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_records(path: str | os.PathLike, records: list[dict], tail: Tail) -> Path | None:
    """Append ``records`` after what ``tail`` read, in one write of whole lines + fsync.

    The caller holds the plan lock and read ``tail`` under it. A torn tail is set aside
    first (its new path is returned); a last record without newline gets one. Earlier bytes
    are never rewritten.
    """
    path = Path(path)
    lines = [encode_record(record) for record in records]
    for record, line in zip(records, lines, strict=True):
        if too_deep(line):
            # the last guard: never write a line every reader would refuse (a checkpoint of an
            # item a hostile plan made too deep); nothing was written yet
            from gitst.core.errors import UsageError

            deep = too_deep_items(record.get("items") or [record.get("item") or {}])
            raise UsageError(
                f"{deep_item_message(deep) if deep else f'a record nests deeper than {MAX_DEPTH} levels'}; "
                "nothing written",
                fix=f"git st remove {deep[0]}   (then add it again without the deep value)"
                if deep
                else "write shallower values",
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    torn_path = set_aside_torn_tail(path, tail.torn) if tail.torn is not None else None
    payload = b"".join(lines)
    if tail.missing_newline:
        payload = b"\n" + payload
    created = not path.exists()
    from gitst.core.safepaths import open_fd

    fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        except BaseException:
            # A full disk, EIO, even a failed fsync: cut the plan back to its last whole line,
            # so the command fails with nothing written (a retry cannot duplicate a record).
            # The caller holds the plan lock: nobody else appended meanwhile.
            with contextlib.suppress(OSError):  # if even that fails, a part is a torn tail
                os.ftruncate(fd, size)
                if created:
                    os.unlink(path)  # a plan this write created is not left behind empty
            raise
    finally:
        os.close(fd)
    if created:
        from gitst.core.jsonio import fsync_dir

        fsync_dir(path.parent)
    return torn_path


def read_full(path: str | os.PathLike, *, events_only: bool = False) -> PlanState:
    """Replay the whole file (a full scan — for doctor, tests and benchmarks, not reads), read
    block by block."""
    from gitst.plan.reducer import replay

    handle = open_plan(Path(path))
    if handle is None:
        return PlanState()
    with handle:
        size = os.fstat(handle.fileno()).st_size
        return replay((item[2] for item in iter_lines(handle, 0, size) if item[0] == RECORD), events_only=events_only)
