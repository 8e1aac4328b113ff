"""The forked child that becomes a client's command (docs/resident.md).

The resident process forks it with the client's request read and its standard streams
received; :func:`become` makes the child what `git-st` would have been — the client's
streams on 0, 1 and 2, its directory, umask, environment and arguments, the session walk
starting at the client's parent (:func:`gitst.sessions.identity.run_for`) — and runs
:func:`gitst.cli.main.main`, the function `git-st` runs itself. It never returns: it exits
with the command's code, which it also sends to the client.

A watcher thread reads the connection: a forwarded signal is raised in the main thread (as
the terminal would have), and end-of-file — the client died, e.g. SIGKILL — kills the worker
at once: a killed command stops where it was, as it would without a resident process. What it
started (a git command, the land's check) is left to finish, as a SIGKILLed `git-st` leaves
its children: a git killed halfway would leave its own lock files behind.
"""

from __future__ import annotations

import contextlib
import io
import locale
import os
import resource
import signal
import sys
import threading
import traceback
from typing import TYPE_CHECKING

from gitst.cli.main import main
from gitst.cli.resident import wire
from gitst.sessions.identity import run_for

if TYPE_CHECKING:
    import socket

__all__ = ["become"]


def become(connection: socket.socket, request: wire.Run, fds: list[int], closing: list[int]) -> None:
    """Run ``request`` in this freshly forked child and exit with its code."""
    log = os.dup(2)  # the resident process's log, until the client's stderr takes fd 2
    try:
        _detach(closing)
        _take(request, fds)
        connection.sendall(wire.message(wire.ACCEPTED, os.getpid()))
    except BaseException:
        os.write(log, traceback.format_exc().encode("utf-8", "replace"))
        os._exit(4)
    os.close(log)
    code = 1
    try:
        # The watcher waits in recv without the GIL; when the client dies it must get the GIL at
        # once, not after the default 5 ms: nothing else waits for the GIL, so this costs nothing.
        sys.setswitchinterval(0.0005)
        threading.Thread(target=_watch, args=(connection, threading.main_thread().ident), daemon=True).start()
        code = _run(sys.argv[1:])
        _flush()
        connection.sendall(wire.message(wire.EXITED, code))
    except BaseException:
        traceback.print_exc()  # what `git-st` prints for an exception main() let through
        _flush()
    finally:
        os._exit(code & 0xFF)


def _detach(closing: list[int]) -> None:
    """Leave the resident process's signal handling and files; a process group of our own."""
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
    for fd in closing:
        with contextlib.suppress(OSError):
            os.close(fd)


def _take(request: wire.Run, fds: list[int]) -> None:
    """Become the client's command: streams, directory, umask, environment, arguments."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.umask(request.umask)
    _limits_of(request.pid)
    os.environ.clear()
    for name, value in request.env.items():
        os.environb[name] = value
    _locale()
    run_for(request.pid, request.ppid)
    sys.argv = [os.fsdecode(arg) for arg in request.argv]
    _streams()
    os.chdir(request.cwd)


# What a process inherits from its parent and keeps across exec, beyond what the request
# carries: read from the client itself (same user; it waits for us), set here before anything
# runs. Where one cannot be matched (a limit above ours, a priority higher than ours, a cgroup
# we may not join) the worker refuses: the client runs the command itself, under its own.
_LIMITS = ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_NOFILE", "RLIMIT_AS")


def _limits_of(client: int) -> None:
    """The client's resource limits, scheduling priority and cgroup; OSError/ValueError when
    one cannot be matched."""
    for name in _LIMITS:
        kind = getattr(resource, name, None)
        if kind is not None:
            wanted = resource.prlimit(client, kind)
            if wanted != resource.getrlimit(kind):
                resource.setrlimit(kind, wanted)
    niceness = os.getpriority(os.PRIO_PROCESS, client)
    if niceness != os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    _join_cgroup(client)


def _join_cgroup(client: int) -> None:
    """Into the client's cgroup (v2) when it is not ours: a harness that limits an agent's CPU
    or memory through its cgroup limits the agent's commands."""
    try:
        with open(f"/proc/{client}/cgroup") as theirs, open("/proc/self/cgroup") as ours:
            wanted, current = theirs.read(), ours.read()
    except OSError:
        return  # no /proc: nothing known to differ
    if wanted == current:
        return
    path = next((line[3:] for line in wanted.splitlines() if line.startswith("0::")), None)
    if path is None:
        raise ValueError("the client's cgroups are v1: not matched")
    with open(os.path.join("/sys/fs/cgroup", path.lstrip("/"), "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))


def _locale() -> None:
    """LC_CTYPE from the client's environment, as the interpreter sets it at start-up."""
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")


def _streams() -> None:
    """New sys.stdin/stdout/stderr on fds 0-2, configured as the interpreter configures them
    (``PYTHONIOENCODING``, ``PYTHONUNBUFFERED``, line buffering on a terminal). ``sys.__stdout__``
    and its kin stay the resident process's objects: what reads them uses their fds, now the client's."""
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    chosen = os.environ.get("PYTHONIOENCODING", "")
    if chosen:
        name, _, handler = chosen.partition(":")
        encoding, errors = name or encoding, handler or errors
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding, errors)
    sys.stdout = _writer(1, encoding, errors, line=os.isatty(1), unbuffered=unbuffered)
    sys.stderr = _writer(2, encoding, "backslashreplace", line=True, unbuffered=unbuffered)


def _writer(fd: int, encoding: str, errors: str | None, *, line: bool, unbuffered: bool) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding, errors, line_buffering=line or unbuffered, write_through=unbuffered
    )


def _run(args: list[str]) -> int:
    """``main(args)`` as `git-st`'s ``sys.exit(main())`` would end: its code, a SystemExit's."""
    try:
        return main(args)
    except SystemExit as leaving:
        if leaving.code is None or isinstance(leaving.code, int):
            return leaving.code or 0
        print(leaving.code, file=sys.stderr)
        return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _watch(connection: socket.socket, main_thread: int | None) -> None:
    """Forwarded signals to the main thread; the client gone: kill our process group."""
    while True:
        try:
            data = connection.recv(64)
        except OSError:
            data = b""
        if not data:  # as a SIGKILLed `git-st` ends: at once, the git it runs left to finish
            os.kill(os.getpid(), signal.SIGKILL)
            return
        for number in data[1::2] if data[:1] == wire.KILL else b"":
            if main_thread is not None and number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                signal.pthread_kill(main_thread, number)
