"""Who is acting: session id, the process whose life is the session, actor and host.

docs/parallel.md ("Who is acting") holds the rules and the process trees of the common
harnesses. In short:

- **Session id**: ``--session``, else ``ST_SESSION_ID``, ``CLAUDE_SESSION_ID``,
  ``CODEX_THREAD_ID``, else ``pid-<session pid>@<host>``.
- **Session pid**: ``ST_SESSION_PID``, else the process whose life *is* the session. Agent
  harnesses (Claude Code, Codex, CI runners) run every command in a fresh shell that exits
  right after it, so walking up from ``git-st`` skips git and gitst, every shell that is not
  an interactive shell of a terminal, and thin wrappers (``env``, ``timeout``, ``nohup``,
  ``xargs``, …); it stops at the first other process (the agent: ``node``, ``python``,
  ``codex``, ``claude``, a CI runner, …) or at an interactive shell on a terminal (a person
  typing). :func:`resolve` says which process it chose and by which rule.
- **Liveness**: by that pid (with its start time, so a recycled pid does not count), unless
  the walk found no such process (it reached init, a session boundary such as ``sshd``, or
  ``/proc`` cannot be read). Then a session with an explicit id is judged by its heartbeat
  alone (``liveness: heartbeat``: live until its TTL passes, never "dead" because a shell
  exited); without an explicit id the session *is* the nearest process that is not git
  (its id is made from that pid), as before.
- **Actor**: ``ST_ACTOR``, else ``USER``. **Host**: ``ST_HOST``, else the host name.
"""

from __future__ import annotations

import os

from gitst.core.values import Value
from gitst.git import config
from gitst.settings import positive_int, require_utf8

TYPE_CHECKING = False  # typing is not imported at run time: a plan write pays for every import
if TYPE_CHECKING:
    from typing import Any, Final, Literal

    Liveness = Literal["pid", "heartbeat"]
    # How the session pid was chosen (``rule`` in whoami and the session record).
    Rule = Literal["ST_SESSION_PID", "agent", "interactive-shell", "fallback"]

__all__ = [
    "AGENT",
    "ENV_PID",
    "FALLBACK",
    "HEARTBEAT",
    "INTERACTIVE",
    "PID",
    "Identity",
    "SessionProcess",
    "Step",
    "actor",
    "classify",
    "client_pid",
    "current",
    "declared_session_id",
    "group_members",
    "host",
    "is_interactive_shell",
    "name_and_parent",
    "parent_pid",
    "pid_alive",
    "process_start",
    "resolve",
    "run_for",
    "session_id",
    "session_pid",
    "started_at",
]

SESSION_ENV = ("ST_SESSION_ID", "CLAUDE_SESSION_ID", "CODEX_THREAD_ID")

PID: Final = "pid"
HEARTBEAT: Final = "heartbeat"

ENV_PID: Final = "ST_SESSION_PID"
AGENT: Final = "agent"
INTERACTIVE: Final = "interactive-shell"
FALLBACK: Final = "fallback"

# /proc/<pid>/comm holds at most 15 characters: names are compared on that prefix.
_COMM = 15
GIT_NAMES = frozenset({"git", "git-st", "gitst"})
SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "fish", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash", "posh", "rbash"}
    | {"busybox", "tcsh", "csh"}
)
# Thin wrappers: they live exactly as long as the command they run, so they are never the session.
WRAPPERS = frozenset(
    name[:_COMM]
    for name in (
        "env",
        "timeout",
        "nohup",
        "xargs",
        "nice",
        "ionice",
        "stdbuf",
        "setsid",
        "chrt",
        "taskset",
        "flock",
        "time",
        "sudo",
        "doas",
        "su",
        "runuser",
        "script",
        "unbuffer",
        "watch",
        "make",
        "gmake",
        "strace",
        "ltrace",
        "uv",
        "uvx",
        "direnv",
        "bwrap",
        "firejail",
        "unshare",
        "nsenter",
        "chroot",
        "sandbox-exec",
        "codex-linux-sandbox",
    )
)
# Reaching one of these means no agent process was found below it: it is the machine's or a
# login's, not the session's (init and subreapers adopt orphans; sshd runs `ssh host cmd`).
BOUNDARIES = frozenset(
    name[:_COMM]
    for name in (
        "init",
        "systemd",
        "launchd",
        "tini",
        "dumb-init",
        "docker-init",
        "catatonit",
        "s6-svscan",
        "runsv",
        "sshd",
        "login",
        "agetty",
        "getty",
        "tmux: server",
        "screen",
        "SCREEN",
        "containerd-shim",
        "conmon",
        "kthreadd",
    )
)
_MAX_DEPTH = 64


def host() -> str:
    return _utf8(os.environ.get("ST_HOST") or _hostname(), "ST_HOST")


