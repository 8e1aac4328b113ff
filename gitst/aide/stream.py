"""Replaying a whole aide stream, line by line, into an :class:`~gitst.aide.reducer.AideState`.

Two forms (seed 002):

- wire (kind ``aide-wire``, ``*.aide.jsonl``): one abbreviated primitive per line;
- envelope (kind ``aide-envelope``, ``*.aide.events.jsonl``): the server's event log; each
  line wraps one primitive (``type`` + ``payload`` with full field names) with ``id``,
  ``sequence``, ``timestamp``, ``actor``, ``source``, ``message_id``. Besides its schema,
  an envelope line must agree with itself and the log: ``id`` = ``evt_{date}_{sequence}``
  with the date of ``timestamp`` (UTC) and its own ``sequence`` (``AIDE_EVENT_ID_MISMATCH``),
  ``sequence`` increases along the log (``AIDE_SEQUENCE``), ``timestamp`` is a real date
  (``TIMESTAMP``; going back in time is a warning, ``AIDE_TIME_BACKWARDS``).

A line that is not JSON or breaks its schema is rejected before the reducer sees it; a
line the reducer rejects changes nothing. Rejections are diagnostics, never exceptions:
the replay always reaches the end of the stream. Blank lines are ignored.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from gitst.aide.reducer import AideState, Rejected
from gitst.core import timestamps
from gitst.core.diagnostics import ERROR, WARNING, Diagnostic
from gitst.core.values import field, value_class
from gitst.schemas.jsonpos import locate
from gitst.schemas.report import MISSING, decode, iter_lines, parse_line, schema_diagnostics

WIRE = "aide-wire"
ENVELOPE = "aide-envelope"

_EVENT_ID = re.compile(r"evt_([0-9]{8})_([0-9]+)")


@value_class
class Replay:
    kind: str
    state: AideState
    diagnostics: list[Diagnostic] = field(default_factory=list)
    records: int = 0

    @property
    def rejected(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "records": self.records,
            "applied": self.state.applied,
            **self.state.to_dict(),
            "rejected": [d.to_dict() for d in self.diagnostics if d.is_error],
            "warnings": [d.to_dict() for d in self.diagnostics if not d.is_error],
        }


def to_wire(event: dict[str, Any]) -> dict[str, Any]:
    """The wire primitive an envelope carries (``props`` -> ``p``, ``type`` -> ``t``)."""
    return {"t": event["type"], **{("p" if key == "props" else key): value for key, value in event["payload"].items()}}


class _EnvelopeOrder:
    """What the envelope checks remember from earlier lines."""

    def __init__(self) -> None:
        self.sequence: int | None = None
        self.sequence_line = 0
        self.time: datetime | None = None
        self.time_line = 0


def _col(raw: bytes, *parts: str) -> int | None:
    found = locate(decode(raw), parts)
    return found[1] if found and found[0] == 1 else None


def _sequence(event: dict[str, Any], flagged: set[str | None]) -> int | None:
    """The event's ``sequence`` when it is an integer the schema did not flag, else None."""
    sequence = event.get("sequence")
    if "/sequence" in flagged or not isinstance(sequence, int) or isinstance(sequence, bool):
        return None
    return sequence


