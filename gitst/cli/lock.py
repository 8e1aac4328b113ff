"""`git st lock acquire|renew|release|list|gc` — TTL locks in state/locks/ (docs/parallel.md)."""

from __future__ import annotations

import click

from gitst.cli._parallel import (
    format_option,
    report_corrupt,
    seconds,
    session_option,
    state_root,
    table,
    ttl_given,
    ttl_option,
    ttl_value,
    who,
)
from gitst.cli.output import emit_json, say
from gitst.sessions import locks


@click.group("lock")
def lock() -> None:
    """Acquire, renew, release and list TTL locks (state/locks/NAME.json).

    A lock names its owner (session, pid, host, actor), expires after its TTL unless
    renewed, and carries a fencing token that grows with every new owner. A lock whose TTL
    passed, or whose owner's pid is dead on this host, may be reclaimed (logged in
    state/locks/reclaims.jsonl). Busy lock or not the owner: exit 3.
    """


@lock.command("acquire")
@click.argument("name")
@ttl_option
@click.option(
    "--wait", "wait", metavar="SECONDS", default=None, help="Keep trying this long before giving up (exit 3)."
)
@session_option
@format_option
def acquire(name: str, ttl: str | None, wait: str | None, session: str | None, fmt: str) -> int:
    """Take lock NAME for this session (reclaiming it when stale or dead)."""
    me = who(session)
    locks.validate_lock_name(name)
    patience = seconds(wait, "--wait")

    def waiting(busy: locks.LockBusy) -> None:
        say(f"waiting up to {patience:g}s for lock {name}: held by {locks.describe_owner(busy.record)}", err=True)

    got = locks.acquire(name, me, root=state_root(), ttl=ttl_value(ttl), wait=patience, on_wait=waiting)
    if fmt == "json":
        emit_json({"name": name, "renewed": got.renewed, "reclaimed": got.reclaimed, "lock": got.record})
        return 0
    record = got.record
    if got.renewed:
        verb = "renewed (already held by this session)"
    elif got.reclaimed:
        prev = got.reclaimed["previous"]
        verb = f"reclaimed from {got.reclaimed['reason']} session {prev['owner']['session']} (token {prev['token']})"
    else:
        verb = "acquired"
    lease = locks.expiry_text(record, locks.LIVE)
    say(f"lock {name} {verb}: token {record['token']}, {lease} ({record['expires_at']})")
    return 0


@lock.command("renew")
@click.argument("name")
@ttl_option
@session_option
@format_option
def renew(name: str, ttl: str | None, session: str | None, fmt: str) -> int:
    """Extend this session's lock NAME by its TTL (or --ttl)."""
    me = who(session)
    record = locks.renew(name, me, root=state_root(), ttl=ttl_given(ttl))
    if fmt == "json":
        emit_json({"name": name, "lock": record})
    else:
        lease = locks.expiry_text(record, locks.LIVE)
        say(f"lock {name} renewed: token {record['token']}, {lease} ({record['expires_at']})")
    return 0


@lock.command("release")
@click.argument("name")
@click.option(
    "--force", is_flag=True, help="Break the lock even when another (live) session holds it; logged in the reclaim log."
)
@click.option("--reason", metavar="TEXT", default=None, help="Why it was broken (with --force; logged).")
@session_option
def release(name: str, force: bool, reason: str | None, session: str | None) -> int:
    """Release this session's lock NAME (the fencing token is kept for the next owner).

    With --force, break another session's lock, e.g. an agent that hangs while its process
    still runs: `git st lock release issue-7 --force --reason "agent stuck"`. That session's
    next heartbeat or renew fails (exit 3), and the next owner gets a bigger fencing token.
    """
    me = who(session)
    record = locks.release(name, me, root=state_root(), force=force, reason=reason)
    if record is None:
        say(f"lock {name} was not held")
    elif record["released_by"] == "break":
        previous = record["last_owner"]
        say(
            f"lock {name} broken: it was held by session {previous.get('session')} "
            f"(pid {previous.get('pid')} on {previous.get('host')}; token {record['token']}); logged"
        )
    else:
        say(f"lock {name} released (token {record['token']})")
    return 0


@lock.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include released locks.")
@format_option
def list_(show_all: bool, fmt: str) -> int:
    """List locks: live, stale (TTL passed), dead (owner gone) and, with --all, released."""
    views = locks.list_locks(state_root(), include_released=show_all)
    bad = [v.problem for v in views if v.problem is not None]
    if fmt == "json":
        emit_json({"locks": [v.to_dict() for v in views]})
    elif views:
        rows = []
        for v in views:
            rec = v.record or {}
            owner = rec.get("owner") or rec.get("last_owner") or {}
            rows.append(
                [
                    v.name,
                    v.state,
                    str(rec.get("token", "-")),
                    str(owner.get("session", "-")),
                    str(owner.get("pid", "-")),
                    str(owner.get("host", "-")),
                    locks.expiry_text(rec, v.state) if rec.get("owner") else "-",
                ]
            )
        say(table(rows, ["NAME", "STATE", "TOKEN", "SESSION", "PID", "HOST", "LEASE"]))
    else:
        say("no locks")
    return report_corrupt(bad)


@lock.command("gc")
@click.option("--dry-run", is_flag=True, help="Only say which locks would be released.")
@format_option
def gc(dry_run: bool, fmt: str) -> int:
    """Release every stale or dead lock (each one logged in state/locks/reclaims.jsonl)."""
    done = locks.gc(state_root(), dry_run=dry_run)
    if fmt == "json":
        emit_json({"dry_run": dry_run, "released": done})
        return 0
    verb = "would release" if dry_run else "released"
    for entry in done:
        prev = entry["previous"]
        say(
            f"{verb} lock {entry['resource']} ({entry['reason']}; session {prev['owner']['session']}, "
            f"token {prev['token']})"
        )
    if not done:
        say("no stale or dead locks")
    return 0
