"""The client side of the resident process: what `bin/git-st` runs first when ``ST_RESIDENT`` is set.

:func:`launch` hands the command (arguments, directory, umask, environment, the standard
streams themselves) to this installation's resident process, starting it when there is
none, and mirrors how the command ended: its exit code, or the signal that killed it. It
returns None whenever the command was not handed over — ``ST_RESIDENT`` off, a command that
is not routed, no safe socket directory, no resident process within the start-up deadline,
a resident process whose code changed on disk —: `git-st` then runs the command itself,
exactly as without a resident process. Nothing ran in the resident process when None is
returned (the worker says ``A`` before the command starts).

Signals the client gets (Ctrl-C's SIGINT, SIGTERM, SIGHUP, SIGQUIT) are forwarded to the
worker; a client killed outright (SIGKILL) closes its socket, and the worker kills itself at
once (:mod:`.worker`): a killed `git st` stops as it would without a resident process.

Only C modules are imported (``_socket``, ``_signal``, ``time``): ``socket.py`` and
``signal.py`` import ``enum``, as much CPU as the rest of a client.
"""

from __future__ import annotations

import os
import sys

from gitst.cli.resident import wire

TYPE_CHECKING = False  # typing is not imported at run time: a client costs its imports
if TYPE_CHECKING:
    import socket
    from types import ModuleType

__all__ = ["ROUTED", "launch", "query", "start"]

# The commands a resident worker runs: short-lived commands that read and write the plan, the
# state dir and git, and the plan merge driver git runs in every merge of a plan. Left to
# `git-st` itself: the git hooks and the agent hooks (their no-op paths cost the interpreter's
# start-up, as a client does), the long-running servers (`board`, `mcp`), `circuit` (it hands
# the terminal to a process group), `resident` itself, help, completion and setup.
ROUTED = frozenset(
    {
        "merge-driver", "init", "add", "set-status", "set-deps", "set-notes", "add-comment", "remove", "import-plan",
        "show", "ready", "blocked", "doctor", "emit-update-plan", "export",
        "validate", "schema", "sync",
        "lock", "claim", "check-issue", "release", "heartbeat", "sessions", "whoami", "status", "gc",
        "worktree", "next", "land", "reserve",
        "pr", "pipeline", "deliberation", "snapshot", "sdlc", "prime", "import-update-plan",
    }
)  # fmt: skip

_START_DEADLINE = 10.0  # seconds a client waits for a resident process it started to listen
_FORWARDED = (2, 15, 1, 3)  # SIGINT, SIGTERM, SIGHUP, SIGQUIT


def launch(argv: list[str]) -> int | None:
    """The exit code of ``argv``'s command run by the resident process; None: run it yourself."""
    if len(argv) < 2 or argv[1] not in ROUTED:
        return None
    from gitst.core.errors import GitstError  # lazy: a client with ST_RESIDENT set only (bin/git-st)
    from gitst.settings import get  # lazy: as above

    try:
        on = get("resident")
    except GitstError as bad:
        sys.stderr.write(bad.render() + "\n")
        return bad.exit_code
    if not on:
        return None
    where = wire.places()
    if where is None:
        return None
    connection = _connect(where)
    if connection is None:
        return None
    try:
        return _hand_over(connection, argv)
    finally:
        connection.close()


def _socket() -> ModuleType:
    import _socket  # lazy: only with ST_RESIDENT set; the C module: socket.py imports enum

    return _socket


def _connect(where: wire.Places, wait: float = _START_DEADLINE) -> socket.socket | None:
    """A connection to the resident process, started first when none listens; None when none
    could be reached within ``wait`` seconds."""
    sockets = _socket()
    connection = _try_connect(sockets, where.socket)
    if connection is not None:
        return connection
    _start(where)
    import time  # lazy: the start-up wait only (a C module)

    deadline = time.monotonic() + wait
    pause = 0.002
    while time.monotonic() < deadline:
        time.sleep(pause)
        connection = _try_connect(sockets, where.socket)
        if connection is not None:
            return connection
        pause = min(pause * 2, 0.05)
    return None


def _try_connect(sockets: ModuleType, path: str) -> socket.socket | None:
    connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        return None
    return connection


def _start(where: wire.Places) -> None:
    """Start the resident process, detached (its own session, its streams on /dev/null and its
    log); it exits at once when another holds the start-up lock."""
    code = "from gitst.cli.resident.server import serve; serve()"
    # -P: the directory we run in (a clone: untrusted) is never put on the module path.
    argv = [sys.executable, "-P", "-c", code, where.socket]
    try:
        log = os.open(where.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log, 1),
            (os.POSIX_SPAWN_DUP2, log, 2),
        ]
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions, setsid=True)
    except OSError:
        pass
    finally:
        os.close(log)


