"""The O(tail) read of a plan: its state from the latest usable checkpoint and what follows.

:func:`read_tail` reads the file *backwards* from its end until the latest usable checkpoint;
only that checkpoint and the records after it are parsed and replayed (:func:`read_tail_from`,
on any open file; :func:`read_tail_bytes`, on a blob). What is wrong on the way goes to
``Tail.problems``, never raised. A torn tail (a last line without its newline that is not a
JSON object, :mod:`gitst.plan.store`) is skipped and kept in ``Tail.torn`` for the writer;
a whole last record that only lost its newline is used (``Tail.missing_newline``).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import orjson

from gitst.core.errors import GitstError
from gitst.core.jsonio import JSON_DEPTH, MIN_DEEP_BYTES, too_deep
from gitst.core.safepaths import open_fd
from gitst.core.values import Value
from gitst.plan.model import json_text
from gitst.plan.records import CR_ONLY, MAX_SEQ, TOO_DEEP, TornTail, line_blocks, open_plan, schema_problem, seq_of
from gitst.plan.reducer import PlanState, ReplayError, apply_record, checkpoint_items
from gitst.settings import lock_timeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from contextlib import AbstractContextManager
    from typing import Any, BinaryIO

    from gitst.core.diagnostics import Diagnostic, Severity
    from gitst.plan.location import PlanLocation
    from gitst.plan.records import Readable as _Readable

__all__ = [
    "Tail",
    "TailProblem",
    "last_line_state",
    "locked_tail",
    "plan_lock",
    "read_tail",
    "read_tail_bytes",
    "read_tail_from",
    "reverse_lines",
]

_CHUNK = 1 << 22  # bytes per slice when counting lines

# --- the O(tail) read -----------------------------------------------------------------------


class TailProblem(Value):
    """Something wrong in the part of the file a tail read looked at (offset of its line)."""

    __slots__ = ("code", "message", "offset", "severity")

    def __init__(self, offset: int, code: str, message: str, severity: Severity = "error") -> None:
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
        "fd",
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

    def __init__(self, path: Path, exists: bool = False, *, missing_newline: bool = False) -> None:
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
        self.records: list[tuple[int, dict[str, Any]]] = []
        self.fd: int | None = (
            None  # a writer's descriptor of the plan (:func:`locked_tail`), open while it holds the lock
        )

    @property
    def errors(self) -> list[TailProblem]:
        return [p for p in self.problems if p.severity == "error"]

    def diagnostics(self, display_path: str | None = None) -> list[Diagnostic]:
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
        from gitst.core.diagnostics import Diagnostic  # lazy: only to report a problem (the plan fast path's pins)

        lines = _line_numbers(self.path, sorted({p.offset for p in found}))
        return [
            Diagnostic(path=shown, line=lines.get(p.offset), code=p.code, message=p.message, severity=p.severity)
            for p in sorted(found, key=lambda p: p.offset)
        ]


def _line_numbers(path: Path, offsets: list[int]) -> dict[int, int]:
    """The 1-based line number of each of ``offsets`` (sorted), counting newlines up to them."""
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


def _reverse_runs(handle: _Readable, end: int, block: int = 1 << 16) -> Iterator[tuple[int, bytes]]:
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


def reverse_lines(handle: _Readable, size: int, block: int = 1 << 16) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for the newline-terminated lines of the file, last first."""
    for offset, run in _reverse_runs(handle, size, block):
        lines = run.split(b"\n")
        lines.pop()  # after the run's last newline
        ends = offset + len(run)
        for line in reversed(lines):
            ends -= len(line) + 1
            yield ends, line


def read_tail(path: str | os.PathLike[str]) -> Tail:
    """Materialize the plan from its end: latest usable checkpoint + the records after it.

    Never raises for a broken file: what is wrong goes to ``problems`` (bad JSON lines,
    records the reducer cannot apply, trailing seq out of order, an unusable checkpoint —
    then the read falls back to the checkpoint before it) and ``torn``. A missing file is
    an empty plan.
    """
    path = path if isinstance(path, Path) else Path(path)  # (a plan location's path: already one)
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
    path: str | os.PathLike[str] = "<plan>",
    *,
    keep_records: bool = False,
    accept: Callable[[dict[str, Any]], bool] | None = None,
) -> Tail:
    """:func:`read_tail` of plan bytes already in memory (a blob from git): the same backward
    read, so only the latest usable checkpoint and the lines after it are parsed.
    ``keep_records`` and ``accept``: as :func:`read_tail_from`."""
    tail = Tail(path=Path(path), exists=True)
    read_tail_from(io.BytesIO(data), len(data), tail, keep_records=keep_records, accept=accept)
    return tail


