"""Deliberations (seed 001 ``deliberations/``): one JSON record per agent invocation.

``state/deliberations/<id>.json``, schema ``state-deliberation``: the agent's role, when it
ran, its status and response, the model and endpoint, the pr/issue/phase it ran against, the
command that triggered it, ``duration_ms`` and a ``tokens`` block — the layer that answers
"what did the Judge actually say on iteration 2".

- :func:`build` assembles a record from a JSON document (unknown fields kept) and the
  fields given on the command line (which win), fills ``timestamp`` (now) and ``session``
  (the acting session), and checks it against the schema (exit 2 naming every problem);
- :func:`add` writes it under a new id ``<UTC time>-<8 hex>`` (names sort by creation):
  written whole to a temp file, fsynced, then linked into place, which never replaces an
  existing record (:func:`gitst.statedir.records.create`), so concurrent writers need no
  lock and a crash leaves the record whole or absent;
- :func:`select` lists records matching :class:`Filters`, oldest first; a record that cannot
  be read is returned as a problem (``READ``/``JSON``/``SCHEMA``) and the others still listed.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.values import value_class
from gitst.statedir import records
from gitst.statedir.paths import ensure_state_dir, state_path, validate_identifier

__all__ = [
    "DIRECTORY",
    "SCHEMA",
    "Filters",
    "Row",
    "add",
    "build",
    "merge_tokens",
    "number",
    "read",
    "select",
    "validate_id",
]

SCHEMA = "state-deliberation"
DIRECTORY = "deliberations"
RECORD_VERSION = 1
_ATTEMPTS = 8  # new ids tried when one is taken (32 random bits per millisecond: never in practice)


def validate_id(value: str) -> str:
    """A deliberation id: the identifier rule (it names the file)."""
    return validate_identifier(value, "deliberation id")


def number(value: Any) -> int | None:
    """An issue or PR number as stored (a number or a string of digits); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def new_id(now: float) -> str:
    """``20260410T130112402Z-3f9a1c2e``: the UTC time to the millisecond and 32 random bits."""
    moment = datetime.fromtimestamp(now, tz=timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{moment.microsecond // 1000:03d}Z-{secrets.token_hex(4)}"


def build(
    document: dict[str, Any] | None,
    fields: dict[str, Any],
    *,
    session: str,
    tokens: tuple[int | None, int | None] = (None, None),
    now: float | None = None,
) -> dict[str, Any]:
    """The record to write: ``document``'s fields (unknown ones kept), then every field given
    in ``fields`` that is not None, then ``tokens`` (input, output; see :func:`merge_tokens`),
    then ``timestamp`` and ``session`` when still missing.

    Refused (exit 2) without ``role`` or ``status``, or when the result breaks the schema.
    """
    when = timestamps.now() if now is None else now
    record: dict[str, Any] = {"version": RECORD_VERSION}
    record.update(document or {})
    record.update({key: value for key, value in fields.items() if value is not None})
    merged = merge_tokens(record.get("tokens"), *tokens)
    if merged is not None:
        record["tokens"] = merged
    record.setdefault("timestamp", timestamps.iso(when))
    record.setdefault("session", session)
    missing = [name for name in ("role", "status") if not record.get(name)]
    if missing:
        raise UsageError(
            f"a deliberation needs {' and '.join(missing)}",
            fix=" ".join(f"--{name} TEXT" for name in missing) + f' (or "{missing[0]}" in the JSON document)',
        )
    records.require_valid(record, SCHEMA, "the deliberation")
    return record


def merge_tokens(block: Any, tokens_in: int | None, tokens_out: int | None) -> dict[str, Any] | None:
    """The ``tokens`` block with ``input``/``output`` set from the counts given (None: keep
    the block's), its other fields kept; None when neither count is given (the block stays as
    it is). A block that is not an object is replaced: the counts given win over it."""
    if tokens_in is None and tokens_out is None:
        return None
    merged = dict(block) if isinstance(block, dict) else {}
    merged.update({key: value for key, value in (("input", tokens_in), ("output", tokens_out)) if value is not None})
    return merged


def add(record: dict[str, Any], root: Path, *, now: float | None = None) -> tuple[str, Path]:
    """Write ``record`` under a new id; ``(id, path)``."""
    ensure_state_dir(root)
    for _ in range(_ATTEMPTS):
        ident = new_id(timestamps.now() if now is None else now)
        path = state_path(DIRECTORY, ident, suffix=".json", root=root)
        try:
            records.create(path, record, SCHEMA)
        except FileExistsError:
            continue
        return ident, path
    raise RuntimeError(f"gitst bug: {_ATTEMPTS} new deliberation ids in {root / DIRECTORY} were all taken")


def read(ident: str, root: Path) -> tuple[Path, dict[str, Any]]:
    """``(path, record)`` of deliberation ``ident``; exit 1 when there is none."""
    path = state_path(DIRECTORY, validate_id(ident), suffix=".json", root=root)
    record = records.load(path, SCHEMA)
    if record is None:
        raise ProblemsFound(
            f"no deliberation {ident} ({path} does not exist)", fix="`git st deliberation list` shows the ids"
        )
    return path, record


@value_class(frozen=True)
class Filters:
    """What :func:`select` keeps: every field given must match (text case-insensitively)."""

    issue: int | None = None
    pr: int | None = None
    role: str | None = None
    phase: str | None = None
    status: str | None = None
    session: str | None = None

    def match(self, record: dict[str, Any]) -> bool:
        for name in ("issue", "pr"):
            wanted = getattr(self, name)
            if wanted is not None and number(record.get(name)) != wanted:
                return False
        for name in ("role", "phase", "status", "session"):
            wanted = getattr(self, name)
            value = record.get(name)
            if wanted is not None and not (isinstance(value, str) and value.casefold() == wanted.casefold()):
                return False
        return True


@value_class(frozen=True)
class Row:
    ident: str
    path: Path
    record: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.ident, "path": str(self.path), "record": self.record}


def _order(row: Row) -> tuple[float, str]:
    when = timestamps.moment(row.record.get("timestamp"))
    return (when.timestamp() if when is not None else 0.0, row.ident)


def select(root: Path, filters: Filters, *, limit: int | None = None) -> tuple[list[Row], list[records.CorruptRecord]]:
    """Records matching ``filters``, oldest first (by ``timestamp``, then id); with ``limit``
    the most recent ``limit`` of them. Unreadable records come back as problems."""
    rows, problems = [], []
    for ident, path, record, problem in records.scan(root, DIRECTORY, SCHEMA, validate_id):
        if problem is not None:
            problems.append(problem)
        elif record is not None and filters.match(record):
            rows.append(Row(ident, path, record))
    rows.sort(key=_order)
    if limit is not None:
        rows = rows[-limit:] if limit > 0 else []
    return rows, problems
