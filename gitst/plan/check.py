"""Kind ``st-plan``: an st plan file (``.step/*.jsonl``, seed 000).

The checks are the plan engine's own: :func:`gitst.plan.doctor.check_plan_bytes` (record
shapes through the ``st-record`` schema, seq rules, the replay contract, a torn tail),
never a second implementation. With an older version (``against``), the plan must also
extend it byte for byte - it is append-only (``ST_NOT_APPEND_ONLY``, at the first line
that differs; an older torn last line may have been set aside, so only its complete
lines must be kept). When it does, only what it appends is checked
(:func:`gitst.plan.doctor.check_appended`: the older version was checked when it was
committed, and reading where it ends is O(tail)); when it does not, the whole file is.
"""

from __future__ import annotations

from gitst.core.diagnostics import Diagnostic


def check(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    from gitst.plan.doctor import check_appended, check_plan_bytes

    if against is None:
        return list(check_plan_bytes(data, path))
    rewritten = check_append_only(data, against, path)
    if not rewritten:
        return check_appended(data, len(_kept(against)), path)
    return [*check_plan_bytes(data, path), *rewritten]


def _kept(against: bytes) -> bytes:
    """The complete lines of an older version: what a newer one must start with."""
    return against[: against.rfind(b"\n") + 1]


def check_append_only(data: bytes, against: bytes, path: str) -> list[Diagnostic]:
    """A diagnostic when ``data`` does not keep every complete line of ``against``."""
    kept = _kept(against)
    if data.startswith(kept):
        return []
    old_lines, new_lines = kept.split(b"\n"), data.split(b"\n")
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=False), 1):  # up to the shorter
        if old != new:
            line = number
            break
    else:
        line = len(new_lines)
        old, new = old_lines[line - 1], b""
    col = _first_difference(old, new) + 1
    now = _window(new, col) if new else "(missing)"
    return [
        Diagnostic(
            path,
            line,
            "ST_NOT_APPEND_ONLY",
            f"line {line} differs from the older version at column {col} (was: {_window(old, col)}; now: {now}): "
            "a plan file is append-only, earlier records are never rewritten",
            col=col,
            fix="restore the earlier lines and record changes with `git st` commands (they append)",
        )
    ]


def _first_difference(old: bytes, new: bytes) -> int:
    """The offset of the first character where two lines differ (decoded, so a column)."""
    a, b = old.decode("utf-8", "replace"), new.decode("utf-8", "replace")
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _window(line: bytes, col: int, before: int = 24, width: int = 64) -> str:
    """The part of ``line`` around column ``col`` (1-based), ``…`` where it was cut."""
    text = line.decode("utf-8", "replace")
    start = max(col - 1 - before, 0)
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