def _hostname() -> str:
    """The host name (the kernel's node name: what ``socket.gethostname`` returns, without
    importing socket, which a plan write would otherwise pay for)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # lazy: not POSIX only; a plan write never pays for socket  # pragma: no cover

    return socket.gethostname()  # pragma: no cover


def actor() -> str:
    """Who writes: ``ST_ACTOR``, ``USER``, ``LOGNAME``, then ``git config user.name`` (a
    container or CI job often has no login name but a git identity), else "unknown"."""
    for name in ("ST_ACTOR", "USER", "LOGNAME"):
        value = os.environ.get(name)
        if value:
            return _utf8(value, name)

    return config.get("user.name") or "unknown"


def _utf8(value: str, source: str) -> str:
    """``value`` when it is UTF-8 text: it is written into UTF-8 JSON records (exit 2 if not)."""
    return require_utf8(value, source)


# --- /proc ------------------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, list[str]] | None:
    """(command name, the fields after it) from /proc/<pid>/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    left, right = raw.index("("), raw.rindex(")")
    return raw[left + 1 : right], raw[right + 2 :].split()


def name_and_parent(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of a process from /proc, or None when it cannot be read."""
    stat = _proc_stat(pid)
    if stat is None:
        return None
    try:
        return stat[0], int(stat[1][1])
    except (IndexError, ValueError):
        return stat[0], 0


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` still running on this host (zombies left
    out), from /proc; where there is no /proc, ``[pgid]`` while the group exists."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _proc_stat(int(name))
            if stat is not None and len(stat[1]) > 2 and stat[1][2] == str(pgid) and stat[1][0] not in ("Z", "X"):
                members.append(int(name))
    return members


def _cmdline(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]] if raw else []


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (None where unknown)."""
    stat = _proc_stat(pid)
    if stat is None:
        return None
    try:
        return int(stat[1][19])  # field 22 of stat; fields[0] is field 3
    except (IndexError, ValueError):
        return None


def started_at(start: int | None) -> float | None:
    """A :func:`process_start` value as a Unix time (None where unknown)."""
    if start is None:
        return None
    try:
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        return boot + start / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def pid_alive(pid: int, start: int | None = None) -> bool:
    """True when ``pid`` runs on this host (a zombie counts as dead).

    With ``start`` (a :func:`process_start` value recorded earlier), a process that now
    has the pid but started at another time is a different process: dead for us.
    """
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OverflowError:
        return False
    stat = _proc_stat(pid)
    if stat is None:
        return True
    fields = stat[1]
    if fields and fields[0] in ("Z", "X", "x"):
        return False
    if start is not None:
        try:
            return int(fields[19]) == start
        except (IndexError, ValueError):
            return True
    return True


# --- which process is the session -----------------------------------------------------------------


def is_interactive_shell(argv: list[str], has_terminal: bool) -> bool:
    """True for a shell a person types into: on a terminal, neither running a command
    (``-c``) nor a script (an operand), nor reading a pipe (``-s`` without ``-i``).

    ``argv`` is the shell's command line (``argv[0]`` first; ``-bash`` for a login shell).
    """
    if not has_terminal:
        return False
    interactive = False
    args = argv[1:]
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return interactive or index >= len(args)
        if arg.startswith("--"):
            if arg in ("--rcfile", "--init-file"):
                index += 1  # takes a value
            continue
        if arg.startswith(("-", "+")) and len(arg) > 1:
            letters = arg[1:]
            if "c" in letters:
                return False
            if "i" in letters:
                interactive = True
            if "s" in letters and not interactive:
                return False
            if "o" in letters:
                index += 1  # -o OPTION takes a value
            continue
        return interactive  # an operand: a script file (unless -i forced interactivity)
    return True


def _has_terminal(pid: int, fields: list[str]) -> bool:
    """A controlling terminal, and stdin on a terminal where we may look."""
    try:
        if int(fields[4]) == 0:  # tty_nr (field 7)
            return False
    except (IndexError, ValueError):
        return False
    try:
        stdin = os.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        return True  # not ours to look at: the controlling terminal has to do
    return stdin.startswith(("/dev/pts/", "/dev/tty", "/dev/console"))


def _known(name: str, names: frozenset[str]) -> bool:
    return name in names or name[:_COMM] in names


def classify(name: str, argv: list[str] | None, has_terminal: bool, parent_name: str | None) -> str:
    """What one ancestor is for the walk: ``git``, ``started-by-git``, ``shell``, ``wrapper``,
    ``boundary``, ``interactive-shell`` or ``agent``."""
    if name in GIT_NAMES:
        return "git"
    if parent_name in GIT_NAMES:
        return "started-by-git"  # a hook shim, an alias's `sh -c`: it dies with git
    if _known(name, SHELLS):
        return INTERACTIVE if is_interactive_shell(argv or [name], has_terminal) else "shell"
    if _known(name, WRAPPERS):
        return "wrapper"
    if _known(name, BOUNDARIES):
        return "boundary"
    return AGENT


class Step(Value):
    """One ancestor the walk looked at, and what it made of it (``verdict``: a classify() answer)."""

    __slots__ = ("name", "pid", "verdict")

    def __init__(self, pid: int, name: str, verdict: str):
        self.pid = pid
        self.name = name
        self.verdict = verdict

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "name": self.name, "verdict": self.verdict}


