"""Options and rendering shared by the parallel-agents commands (lock, session, worktree)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

import click

from gitst import settings
from gitst.cli._types import F
from gitst.cli.output import sanitize, say, write
from gitst.sessions.identity import Identity, current
from gitst.statedir.paths import state_dir
from gitst.worktrees import recovery

if TYPE_CHECKING:
    from gitst.statedir.records import CorruptRecord


def session_option(func: F) -> F:
    return click.option(
        "--session",
        "session",
        metavar="ID",
        help="Act as this session (default: ST_SESSION_ID, CLAUDE_SESSION_ID, CODEX_THREAD_ID, "
        "else pid-<session pid>@<host>). The session pid is ST_SESSION_PID, else the agent process "
        "above this command (shells, git and wrappers skipped) or your terminal's interactive "
        "shell; `git st whoami` shows it.",
    )(func)


def format_option(func: F) -> F:
    return click.option(
        "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
    )(func)


CLAIM_THROUGH_REMOTE = (
    "Claim through this git remote too (refs/st/claims/ISSUE): default st.remote, else origin. "
    "With st.remote set, every claim goes through it without this option."
)


@overload
def remote_option(func: F, *, help: str = ...) -> F: ...


@overload
def remote_option(func: None = None, *, help: str = ...) -> Callable[[F], F]: ...


def remote_option(func: F | None = None, *, help: str = CLAIM_THROUGH_REMOTE) -> F | Callable[[F], F]:  # noqa: A002
    """``--remote [NAME]``: None when absent, ``""`` when given without a name."""

    def decorate(f: F) -> F:
        return click.option(
            "--remote", "remote", is_flag=False, flag_value="", default=None, metavar="[NAME]", help=help
        )(f)

    return decorate(func) if func is not None else decorate


def offline_option(func: F) -> F:
    return click.option(
        "--offline",
        is_flag=True,
        help="Claim here only, even with st.remote set; the next `git st heartbeat` that reaches the "
        "remote publishes the claim there (and reports it lost if someone else got it first).",
    )(func)


def ttl_option(func: F) -> F:
    return click.option(
        "--ttl",
        "ttl",
        metavar="SECONDS",
        default=None,
        help="Lock TTL (default: ST_LOCK_TTL, git config st.lockTtl, else 1800).",
    )(func)


def who(session: str | None) -> Identity:
    return current(session)


def warn_short_lived(me: Identity) -> None:
    """Tell the user on stderr when the session would die with this command's shell."""
    warning = me.warning()
    if warning:
        click.echo(warning, err=True)


def state_root() -> Path:
    return state_dir()


def ttl_value(raw: str | None) -> float:
    """``--ttl`` checked (a positive number of seconds); the configured default when absent."""
    given = ttl_given(raw)
    return settings.lock_ttl() if given is None else given


def ttl_given(raw: str | None) -> float | None:
    """``--ttl`` checked when given; None when absent (renewals keep each lock's own TTL)."""
    return None if raw is None else settings.parse_seconds(raw, "--ttl", allow_zero=False)


def seconds(raw: str | None, what: str) -> float:
    if raw is None:
        return 0.0
    return settings.parse_seconds(raw, what)


def echo_lines(lines: list[str], empty: str) -> None:
    """Each line (sanitized: it holds ids and paths from records), or ``empty`` when none."""
    for line in lines:
        say(line)
    if not lines:
        say(empty)


def report_corrupt(problems: Sequence[CorruptRecord]) -> int:
    """Print each corrupt record as a diagnostic on stderr; 1 when there were any."""
    for problem in problems:
        write(sanitize(problem.message), err=True)
    return 1 if problems else 0


def elide(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by dropping its middle (``/home/…/issue-7``)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def table(rows: list[list[str]], headers: list[str], *, width: int | None = None, squeeze: tuple[int, ...] = ()) -> str:
    """Rows in aligned columns for people: every cell's control characters escaped (ids,
    branches and records may come from anywhere). With ``width``, the ``squeeze`` columns are
    cut in the middle (the widest first) until every line fits, down to a few characters each."""
    rows = [[sanitize(str(cell)) for cell in row] for row in rows]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    if width is not None and squeeze:
        widths = _squeezed(widths, headers, width, squeeze)
        rows = [[elide(str(cell), widths[i]) for i, cell in enumerate(row)] for row in rows]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()  # a cell per header
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def _squeezed(widths: list[int], headers: list[str], width: int, squeeze: tuple[int, ...]) -> list[int]:
    """Column widths whose lines fit ``width``: the widest of the ``squeeze`` columns cut by one
    character at a time, none below its floor (8 characters, or its header)."""
    widths = list(widths)
    floors = {i: max(min(8, widths[i]), len(headers[i])) for i in squeeze}
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0:
        wide = [i for i in squeeze if widths[i] > floors[i]]
        if not wide:
            break
        widest = max(wide, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def recover_worktrees() -> None:
    """Undo what an interrupted `worktree add` left before the command reads every worktree
    (:func:`gitst.worktrees.recovery.recover_worktrees`; docs/parallel.md, "Crash safety")."""
    recovery.recover_worktrees(None, lambda text: say(text, err=True))