def _envelope_checks(
    event: dict[str, Any], path: str, line: int, raw: bytes, order: _EnvelopeOrder, flagged: set[str | None]
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    sequence = _sequence(event, flagged)
    if sequence is not None:
        out.extend(_check_sequence(sequence, path, line, raw, order))
    when = None
    if "/timestamp" not in flagged and isinstance(event.get("timestamp"), str):
        when = timestamps.moment(event["timestamp"])
        out.extend(_check_time(event["timestamp"], when, path, line, raw, order))
    event_id = event.get("id")
    if "/id" not in flagged and isinstance(event_id, str):
        out.extend(_check_event_id(event_id, when, sequence, path, line, raw))
    return out


def _check_sequence(sequence: int, path: str, line: int, raw: bytes, order: _EnvelopeOrder) -> list[Diagnostic]:
    """The sequence increases from line to line."""
    if order.sequence is not None and sequence <= order.sequence:
        return [
            Diagnostic(
                path,
                line,
                "AIDE_SEQUENCE",
                f"sequence {sequence} does not increase (line {order.sequence_line} has {order.sequence})",
                col=_col(raw, "sequence"),
            )
        ]
    order.sequence, order.sequence_line = sequence, line
    return []


def _check_time(
    timestamp: str, when: datetime | None, path: str, line: int, raw: bytes, order: _EnvelopeOrder
) -> list[Diagnostic]:
    """The timestamp is a real date and time, and does not go back (a warning)."""
    if when is None:
        return [
            Diagnostic(
                path,
                line,
                "TIMESTAMP",
                f"timestamp {timestamp!r} is not a real date and time",
                col=_col(raw, "timestamp"),
            )
        ]
    if order.time is not None and when < order.time:
        return [
            Diagnostic(
                path,
                line,
                "AIDE_TIME_BACKWARDS",
                f"timestamp goes back in time (line {order.time_line} is later)",
                severity=WARNING,
                col=_col(raw, "timestamp"),
            )
        ]
    order.time, order.time_line = when, line
    return []


def _check_event_id(
    event_id: str, when: datetime | None, sequence: int | None, path: str, line: int, raw: bytes
) -> list[Diagnostic]:
    """An id of the form evt_{date}_{sequence} agrees with the timestamp and the sequence."""
    match = _EVENT_ID.fullmatch(event_id)
    if not match:
        return []
    problems = []
    if when is not None:
        date = when.astimezone(timezone.utc).strftime("%Y%m%d")
        if match.group(1) != date:
            problems.append(f"its date {match.group(1)} is not the timestamp's {date}")
    if sequence is not None and int(match.group(2)) != sequence:
        problems.append(f"its sequence {match.group(2)} is not {sequence}")
    if not problems:
        return []
    return [
        Diagnostic(
            path,
            line,
            "AIDE_EVENT_ID_MISMATCH",
            f"event id {event_id!r} must read evt_{{date}}_{{sequence}}: " + "; ".join(problems),
            col=_col(raw, "id"),
        )
    ]


class _Creations:
    """Where each entity was created, and the creations refused for a parent not created
    yet (``(index in the diagnostics, parent)``): the parent may come later in the file."""

    def __init__(self) -> None:
        self.lines: dict[str, int] = {}
        self.missing_parents: list[tuple[int, str]] = []

    def say_created_later(self, out: list[Diagnostic]) -> None:
        for index, parent in self.missing_parents:
            later = self.lines.get(parent)
            if later is not None and later > (out[index].line or 0):
                out[index] = out[index].replace(message=out[index].message + f" (it is created later, on line {later})")


def replay(data: bytes, path: str, kind: str = WIRE) -> Replay:
    """Replay every line of ``data``; all problems become diagnostics."""
    result = Replay(kind, AideState())
    out = result.diagnostics
    order = _EnvelopeOrder() if kind == ENVELOPE else None
    creations = _Creations()
    for line, raw in iter_lines(data):
        result.records += 1
        record = _checked_record(raw, path, line, kind, order, out)
        if record is not MISSING:
            op = to_wire(record) if order is not None else record
            _apply(result.state, op, path, line, out, creations)
    creations.say_created_later(out)
    for finding in result.state.finish():
        out.append(
            Diagnostic(
                path,
                finding.line,
                finding.code,
                finding.message,
                severity=ERROR if finding.severity == "error" else WARNING,
            )
        )
    return result


def _checked_record(
    raw: bytes, path: str, line: int, kind: str, order: _EnvelopeOrder | None, out: list[Diagnostic]
) -> Any:
    """One line's record, its problems added to ``out``; MISSING when it is not JSON or
    breaks its schema (it is not replayed)."""
    record, problem = parse_line(raw, path, line)
    if problem is not None:
        out.append(problem)
        return MISSING
    problems = schema_diagnostics(kind, record, path, line=line, line_text=raw)
    out.extend(problems)
    if order is not None and isinstance(record, dict):
        flagged = {d.extra.get("pointer") for d in problems}
        out.extend(_envelope_checks(record, path, line, raw, order, flagged))
    return MISSING if problems else record


def _apply(
    state: AideState, op: dict[str, Any], path: str, line: int, out: list[Diagnostic], creations: _Creations
) -> None:
    """Replay one primitive; a refusal and the reducer's findings added to ``out``."""
    try:
        findings = state.apply(op, line)
    except Rejected as exc:
        if exc.code == "AIDE_NO_PARENT" and op["t"] == "entity.create":
            creations.missing_parents.append((len(out), op["parent"]))
        out.append(Diagnostic(path, line, exc.code, exc.message))
        return
    if op["t"] == "entity.create":
        creations.lines.setdefault(op["id"], line)
    out.extend(Diagnostic(path, f.line, f.code, f.message, severity=f.severity) for f in findings)


def check_wire(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    """Kind ``aide-wire`` (``*.aide.jsonl``): one abbreviated primitive per line, checked by
    its schema (``aide-wire`` dispatches on ``t``) and replayed with the reducer rules."""
    return replay(data, path, WIRE).diagnostics


def check_envelope(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    """Kind ``aide-envelope`` (``*.aide.events.jsonl``): one event envelope per line, checked
    by its schema, for id/sequence/timestamp agreement, and replayed with the reducer rules."""
    return replay(data, path, ENVELOPE).diagnostics
