"""Kinds that are one JSON document checked by one schema, and nothing more.

Used by the state files whose shape is all there is to check (live-session, watch-list,
locks, active-chats, active-worktrees): parse with orjson, validate with the kind's schema
through :mod:`gitst.schemastore`, report each violation at the line of the value.
"""

from __future__ import annotations

from gitst.diagnostics import Diagnostic
from gitst.formats.common import MISSING, parse_document, schema_diagnostics

NO_SCHEMA = "NO_SCHEMA"


def load_document(data: bytes, path: str, schema: str) -> tuple[object, list[Diagnostic]]:
    """The parsed document (MISSING when it is not JSON) and its parse/schema problems."""
    from gitst.schemastore import names

    if schema not in names():
        return MISSING, [Diagnostic(path, None, NO_SCHEMA, f"gitst ships no schema {schema!r} to check this file with")]
    value, problems = parse_document(data, path)
    if value is MISSING:
        return MISSING, problems
    return value, schema_diagnostics(schema, value, path, text=data)


def check_document(data: bytes, path: str, schema: str) -> list[Diagnostic]:
    return load_document(data, path, schema)[1]
