"""Kind ``watch-list``: state/watch-list.json: the UI server's watch list (seed 001 names it; gitst defines its shape, docs/validate.md).

The whole check is the schema ``watch-list``."""

from __future__ import annotations

from gitst.formats.schema_document import check_document

KIND = "watch-list"
SCHEMA = "watch-list"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    return check_document(data, path, SCHEMA)
