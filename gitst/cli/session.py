"""`git st claim|check-issue|release|heartbeat|sessions` — issue claims of agent sessions
(state/active-chats/<session>.json; the claim is the lock issue-<N>). docs/parallel.md."""

from __future__ import annotations

from typing import Any

import click

from gitst.cli._parallel import (
    format_option,
    offline_option,
    recover_worktrees,
    remote_option,
    report_corrupt,
    session_option,
    state_root,
    table,
    ttl_given,
    ttl_option,
    ttl_value,
    warn_short_lived,
    who,
)
from gitst.cli.gc import run_gc
from gitst.cli.output import emit_json, say
from gitst.core import timestamps
from gitst.core.errors import UsageError
from gitst.loop.paths import end_session
from gitst.sessions import claims, pending, remote_claims
from gitst.sessions.chats import SessionView
from gitst.sessions.identity import Identity
from gitst.sessions.remote_claims import choose_remote, claim_state, describe
from gitst.sessions.remote_records import held_by_pr
from gitst.statedir.paths import IssueId


def _issue_view(claim: dict[str, Any]) -> str:
    parts = [f"branch {claim.get('branch') or '-'}"]
    if claim.get("worktree"):
        parts.append(f"worktree {claim['worktree']}")
    return ", ".join(parts)


@click.command("claim")
@click.argument("issue")
@click.option("--desc", "description", metavar="TEXT", help="What the session is doing on the issue.")
@remote_option
@offline_option
@ttl_option
@session_option
@format_option
def claim(
    issue: str,
    description: str | None,
    remote: str | None,
    offline: bool,
    ttl: str | None,
    session: str | None,
    fmt: str,
) -> int:
    """Claim ISSUE for this session (exit 3 when another live session holds it, here or on
    the remote; exit 4, nothing claimed, when the remote cannot be reached)."""
    me = who(session)
    root = state_root()
    claims.issue_lock_name(issue)
    through, pending = choose_remote(remote, offline=offline)
    recover_worktrees()
    warn_short_lived(me)
    claims.preflight(me, root, issue)
    branch, worktree = claims.default_place(issue, None, root)
    done = claims.claim(
        issue,
        me,
        root=root,
        ttl=ttl_value(ttl),
        description=description,
        branch=branch,
        worktree=worktree,
        remote=through,
        pending_remote=pending,
    )
    _report_side_effects(me, done.published, done.lost, done.pending)
    if fmt == "json":
        emit_json(
            {
                "issue": issue,
                "session": me.session,
                "renewed": done.lock.renewed,
                "reclaimed": done.lock.reclaimed,
                "claim": done.claim,
                "lock": done.lock.record,
                "remote": _remote_json(done.remote),
                "published": done.published,
                "lost": done.lost,
            }
        )
        return 0
    lock = done.lock.record
    if done.lock.renewed:
        how = "already claimed by this session; renewed"
    elif done.lock.reclaimed:
        prev = done.lock.reclaimed["previous"]
        how = f"claimed (taken over from {done.lock.reclaimed['reason']} session {prev['owner']['session']})"
    else:
        how = "claimed"
    say(
        f"issue {issue} {how} by session {me.session} (token {lock['token']}, {_issue_view(done.claim)}, "
        f"expires {lock['expires_at']})"
    )
    if done.remote is not None:
        say(_remote_line(issue, done.remote))
    elif pending:
        click.echo(
            f"gitst: issue {issue} is claimed here only (--offline); the next `git st heartbeat` publishes it "
            f"on {pending}",
            err=True,
        )
    return 0


def _report_side_effects(
    me: Identity, published: list[str], lost: list[dict[str, Any]], retried: pending.Retry | None
) -> None:
    """stderr lines for what a command did besides its own job: claims taken before
    st.remote was set, now published (or lost to the session holding them there), and
    releases that could not reach the remote before (done now, or still pending)."""
    for name in published:
        say(f"gitst: published the claim on issue {name} (taken here before st.remote was set)", err=True)
    for item in lost:
        say(f"error: {_lost_text(item)}", err=True)
    if retried is not None:
        for line in retried.lines():
            say(f"gitst: {line}", err=True)
        for line in retried.warnings():
            say(line, err=True)


