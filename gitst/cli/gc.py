"""`git st gc` — clean the state dir: expired leases, dead sessions, stray temp files."""

from __future__ import annotations

import click

from gitst.cli._parallel import echo_lines, format_option, recover_worktrees, state_root
from gitst.cli.output import emit_json, say
from gitst.sessions.claims import configured_remote
from gitst.sessions.gc import GcReport, collect
from gitst.sessions.pending import warning


def render_gc(report: GcReport) -> list[str]:
    """What a GcReport did (or, dry, would do), one line each, in the past tense."""
    lines = []
    for entry in report.released_locks:
        prev = entry["previous"]
        verb = "would release" if report.dry_run else "released"
        lines.append(
            f"{verb} lock {entry['resource']} ({entry['reason']}; session {prev['owner']['session']}, "
            f"token {prev['token']})"
        )
    for item in report.dropped_sessions:
        verb = "would drop" if report.dry_run else "dropped"
        lines.append(f"{verb} the record of {item['state']} session {item['session']}")
    for path in report.removed_temp_files:
        verb = "would delete" if report.dry_run else "deleted"
        lines.append(f"{verb} the stray temp file {path}")
    lines += [
        f"released issue {record['issue']} on {record['remote']} (session {record['session']}; "
        f"its release was pending since {record['since']})"
        for record in report.remote_released
    ]
    for claim in report.remote_dropped:
        verb = "would delete" if report.dry_run else "deleted"
        lines.append(
            f"{verb} the {claim['state']} claim on issue {claim['issue']} on {report.remote} "
            f"(session {claim.get('session')} on host {claim.get('host')}, token {claim.get('token')})"
        )
    for entry in report.remote_reservations_dropped:
        verb = "would drop" if report.dry_run else "dropped"
        lines.append(
            f"{verb} the ended reservation {entry['pattern']} on {report.remote} "
            f"(session {entry.get('session')} on host {entry.get('host')}, token {entry.get('token')})"
        )
    return lines


def remote_warnings(report: GcReport) -> list[str]:
    """stderr lines: releases still pending, an unreachable remote."""
    lines = [warning(record) for record in report.remote_pending]
    if report.remote_error:
        lines.append(f"warning: {report.remote_error}; its stale claims are left for the next `git st gc`")
    return lines


def run_gc(dry_run: bool, fmt: str) -> int:
    if not dry_run:
        recover_worktrees()
    report = collect(state_root(), dry_run=dry_run, remote=configured_remote())
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        echo_lines(render_gc(report), "nothing to clean: no expired lease, dead session or stray temp file")
    for line in remote_warnings(report):
        say(line, err=True)
    return 4 if report.remote_pending and not dry_run else 0


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Only say what would be cleaned.")
@format_option
def gc(dry_run: bool, fmt: str) -> int:
    """Clean the state dir: release expired or dead leases (logged), drop the records of
    stale or dead sessions that hold nothing, delete temp files a killed writer left. Says
    what it did. Worktrees are left alone (`git st worktree prune` / `clean`)."""
    return run_gc(dry_run, fmt)
