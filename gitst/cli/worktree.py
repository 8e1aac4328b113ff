"""`git st worktree add|list|remove|prune|setup` and `git st trust` (docs/parallel.md)."""

from __future__ import annotations

import click

from gitst.cli._parallel import format_option, session_option, table, ttl_option, ttl_value, who
from gitst.cli.output import emit_json, say


@click.group("worktree")
def worktree():
    """One issue, one worktree, one live owner.

    `add` claims the issue, creates its branch and linked worktree from the templates
    (git config st.worktree.branch / st.worktree.path), registers and locks it, copies the
    untracked files named by st.worktree.copy and runs the trusted .gitst/worktree-setup.
    """


@worktree.command("add")
@click.argument("issue")
@click.option("--branch", metavar="BRANCH", help="Branch name (default: the st.worktree.branch template).")
@click.option("--base", metavar="REV", help="Start a new branch here (default: HEAD).")
@click.option("--path", "path", metavar="PATH", help="Worktree directory (default: the st.worktree.path template).")
@click.option("--desc", "description", metavar="TEXT", help="Description recorded with the claim.")
@click.option("--print-path", is_flag=True, help="Print only the worktree's path on stdout.")
@ttl_option
@session_option
def add(issue, branch, base, path, description, print_path, ttl, session):
    """Claim ISSUE and create (or reuse) its worktree; prints the path last."""
    from gitst.worktrees import manager as worktrees

    me = who(session)
    tell = (lambda text: say(text, err=True)) if print_path else say
    result = worktrees.add(
        issue, me, branch=branch, base=base, path=path, description=description, ttl=ttl_value(ttl), say=tell
    )
    click.echo(result.path)
    command = (result.setup or {}).get("command") or {}
    if command.get("status") == "failed":
        say(
            f"error: the worktree was created but its setup script failed (exit {command.get('exit_code')}); "
            f"fix it and run `git st worktree setup {issue}`",
            err=True,
        )
        return 1
    return 0


@worktree.command("list")
@session_option
@format_option
def list_(session, fmt):
    """The registry joined with `git worktree list`: active, stale, orphaned, unregistered."""
    from gitst.worktrees import manager as worktrees

    me = who(session)
    rows = worktrees.list_rows(None, me)
    if fmt == "json":
        emit_json({"worktrees": [r.to_dict() for r in rows]})
    elif rows:
        out = [
            [
                r.issue or "-",
                r.state,
                r.branch or "-",
                (r.session or "-") + (" *" if r.current else ""),
                r.path,
                r.reason or "",
            ]
            for r in rows
        ]
        say(table(out, ["ISSUE", "STATE", "BRANCH", "SESSION", "PATH", "WHY"]))
    else:
        say("no worktrees")
    for r in rows:
        if r.state == worktrees.CORRUPT and r.code is not None:  # (a corrupt row always has its code)
            from gitst.core.diagnostics import Diagnostic

            say(Diagnostic(r.path, None, r.code, "; ".join(r.errors)).to_text(), err=True)
    return 1 if any(r.state == worktrees.CORRUPT for r in rows) else 0


@worktree.command("remove")
@click.argument("issue")
@click.option("--force", is_flag=True, help="Remove even with uncommitted changes or commits found nowhere else.")
@session_option
def remove(issue, force, session):
    """Remove ISSUE's worktree, its registry entry and the claim (the branch is kept)."""
    from gitst.worktrees import manager as worktrees

    me = who(session)
    worktrees.remove(issue, me, force=force, say=say)
    return 0


@worktree.command("prune")
@click.option("--dry-run", is_flag=True, help="Only say what would be done.")
@format_option
def prune(dry_run, fmt):
    """Drop entries whose directory is gone, release expired locks, `git worktree prune`."""
    from gitst.worktrees import manager as worktrees

    report = worktrees.prune(None, dry_run=dry_run)
    if fmt == "json":
        emit_json(report.to_dict())
        return 0
    would = "would " if dry_run else ""
    for entry in report.dropped_entries:
        say(f"{would}drop the entry of issue {entry['issue']} ({entry['path']} is gone)")
    for entry in report.released_locks:
        say(
            f"{would}release lock {entry['resource']} ({entry['reason']}; "
            f"session {entry['previous']['owner']['session']})"
        )
    for name in report.dropped_sessions:
        say(f"{would}drop the record of session {name}")
    for line in report.git:
        say(f"git: {line}")
    if not (report.dropped_entries or report.released_locks or report.dropped_sessions or report.git):
        say("nothing to prune")
    return 0


@worktree.command("setup")
@click.argument("issue")
@session_option
def setup(issue, session):
    """Run the setup of ISSUE's worktree again (copy files, trusted setup script)."""
    from gitst.worktrees import manager as worktrees

    me = who(session)
    result = worktrees.setup(issue, me, say=say)
    status = result["command"]["status"]
    say(f"setup of issue {issue}: copied {len(result['copied'])} file(s); setup script: {status}")
    return 1 if status == "failed" else 0


@click.command("trust")
@click.option("--rev", default="HEAD", show_default=True, help="Trust the script as committed at this revision.")
@click.option("--show", is_flag=True, help="Only show whether the script is trusted (exit 1 when not).")
@click.option("--revoke", is_flag=True, help="Stop trusting the script at --rev.")
@format_option
def trust(rev, show, revoke, fmt):
    """Trust the committed worktree setup script (.gitst/worktree-setup) at --rev.

    Records the script's SHA-256 in the local git config (st.worktree.trusted). New
    worktrees run it only while its content matches a trusted hash: any change makes it
    untrusted again. Read it first: git show HEAD:.gitst/worktree-setup
    """
    from gitst.worktrees import setup as worktree_setup

    if show and revoke:
        from gitst.core.errors import UsageError

        raise UsageError("--show and --revoke exclude each other")
    if show:
        info = worktree_setup.trust_info(None, rev)
        if fmt == "json":
            emit_json(info)
        elif info["sha256"] is None:
            say(f"no {info['file']} committed at {rev}")
        else:
            say(f"{info['file']} at {rev} (sha256 {info['sha256']}): {info['state']}")
            if info["working_copy_differs"]:
                say("note: your working copy differs from the committed script")
        return 0 if info["state"] in ("trusted", "absent") else 1
    if revoke:
        info = worktree_setup.revoke(None, rev)
        if fmt == "json":
            emit_json(info)
        else:
            say(
                f"{'revoked' if info['was_trusted'] else 'was not trusted'}: {info['file']} at {rev} "
                f"(sha256 {info['sha256']})"
            )
        return 0
    info = worktree_setup.trust(None, rev)
    if fmt == "json":
        emit_json(info)
        return 0
    say(
        f"{'already trusted' if info['already'] else 'trusted'}: {info['file']} at {rev} "
        f"(sha256 {info['sha256']}); new worktrees will run it"
    )
    if info["working_copy_differs"]:
        say(
            f"note: your working copy of {info['file']} differs from {rev}; only the committed content is trusted",
            err=True,
        )
    return 0