def _lost_text(lost: dict[str, Any]) -> str:
    owner = lost.get("owner") or {}
    holder = owner.get("session") or "nobody"
    if owner.get("host") and lost.get("remote"):
        holder += f" on host {owner['host']}"
    where = f" on {lost['remote']}" if lost.get("remote") else ""
    if lost.get("not_held"):
        return f"issue {lost['issue']} is not held by this session (held by {holder})"
    return f"lost the claim on issue {lost['issue']}{where} (now held by {holder})"


def _remote_json(got: remote_claims.RemoteAcquired | None) -> dict[str, Any] | None:
    if got is None:
        return None
    return {
        "name": got.remote,
        "ref": got.ref,
        "commit": got.commit,
        "outcome": got.outcome,
        "record": got.record,
        "previous": got.previous,
    }


def _remote_line(issue: str, got: remote_claims.RemoteAcquired) -> str:
    rec = got.record
    if got.outcome == "taken-over":
        prev = got.previous or {}
        why = "whose lease had ended"
        try:
            left = timestamps.parse(prev["expires_at"]) - timestamps.now()
            if claim_state(prev) == "dead" or left > 0:
                left_text = timestamps.human_delta(left).removeprefix("in ")
                why = f"whose process had ended, with {left_text} of its lease left"
        except (KeyError, TypeError, ValueError):
            pass
        how = (
            f"taken over on {got.remote} from session {prev.get('session')} on host {prev.get('host')} "
            f"(token {prev.get('token')}, {why})"
        )
    else:
        how = f"{got.outcome} on {got.remote}"
    return f"issue {issue} {how}: {got.ref} (fencing token {rec['token']}, expires {rec['expires_at']})"


@click.command("check-issue")
@click.argument("issue")
@session_option
@format_option
def check_issue(issue: str, session: str | None, fmt: str) -> int:
    """Exit 0 when ISSUE is free or ours, 1 when another live session holds it (here or, with
    st.remote, on the remote) or it has two owners (one here, another on the remote)."""
    me = who(session)
    root = state_root()
    issue = IssueId(issue)  # parsed here, once
    there = claims.remote_owner(issue, me, root=root, remote=claims.configured_remote())
    _report_remote_owner(me, there)
    remote, owner_there = there.remote, there.owner
    status = claims.inspect_issue(issue, me, root=root)
    owner_here = (status.owner or {}).get("session") if status.state in (claims.OURS, claims.TAKEN) else None
    two = owner_here is not None and owner_there is not None and owner_there.get("session") != owner_here
    taken_there = owner_there is not None and owner_there.get("session") != me.session
    if fmt == "json":
        data = status.to_dict()
        data["remote"] = None if remote is None else {"name": remote, "claim": owner_there}
        data["two_owners"] = two
        emit_json(data)
    elif two and owner_there is not None:
        say(
            f"issue {issue} has two owners: {status.describe() if status.state == claims.TAKEN else 'this session'} "
            f"here, and session {owner_there.get('session')} on host {owner_there.get('host')} on {remote} "
            f"({describe(owner_there)}); the remote's owner is the issue's owner",
            err=True,
        )
    else:
        say(_status_line(issue, status, me, remote, owner_there if taken_there else None))
    return 1 if status.state == claims.TAKEN or two or taken_there else 0


def _report_remote_owner(me: Identity, there: claims.RemoteOwner) -> None:
    """stderr lines for what asking the remote did (claims published, releases retried) and a
    warning when it could not be reached (the answer then comes from this clone's claims)."""
    if there.published is not None:
        _report_side_effects(me, there.published.remote_renewed, there.published.lost, there.retried)
    if there.unreachable is not None:
        say(f"warning: {there.unreachable}; answering from this clone's claims only", err=True)


def _status_line(
    issue: str, status: claims.IssueStatus, me: Identity, remote: str | None, owner_there: dict[str, Any] | None
) -> str:
    """Who holds ISSUE: ``owner_there``, another session's live claim on ``remote``, else
    the claim here."""
    if owner_there is not None:
        return (
            f"issue {issue} is claimed on {remote} by session {owner_there.get('session')} on host "
            f"{owner_there.get('host')} ({describe(owner_there)})"
        )
    if status.state == claims.FREE:
        return f"issue {issue} is free"
    if status.state == claims.OURS:
        return f"issue {issue} is claimed by this session ({me.session})"
    if status.state == claims.STALE_OWNER:
        return f"issue {issue} is free to claim: {status.describe()} is {status.lock_state}"
    return f"issue {issue} is claimed by {status.describe()}"


