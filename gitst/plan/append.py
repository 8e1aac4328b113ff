"""The one way records are written to a plan: appended, whole lines, under the plan's lock.

:func:`append_records` writes the records after what a tail read under the lock
(:func:`gitst.plan.tail.locked_tail`) found, in one ``write`` of whole lines + fsync, through
the descriptor that read opened. A torn tail is first set aside as ``<plan>.torn-<timestamp>``
(:func:`set_aside_torn_tail`); a last record that lost its newline gets it back. Earlier bytes
are never rewritten.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from pathlib import Path

import orjson

from gitst.core.errors import UsageError
from gitst.core.jsonio import MAX_DEPTH, fsync_dir, too_deep
from gitst.core.safepaths import open_fd
from gitst.plan.records import deep_item_message, too_deep_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitst.plan.records import TornTail
    from gitst.plan.tail import Tail

__all__ = ["append_records", "encode_record", "set_aside_torn_tail"]


def encode_record(record: dict[str, Any]) -> bytes:
    """One compact UTF-8 JSON line ending in a newline (text kept, never ``\\u`` escaped)."""
    return orjson.dumps(record) + b"\n"


def set_aside_torn_tail(path: Path, torn: TornTail, plan_fd: int | None = None) -> Path:
    """Move a torn tail's bytes to ``<plan>.torn-<UTC timestamp>`` and cut the plan back to
    its last whole line (through ``plan_fd`` when the caller has the plan open for writing).
    Caller holds the lock. Both steps are fsynced, in that order."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.torn-{stamp}")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.torn-{stamp}-{counter}")
        counter += 1
    copy = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        _write_all(copy, torn.data)
        os.fsync(copy)
    except BaseException:
        os.close(copy)
        os.unlink(target)  # a full disk: no empty or partial copy is left behind, the plan untouched
        raise
    os.close(copy)
    fd = open_fd(path, os.O_WRONLY) if plan_fd is None else plan_fd
    try:
        current = os.fstat(fd).st_size
        if current >= torn.offset + len(torn.data):
            os.ftruncate(fd, torn.offset)
            os.fsync(fd)
    finally:
        if plan_fd is None:
            os.close(fd)
    fsync_dir(path.parent)
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _lines_of(records: list[dict[str, Any]]) -> list[bytes]:
    """The records as lines; refused (exit 2, nothing written) when one nests too deep: the
    last guard, never a line every reader would refuse (a checkpoint of an item a hostile plan
    made too deep)."""
    lines = [encode_record(record) for record in records]
    for record, line in zip(records, lines, strict=True):
        if too_deep(line):
            deep = too_deep_items(record.get("items") or [record.get("item") or {}])
            raise UsageError(
                f"{deep_item_message(deep) if deep else f'a record nests deeper than {MAX_DEPTH} levels'}; "
                "nothing written",
                fix=f"git st remove {deep[0]}   (then add it again without the deep value)"
                if deep
                else "write shallower values",
            )
    return lines


def append_records(path: str | os.PathLike[str], records: list[dict[str, Any]], tail: Tail) -> Path | None:
    """Append ``records`` after what ``tail`` read, in one write of whole lines + fsync.

    The caller holds the plan lock and read ``tail`` under it (through ``tail.fd``, which the
    append writes through when set: :func:`gitst.plan.tail.locked_tail`). A torn tail is set aside
    first (its new path is returned); a last record without newline gets one. Earlier bytes
    are never rewritten.
    """
    path = path if isinstance(path, Path) else Path(path)  # (a plan location's path: already one)
    lines = _lines_of(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    torn_path = set_aside_torn_tail(path, tail.torn, tail.fd) if tail.torn is not None else None
    payload = b"".join(lines)
    if tail.missing_newline:
        payload = b"\n" + payload
    created = tail.fd is None and not path.exists()
    fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT) if tail.fd is None else tail.fd
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        except BaseException:
            # A full disk, EIO, even a failed fsync: cut the plan back to its last whole line,
            # so the command fails with nothing written (a retry cannot duplicate a record).
            # The caller holds the plan lock: nobody else appended meanwhile.
            with contextlib.suppress(OSError):  # if even that fails, a part is a torn tail
                os.ftruncate(fd, size)
                if created:
                    os.unlink(path)  # a plan this write created is not left behind empty
            raise
    finally:
        if tail.fd is None:
            os.close(fd)
    if created:
        fsync_dir(path.parent)
    return torn_path
