"""Kind ``active-chat``: state/active-chats/<session>.json: the registry record of one chat session (shape owned by the parallel area, docs/parallel.md).

The whole check is the schema ``state-active-chat``."""

from __future__ import annotations

from gitst.formats.schema_document import check_document

KIND = "active-chat"
SCHEMA = "state-active-chat"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    return check_document(data, path, SCHEMA)
