"""Kind ``aide-wire``: an aide wire stream (``*.aide.jsonl``, seed 002), one abbreviated
primitive per line, checked by its schema (``aide-wire`` dispatches on ``t`` to the
primitive's schema) and replayed with the reducer rules (:mod:`gitst.aide.reducer`)."""

from __future__ import annotations

KIND = "aide-wire"
SCHEMA = "aide-wire"


def check(data: bytes, path: str, *, against: bytes | None = None) -> list:
    from gitst.aide.stream import replay

    return replay(data, path, KIND).diagnostics
