"""`git st worktree add|list|remove|prune|setup` and `git st trust` (docs/parallel.md)."""

from __future__ import annotations

import shlex
from collections.abc import Callable

import click

from gitst.cli._parallel import (
    echo_lines,
    format_option,
    offline_option,
    recover_worktrees,
    remote_option,
    session_option,
    state_root,
    table,
    ttl_option,
    ttl_value,
    warn_short_lived,
    who,
)
from gitst.cli.gc import remote_warnings, render_gc
from gitst.cli.output import emit_json, say
from gitst.core.diagnostics import Diagnostic
from gitst.core.errors import UsageError
from gitst.sessions.pending import list_pending, warning
from gitst.sessions.remote_claims import choose_remote
from gitst.worktrees import manager as worktrees
from gitst.worktrees import removal


@click.group("worktree")
def worktree() -> None:
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
@click.option(
    "--print-env",
    is_flag=True,
    help="Print only ST_ISSUE, ST_BRANCH, ST_WORKTREE and the port block (ST_PORT, ST_PORT_LAST, "
    "ST_PORT_COUNT) on stdout, one NAME=value line each.",
)
@remote_option
@offline_option
@ttl_option
@session_option
def add(
    issue: str,
    branch: str | None,
    base: str | None,
    path: str | None,
    description: str | None,
    print_path: bool,
    print_env: bool,
    remote: str | None,
    offline: bool,
    ttl: str | None,
    session: str | None,
) -> int:
    """Claim ISSUE and create (or reuse) its worktree; prints the path last.

    The worktree gets a free port block from st.worktree.ports (default 3100-3999/10; off
    turns it off), which its setup script sees as ST_PORT..ST_PORT_LAST and which is freed
    with the claim. An add that was interrupted is finished or undone first.
    """
    if print_path and print_env:
        raise UsageError("--print-path and --print-env exclude each other")
    through, pending = choose_remote(remote, offline=offline)
    me = who(session)
    warn_short_lived(me)
    tell: Callable[[str], None] = (lambda text: say(text, err=True)) if print_path or print_env else say
    result = worktrees.add(
        issue,
        me,
        branch=branch,
        base=base,
        path=path,
        description=description,
        ttl=ttl_value(ttl),
        remote=through,
        pending_remote=pending,
        say=tell,
    )
    if print_env:
        for name, value in result.env().items():
            click.echo(f"{name}={shlex.quote(value)}")
    else:
        say(result.path)  # a path holding control characters is shown escaped, never raw
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
def list_(session: str | None, fmt: str) -> int:
    """The registry joined with `git worktree list`: active, stale, orphaned, unregistered."""
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
            say(Diagnostic(r.path, None, r.code, "; ".join(r.errors)).to_text(), err=True)
    return 1 if any(r.state == worktrees.CORRUPT for r in rows) else 0


@worktree.command("remove")
@click.argument("issue")
@click.option("--force", is_flag=True, help="Remove even with uncommitted changes or commits found nowhere else.")
@click.option(
    "--delete-branch",
    is_flag=True,
    help="Delete the branch too when it is merged into its base (any branch with --force).",
)
@session_option
def remove(issue: str, force: bool, delete_branch: bool, session: str | None) -> int:
    """Remove ISSUE's worktree, its registry entry and the claim (the branch is kept unless
    --delete-branch). Files gitst copied in and that are unchanged are not your work."""
    me = who(session)
    recover_worktrees()
    removal.remove(issue, me, force=force, delete_branch=delete_branch, say=say)
    return _pending_release_warnings({issue})


def _pending_release_warnings(issues: set[str] | None) -> int:
    """Warn about each claim whose release could not reach the remote (``issues``' only when
    given): 4 when there is one, else 0."""
    found = [r for r in list_pending(state_root())[0] if issues is None or r["issue"] in issues]
    for record in found:
        say(warning(record), err=True)
    return 4 if found else 0


@worktree.command("clean")
@click.option("--merged", is_flag=True, help="Only worktrees whose branch is merged into its base.")
@click.option("--force", is_flag=True, help="Remove them even with uncommitted changes.")
@click.option("--delete-branch", is_flag=True, help="Delete the branches that are merged, too.")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed and kept.")
@session_option
@format_option
def clean(merged: bool, force: bool, delete_branch: bool, dry_run: bool, session: str | None, fmt: str) -> int:
    """Remove every worktree whose owner is gone (released, dead, or an expired lease with no
    process left) and that holds nothing found only there; with --merged, every one whose
    branch is merged into its base. Never a live session's; never a dirty one without
    --force. Says what it removed and what it kept, and why."""
    me = who(session)
    if not dry_run:
        recover_worktrees()
    report = removal.clean(me, merged=merged, force=force, delete_branch=delete_branch, dry_run=dry_run)
    if fmt == "json":
        emit_json(report.to_dict())
        return 0
    verb = "would remove" if dry_run else "removed"
    for item in report.removed:
        tail = f"; deleted branch {item['deleted_branch']}" if item.get("deleted_branch") else ""
        say(f"{verb} issue {item['issue']}: {item['path']} ({item['why']}){tail}")
    for item in report.kept:
        say(f"kept issue {item['issue']}: {item['path']} ({item['why']})")
    if not report.removed and not report.kept:
        click.echo("no registered worktrees")
    return _pending_release_warnings({item["issue"] for item in report.removed}) if not dry_run else 0


@worktree.command("prune")
@click.option("--dry-run", is_flag=True, help="Only say what would be done.")
@format_option
def prune(dry_run: bool, fmt: str) -> int:
    """Finish or undo interrupted adds and removes, drop entries whose directory is gone,
    release expired locks, drop dead sessions, delete stray temp files, `git worktree prune`."""
    report = removal.prune(None, dry_run=dry_run)
    if fmt == "json":
        emit_json(report.to_dict())
        return 0
    done = {
        "finished-remove": ("finished", "would finish", "the interrupted removal of"),
        "finished-add": ("finished", "would finish", "the interrupted add of"),
        "undid-add": ("undid", "would undo", "the interrupted add of"),
    }
    lines = []
    for item in report.repaired:
        past, future, what = done[item["action"]]
        lines.append(f"{future if dry_run else past} {what} issue {item['issue']} ({item['path']})")
    for entry in report.dropped_entries:
        verb = "would drop" if dry_run else "dropped"
        lines.append(f"{verb} the entry of issue {entry['issue']} ({entry['path']} is gone)")
    lines += render_gc(report.gc)
    lines += [f"git: {line}" for line in report.git]
    for item in report.unregistered:
        lines.append(
            f"note: {item['path']} (branch {item['branch']}) is not registered; "
            f"`git st worktree add {item['issue']}` adopts it"
        )
    echo_lines(lines, "nothing to prune")
    for line in remote_warnings(report.gc):
        say(line, err=True)
    return 4 if report.gc.remote_pending and not dry_run else 0


@worktree.command("setup")
@click.argument("issue")
@session_option
def setup(issue: str, session: str | None) -> int:
    """Run the setup of ISSUE's worktree again (copy files, trusted setup script)."""
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
def trust(rev: str, show: bool, revoke: bool, fmt: str) -> int:
    """Trust the committed worktree setup script (.gitst/worktree-setup) at --rev.

    Records the script's SHA-256 in the local git config (st.worktree.trusted). New
    worktrees run it only while its content matches a trusted hash: any change makes it
    untrusted again. Read it first: git show HEAD:.gitst/worktree-setup
    """
    from gitst.worktrees import setup as worktree_setup  # lazy: `trust` only (subprocess, shutil, hashlib)

    if show and revoke:
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
