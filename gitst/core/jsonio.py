"""JSON in and out, and crash-safe file writes.

orjson everywhere: compact output, UTF-8 text (never ``\\u`` escapes), key order kept.
Writes are crash-safe: a JSON file is replaced by temp file + fsync + rename (+ fsync of
the directory), so a crash leaves the old content or the new, never a half. A write that
fails (a full disk, EIO, no permission) removes its temp file and is an
:class:`~gitst.core.errors.EnvironmentProblem` (exit 4) naming the file.

Limits every reader applies (docs/security.md), so that what gitst reads it can also write
back and a hostile file cannot crash it:

- nesting: at most :data:`MAX_DEPTH` (128) levels of arrays/objects. orjson itself parses
  1,024 and encodes only 255, and deeper values exhaust Python's recursion in checkers; a
  deeper document or line is refused with the code ``JSON_DEPTH``. The check is free for a
  text under 258 bytes, then a C-speed count of ``[`` and ``{``; only a text holding more
  than 128 of them is scanned precisely (:func:`too_deep`);
- integers: at most 2^53 - 1 in magnitude (:data:`MAX_SAFE_INTEGER`, the JSON interop
  limit; orjson silently turns 2^64 into a float and cannot encode it back), refused with the
  code ``JSON_NUMBER``, in whole documents (:func:`loads`). The plan's lines, read a million
  at a time, bound their numbers through the ``st-record`` schema instead.

Both refusals are :class:`JSONLimitError`, a :data:`JSONDecodeError`: every reader that
handles "not JSON" handles them, and its diagnostic takes the error's ``code``. Writers
apply the same limits (:func:`encode_checked`, in :func:`atomic_write_json` and the record
writers; :func:`load_object` for a document a user hands in): what gitst writes, every
gitst reader can read back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from pathlib import Path

import orjson

from gitst.core.errors import EnvironmentProblem, UsageError
from gitst.core.safepaths import check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JSON_DEPTH",
    "JSON_NUMBER",
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "MIN_DEEP_BYTES",
    "JSONDecodeError",
    "JSONLimitError",
    "atomic_write_bytes",
    "atomic_write_json",
    "dumps",
    "dumps_bytes",
    "dumps_deep",
    "dumps_pretty",
    "encode_checked",
    "fsync_dir",
    "load_object",
    "loads",
    "stray_temp_files",
    "temp_beside",
    "too_deep",
    "write_error",
]

JSONDecodeError = orjson.JSONDecodeError

MAX_DEPTH = 128
MIN_DEEP_BYTES = 2 * MAX_DEPTH + 1  # a shorter text cannot nest deeper than MAX_DEPTH
MAX_SAFE_INTEGER = 2**53 - 1  # Number.MAX_SAFE_INTEGER: the largest integer every JSON reader keeps exact
JSON_DEPTH = "JSON_DEPTH"  # diagnostic codes (docs/validate.md, "Any kind")
JSON_NUMBER = "JSON_NUMBER"


class JSONLimitError(JSONDecodeError):
    """JSON that parses but breaks a limit every reader applies; ``code`` is its diagnostic code."""

    def __init__(self, code: str, message: str):
        super().__init__(message, "", 0)
        self.code = code

    def __str__(self) -> str:  # no "line 1 column 1": the limit is about the whole text
        return self.msg


# A JSON string (escapes included), and what is left of a document once its strings are gone.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_INNERMOST = re.compile(rb"\[\]")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_BRACKETS = bytes.maketrans(b"{}", b"[]")
# A run of 16 digits, found by mapping every digit to "0" and everything else to " " (C speed,
# ~1 µs for a 500-byte record) and looking for sixteen "0"s: a regex `[0-9]{16}` re-tries at
# every digit and cost ~22 µs on a record full of hex ids - most of reading one.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_SIXTEEN_DIGITS = b"0" * 16
_INTEGER = re.compile(rb"(?<![0-9.eE+-])-?[0-9]{16,}(?![0-9.eE])")


def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON text ``data`` nests arrays/objects more than ``limit`` deep.

    Cheap for almost every input: a text shorter than ``2 * limit + 2`` bytes cannot be deeper
    (every level takes an opening and a closing bracket), nor one holding at most ``limit``
    opening brackets (two C-speed counts). Otherwise the strings are removed and the depth of
    what is left is measured (a few C-speed passes for a shallow document). Hot loops inline
    the same two guards before calling it (a plan line: ``len(raw) > MIN_DEEP_BYTES``)."""
    if len(data) <= 2 * limit + 1 or data.count(b"[") + data.count(b"{") <= limit:
        return False
    # Escapes first (an escaped backslash, then an escaped quote), then everything but quotes
    # and brackets goes, then the strings (every other piece between quotes): C-speed passes.
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(data.translate(_BRACKETS, _NOT_STRUCTURE).split(b'"')[::2])
    for _ in range(16):  # shallow documents: peel the innermost pairs, one level a pass
        if not brackets:
            return False
        brackets = _INNERMOST.sub(b"", brackets)
    depth = 16
    for byte in brackets:  # what is left is deeper than 16: measure it exactly
        depth += 1 if byte == 0x5B else -1
        if depth > limit:
            return True
    return False


