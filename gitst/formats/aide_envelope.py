"""Kind ``aide-envelope``: an aide event log (``*.aide.events.jsonl``, seed 002), one event
envelope per line with expanded field names, checked by the schema ``aide-envelope``, for
id/sequence/timestamp agreement, and replayed with the reducer rules
(:mod:`gitst.aide.stream`)."""

from __future__ import annotations

KIND = "aide-envelope"
SCHEMA = "aide-envelope"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    from gitst.aide.stream import replay

    return replay(data, path, KIND).diagnostics
