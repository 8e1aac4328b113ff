"""Kind ``active-worktree``: state/active-worktrees/<issue>.json: the registry record of one issue's worktree (shape owned by the parallel area, docs/parallel.md).

The whole check is the schema ``state-active-worktree``."""

from __future__ import annotations

from gitst.formats.schema_document import check_document

KIND = "active-worktree"
SCHEMA = "state-active-worktree"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    return check_document(data, path, SCHEMA)