class SessionProcess(Value):
    """The process chosen as the session's, and why."""

    __slots__ = ("chain", "name", "pid", "rule", "start")

    def __init__(self, pid: int, name: str | None, start: int | None, rule: Rule, chain: tuple[Step, ...] = ()):
        self.pid = pid
        self.name = name
        self.start = start
        self.rule: Rule = rule
        self.chain = chain


class _Client:
    """The client this process runs a command for: set once in a resident worker (``ST_RESIDENT``,
    docs/resident.md), which is forked from a resident process, not started by the client's parent."""

    pid: int | None = None
    parent: int | None = None


def run_for(pid: int, parent: int) -> None:
    """This process runs the command of the client ``pid``, whose parent is ``parent``."""
    _Client.pid, _Client.parent = pid, parent


def parent_pid() -> int:
    """The command's parent, where the walk up starts: the client's parent in a resident
    worker, else ``os.getppid()``."""
    return _Client.parent if _Client.parent is not None else os.getppid()


def client_pid() -> int | None:
    """The client's pid in a resident worker (it and its ancestors are this command's), else None."""
    return _Client.pid


def _walk() -> SessionProcess:
    """Walk up from our parent (module docstring); FALLBACK when no agent or interactive
    shell was found: the nearest ancestor that is not git."""
    pid = parent_pid()
    chain: list[Step] = []
    nearest: tuple[int, str] | None = None
    for _ in range(_MAX_DEPTH):
        stat = _proc_stat(pid)
        if stat is None:
            break
        name, fields = stat
        verdict, parent = _judge(pid, name, fields)
        chain.append(Step(pid, name, verdict))
        if verdict in (AGENT, INTERACTIVE):
            rule: Rule = AGENT if verdict == AGENT else INTERACTIVE
            return SessionProcess(pid, name, _start_of(fields), rule, tuple(chain))
        if verdict == "boundary":
            break
        if nearest is None and verdict not in ("git", "started-by-git"):
            nearest = (pid, name)
        if parent <= 0:
            break
        pid = parent
    if nearest is None:
        nearest = (parent_pid(), chain[0].name if chain else "?")
    return SessionProcess(nearest[0], nearest[1], process_start(nearest[0]), FALLBACK, tuple(chain))


def _judge(pid: int, name: str, fields: list[str]) -> tuple[str, int]:
    """(the verdict on the process ``pid`` named ``name`` — :func:`classify`, or "boundary"
    for init — and its parent's pid, 0 when unknown); ``fields``: its ``/proc`` stat."""
    try:
        parent = int(fields[1])
    except (IndexError, ValueError):
        parent = 0
    parent_stat = _proc_stat(parent) if parent > 0 else None
    parent_name = parent_stat[0] if parent_stat else None
    argv = _cmdline(pid) if _known(name, SHELLS) else None
    verdict = classify(name, argv, _has_terminal(pid, fields), parent_name)
    if pid == 1:
        verdict = "boundary"
    return verdict, parent


def _start_of(fields: list[str]) -> int | None:
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _env_session_pid() -> int | None:
    env = os.environ.get("ST_SESSION_PID")
    if not env:
        return None

    return positive_int(env, "ST_SESSION_PID", maximum=2**31 - 1)  # pid_t: what the kernel can name


def resolve() -> SessionProcess:
    """The session's process: ``ST_SESSION_PID``, else the walk (module docstring)."""
    env = _env_session_pid()
    if env is not None:
        stat = _proc_stat(env)
        return SessionProcess(env, stat[0] if stat else None, process_start(env), ENV_PID)
    return _walk()


def session_pid() -> int:
    """The pid whose life defines the session's liveness."""
    return resolve().pid


def _explicit_id(explicit: str | None) -> tuple[str, str] | None:
    """(session id, where it came from) when one was given, else None."""
    if explicit:
        return explicit, "--session"
    for name in SESSION_ENV:
        value = os.environ.get(name)
        if value:
            return value, name
    return None


