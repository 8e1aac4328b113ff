"""Paths inside a tree somebody else controls, checked component by component.

A cloned repository is untrusted input (docs/security.md): it can commit a symbolic link
where gitst expects its plan (``.step/st-plan.jsonl -> /etc/passwd``), the plan's directory
(``.step -> /elsewhere``), the plan's ``.gitignore`` or the state dir, and git checks such
links out as they are. A FIFO or a device node cannot be committed, but can sit in a work
tree or be named on the command line (``--file /dev/zero``).

So every path gitst opens for the plan, its lock sidecar, its ignore file, its torn tails
and the state dir goes through this module. From a trusted *top* (the work tree's top, the
state dir's parent) down, each component that exists is ``lstat``-ed: a symbolic link
anywhere is refused, a component that must be a directory must be one, and the last one must
be a regular file (or a directory, for a directory). Files are then opened with
``O_NOFOLLOW | O_NONBLOCK`` and checked again with ``fstat``, so a link planted between the
check and the open is refused as well and opening a FIFO never blocks. Components above the
top (the user's own ``/home -> /data/home``) are not looked at.

A refusal is :class:`UnsafePath` (exit 2, nothing written) naming the component and the fix.
A directory where a file must be is not hostile but in the way: ``IsADirectoryError``, like
every other OS error (no permission, a full disk) left to the caller, which knows what it
was doing (exit 4).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from gitst.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Leaf = Literal["file", "dir", "any"]

__all__ = [
    "UnsafePath",
    "below",
    "check",
    "makedirs",
    "open_fd",
    "read_bytes",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePath(UsageError):
    """A path gitst will not open: a symbolic link, or not a regular file/directory (exit 2).
    ``is_link`` tells the two apart (``git st validate`` reports them as ``SYMLINK``/``READ``)."""

    is_link = False


def _what(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(component: str, mode: int, shown: str, want: str) -> UnsafePath:
    """The refusal of ``component`` (as the user would write it) of the path ``shown``:
    ``want`` is what it had to be ("a regular file", "a directory")."""
    what = _what(mode)
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):
            what += f" (to {os.readlink(component)})"
        where = "it" if component == shown else component
        refusal = UnsafePath(
            f"refusing to use {shown}: {where} is {what}; gitst never follows links there",
            fix=f"remove the link and let gitst create {want} (a repository you cloned may have "
            f"committed it: `git ls-files -s -- {component}` shows mode 120000 for a committed link)",
        )
        refusal.is_link = True
        return refusal
    if component == shown:
        return UnsafePath(f"refusing to use {shown}: it is {what}, not {want}", fix=f"give the path of {want}")
    return UnsafePath(
        f"refusing to use {shown}: {component} is {what}, not a directory",
        fix=f"move {component} away so gitst can create the directory",
    )


def below(path: str | os.PathLike[str], top: str | os.PathLike[str]) -> list[str] | None:
    """The components of ``path`` below ``top`` (both made absolute), or None when ``path``
    is not inside ``top``.

    Lexical first; else the ancestor of ``path`` nearest the root that *is* ``top`` (same
    device and inode) is taken as ``top``, so a path written through the user's own link to
    the work tree (``/link/repo/.step``) still has every component below the top checked.
    """
    full = os.path.abspath(path)
    base = os.path.abspath(top)
    rel = os.path.relpath(full, base)
    if rel != ".." and not rel.startswith(".." + os.sep) and not os.path.isabs(rel):
        return [] if rel == "." else rel.split(os.sep)
    try:
        wanted = os.stat(base)
    except OSError:
        return None
    parts = full.split(os.sep)
    for index in range(1, len(parts)):
        ancestor = os.sep.join(parts[:index]) or os.sep
        try:
            found = os.stat(ancestor)
        except OSError:
            return None
        if (found.st_dev, found.st_ino) == (wanted.st_dev, wanted.st_ino):
            return parts[index:]
    return None


def _start(path: str, top: str | os.PathLike[str] | None) -> tuple[str, list[str]]:
    """Where the check starts and the components to check from there."""
    full = os.path.abspath(path)
    if top is not None:
        parts = below(full, top)
        if parts is not None:
            return os.path.abspath(top), parts
    return os.path.dirname(full), [os.path.basename(full)]


def check(
    path: str | os.PathLike[str],
    top: str | os.PathLike[str] | None = None,
    *,
    leaf: Leaf = "file",
    shown: str | None = None,
) -> None:
    """Refuse ``path`` (UnsafePath) when a component of it below ``top`` is a symbolic link
    or not a directory, or when it exists and is not a regular file (``leaf="dir"``: not a
    directory; ``"any"``: a file or a directory, not a link nor a FIFO or device). Missing
    components are fine: they are what a writer creates. Without
    ``top`` (or when ``path`` is not inside it) only the last component is checked."""
    name = os.fspath(path)
    label = shown or name
    current, parts = _start(name, top)
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        except NotADirectoryError:
            return  # reported for the component that is not a directory, just above
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode):
            raise _refuse(_shown_component(current, name, label), mode, label, _wanted(last, leaf))
        if not last and not stat.S_ISDIR(mode):
            raise _refuse(_shown_component(current, name, label), mode, label, "a directory")
        if last:
            _check_leaf(mode, leaf, label)


def _check_leaf(mode: int, leaf: Leaf, label: str) -> None:
    """Refuse the last component (not a link) when it is not what ``leaf`` asks for."""
    if leaf == "file" and stat.S_ISDIR(mode):
        # not a hostile file but a directory in the way: the environment (exit 4)
        raise IsADirectoryError(errno.EISDIR, "Is a directory", label)
    if leaf == "file" and not stat.S_ISREG(mode):
        raise _refuse(label, mode, label, "a regular file")
    if leaf == "dir" and not stat.S_ISDIR(mode):
        raise _refuse(label, mode, label, "a directory")
    if leaf == "any" and not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise _refuse(label, mode, label, "a regular file")


def _wanted(last: bool, leaf: Leaf) -> str:
    return "a regular file" if last and leaf != "dir" else "a directory"


def _shown_component(component: str, full: str, shown: str) -> str:
    """``component`` written the way the user wrote ``full`` (as ``shown``)."""
    full_abs = os.path.abspath(full)
    if component == full_abs:
        return shown
    if full_abs.startswith(component + os.sep):
        rest = full_abs[len(component) :]
        if shown.endswith(rest):
            return shown[: -len(rest)] or component
    return component


def open_fd(
    path: str | os.PathLike[str],
    flags: int,
    mode: int = 0o644,
    top: str | os.PathLike[str] | None = None,
    *,
    shown: str | None = None,
) -> int:
    """``os.open(path, flags)`` after :func:`check`: the last component is opened without
    following a link and without blocking on a FIFO, and must be a regular file."""
    name = os.fspath(path)
    label = shown or name
    check(name, top, shown=label)
    return _open_regular(name, flags, mode, label)


def _open_regular(name: str, flags: int, mode: int, label: str) -> int:
    """``os.open`` that never follows a link in the last component nor blocks on a FIFO, and
    keeps the descriptor only of a regular file (what :func:`check` said, made sure of)."""
    try:
        fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(label, stat.S_IFLNK, label, "a regular file") from None
        raise
    try:
        mode_now = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode_now):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", label)
        if not stat.S_ISREG(mode_now):
            raise _refuse(label, mode_now, label, "a regular file")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(
    path: str | os.PathLike[str],
    top: str | os.PathLike[str] | None = None,
    *,
    shown: str | None = None,
    limit: int | None = None,
) -> bytes | None:
    """The content of the regular file ``path`` (checked as :func:`open_fd` does); None
    when it does not exist. With ``limit``, at most ``limit + 1`` bytes are read: a longer
    result tells the caller the file is over its limit (a file that grows while it is
    read - ``/proc`` - never costs more)."""
    try:
        fd = open_fd(path, os.O_RDONLY, top=top, shown=shown)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


def read_listed(entry: os.DirEntry[str]) -> bytes | None:
    """The content of a file a directory listing (:func:`os.scandir`) names, checked as
    :func:`read_bytes` checks it; None when it is gone. When the listing says the name is a
    regular file (its type comes with the listing, no system call), the ``lstat`` of
    :func:`check` is skipped: the open still refuses a link in its place and anything but a
    regular file, as :func:`open_fd` does after its check. Anything else goes through
    :func:`read_bytes` for its exact refusal. (One ``lstat`` a record was a third of reading
    a registry of 10,000 entries.)"""
    if not entry.is_file(follow_symlinks=False):
        return read_bytes(entry.path)
    try:
        fd = _open_regular(entry.path, os.O_RDONLY, 0o644, entry.path)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def makedirs(
    directory: str | os.PathLike[str], top: str | os.PathLike[str] | None = None, *, shown: str | None = None
) -> None:
    """Create ``directory`` and its missing parents below ``top``, one component at a
    time, refusing a component that is a symbolic link or not a directory."""
    name = os.fspath(directory)
    label = shown or name
    check(name, top, leaf="dir", shown=label)
    current, parts = _start(name, top)
    if not os.path.isdir(current):
        os.makedirs(current, exist_ok=True)  # above the top (or with none): the user's own path
    for part in parts:
        current = os.path.join(current, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(current)
        mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            raise _refuse(_shown_component(current, name, label), mode, label, "a directory")