def _read_tail_once(path: Path) -> Tail:
    tail = Tail(path=path)
    opened = open_plan(path)
    if opened is None:
        return tail
    tail.exists = True
    with opened:
        read_tail_from(opened, os.fstat(opened.fileno()).st_size, tail)
    return tail


def plan_lock(location: PlanLocation, timeout: float | None = None) -> AbstractContextManager[None]:
    """The plan's write lock (``<plan>.lock``; ``ST_LOCK_TIMEOUT``; exit 3 when busy)."""
    from gitst.core.filelocks import locked  # lazy: writers only, not on the read commands' pinned import set

    return locked(location.lock, lock_timeout() if timeout is None else timeout)


@contextlib.contextmanager
def locked_tail(location: PlanLocation) -> Iterator[Tail]:
    """A writer's read: under :func:`plan_lock`, the plan opened once, for reading and appending,
    and its tail read through that descriptor (``tail.fd``, which
    :func:`gitst.plan.append.append_records` appends through: the records go to the file that
    was read, opened and checked once). A plan that cannot be opened so — none yet, one this
    process may read but not write — is read as :func:`read_tail` reads it (and reports it)."""
    with plan_lock(location):
        path = location.path
        try:
            fd: int | None = open_fd(path, os.O_RDWR | os.O_APPEND)
        except OSError:
            fd = None
        if fd is None:
            yield read_tail(path)  # (the append then creates the plan, or fails as a write: exit 4)
            return
        try:
            with os.fdopen(fd, "rb", closefd=False) as handle:
                tail = Tail(path=path, exists=True)
                read_tail_from(handle, os.fstat(fd).st_size, tail)
            tail.fd = fd
            yield tail
        finally:
            os.close(fd)
            tail.fd = None  # (a tail kept after the lock holds no descriptor)


# The lines after the base checkpoint that the backward search keeps to replay (beyond this,
# they are read again, forwards, block by block: memory stays bounded whatever the file).
_KEEP = 1 << 24


def _may_be_checkpoint(raw: bytes) -> bool:
    """False only for a line that cannot be a checkpoint record: a JSON object whose top-level
    ``lane`` is ``"checkpoint"`` holds that word, literally or with a ``\\u`` escape."""
    return b"checkpoint" in raw or b"\\u" in raw


def read_tail_from(
    handle: BinaryIO,
    size: int,
    tail: Tail,
    *,
    keep_records: bool = False,
    accept: Callable[[dict[str, Any]], bool] | None = None,
) -> None:
    """The O(tail) read of ``handle``'s first ``size`` bytes into ``tail``.

    Backwards from the end, only lines that may be checkpoints are parsed, until the latest
    usable checkpoint; then the lines after it are parsed and replayed on its items, in file
    order, one at a time (a file without any checkpoint is replayed from its first line with
    bounded memory). ``keep_records`` keeps what was replayed in ``tail.records``;
    ``accept(record)`` is asked of each of them and ``tail.rejected`` counts the refusals.
    """
    reader = _CountingReader(handle)
    tail.size = size
    if size == 0:
        return
    end, last_record = _last_line(reader, size, tail)
    search = _search_base(reader, end, tail)
    tail.bytes_read = reader.count
    replayed = _Replay(tail, keep_records, accept)
    begin = 0
    if search.base is not None:
        begin = search.base.end
        replayed.start_from(search.base, reader)
    runs = reversed(search.kept) if search.kept_size <= _KEEP else _forward_runs(reader, begin, end)
    for line_offset, value in _records_after(runs, begin, search.unusable, tail, last_record):
        replayed.apply(line_offset, value)
    tail.bytes_read = reader.count
    tail.problems.sort(key=lambda problem: problem.offset)
    replayed.finish()


