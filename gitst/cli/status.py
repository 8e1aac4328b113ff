"""`git st status` — every session, what it holds, its worktrees and PRs (docs/parallel.md)."""

from __future__ import annotations

import os
import time
from typing import Any

import click

from gitst.cli._parallel import elide, format_option, recover_worktrees, session_option, table, who
from gitst.cli.output import emit_json, is_terminal, sanitize, terminal_width, write
from gitst.cli.session import REMOTE_HEADERS, remote_claims_rows
from gitst.core import timestamps
from gitst.git.config import forget
from gitst.sessions import pending, remote_claims
from gitst.sessions.identity import Identity
from gitst.sessions.locks import expiry_text
from gitst.settings import parse_seconds
from gitst.worktrees.ports import render as render_ports
from gitst.worktrees.status import (
    Hold,
    SessionStatus,
    StatusView,
    WorktreeStatus,
    full_status,
)


def _ago(stamp: str | None) -> str:
    if not stamp:
        return "-"
    return timestamps.human_delta(timestamps.parse(stamp) - timestamps.now())


def _lease_text(hold: Hold) -> str:
    lease = hold.lease
    what = f"issue {hold.issue}" if hold.issue else f"lock {hold.lock}"
    if lease["state"] == "lost":
        return f"{what} (lost to {lease.get('holder') or 'nobody'})"
    if lease["state"] == "released":
        return f"{what} (released)"
    record = {"owner": {"session": "-"}, "expires_at": lease.get("expires_at")}
    left = expiry_text(record, lease["state"])
    if left.startswith("expires in "):
        left = left[len("expires in ") :] + " left"
    return f"{what} (token {lease.get('token')}, {left})"


def _changes_text(changes: dict[str, Any] | None) -> str:
    if changes is None:
        return "-"
    if not changes["total"]:
        return "clean"
    marks = {"staged": "+", "unstaged": "~", "untracked": "?"}
    return " ".join(f"{mark}{changes[key]}" for key, mark in marks.items() if changes[key])


