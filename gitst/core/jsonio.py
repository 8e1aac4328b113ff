"""JSON in and out, and crash-safe file writes.

orjson everywhere: compact output, UTF-8 text (never ``\\u`` escapes), key order kept.
Writes are crash-safe: a JSON file is replaced by temp file + fsync + rename (+ fsync of
the directory), so a crash leaves the old content or the new, never a half.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import orjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JSONDecodeError",
    "atomic_write_bytes",
    "atomic_write_json",
    "dumps",
    "dumps_bytes",
    "dumps_deep",
    "dumps_pretty",
    "fsync_dir",
    "load_object",
    "loads",
    "stray_temp_files",
]

JSONDecodeError = orjson.JSONDecodeError


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def load_object(data: bytes | str, source: str) -> dict:
    """The JSON object a user handed in (``--from FILE``, stdin); anything else is refused
    (exit 2) naming ``source``."""
    from gitst.core.errors import UsageError

    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{source} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        found = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
        raise UsageError(f"{source} must hold one JSON object, found {found}")
    return value


def dumps(value: Any) -> str:
    """Compact JSON text (``{"a":1}``), UTF-8 characters kept as they are."""
    return orjson.dumps(value).decode("utf-8")


def dumps_bytes(value: Any) -> bytes:
    return orjson.dumps(value)


def dumps_pretty(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make a rename or a new file in ``directory`` durable (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``: temp file in the same dir, fsync, rename, fsync dir."""
    import tempfile

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


TEMP_SUFFIX = ".tmp"  # atomic_write_bytes' temp files: ".<target name>.<random>.tmp" beside the target


def stray_temp_files(directory: str | os.PathLike, *, older_than: float) -> list[Path]:
    """Temp files of :func:`atomic_write_bytes` in ``directory`` (not below it) not touched
    for ``older_than`` seconds: left by a writer that was killed between write and rename."""
    import time

    found = []
    limit = time.time() - older_than
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    for name in names:
        if not (name.startswith(".") and name.endswith(TEMP_SUFFIX) and name.count(".") >= 3):
            continue
        path = Path(directory) / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_mtime < limit:
            found.append(path)
    return found


def atomic_write_json(path: str | os.PathLike, value: Any) -> None:
    """Write ``value`` as indented JSON, crash-safe."""
    atomic_write_bytes(path, dumps_pretty(value))


class _Raw(str):
    """Text already encoded, emitted as it is by :func:`dumps_deep`."""


def dumps_deep(value: Any) -> str:
    """Like :func:`dumps`, without orjson's nesting limit (255 levels): values nested
    deeper are encoded iteratively (keys and leaves still by orjson)."""
    try:
        return dumps(value)
    except orjson.JSONEncodeError:
        pass
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, dict):
            parts: list[Any] = [_Raw("{")]
            for index, (key, child) in enumerate(item.items()):
                parts.append(_Raw(("," if index else "") + orjson.dumps(str(key)).decode("utf-8") + ":"))
                parts.append(child)
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif isinstance(item, (list, tuple)):
            parts = [_Raw("[")]
            for index, child in enumerate(item):
                if index:
                    parts.append(_Raw(","))
                parts.append(child)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        else:
            out.append(orjson.dumps(item).decode("utf-8"))
    return "".join(out)
