"""The one way gitst runs git: :func:`run`.

Every git command gitst runs goes through here: an argument list (never a shell), stdin
from ``input`` (or ``/dev/null``), stdout and stderr captured as bytes, git's own message
in the :class:`GitError` of a failure (exit 4, the environment's fault unless a caller
decides otherwise).

A call given a ``timeout`` (every call that talks to a remote: :mod:`gitst.git.remote`) runs
git in a process group of its own; when the deadline passes, the whole group is killed (git
and what it started: ``git-remote-http``, ``ssh``, ``upload-pack``, the remote's hooks of a
``file://`` remote) and :class:`GitTimeout` is raised. The same happens when this process is
interrupted (Ctrl-C, SIGTERM, SIGHUP) during such a call: no git is left behind. Such calls
never prompt (``GIT_TERMINAL_PROMPT=0``): git in its own group does not own the terminal.

The hooks' fast path calls git before it knows whether there is anything to check, so
this module imports only ``os`` at load time: the child is started with
``os.posix_spawnp`` and its pipes are served with ``select.poll``, which cost nothing next
to ``subprocess`` (and the ``signal``, ``threading`` and ``selectors`` it brings).
"""

from __future__ import annotations

import os

from gitst.core.errors import ENVIRONMENT, EnvironmentProblem, GitstError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["NO_AUTO_MAINTENANCE", "GitError", "GitTimeout", "Result", "decode", "encode", "run", "split_z", "text"]

# Options before a subcommand that would otherwise start `git gc --auto` / `git maintenance run
# --auto` after it: gitst's own fetches and commits leave that to the user's and agents' git.
NO_AUTO_MAINTENANCE = ("-c", "gc.auto=0", "-c", "maintenance.auto=false")

_CHUNK = 1 << 16
_SIGPIPE = 13  # POSIX; reset to its default in git (Python ignores it in this process)


class GitError(GitstError):
    """A git command failed; carries git's own stderr."""

    exit_code = ENVIRONMENT

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        cmd = "git " + " ".join(args)
        detail = stderr.strip() or f"exit status {returncode}"
        super().__init__(f"`{cmd}` failed: {detail}")
        self.returncode = returncode
        self.stderr = stderr


class GitTimeout(GitError):
    """A git command given a deadline did not finish within it; it and every process it
    started (its process group) were killed. ``stderr``: what git had said by then."""

    def __init__(self, args: Sequence[str], timeout: float, stderr: str):
        super().__init__(args, -9, stderr or f"no answer within {timeout:g}s")
        self.timeout = timeout


class Result:
    """What one git command did: its exit status and everything it printed."""

    __slots__ = ("args", "returncode", "stderr", "stdout")

    def __init__(self, args: list[str], returncode: int, stdout: bytes, stderr: bytes):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        """stdout as text, the trailing newline stripped."""
        return decode(self.stdout).rstrip("\n")


def decode(raw: bytes) -> str:
    """git's bytes as text; bytes that are not UTF-8 survive a round trip (surrogateescape)."""
    return raw.decode("utf-8", "surrogateescape")