def _path_text(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if len(rel) < len(path) else path


def render(view: StatusView, width: int | None) -> list[str]:
    """The human view: a sessions table and a worktrees table, cut to ``width`` columns
    (a terminal's; None in a pipe: nothing is cut)."""

    def fit(text: str) -> str:
        return elide(text, width) if width else text

    lines = [fit(sanitize(f"you are {view.session} · state dir {view.state_dir} · {view.generated_at}"))]
    if view.sessions:
        headers = ["SESSION", "STATE", "PID", "PROCESS", "HOST", "HEARTBEAT", "HOLDS"]
        rows = [row for s in view.sessions for row in _session_rows(s)]
        lines += ["", table([[sanitize(c) for c in r] for r in rows], headers, width=width, squeeze=(0, 3, 6))]
    else:
        lines += ["", "no sessions"]
    if view.worktrees:
        headers = ["ISSUE", "STATE", "OWNER", "BRANCH", "CHANGES", "BASE", "PORTS", "PR", "PATH"]
        rows = [_worktree_row(w) for w in view.worktrees]
        lines += ["", table([[sanitize(c) for c in r] for r in rows], headers, width=width, squeeze=(0, 2, 3, 4, 8))]
        legend = "CHANGES +staged ~changed ?untracked · BASE commits +ahead -behind the base branch"
        lines.append(fit(legend))
        lines += _leftover_warnings(view.worktrees)
    else:
        lines += ["", "no worktrees"]
    return lines


def _session_rows(s: SessionStatus) -> list[list[str]]:
    """A session's line, then one more line per lease it holds beyond the first."""
    rec = s.record
    holds = [_lease_text(h) for h in s.holds] or ["-"]
    first = [
        s.session + (" *" if s.current else ""),
        s.state + ("" if s.has_record else " (lock only)"),
        str(rec.get("pid", "-")),
        str(rec.get("process") or "-"),
        str(rec.get("host", "-")),
        _ago(rec.get("heartbeat_at")),
        holds[0],
    ]
    return [first, *(["", "", "", "", "", "", more] for more in holds[1:])]  # one line per lease


def _worktree_row(w: WorktreeStatus) -> list[str]:
    pr = w.pr or {}
    return [
        w.issue or "-",
        w.state + (f" ({w.pending}…)" if w.pending else ""),
        w.session or "-",
        w.branch or "-",
        _changes_text(w.changes),
        "-" if w.ahead is None else f"+{w.ahead} -{w.behind}",
        render_ports(w.ports),
        f"#{pr['number']}" if pr.get("number") else ("?" if pr else "-"),
        _path_text(w.path),
    ]


def _leftover_warnings(worktrees: list[WorktreeStatus]) -> list[str]:
    """What a killed command left in a worktree, and who removes it."""
    lines = []
    for w in worktrees:
        if w.leftovers:
            left = ", ".join(item["path"] for item in w.leftovers)
            owner = f"`git st worktree add {w.issue}` removes them" if w.issue else "remove them by hand"
            lines.append(sanitize(f"warning: issue {w.issue or '-'}: a killed command left {left} ({owner})"))
    return lines


def _remote_lines(remote: dict[str, Any] | None, views: list[remote_claims.RemoteClaimView], me: Identity) -> list[str]:
    if remote is None:
        return []
    lines = ["", f"claims on {remote['name']} (st.remote)"]
    if remote["error"]:
        return [*lines, sanitize(remote["error"])]
    if not views:
        return [*lines, "no claims"]
    return [*lines, sanitize(table(remote_claims_rows(views, me), REMOTE_HEADERS))]


def _conflict_lines(
    doubled: list[dict[str, Any]], remote: dict[str, Any] | None, waiting: list[dict[str, Any]]
) -> list[str]:
    """Issues with two owners (here and on the remote) and releases still pending."""
    lines = [
        sanitize(
            f"warning: issue {d['issue']} has two owners: session {d['here']} here and session "
            f"{d['remote']['session']} on host {d['remote']['host']} on {(remote or {}).get('name')}; "
            "the remote's owner is the issue's owner (the next heartbeat here gives it up)"
        )
        for d in doubled
    ]
    lines += [sanitize(pending.warning(record)) for record in waiting]
    return ["", *lines] if lines else []


@click.command("status")
@click.option("--watch", is_flag=True, help="Redraw every --interval seconds until interrupted (Ctrl-C).")
@click.option(
    "--interval", metavar="SECONDS", default="2", show_default=True, help="Seconds between two redraws of --watch."
)
@session_option
@format_option
def status(watch: bool, interval: str, session: str | None, fmt: str) -> int:
    """Every session (live, stale, dead; pid, host, last heartbeat), what it holds (issue,
    lease, fencing token, expiry), the worktrees (path, branch, uncommitted changes, commits
    ahead of / behind the base branch, port block) and each issue's PR from the offline
    steps of the PR cascade. With --format json, one JSON document (per redraw with --watch)."""
    pause = parse_seconds(interval, "--interval", allow_zero=False)
    me = who(session)
    recover_worktrees()
    terminal = is_terminal()
    problems = False
    try:
        while True:
            forget()  # each redraw reads the settings again (one `git config --list`)
            full = full_status(None, me)
            problems = full.problems
            if fmt == "json":
                emit_json(full.to_dict())
            else:
                lines = render(full.view, terminal_width()) + _remote_lines(full.remote, full.remote_views, me)
                lines += _conflict_lines(full.two_owners, full.remote, full.pending_releases)
                frame = "\n".join(lines)
                if watch and terminal:
                    frame = "\x1b[H\x1b[2J" + frame  # home + clear: redraw in place
                write(frame + ("\n" if watch and not terminal else ""))
            if not watch:
                break
            time.sleep(pause)
    except KeyboardInterrupt:
        return 0
    return 1 if problems else 0