def _hand_over(connection: socket.socket, argv: list[str]) -> int | None:
    """Send the command with the standard streams; forward signals; mirror the end."""
    sockets = _socket()
    try:
        cwd = os.getcwdb()
    except OSError:  # our directory is gone: the command says so itself
        return None
    body = wire.encode_run(
        [os.fsencode(arg) for arg in argv], cwd, _umask(), os.getpid(), os.getppid(), dict(os.environb)
    )
    try:
        rights = [(sockets.SOL_SOCKET, sockets.SCM_RIGHTS, _fds())]
        connection.sendmsg([wire.frame(body)], rights)
    except OSError:
        return None
    forwarded = _forward_signals(connection)
    try:
        return _outcome(connection, forwarded)
    finally:
        _restore_signals(forwarded)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _fds() -> bytes:
    """Our standard streams as SCM_RIGHTS data (one host-order int each); an unopened one
    is sent as /dev/null (as the command would find it)."""
    fds = []
    for number in (0, 1, 2):
        try:
            os.fstat(number)
            fds.append(number)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))  # closed when the client exits
    return b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)


class _Forwarded:
    """The signal handlers the client replaced."""

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}


def _forward_signals(connection: socket.socket) -> _Forwarded:
    import _signal  # type: ignore[import-not-found]  # lazy: the C module: signal.py imports enum

    forwarded = _Forwarded()

    def forward(number: int, _frame: object) -> None:
        try:  # noqa: SIM105 - contextlib is not loaded in a client
            connection.send(wire.KILL + bytes((number,)))
        except OSError:
            pass

    for number in _FORWARDED:
        if _signal.getsignal(number) != _signal.SIG_IGN:  # `nohup`, a background job: ignored stays ignored
            forwarded.previous[number] = _signal.signal(number, forward)
    return forwarded


def _restore_signals(forwarded: _Forwarded) -> None:
    import _signal  # lazy: as above

    for number, handler in forwarded.previous.items():
        _signal.signal(number, handler)


def _outcome(connection: socket.socket, forwarded: _Forwarded) -> int | None:
    """Read the resident side's messages to the end: the exit code to mirror (a signal death
    is mirrored by dying of that signal); None when the command was refused before it ran."""
    received = b""
    while True:
        try:
            chunk = connection.recv(4096)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        received += chunk
    tags = {received[k : k + 1]: wire.unpack_number(received[k + 1 : k + 5]) for k in range(0, len(received) - 4, 5)}
    if wire.ACCEPTED not in tags:
        return None
    if wire.REAPED in tags:
        return _mirror(tags[wire.REAPED], forwarded)
    if wire.EXITED in tags:
        return tags[wire.EXITED]
    sys.stderr.write(
        "error: the resident gitst process ended before the command did\n"
        "fix: run the command again (ST_RESIDENT=0 runs it without the resident process)\n"
    )
    return 4


def _mirror(status: int, forwarded: _Forwarded) -> int:
    """The exit code of wait status ``status``; a signal death is repeated on ourselves."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if number:
        _restore_signals(forwarded)
        import _signal  # lazy: as above

        if number in _FORWARDED:  # a handler of ours or Python's: the default, which ends us
            _signal.signal(number, _signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), number)  # SIGKILL and the like need no help
    return 128 + number


def query(body: bytes) -> dict[str, object] | None:
    """The resident process's answer to ``status`` or ``stop``; None when none listens."""
    where = wire.places(create=False)
    if where is None:
        return None
    connection = _try_connect(_socket(), where.socket)
    if connection is None:
        return None
    import json  # lazy: `git st resident` only

    try:
        connection.sendall(wire.frame(body))
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    except OSError:
        return None
    finally:
        connection.close()
    if received[:1] != wire.QUERY or len(received) < 5:
        return None
    answer: dict[str, object] = json.loads(received[5 : 5 + wire.unpack_number(received[1:5])])
    return answer


def start(wait: float) -> bool:
    """This installation's resident process started (when none runs) and listening, waiting up
    to ``wait`` seconds for it: `git st resident start`, before a swarm starts all at once."""
    where = wire.places()
    connection = _connect(where, wait) if where is not None else None
    if connection is None:
        return False
    connection.close()
    return True
