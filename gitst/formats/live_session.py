"""Kind ``live-session``: state/live-session.json: the UI server's live session (seed 001 names it; gitst defines its shape, docs/validate.md).

The whole check is the schema ``live-session``."""

from __future__ import annotations

from gitst.formats.schema_document import check_document

KIND = "live-session"
SCHEMA = "live-session"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    return check_document(data, path, SCHEMA)