def _last_line(handle: _CountingReader, size: int, tail: Tail) -> tuple[int, tuple[int, dict[str, Any]] | None]:
    """Where the lines a tail read parses end, and the last record when it lost its newline: a
    last line without newline is that record, a torn write (``tail.torn``, left out of
    ``tail.size``) or a line of a file with CR-only line breaks (a problem, never set aside)."""
    last = _unterminated_last_line(handle, size)
    if last is None:
        return size, None
    start, raw, value = last
    if type(value) is dict:
        tail.missing_newline = True
        return start, (start, value)
    if b"\r" in raw:  # CR-only line breaks: never a torn write, never set aside
        tail.problems.append(TailProblem(start, _code("JSON"), f"the last line {CR_ONLY}"))
    else:
        tail.torn = TornTail(offset=start, data=raw)
        tail.size = start
    return start, None


class _Base:
    """The checkpoint a tail read starts from: its offset, the end of its line, the record,
    its items, and the lines before it in the run that held it (``run_offset``, ``before``)."""

    __slots__ = ("before", "end", "items", "offset", "record", "run_offset")

    def __init__(
        self,
        offset: int,
        end: int,
        record: dict[str, Any],
        items: list[dict[str, Any]],
        run_offset: int,
        before: list[bytes],
    ) -> None:
        self.offset = offset
        self.end = end
        self.record = record
        self.items = items
        self.run_offset = run_offset
        self.before = before


class _Search:
    """What the backward search found: the base checkpoint (None: replay from the first line),
    the runs after it while they are small (last first), the offsets of unusable checkpoints."""

    __slots__ = ("base", "kept", "kept_size", "unusable")

    def __init__(self) -> None:
        self.base: _Base | None = None
        self.kept: list[tuple[int, bytes]] = []
        self.kept_size = 0
        self.unusable: set[int] = set()


def _search_base(handle: _CountingReader, end: int, tail: Tail) -> _Search:
    """Backwards from ``end``: the latest usable checkpoint (unusable ones are reported and
    skipped) and the runs after it."""
    search = _Search()
    for run_offset, run in _reverse_runs(handle, end):
        if b"checkpoint" in run or b"\\u" in run:
            base = _checkpoint_in_run(run_offset, run, tail, search.unusable)
            if base is not None:
                search.base = base
                after = run[base.end - run_offset :]
                if after:
                    search.kept.append((base.end, after))
                break
        if search.kept_size <= _KEEP:
            search.kept.append((run_offset, run))
            search.kept_size += len(run)
    return search


def _checkpoint_in_run(run_offset: int, run: bytes, tail: Tail, unusable: set[int]) -> _Base | None:
    """The last usable checkpoint of one run of whole lines (unusable ones go to ``tail.problems``
    and ``unusable``), or None."""
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
                    why = f"unusable checkpoint, an earlier one is used: {why}"
                    tail.problems.append(TailProblem(offset, code, why))
                    unusable.add(offset)
                else:
                    return _Base(offset, line_end, value, items, run_offset, lines[:index])
        line_end = offset
    return None