def declared_session_id(explicit: str | None = None) -> str | None:
    """The session id given (``explicit``) or declared by the environment (``ST_SESSION_ID``,
    ``CLAUDE_SESSION_ID``, ``CODEX_THREAD_ID``); None when there is none (not validated)."""
    given = _explicit_id(explicit)
    return given[0] if given else None


def session_id(explicit: str | None = None) -> str:
    return declared_session_id(explicit) or f"pid-{session_pid()}@{host()}"


# --- the acting session -----------------------------------------------------------------------------


class Identity(Value):
    """Everything a lock or claim records about its owner.

    ``liveness`` is ``pid`` (live while ``pid`` runs on ``host``) or ``heartbeat`` (no
    session process could be established for an explicit session id: live until the TTL
    passes). ``rule``/``process``/``source``/``chain`` say how it was decided (whoami);
    ``chain`` takes no part in equality. ``session_id``: the session id as :func:`current`
    parsed it (a :class:`gitst.statedir.paths.SessionId`, which the session's own state paths
    trust), None for an identity made otherwise (its id is then checked where it is used).
    """

    __slots__ = (
        "actor",
        "chain",
        "host",
        "liveness",
        "pid",
        "pid_start",
        "process",
        "rule",
        "session",
        "session_id",
        "source",
    )
    _compared = ("actor", "host", "liveness", "pid", "pid_start", "process", "rule", "session", "source")

    def __init__(
        self,
        session: str,
        pid: int,
        host: str,
        actor: str,
        pid_start: int | None = None,
        liveness: Liveness = PID,
        process: str | None = None,
        rule: str = ENV_PID,
        source: str = "--session",  # where the session id came from (or "pid")
        chain: tuple[Step, ...] = (),
        session_id: str | None = None,
    ):
        self.session = session
        self.session_id = session_id
        self.pid = pid
        self.host = host
        self.actor = actor
        self.pid_start = pid_start
        self.liveness: Liveness = liveness
        self.process = process
        self.rule = rule
        self.source = source
        self.chain = chain

    def owner(self) -> dict[str, Any]:
        """The ``owner`` object of a lock record (schema ``state-lock``)."""
        data: dict[str, Any] = {"session": self.session, "pid": self.pid, "host": self.host, "actor": self.actor}
        if self.pid_start is not None:
            data["pid_start"] = self.pid_start
        if self.process:
            data["process"] = self.process
        if self.liveness == HEARTBEAT:
            data["liveness"] = HEARTBEAT
        return data

    @property
    def short_lived(self) -> bool:
        """True when the session is tied to a process that exits with this command's shell
        (no agent process found and no explicit session id): worth telling the user."""
        return self.rule == FALLBACK and self.liveness == PID

    def explanation(self) -> str:
        """One sentence: why this pid, and how liveness is judged."""
        what = f"pid {self.pid} ({self.process or '?'})"
        if self.rule == ENV_PID:
            why = f"{what} from ST_SESSION_PID"
        elif self.rule == AGENT:
            why = f"{what}: the nearest ancestor that is not git, gitst, a shell or a wrapper (the agent)"
        elif self.rule == INTERACTIVE:
            why = f"{what}: the interactive shell of your terminal"
        else:
            why = f"no agent process or interactive shell above this command; nearest process {what}"
        if self.liveness == HEARTBEAT:
            return why + f"; session {self.session} is live while its heartbeat is within the TTL"
        return why + f"; session {self.session} is live while that process runs"

    def warning(self) -> str | None:
        """What to tell a user whose claims would die with this command's shell."""
        if not self.short_lived:
            return None
        return (
            f"gitst: note: session {self.session} is tied to pid {self.pid} ({self.process or '?'}), "
            "which exits with this command's shell; its claims will look dead at once.\n"
            "  set ST_SESSION_ID (kept alive by `git st heartbeat` within the TTL) or ST_SESSION_PID "
            "(the agent's pid); `git st whoami` shows how the session was chosen"
        )


def current(explicit_session: str | None = None) -> Identity:
    """The acting session, its process (with start time), host and actor.

    The session id is validated here (it names ``active-chats/<session>.json``): a bad one
    is a UsageError (exit 2) before anything is written.
    """
    from gitst.statedir.paths import SessionId  # lazy: not on `git st add`'s pinned import set

    proc = resolve()
    given = _explicit_id(explicit_session)
    parsed = SessionId(given[0] if given else f"pid-{proc.pid}@{host()}")
    liveness: Liveness = HEARTBEAT if (given is not None and proc.rule == FALLBACK) else PID
    return Identity(
        session=str(parsed),  # plain text: it is written into records
        session_id=parsed,
        pid=proc.pid,
        host=host(),
        actor=actor(),
        pid_start=proc.start,
        liveness=liveness,
        process=proc.name,
        rule=proc.rule,
        source=given[1] if given else "pid",
        chain=proc.chain,
    )
