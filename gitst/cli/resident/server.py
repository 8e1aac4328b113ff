"""The resident process (docs/resident.md): gitst imported once, a worker forked per command.

Started by a client (:mod:`.client`) as ``python -P -c "…serve()" DIRECTORY``, detached, in
``/``. It takes the installation's start-up lock (a second one exits at once), imports every
module a routed command may need, freezes the garbage collector's view of them (a fork then
copies few pages), and listens on the socket (mode 0600, in a directory only we can enter).
Per connection, from a process of our own user only (``SO_PEERCRED``): a ``run`` request is
read with its standard streams and forked into a worker (:mod:`.worker`); the worker's wait
status is sent to the client when it is reaped. ``status`` and ``stop`` answer a JSON object.

It stops taking commands — the socket removed, the lock released, so the next client starts
a fresh one — when ``stop`` asks, when ``ST_RESIDENT_IDLE`` seconds pass without a command,
or when a ``.py`` or ``.json`` file of the gitst package changed since it started (the request that
noticed is refused: its client runs the command itself, on the new code). It exits once its
last worker has been reaped.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import struct
import sys
import time

import gitst
from gitst.cli import main
from gitst.cli.resident import wire
from gitst.cli.resident.worker import become
from gitst.core import timestamps
from gitst.core.errors import GitstError
from gitst.schemas import catalog
from gitst.settings import get

__all__ = ["serve"]

# Never imported ahead: optional extras and the long-running servers' own modules.
_SKIPPED = ("gitst.board", "gitst.mcp", "gitst.cli.board", "gitst.cli.mcp")
_MAX_REQUEST = 1 << 20  # a run request's body: arguments and environment
_REQUEST_DEADLINE = 30.0  # seconds a connection may take to send its request
_FD_SIZE = struct.calcsize("i")


def serve() -> None:
    """Run the resident process until it is stopped or idle (module docstring)."""
    os.chdir("/")
    where = wire.places(create=False)
    if where is None or where.socket != sys.argv[-1]:
        # the client that started us imports another gitst (or sees another directory): its
        # socket is not ours to serve; it runs its command itself after its deadline
        _log(f"not serving {sys.argv[-1]}: this interpreter's gitst is {wire.package_dir()}")
        return
    lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another resident process runs (or is starting) for this installation
    code = code_signature(wire.package_dir())  # before the imports: a change during them is seen
    _preload()
    server = _Server(where, lock, code)
    _log(f"serving {where.socket} with {server.package} ({sys.executable})")
    why = server.loop()
    _log(f"stopped: {why}")


def _log(line: str) -> None:
    """A line in the log (our stderr): when, which process, what."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    print(f"{stamp} gitst resident {os.getpid()}: {line}", file=sys.stderr, flush=True)


def _preload() -> None:
    """Import what the routed commands run: the command table's modules and every gitst module
    but the optional extras' (an import that fails is left to the worker that needs it)."""
    main.build_cli()
    for name in sorted({entry[0] for entry in main.COMMANDS.values()}):
        if not name.startswith(_SKIPPED):
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    for found in pkgutil.walk_packages(gitst.__path__, "gitst."):
        if not found.name.startswith(_SKIPPED):
            with contextlib.suppress(Exception):
                importlib.import_module(found.name)
    _warm()
    gc.collect()
    gc.freeze()


def _warm() -> None:
    """Build once here what commands build on first use and then keep for their process's life,
    from the package's own files alone: the shipped schemas compiled to closures (their
    patterns with them) and the timestamp pattern. Every worker inherits them; without this
    each one built them again (docs/resident.md, "Costs")."""
    for name in catalog.names():
        catalog.compiled(name)
    timestamps.moment("2026-01-01T00:00:00Z")