class _Replay:
    """The forward half of a tail read: the base checkpoint's items, then each record after it
    replayed (events only) with the trailing seq rule; written into the tail by :meth:`finish`."""

    __slots__ = ("accept", "count", "events", "high", "keep_records", "previous", "records", "state", "tail")

    def __init__(self, tail: Tail, keep_records: bool, accept: Callable[[dict[str, Any]], bool] | None) -> None:
        self.tail = tail
        self.keep_records = keep_records
        self.accept = accept
        self.state = tail.state  # a fresh tail's empty state, unless a base checkpoint replaces it
        self.high = 0
        self.previous: int | None = None  # the highest seq since the base (None: none yet)
        self.events = 0
        self.count = 0
        self.records: list[tuple[int, dict[str, Any]]] = []

    def start_from(self, base: _Base, handle: _CountingReader) -> None:
        """The base checkpoint: its items, its seq, and the checkpoint seq rule (its seq is the
        watermark before it, read back only as far as needed)."""
        tail = self.tail
        self.state = PlanState(base.items)
        tail.checkpoint_seq = self.previous = seq_of(base.record)
        self.high = self.previous or 0
        tail.checkpoint_offset = base.offset
        if self.previous is not None:
            expected = _watermark_before(_lines_before(handle, base.run_offset, base.before), self.previous)
            if expected != self.previous:
                tail.problems.append(
                    TailProblem(
                        base.offset,
                        "ST_CHECKPOINT_SEQ",
                        f"checkpoint seq {self.previous} must equal the watermark before it ({expected})",
                    )
                )
        self._count(base.offset, base.record)

    def apply(self, offset: int, record: dict[str, Any]) -> None:
        """One record after the base: the trailing seq rule, then the replay (events only)."""
        seq = record.get("seq")
        if type(seq) is not int or not 0 <= seq <= MAX_SEQ:
            seq = seq_of(record)  # (the common case is checked inline: this runs once per record)
        if seq is None:
            self.tail.problems.append(
                TailProblem(
                    offset, _code("SCHEMA"), f"seq must be a non-negative integer, got {json_text(record.get('seq'))}"
                )
            )
        else:
            previous = self.previous
            if previous is not None and seq <= previous:
                self.tail.problems.append(
                    TailProblem(
                        offset,
                        "ST_TRAILING_SEQ",
                        f"seq {seq} after the latest checkpoint is not above the previous seq {previous}",
                    )
                )
            self.previous = seq if previous is None else max(previous, seq)
            self.high = max(self.high, seq)
        if record.get("lane") == "event":
            self.events += 1
        try:
            apply_record(self.state, record, events_only=True)
        except ReplayError as exc:
            code, why = _replay_problem(record, exc)
            self.tail.problems.append(TailProblem(offset, code, f"{why}; record skipped"))
        self._count(offset, record)

    def _count(self, offset: int, record: dict[str, Any]) -> None:
        self.count += 1
        if self.accept is not None and not self.accept(record):
            self.tail.rejected += 1
        if self.keep_records:
            self.records.append((offset, record))

    def finish(self) -> None:
        tail = self.tail
        tail.state = self.state
        tail.watermark = self.high
        tail.trailing_events = self.events
        tail.record_count = self.count
        tail.records = self.records


def _records_after(
    runs: Iterable[tuple[int, bytes]],
    begin: int,
    unusable: set[int],
    tail: Tail,
    last_record: tuple[int, dict[str, Any]] | None,
) -> Iterator[tuple[int, dict[str, Any]]]:
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
    from gitst.core import diagnostics  # lazy: only when a read finds a problem (the plan fast path's pins)

    code: str = getattr(diagnostics, name)
    return code


def _chain_runs(runs: Iterable[tuple[int, bytes]], begin: int) -> Iterator[tuple[int, bytes]]:
    """The runs from offset ``begin`` on (the first one may start before it: it is cut)."""
    for run_offset, run in runs:
        if run_offset + len(run) <= begin:
            continue
        if run_offset < begin:
            yield begin, run[begin - run_offset :]
        else:
            yield run_offset, run


def _forward_runs(handle: _Readable, begin: int, end: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, block)`` of whole lines from ``begin`` to ``end``, read forwards."""
    offset = begin
    for block in line_blocks(handle, begin, end):
        yield offset, block
        offset += len(block)


def _lines_before(handle: _Readable, run_offset: int, lines: list[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` going back from the checkpoint: first the ``lines`` of its run before
    it (already read), then the file before the run, read only if needed."""
    end = run_offset + sum(len(line) + 1 for line in lines)
    for line in reversed(lines):
        end -= len(line) + 1
        yield end, line
    yield from reverse_lines(handle, run_offset, 1 << 12)


def _replay_problem(record: dict[str, Any], exc: ReplayError) -> tuple[str, str]:
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

    __slots__ = ("_handle", "count")

    def __init__(self, handle: _Readable) -> None:
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


def _try_loads(raw: bytes) -> object:
    """The JSON value of ``raw``, or ``_NOT_JSON`` when it does not parse (``_TOO_DEEP`` when
    it nests deeper than every reader accepts)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    if len(raw) > MIN_DEEP_BYTES and too_deep(raw):
        return _TOO_DEEP
    return value


def _unterminated_last_line(handle: _Readable, size: int) -> tuple[int, bytes, object] | None:
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


def last_line_state(handle: _Readable, size: int) -> tuple[TornTail | None, bool]:
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


def _last_line_start(handle: _Readable, size: int) -> int:
    """Where the line that ends the first ``size`` bytes starts (read back in doubling blocks)."""
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
