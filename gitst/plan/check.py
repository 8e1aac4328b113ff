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

import os
from typing import BinaryIO

from gitst.core.diagnostics import Diagnostic
from gitst.git import objects
from gitst.plan.doctor import check_appended, check_appended_file, check_plan_bytes, scan_file

__all__ = ["check", "check_append_only", "check_blob"]


def check(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    if against is None:
        return list(check_plan_bytes(data, path))
    rewritten = check_append_only(data, against, path)
    if not rewritten:
        return check_appended(data, len(_kept(against)), path)
    return [*check_plan_bytes(data, path), *rewritten]


def check_blob(cwd: str | os.PathLike[str], oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
    """:func:`check` of git blob ``oid`` (a staged plan) against blob ``against`` (its older
    version), with memory bounded whatever their size: git writes the blob into an unnamed
    temporary file that is read in blocks, and the older version is never read — that the
    new one extends it is proven by hashing the new one's first bytes as git hashes a blob
    (same length, same object id). Only when it does not (a rewrite, or an older version
    ending in a torn line) are both read whole, for :func:`check`'s exact diagnostics."""
    import tempfile  # lazy: only a blob is spooled; the hook's check of files on disk needs none

    with tempfile.TemporaryFile(prefix="gitst-plan-") as spool:
        objects.blob_to_file(cwd, oid, spool.fileno())
        size = os.fstat(spool.fileno()).st_size
        if against is None:
            return scan_file(spool, size, path).diagnostics
        older = objects.object_sizes(cwd, [against])[0]
        if older is not None and older[1] == 0:
            return scan_file(spool, size, path).diagnostics  # nothing to extend: the whole file is new
        lines = _extends(spool, size, *older) if older is not None else None
        if older is not None and lines is not None:
            return check_appended_file(spool, size, older[1], path, prefix_lines=lines)
        old = objects.read_objects(cwd, [against])[0] or b""
        spool.seek(0)
        return check(spool.read(), path, against=old)


def _extends(spool: BinaryIO, size: int, oid: str, old_size: int) -> int | None:
    """When the first ``old_size`` bytes of ``spool`` are blob ``oid`` and end a line: how many
    lines they hold (counted in the same pass); else None."""
    import hashlib  # lazy: only a blob with an older version is hashed (OpenSSL's load)

    if old_size == 0 or old_size > size or len(oid) not in (40, 64):
        return None
    spool.seek(old_size - 1)
    if spool.read(1) != b"\n":
        return None
    digest = hashlib.sha1(usedforsecurity=False) if len(oid) == 40 else hashlib.sha256()  # git's object formats
    digest.update(b"blob %d\0" % old_size)
    spool.seek(0)
    left = old_size
    lines = 0
    while left:
        block = spool.read(min(1 << 22, left))
        if not block:
            return None
        digest.update(block)
        lines += block.count(b"\n")
        left -= len(block)
    return lines if digest.hexdigest() == oid else None


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
