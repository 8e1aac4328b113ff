"""Where the resident process listens and what its clients and it say (docs/resident.md).

Imported by every client: only ``os``, ``sys`` (which the interpreter has loaded already) and
:mod:`gitst.core.runtime` (``os`` alone).

The socket, its lock and its log live in this user's private runtime directory
(:func:`gitst.core.runtime.private_dir`: ``$XDG_RUNTIME_DIR/gitst``, else ``/tmp/gitst-<uid>``,
mode 0700) — when it is not safely ours, the resident process is not used. Their names
are a hash of the interpreter, the gitst package's directory and ``PYTHONPATH``: one resident
process per installation, whatever the repository.

A client sends one frame (a 4-byte big-endian length, then the body) with its standard
streams attached (``SCM_RIGHTS``); the body is NUL-separated: ``run``, the directory, the
umask (octal), the client's pid and its parent's, the number of arguments, the arguments,
then ``NAME=value`` per environment variable (argv and the environment hold no NUL). Then
``K`` + one byte forwards a signal. ``status`` and ``stop`` are the two control bodies.

The resident side answers in 5-byte messages, a tag and a 4-byte big-endian number:
``A`` the worker's pid (it has the command now: nothing ran before), ``S`` refused (the
client runs the command itself), ``X`` the command's exit code (from the worker, just before
it exits), ``W`` the worker's wait status (from the resident process, once it reaped it).
A control body gets ``Q``, a 4-byte length and a JSON object.
"""

from __future__ import annotations

import os
import sys

from gitst.core.runtime import private_dir

__all__ = [
    "ACCEPTED",
    "EXITED",
    "KILL",
    "QUERY",
    "REAPED",
    "REFUSED",
    "Places",
    "Run",
    "decode_run",
    "encode_run",
    "frame",
    "message",
    "package_dir",
    "places",
    "unpack_number",
]

ACCEPTED, REFUSED, EXITED, REAPED, QUERY, KILL = b"A", b"S", b"X", b"W", b"Q", b"K"
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with its NUL


class Places:
    """The socket, the start-up lock and the log of one installation's resident process."""

    __slots__ = ("directory", "lock", "log", "socket")

    def __init__(self, directory: str, key: str):
        self.directory = directory
        self.socket = os.path.join(directory, key + ".sock")
        self.lock = os.path.join(directory, key + ".lock")
        self.log = os.path.join(directory, key + ".log")


def _fnv64(data: bytes) -> str:
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def package_dir() -> str:
    """The directory of the gitst package this process imports."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def places(create: bool = True) -> Places | None:
    """This installation's places, the directory made (mode 0700) when ``create``; None when
    the directory is missing, not safely ours, or the socket's path is too long for AF_UNIX."""
    directory = private_dir(create)
    if directory is None:
        return None
    identity = "\0".join((sys.executable, package_dir(), os.environ.get("PYTHONPATH", "")))
    found = Places(directory, _fnv64(identity.encode("utf-8", "surrogateescape")))
    if len(os.fsencode(found.socket)) > _MAX_SOCKET_PATH:
        return None
    return found


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def message(tag: bytes, number: int) -> bytes:
    return tag + (number & 0xFFFFFFFF).to_bytes(4, "big")


def unpack_number(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def encode_run(argv: list[bytes], cwd: bytes, umask: int, pid: int, ppid: int, env: dict[bytes, bytes]) -> bytes:
    fields = [b"run", cwd, b"%o" % umask, b"%d" % pid, b"%d" % ppid, b"%d" % len(argv), *argv]
    fields.extend(name + b"=" + value for name, value in env.items())
    return b"\0".join(fields)


class Run:
    """A decoded ``run`` body."""

    __slots__ = ("argv", "cwd", "env", "pid", "ppid", "umask")

    def __init__(self, argv: list[bytes], cwd: bytes, umask: int, pid: int, ppid: int, env: dict[bytes, bytes]):
        self.argv, self.cwd, self.umask, self.pid, self.ppid, self.env = argv, cwd, umask, pid, ppid, env


def decode_run(body: bytes) -> Run:
    """The ``run`` body's fields; ValueError when it is not one."""
    fields = body.split(b"\0")
    if len(fields) < 6 or fields[0] != b"run":
        raise ValueError("not a run request")
    count = int(fields[5])
    if count < 1 or 6 + count > len(fields):
        raise ValueError("bad argument count")
    argv = fields[6 : 6 + count]
    env = {}
    for item in fields[6 + count :]:
        name, sep, value = item.partition(b"=")
        if not sep or not name:
            raise ValueError("bad environment entry")
        env[name] = value
    return Run(argv, fields[1], int(fields[2], 8), int(fields[3]), int(fields[4]), env)