def code_signature(package: str) -> dict[str, tuple[int, int]]:
    """(mtime in ns, size) of every ``.py`` and ``.json`` file of the gitst package (its code,
    and the schemas :func:`_warm` compiled): a change means a resident process that must not
    run another command."""
    found = {}
    for top, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith((".py", ".json")):
                path = os.path.join(top, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path)
                    found[path] = (info.st_mtime_ns, info.st_size)
    return found


class _Server:
    """The listening loop: accept, answer or fork, reap, stop."""

    def __init__(self, where: wire.Places, lock: int, code: dict[str, tuple[int, int]]):
        self.where, self.lock = where, lock
        self.package = wire.package_dir()
        self.code = code
        self.started = time.time()
        self.idle = _idle_seconds()
        self.served = 0
        self.workers: dict[int, socket.socket] = {}
        self.pending: list[_Pending] = []
        self.last = time.monotonic()
        self.stopping: str | bool = False  # why it stops taking commands
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(where.socket)  # we hold the lock: a socket left here is a dead one's
        self.listener.bind(where.socket)
        os.chmod(where.socket, 0o600)
        self.inode = os.stat(where.socket).st_ino
        self.listener.listen(128)
        self.wake_read, self.wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(number, self._asked_to_stop)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_read, selectors.EVENT_READ)

    def _asked_to_stop(self, number: int, _frame: object) -> None:
        self.stopping = self.stopping or f"signal {number}"

    def loop(self) -> str:
        """Serve until stopped; why it stopped."""
        while True:
            for key, _ in self.selector.select(self._wait()):
                if key.fileobj is self.listener and not self.stopping:
                    self._accept()
                elif isinstance(key.data, _Pending):
                    self._receive(key.data)
            with contextlib.suppress(BlockingIOError):
                os.read(self.wake_read, 512)
            self._reap()
            self._drop_stalled()
            if not self.stopping and not self.workers and time.monotonic() - self.last >= self.idle:
                self.stopping = f"idle for {self.idle:g} s"
            if self.stopping and self.listener.fileno() >= 0:
                self._stop_listening()
            if self.listener.fileno() < 0 and not self.workers and not self.pending:
                return str(self.stopping)

    def _wait(self) -> float | None:
        """How long the loop may sleep: until woken (a worker ends: SIGCHLD's wakeup fd), or
        until it is idle; in short steps while stopping or while requests arrive."""
        if self.stopping or self.pending:
            return 0.5
        return None if self.workers else max(0.0, self.last + self.idle - time.monotonic())

    def _accept(self) -> None:
        """A connection of our own user waits for its request: read as it arrives, never
        blocking the loop for a slow (or stopped) client."""
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        peer = _peer(connection)
        if peer is None:
            connection.close()
            return
        connection.setblocking(False)
        pending = _Pending(connection, peer)
        self.pending.append(pending)
        self.selector.register(connection, selectors.EVENT_READ, pending)

    def _receive(self, pending: _Pending) -> None:
        try:
            complete = pending.read()
        except OSError:
            complete = True
            pending.broken = True
        if not complete:
            return
        self._forget(pending)
        try:
            self._answer(pending)
        except Exception as failed:
            _log(f"request failed: {failed!r}")
            pending.close()

    def _forget(self, pending: _Pending) -> None:
        self.pending.remove(pending)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(pending.connection)

    def _drop_stalled(self) -> None:
        for pending in [p for p in self.pending if time.monotonic() - p.since > _REQUEST_DEADLINE]:
            self._forget(pending)
            pending.close()

    def _answer(self, pending: _Pending) -> None:
        connection, body, fds = pending.connection, pending.body(), pending.fds
        connection.setblocking(True)
        if body in (b"status", b"stop") and not fds:
            self._control(connection, body)
            return
        changed = code_signature(self.package) != self.code
        try:
            if pending.broken or changed or len(fds) != 3:
                raise ValueError("refused")
            request = wire.decode_run(body)
            if request.pid != pending.peer:  # another pid namespace, or a client naming another process
                raise ValueError("refused")
        except ValueError:
            pending.close()  # the client's fds closed; REFUSED first, so the client runs it itself
            if changed:
                self.stopping = "its code changed on disk"
            return
        self._fork(connection, request, fds)

    def _fork(self, connection: socket.socket, request: wire.Run, fds: list[int]) -> None:
        closing = [self.listener.fileno(), self.lock, self.wake_read, self.wake_write, self.selector_fd()]
        closing += [c.fileno() for c in self.workers.values()]
        for other in self.pending:
            closing += [other.connection.fileno(), *other.fds]
        pid = os.fork()
        if pid == 0:
            become(connection, request, fds, closing)  # never returns
        for fd in fds:
            os.close(fd)
        self.workers[pid] = connection
        self.served += 1
        self.last = time.monotonic()

    def selector_fd(self) -> int:
        fileno = getattr(self.selector, "fileno", None)
        return int(fileno()) if fileno is not None else -1

    def _reap(self) -> None:
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.workers.pop(pid, None)
            if connection is not None:
                with contextlib.suppress(OSError):
                    connection.sendall(wire.message(wire.REAPED, status))
                connection.close()
            self.last = time.monotonic()

    def _control(self, connection: socket.socket, body: bytes) -> None:
        if body == b"stop":
            self.stopping = self.stopping or "asked to stop"
        answer = {
            "pid": os.getpid(),
            "socket": self.where.socket,
            "log": self.where.log,
            "python": sys.executable,
            "package": self.package,
            "started": self.started,
            "served": self.served,
            "commands_running": len(self.workers),
            "idle_seconds": self.idle,
            "code_changed": code_signature(self.package) != self.code,
            "stopping": bool(self.stopping),
        }
        data = json.dumps(answer).encode()
        connection.sendall(wire.QUERY + len(data).to_bytes(4, "big") + data)
        connection.close()

    def _stop_listening(self) -> None:
        """No more commands: the socket gone (if it is still ours), the lock released."""
        with contextlib.suppress(OSError):
            self.selector.unregister(self.listener)
        with contextlib.suppress(OSError):
            if os.stat(self.where.socket).st_ino == self.inode:
                os.unlink(self.where.socket)
        self.listener.close()
        os.close(self.lock)


