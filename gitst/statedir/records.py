"""Reading and writing the JSON records gitst keeps under the state dir, through their schemas.

A record is read with :func:`load` (missing → None; unreadable, not JSON or not matching its
schema → :class:`CorruptRecord`, exit 1, naming the file and every violation, with the code
``git st validate`` gives the same problem: ``READ``, ``JSON`` or ``SCHEMA``) and written
with :func:`save` (checked against the schema first, then temp file + fsync + rename).
Append-only logs get whole lines in one ``write`` with :func:`append_line`.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst.core.diagnostics import JSON, READ, SCHEMA
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.jsonio import (
    JSONDecodeError,
    atomic_write_json,
    dumps_bytes,
    encode_checked,
    fsync_dir,
    loads,
    temp_beside,
    write_error,
)
from gitst.core.safepaths import check, makedirs, open_fd, read_bytes, read_listed
from gitst.core.values import value_class
from gitst.git.index import tracked_below
from gitst.settings import lock_timeout
from gitst.statedir.paths import ignore_if_tracked, refuse_symlinks, refuse_tracked, state_path

__all__ = [
    "CorruptRecord",
    "RecordFiles",
    "ScanRow",
    "append_line",
    "create",
    "load",
    "locked",
    "make_dir",
    "record_files",
    "remove",
    "require_valid",
    "save",
    "scan",
    "schema_problems",
]


class CorruptRecord(ProblemsFound):
    """A state record that cannot be read, is not valid JSON or does not match its schema
    (exit 1). ``code`` is the diagnostic code of that problem: ``READ``, ``JSON``, ``SCHEMA``."""

    def __init__(self, path: Path, schema: str, problems: list[str], code: str = SCHEMA):
        self.path = Path(path)
        self.schema = schema
        self.problems = problems
        self.code = code
        super().__init__(
            f"{path}: error[{code}]: not a valid {schema} record: " + "; ".join(problems),
            fix=f"inspect {path}; move it away if it cannot be repaired (gitst will not guess its owner)",
        )

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "schema": self.schema, "errors": list(self.problems)}


@value_class(frozen=True)
class RecordFiles:
    """A record ``<subdir>/<name>.json`` and its flock sidecar ``<name>.json.lock``."""

    record: Path
    sidecar: Path


def record_files(root: Path, subdir: str, name: str) -> RecordFiles:
    """Both paths inside the state dir, each part validated and symlinks refused.

    ``name`` must already be checked by the caller's own rule (issue, session, lock name).
    """
    return RecordFiles(
        state_path(subdir, name, suffix=".json", root=root), state_path(subdir, name, suffix=".json.lock", root=root)
    )


def make_dir(directory: Path, root: Path) -> None:
    """Create a directory of the state dir (``locks/``, ``active-chats/``, …) one component at
    a time, links refused; a full disk or EIO is exit 4."""
    try:
        makedirs(directory, root)
    except OSError as exc:
        raise write_error(directory, exc, verb="create") from None


def locked(sidecar: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the flock sidecar of a record for a read-modify-write (``ST_LOCK_TIMEOUT``;
    exit 3 naming the sidecar when another process keeps it busy). A sidecar git tracks is
    refused (exit 2): taking the lock would write to a committed file."""
    from gitst.core.filelocks import locked as flock  # lazy: not loaded by commands that only read

    refuse_tracked(sidecar)
    return flock(sidecar, lock_timeout())


def schema_problems(record: Any, schema: str) -> list[str]:
    """Every violation of ``schema`` by ``record`` as ``/pointer: message`` (empty when valid).

    A command reads and writes a few records: their verdicts come from the schema compiled to
    Python (``catalog.verdicts``, the same verdicts), so jsonschema-rs — whose import costs
    `git st next` more than all its checks — is loaded only to word the problems of a record
    that fails."""
    from gitst.schemas.catalog import validator, verdicts  # lazy: the catalog only when a record is read or written

    is_valid = verdicts(schema, few=True)
    if is_valid(record):
        return []
    checker = validator(schema)
    try:
        valid = checker.is_valid(record)
    except ValueError:  # jsonschema-rs takes no str subclass (an IssueId): check the JSON written
        record = loads(dumps_bytes(record))
        valid = checker.is_valid(record)
    if valid:
        return []
    return [f"{err.pointer or '/'}: {err.message}" for err in checker.errors(record)]


def _no_symlink(path: Path) -> None:
    """Refuse a record path that is a symbolic link, a FIFO or a device (exit 2); a
    directory in its place cannot be written (exit 4, naming it)."""
    try:
        check(path)
    except OSError as exc:
        raise write_error(path, exc) from None


def load(path: Path, schema: str) -> dict[str, Any] | None:
    """The record at ``path`` checked against ``schema``; None when the file does not exist,
    or when git tracks it (committed state is never runtime state: a warning says so)."""
    path = Path(path)
    if ignore_if_tracked(path):
        return None
    return _read(path, schema)