@click.command("release")
@click.argument("issue", required=False)
@session_option
def release(issue: str | None, session: str | None) -> int:
    """Release ISSUE (default: every claim of this session). A claim the remote could not be
    told about stays pending (exit 4) and is released by the next command that reaches it."""
    me = who(session)
    recover_worktrees()
    unreserved: list[str] = []
    if issue is None:  # the session's end: its path reservations go too
        done, unreserved = end_session(me, root=state_root(), cwd=None, say=say)
    else:
        done = claims.release(me, root=state_root(), issue=issue)
    retried: pending.Retry | None = done.pending
    for line in _release_lines(done, retried, me):
        say(line)
    for pattern in unreserved:
        say(f"released reservation {pattern}")
    for problem in done.remote_errors:
        say(f"error: {problem}", err=True)
    for line in retried.warnings() if retried is not None else []:
        say(line.replace("warning: ", "error: ", 1), err=True)
    return 4 if done.remote_errors or (retried is not None and retried.pending) else 0


def _release_lines(done: claims.Released, retried: pending.Retry | None, me: Identity) -> list[str]:
    """What a release did: the claims released (here, on the remote, pending ones now), those
    no longer held, or that there was nothing to release."""
    lines = [f"released issue {name}" for name in [*done.released, *done.remote_released]]
    lines += retried.lines() if retried is not None else []
    lines += _not_held_lines(done, retried)
    if not done.released and not done.not_held and not (retried and (retried.released or retried.pending)):
        lines.append(f"session {me.session} holds no claims")
    return lines


def _not_held_lines(done: claims.Released, retried: pending.Retry | None) -> list[str]:
    """The claims this session no longer held: lost to another session, or simply not held
    (those a pending release just settled are said by the retry's own lines)."""
    settled = {r["issue"] for r in (retried.released + retried.pending if retried else [])}
    lines = []
    for name in done.not_held:
        if name in done.lost:
            lines.append(f"issue {name} was not held by this session any more (lost to {done.lost[name]}); forgotten")
        elif name not in settled:
            lines.append(f"issue {name} was not held by this session")
    return lines


@click.command("heartbeat")
@click.argument("issues", nargs=-1, metavar="[ISSUE]...")
@ttl_option
@session_option
@format_option
def heartbeat(issues: tuple[str, ...], ttl: str | None, session: str | None, fmt: str) -> int:
    """Refresh this session's record and renew its locks. Exit 3 when a claim asked about
    was lost: the ISSUEs named, else the claims of the worktree you are in, else (outside
    any claimed worktree) every claim of the session. Other lost claims are warnings."""
    me = who(session)
    recover_worktrees()
    beat = claims.heartbeat(me, root=state_root(), ttl=ttl_given(ttl), issues=list(issues) or None)
    if fmt == "json":
        emit_json(
            {
                "session": me.session,
                "asked": beat.asked,
                "renewed": beat.renewed,
                "remote_renewed": beat.remote_renewed,
                "lost": beat.lost,
                "remote_errors": beat.remote_errors,
                "bad_remote": beat.bad_remote,
                "reservations_renewed": beat.reservations_renewed,
                "reservations_lost": beat.reservations_lost,
                "record": beat.record,
            }
        )
    else:
        if beat.renewed:
            say(f"session {me.session}: renewed {', '.join(beat.renewed)}")
        elif not beat.lost:
            say(f"session {me.session} holds nothing to renew")
        if beat.remote_renewed:
            say(f"session {me.session}: renewed issue {', issue '.join(beat.remote_renewed)}")
        if beat.reservations_renewed:
            say(f"session {me.session}: renewed reservations {', '.join(beat.reservations_renewed)} on the remote")
        for problem in beat.reservations_lost:
            say(f"error: lost a path reservation: {problem}", err=True)
        for lost in beat.lost:
            if lost.get("asked"):
                say(f"error: {_lost_text(lost)}", err=True)
            else:
                say(
                    f"warning: {_lost_text(lost)}; not a claim this heartbeat answers for "
                    f"(`git st heartbeat {lost['issue']}` asks about it, `git st release {lost['issue']}` forgets it)",
                    err=True,
                )
        for problem in beat.remote_errors + beat.bad_remote:
            say(f"error: {problem}", err=True)
    _report_side_effects(me, [], [], beat.pending)
    if beat.lost_asked or beat.reservations_lost:
        return 3
    if beat.remote_errors:
        return 4
    return 1 if beat.bad_remote else 0