def _idle_seconds() -> float:
    try:
        return float(get("resident_idle"))  # type: ignore[arg-type]
    except GitstError:
        return 600.0


def _peer(connection: socket.socket) -> int | None:
    """The connecting process's pid, as the kernel says (SO_PEERCRED); None when it is not ours."""
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid if uid == os.getuid() and pid > 0 else None


class _Pending:
    """A connection whose request is still arriving: the bytes and the fds so far."""

    def __init__(self, connection: socket.socket, peer: int):
        self.connection = connection
        self.peer = peer
        self.received = b""
        self.fds: list[int] = []
        self.since = time.monotonic()
        self.broken = False

    def read(self) -> bool:
        """Take what arrived (fds come with the first bytes); whether the request is complete."""
        data, ancillary, _flags, _address = self.connection.recvmsg(
            65536, socket.CMSG_SPACE(3 * _FD_SIZE), socket.MSG_CMSG_CLOEXEC
        )
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % _FD_SIZE
                self.fds.extend(struct.unpack(f"{usable // _FD_SIZE}i", payload[:usable]))
        self.received += data
        if not data or len(self.received) > _MAX_REQUEST + 4:
            self.broken = True
            return True
        return len(self.received) >= 4 and len(self.received) >= 4 + int.from_bytes(self.received[:4], "big")

    def body(self) -> bytes:
        return self.received[4 : 4 + int.from_bytes(self.received[:4], "big")] if len(self.received) >= 4 else b""

    def close(self) -> None:
        """Refuse: the client runs its command itself (if it still listens); its fds closed."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []
        with contextlib.suppress(OSError):
            self.connection.setblocking(True)
            self.connection.sendall(wire.message(wire.REFUSED, 0))
        self.connection.close()