def _check_numbers(data: bytes) -> None:
    if _SIXTEEN_DIGITS not in data.translate(_DIGITS_AS_ZEROS):
        return
    for match in _INTEGER.finditer(_STRING.sub(b'""', data)):
        if abs(int(match.group())) > MAX_SAFE_INTEGER:
            raise JSONLimitError(
                JSON_NUMBER, f"integer {match.group()[:40].decode()} is beyond 2^53-1, the JSON interop limit"
            )


def loads(data: bytes | str) -> Any:
    """The JSON value of ``data``; :class:`JSONDecodeError` when it is not JSON or breaks a
    limit (:class:`JSONLimitError`: nesting deeper than :data:`MAX_DEPTH`, an integer beyond
    :data:`MAX_SAFE_INTEGER`)."""
    value = orjson.loads(data)
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    if too_deep(raw):
        raise JSONLimitError(JSON_DEPTH, f"nested deeper than {MAX_DEPTH} levels")
    _check_numbers(raw)
    return value


def load_object(data: bytes | str, source: str) -> dict[str, Any]:
    """The JSON object a user handed in (``--from FILE``, stdin); anything else is refused
    (exit 2) naming ``source``, so is a document breaking a limit every reader applies
    (:func:`loads`): what a writer stores from it, its reader can read back."""
    try:
        value = loads(data)
    except JSONLimitError as exc:
        raise UsageError(
            f"{source}: error[{exc.code}]: {exc}; nothing written",
            fix=f"every gitst reader refuses such JSON; keep it within {MAX_DEPTH} levels "
            f"and integers within 2^53-1 (docs/security.md)",
        ) from None
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


def fsync_dir(directory: str | os.PathLike[str]) -> None:
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


def write_error(path: str | os.PathLike[str], exc: OSError, *, verb: str = "write") -> Exception:
    """The error a failed write of ``path`` is reported as: exit 4 (the environment's fault:
    a full disk, EIO, no permission, a read-only file system), never a traceback."""
    reason = exc.strerror or str(exc)
    fix = None
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        fix = "free some space (or raise the file size limit) and run the command again"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = "check the permissions of the directory (or why the file system is read-only)"
    elif exc.errno == errno.ENOENT:
        fix = "create the directory first: gitst does not create directories for a path you name"
    elif exc.errno == errno.EISDIR:
        fix = "name a file, not a directory"
    elif exc.errno in (errno.ENOTDIR, errno.EEXIST):  # EEXIST: making a parent where a file is
        fix = "a part of the path is a file, not a directory: choose another path"
    return EnvironmentProblem(f"cannot {verb} {os.fspath(path)}: {reason}", fix=fix)