@click.command("sessions")
@click.option("--gc", "collect", is_flag=True, help="Clean up instead of listing: the same as `git st gc`.")
@click.option("--dry-run", is_flag=True, help="With --gc: only say what would be cleaned.")
@remote_option(help="List the claims on this git remote instead (refs/st/claims/*; default st.remote, else origin).")
@session_option
@format_option
def sessions_(collect: bool, dry_run: bool, remote: str | None, session: str | None, fmt: str) -> int:
    """List sessions with their claims: live, stale (TTL passed) or dead (pid gone).

    With --remote: the claims on the git remote, from every machine. With --gc: release
    expired or dead leases, drop the records of stale or dead sessions that hold nothing and
    delete stray temp files (`git st gc`)."""
    if remote is not None:
        if collect:
            raise UsageError("--remote and --gc go separately")
        return remote_sessions(remote, session, fmt)
    if collect:
        return run_gc(dry_run, fmt)
    if dry_run:
        raise UsageError("--dry-run goes with --gc")
    me = who(session)
    views = claims.list_sessions(state_root(), me)
    bad = [v.problem for v in views if v.problem is not None]
    if fmt == "json":
        emit_json({"sessions": [v.to_dict() for v in views]})
    elif views:
        rows = [_session_row(v) for v in views]
        say(table(rows, ["SESSION", "STATE", "PID", "HOST", "HEARTBEAT", "CLAIMS (issue@branch)"]))
    else:
        say("no sessions")
    return report_corrupt(bad)


def _session_row(v: SessionView) -> list[str]:
    rec = v.record or {}
    held = ", ".join(f"{c['issue']}@{c.get('branch') or '-'}" for c in rec.get("claims", [])) or "-"
    beat = (
        timestamps.human_delta(timestamps.parse(rec["heartbeat_at"]) - timestamps.now())
        if rec.get("heartbeat_at")
        else "-"
    )
    return [
        v.session + (" *" if v.current else ""),
        v.state,
        str(rec.get("pid", "-")),
        str(rec.get("host", "-")),
        beat,
        held,
    ]


sessions = sessions_


def remote_claims_rows(views: list[remote_claims.RemoteClaimView], me: Identity | None) -> list[list[str]]:
    rows = []
    for v in views:
        rec = v.record or {}
        mine = me is not None and rec.get("session") == me.session
        rows.append(
            [
                v.issue,
                v.state,
                str(rec.get("session", "-")) + (" *" if mine else ""),
                str(rec.get("host", "-")),
                str(rec.get("token", "-")),
                str(rec.get("branch") or "-"),
                _lease_text(rec, v.state) if v.record else (v.problem or "-"),
            ]
        )
    return rows


def _lease_text(record: dict[str, Any], state: str) -> str:
    number = held_by_pr(record)
    held = f"held by PR #{number}, " if number is not None else ""
    return held + remote_claims.expiry_text(record, state)


REMOTE_HEADERS = ["ISSUE", "STATE", "SESSION", "HOST", "TOKEN", "BRANCH", "LEASE"]


def remote_sessions(option: str, session: str | None, fmt: str) -> int:
    """`git st sessions --remote`: every claim on the remote, whichever machine took it."""
    name, _ = choose_remote(option)
    recover_worktrees()
    assert name is not None  # noqa: S101 - choose_remote gives origin for a bare --remote
    me = who(session)
    pending.retry(state_root(), remotes={name})  # releases that could not reach it before
    views = remote_claims.list_claims(name)
    if fmt == "json":
        emit_json({"remote": name, "claims": [v.to_dict() for v in views]})
    elif views:
        say(table(remote_claims_rows(views, me), REMOTE_HEADERS))
    else:
        say(f"no claims on {name}")
    return 1 if any(v.state == "corrupt" for v in views) else 0
