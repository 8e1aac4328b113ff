"""Kind ``lock``: state/locks/<name>.json: a TTL lock gitst writes (shape owned by the parallel area, docs/parallel.md).

The whole check is the schema ``state-lock``."""

from __future__ import annotations

from gitst.formats.schema_document import check_document

KIND = "lock"
SCHEMA = "state-lock"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    return check_document(data, path, SCHEMA)