# Temp files of :func:`atomic_write_bytes` older than this are left-overs of a crashed writer.
STALE_TEMP_SECONDS = 3600


def _remove_stale_temps(target: Path, keep: str) -> None:
    """Remove what a crashed writer of ``target`` left (its temp files older than an hour)."""
    prefix = f".{target.name}."
    for stale in stray_temp_files(target.parent, older_than=STALE_TEMP_SECONDS):
        if stale.name.startswith(prefix) and stale.name != keep:
            with contextlib.suppress(OSError):
                stale.unlink()


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644, make_parents: bool = True
) -> None:
    """Replace ``path`` with ``data``: temp file in the same dir, fsync, rename, fsync dir.

    A failure (full disk, EIO, no permission) leaves the old content and no temp file, and
    raises :func:`write_error` (exit 4). A path that is a directory is refused (exit 2), so is
    a symbolic link (the rename would replace the link, not write where it points, but a
    link there is never ours). Temp files a crashed writer left (older than an hour) are
    removed. ``make_parents=False``: a missing parent directory is an error, not created.
    """
    target = Path(path)
    try:
        check(target)
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_beside(target)
    except OSError as exc:
        raise write_error(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_error(target, exc) from None
        raise
    fsync_dir(target.parent)
    _remove_stale_temps(target, os.path.basename(tmp))


TEMP_SUFFIX = ".tmp"  # atomic_write_bytes' temp files: ".<target name>.<random>.tmp" beside the target
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def temp_beside(target: Path) -> tuple[int, str]:
    """A new file beside ``target`` for its next content (``.<name>.<random>.tmp``, mode 0600,
    open for writing, never an existing name nor a link): what ``tempfile.mkstemp`` makes,
    without importing tempfile (and its shutil, bz2 and lzma: ~9 ms of CPU here) into every
    command that writes a record. Its descriptor and path."""
    for _ in range(100):
        name = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
        try:
            return os.open(name, _TEMP_FLAGS, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", os.fspath(target.parent))


def stray_temp_files(directory: str | os.PathLike[str], *, older_than: float) -> list[Path]:
    """Temp files of :func:`atomic_write_bytes` in ``directory`` (not below it) not touched
    for ``older_than`` seconds: left by a writer that was killed between write and rename."""
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


def encode_checked(value: Any, path: str | os.PathLike[str]) -> bytes:
    """``value`` as indented JSON for the file ``path``; refused (exit 2, nothing written)
    when a gitst reader would refuse it (:func:`loads`: nesting deeper than
    :data:`MAX_DEPTH`, an integer beyond :data:`MAX_SAFE_INTEGER`). The one check every
    JSON record writer makes (:func:`atomic_write_json`, ``statedir.records.create``), so
    a writer never stores what its reader refuses."""
    try:
        data = dumps_pretty(value)
    except orjson.JSONEncodeError as exc:  # deeper than orjson's 255 levels, beyond 64 bits
        text = str(exc)
        code = JSON_NUMBER if "Integer" in text else JSON_DEPTH if "Recursion" in text else "JSON"
        raise _refuse_write(path, code, f"cannot be encoded: {text}") from None
    try:
        if too_deep(data):
            raise JSONLimitError(JSON_DEPTH, f"nested deeper than {MAX_DEPTH} levels")
        _check_numbers(data)
    except JSONLimitError as exc:
        raise _refuse_write(path, exc.code, str(exc)) from None
    return data


def _refuse_write(path: str | os.PathLike[str], code: str, message: str) -> Exception:
    return UsageError(
        f"refusing to write {os.fspath(path)}: error[{code}]: {message}; nothing written",
        fix=f"every gitst reader refuses JSON nested deeper than {MAX_DEPTH} levels or holding an integer "
        "beyond 2^53-1 (docs/security.md): keep the input within those limits",
    )


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    """Write ``value`` as indented JSON, crash-safe; refused (exit 2) when a reader would
    refuse it (:func:`encode_checked`)."""
    atomic_write_bytes(path, encode_checked(value, path))


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