def encode(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


def split_z(raw: bytes) -> list[str]:
    """The fields of ``-z`` output (NUL-terminated), empty ones dropped."""
    return [part for part in decode(raw).split("\0") if part]


def run(
    args: Sequence[str],
    cwd: str | os.PathLike[str] | None = None,
    *,
    input: bytes | None = None,  # noqa: A002 - the name subprocess.run gives stdin data
    check: bool = True,
    env: Mapping[str, str] | None = None,
    stdout: int | None = None,
    timeout: float | None = None,
) -> Result:
    """Run ``git ARGS`` in ``cwd`` (``git -C``); raise :class:`GitError` on failure when ``check``.
    ``stdout``: a file descriptor git writes its output to directly (then ``Result.stdout`` is
    empty: a blob of any size never passes through this process's memory). ``timeout``
    (seconds): git runs in its own process group, killed whole when the deadline passes
    (:class:`GitTimeout`, whatever ``check`` says), and never prompts on the terminal."""
    argv = ["git", *(["-C", os.fspath(cwd)] if cwd is not None else []), *args]
    environ = os.environ if env is None else env
    if timeout is not None:
        environ = {**environ, "GIT_TERMINAL_PROMPT": "0"}
    returncode, out, err = _launch(argv, input, environ, stdout, timeout)
    for pause in _HALF_MADE_PAUSES:
        if returncode != _DIED or not _half_made_worktree(err):
            break
        import time  # lazy: only when another process is half-way through adding a worktree

        time.sleep(pause)
        returncode, out, err = _launch(argv, input, environ, stdout, timeout)
    if returncode is None:
        raise GitTimeout(list(args), timeout or 0.0, err.decode("utf-8", "replace"))
    if check and returncode != 0:
        raise GitError(list(args), returncode, err.decode("utf-8", "replace"))
    return Result(list(args), returncode, out, err)


_DIED = 128
# git reads every linked worktree's commondir/gitdir (fetch, worktree add/list/lock, ...) and dies on
# one that a concurrent `git worktree add` has created but not yet written ("fatal: failed to read
# .git/worktrees/X/commondir: Success"). It dies before it changes anything, so the same command is
# run again once the other add has had time to finish: 0.05 s doubling, 3 s in all.
_HALF_MADE_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _half_made_worktree(stderr: bytes) -> bool:
    """Whether git died on another worktree's files read while that worktree was being made."""
    return (
        b"fatal: failed to read " in stderr
        and b"/worktrees/" in stderr
        and (b"/commondir" in stderr or b"/gitdir" in stderr)
    )


def _launch(
    argv: list[str], data: bytes | None, env: Mapping[str, str], stdout: int | None, timeout: float | None
) -> tuple[int | None, bytes, bytes]:
    if hasattr(os, "posix_spawnp"):
        return _spawn(argv, data, env, stdout, timeout)
    return _subprocess(argv, data, env, stdout, timeout)  # pragma: no cover - non-POSIX platforms


def text(
    args: Sequence[str],
    cwd: str | os.PathLike[str] | None = None,
    *,
    input: bytes | None = None,  # noqa: A002 - as in run()
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> str:
    """stdout of ``git ARGS`` as text, trailing newline stripped."""
    return run(args, cwd, input=input, check=check, env=env).text()


def _spawn(
    argv: list[str],
    data: bytes | None,
    env: Mapping[str, str],
    stdout: int | None = None,
    timeout: float | None = None,
) -> tuple[int | None, bytes, bytes]:
    """Run ``argv``; ``(exit status, stdout, stderr)``, the status None when ``timeout``
    passed (git's process group was killed)."""
    pipes = _Pipes(data, stdout)
    pid = _start(argv, env, pipes, stdout, timeout)
    deadline = None if timeout is None else _monotonic() + timeout
    guard = _GroupGuard(pid) if timeout is not None else None
    try:
        chunks, timed_out = _exchange(pipes, data, deadline)
        status = None if timed_out else _wait(pid, deadline)
        if status is None:  # the deadline passed: end git and everything it started
            _kill_group(pid)
            os.waitpid(pid, 0)
    except BaseException:
        if guard is not None:  # interrupted (Ctrl-C): git's group goes with us
            _kill_group(pid)
            import contextlib  # lazy: the hook fast path loads only os (docs/architecture.md)

            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        raise
    finally:
        _close(pipes.out_r, pipes.err_r, pipes.in_w)
        if guard is not None:
            guard.restore()
    out = b"".join(chunks[pipes.out_r]) if pipes.out_r >= 0 else b""
    err = b"".join(chunks[pipes.err_r])
    return (None if status is None else os.waitstatus_to_exitcode(status)), out, err


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)


class _Pipes:
    """The pipes between this process and one git: git's stdin (when there is ``data``), its
    stdout (unless it writes to a descriptor of the caller's) and its stderr; -1 for none."""

    __slots__ = ("err_r", "err_w", "in_r", "in_w", "out_r", "out_w")

    def __init__(self, data: bytes | None, stdout: int | None) -> None:
        self.out_r, self.out_w = os.pipe() if stdout is None else (-1, -1)
        self.err_r, self.err_w = os.pipe()
        self.in_r, self.in_w = (-1, -1) if data is None else os.pipe()

    def file_actions(self, stdout: int | None) -> list[tuple[int, int, int] | tuple[int, int, str, int, int]]:
        """posix_spawn's file actions: git's ends of the pipes on its 0, 1 and 2."""
        stdin: tuple[int, int, int] | tuple[int, int, str, int, int]
        if self.in_r < 0:
            stdin = (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        else:
            stdin = (os.POSIX_SPAWN_DUP2, self.in_r, 0)
        return [
            stdin,
            (os.POSIX_SPAWN_DUP2, self.out_w if stdout is None else stdout, 1),
            (os.POSIX_SPAWN_DUP2, self.err_w, 2),
        ]


def _start(argv: list[str], env: Mapping[str, str], pipes: _Pipes, stdout: int | None, timeout: float | None) -> int:
    """Start git on ``pipes`` (in a process group of its own when it has a ``timeout``);
    its pid. git's ends of the pipes are closed here, all of them when git cannot start."""
    file_actions = pipes.file_actions(stdout)
    try:
        if timeout is None:
            pid = os.posix_spawnp("git", argv, env, file_actions=file_actions, setsigdef=(_SIGPIPE,))
        else:  # a group of its own (pgid = its pid): the deadline ends git and all it started
            pid = os.posix_spawnp("git", argv, env, file_actions=file_actions, setsigdef=(_SIGPIPE,), setpgroup=0)
    except OSError as exc:
        _close(pipes.out_r, pipes.out_w, pipes.err_r, pipes.err_w, pipes.in_r, pipes.in_w)
        raise EnvironmentProblem(
            "git is not installed or not on PATH"
            if isinstance(exc, FileNotFoundError)
            else f"cannot run git: {exc.strerror or exc}"
        ) from None
    _close(pipes.out_w, pipes.err_w, pipes.in_r)
    return pid


def _exchange(pipes: _Pipes, data: bytes | None, deadline: float | None) -> tuple[dict[int, list[bytes]], bool]:
    """Feed ``data`` to git's stdin and read its output until it closes both, or until
    ``deadline``: ``({fd: chunks read}, timed out)``. Our end of stdin is closed (and set to
    -1) once everything is written."""
    import select  # lazy: the plan fast path loads this module without running git

    chunks: dict[int, list[bytes]] = {pipes.err_r: []} if pipes.out_r < 0 else {pipes.out_r: [], pipes.err_r: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    pending = memoryview(data or b"")
    open_fds = set(chunks)
    if pipes.in_w >= 0:
        if pending:
            os.set_blocking(pipes.in_w, False)
            poller.register(pipes.in_w, select.POLLOUT)
            open_fds.add(pipes.in_w)
        else:
            _close(pipes.in_w)
            pipes.in_w = -1
    while open_fds:
        wait = -1 if deadline is None else max(0, int((deadline - _monotonic()) * 1000) + 1)
        ready = poller.poll(wait)
        if not ready and deadline is not None and _monotonic() >= deadline:
            return chunks, True
        for fd, event in ready:
            if fd == pipes.in_w:
                pending = _feed(pipes.in_w, pending, failed=bool(event & select.POLLERR))
                if not pending:
                    poller.unregister(pipes.in_w)
                    open_fds.discard(pipes.in_w)
                    _close(pipes.in_w)
                    pipes.in_w = -1
                continue
            block = os.read(fd, _CHUNK)
            if block:
                chunks[fd].append(block)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
    return chunks, False


def _feed(fd: int, pending: memoryview, *, failed: bool) -> memoryview:
    """Write the next chunk of ``pending`` to git's stdin; what is left to write (nothing
    once git stopped reading: it failed, and its stderr says why)."""
    try:
        written = len(pending) if failed else os.write(fd, pending[:_CHUNK])
    except BlockingIOError:
        return pending
    except BrokenPipeError:
        written = len(pending)
    return pending[written:]


def _monotonic() -> float:
    import time  # lazy: the hook fast path loads only os (docs/architecture.md)

    return time.monotonic()


def _wait(pid: int, deadline: float | None) -> int | None:
    """git's wait status; None when it is still running at ``deadline`` (it closed its
    output but did not exit)."""
    if deadline is None:
        return os.waitpid(pid, 0)[1]
    import time  # lazy: the hook fast path loads only os (docs/architecture.md)

    pause = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _kill_group(pid: int) -> None:
    """SIGKILL git's process group (git started it: its pgid is its pid)."""
    import contextlib  # lazy: the hook fast path loads only os (docs/architecture.md)

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, 9)


class _GroupGuard:
    """While git runs in a group of its own, SIGTERM and SIGHUP to this process kill that
    group first, then end this process as they would have (the terminal's Ctrl-C reaches
    only this process: :func:`_spawn` kills the group when KeyboardInterrupt passes)."""

    def __init__(self, pid: int):
        import signal  # lazy: signal, threading: only for a call with a deadline (threading pinned off the plan path)
        import threading  # lazy: as above

        self.previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGHUP):
            handler = signal.getsignal(signum)
            if handler is signal.SIG_DFL:  # a handler of our caller's own stays in charge

                def end(number: int, _frame: object, group: int = pid) -> None:
                    _kill_group(group)
                    self.restore()
                    os.kill(os.getpid(), number)

                self.previous[signum] = signal.signal(signum, end)

    def restore(self) -> None:
        import signal  # lazy: as above

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self.previous = {}


def _subprocess(
    argv: list[str],
    data: bytes | None,
    env: Mapping[str, str] | None,
    stdout: int | None = None,
    timeout: float | None = None,
) -> tuple[int | None, bytes, bytes]:  # pragma: no cover
    import subprocess  # lazy: subprocess is pinned off the hook and plan fast paths; non-POSIX only

    try:
        proc = subprocess.run(  # noqa: S603 - an argument list, no shell; git is looked up on PATH on purpose
            argv,
            input=data,
            stdin=None if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            env=env,
            check=False,  # the caller decides what a failure means
            timeout=timeout,
        )
    except FileNotFoundError:
        raise EnvironmentProblem("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired as exc:
        return None, b"", exc.stderr or b""
    return proc.returncode, proc.stdout or b"", proc.stderr