def _read(path: Path, schema: str, listed: os.DirEntry[str] | None = None) -> dict[str, Any] | None:
    """:func:`load` once the path is known not to be tracked; ``listed``: the directory
    listing's entry for it, whose file type spares a system call (:func:`safepaths.read_listed`)."""
    try:
        data = read_bytes(path) if listed is None else read_listed(listed)
    except UsageError:
        raise
    except OSError as exc:
        raise CorruptRecord(path, schema, [f"cannot read: {exc.strerror}"], READ) from None
    return _decode(path, data, schema)


def _decode(path: Path, data: bytes | None, schema: str) -> dict[str, Any] | None:
    """The record in ``data`` (read from ``path``), checked against ``schema``."""
    if data is None:
        return None
    try:
        record = loads(data)
    except JSONDecodeError as exc:
        raise CorruptRecord(path, schema, [f"not JSON: {exc}"], getattr(exc, "code", JSON)) from None
    problems = schema_problems(record, schema)
    if problems:
        raise CorruptRecord(path, schema, problems)
    return record


def save(path: Path, record: dict[str, Any], schema: str) -> None:
    """Write ``record`` crash-safely after checking it against ``schema``.

    A record that does not match is a bug in gitst, never written: it raises RuntimeError.
    """
    problems = schema_problems(record, schema)
    if problems:
        raise RuntimeError(f"gitst bug: refusing to write an invalid {schema} record to {path}: {problems}")
    path = Path(path)
    _no_symlink(path)
    refuse_tracked(path)
    atomic_write_json(path, record)


def require_valid(record: Any, schema: str, what: str) -> None:
    """Refuse (exit 2, nothing written) a record built from the user's input that does not
    match ``schema``, naming every violation; ``what`` says what was given ("the deliberation")."""
    problems = schema_problems(record, schema)
    if problems:
        raise UsageError(
            f"{what} does not match the {schema} schema: " + "; ".join(problems),
            fix=f"`git st schema show {schema}` shows every field",
        )


def create(path: Path, record: dict[str, Any], schema: str) -> None:
    """Write a new record crash-safely, never replacing one: FileExistsError when ``path``
    exists. The record is written whole to a temp file, fsynced, then linked into place
    (``link(2)`` fails on an existing name, so two creators of one name cannot both win)."""
    problems = schema_problems(record, schema)
    if problems:
        raise RuntimeError(f"gitst bug: refusing to write an invalid {schema} record to {path}: {problems}")
    path = Path(path)
    data = encode_checked(record, path)  # what load() would refuse is never written
    _no_symlink(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)


def remove(path: Path) -> bool:
    """Delete a record (False when it was already gone)."""
    path = Path(path)
    _no_symlink(path)
    refuse_tracked(path)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise write_error(path, exc, verb="remove") from None

    fsync_dir(path.parent)
    return True


ScanRow = tuple[
    str, Path, dict[str, Any] | None, CorruptRecord | None
]  # (name, path, record, problem): one of the two is None


def scan(root: Path, subdir: str, schema: str, check_name: Callable[[str], object]) -> list[ScanRow]:
    """Every ``<root>/<subdir>/<name>.json`` record as ``(name, path, record, problem)``, by name.

    ``check_name(name)`` raising means the file is not one of ours (a stray file that
    ``git st validate`` reports); it is left out. A corrupt record comes back with its
    problem and no record. Read without locks: records are replaced whole (rename).
    """
    directory = Path(root) / subdir
    refuse_symlinks(directory, root, leaf="dir")
    try:
        with os.scandir(directory) as listing:
            entries = sorted(
                (entry for entry in listing if entry.name.endswith(".json") and entry.name != ".json"),
                key=lambda entry: entry.name,
            )
    except (FileNotFoundError, NotADirectoryError):
        return []
    # one `git ls-files` for the whole state dir (what is_tracked asks for its files too), a set for every name
    tracked = {path[len(subdir) + 1 :] for path in tracked_below(root) if path.startswith(f"{subdir}/")}
    rows: list[ScanRow] = []
    for entry in entries:
        file_name = entry.name
        name = file_name[: -len(".json")]
        try:
            check_name(name)
        except UsageError:
            continue
        path = directory / file_name
        if file_name in tracked and ignore_if_tracked(path):  # (its warning, once)
            continue
        try:
            record = _read(path, schema, entry)
        except CorruptRecord as problem:
            rows.append((name, path, None, problem))
            continue
        if record is not None:
            rows.append((name, path, record, None))
    return rows


def append_line(path: Path, line: bytes) -> None:
    """Append one whole line (with its newline) in a single write, then fsync.

    A write that fails (a full disk, EIO) is cut back to where the file ended, so a log never
    keeps half a line, and is an environment error (exit 4)."""
    path = Path(path)
    refuse_tracked(path)
    data = line if line.endswith(b"\n") else line + b"\n"
    try:
        fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        size = os.fstat(fd).st_size
        written = 0
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.EFBIG, "File too large (short write)")
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_size == size + written:  # nobody appended since: cut ours off
                    os.ftruncate(fd, size)
            raise write_error(path, exc) from None
    finally:
        os.close(fd)
