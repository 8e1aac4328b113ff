"""`git st sync [BASE]` and `git st ci-template github`: PRs that stay mergeable on a git host
that runs no merge driver (docs/hooks.md, "Keeping PRs mergeable")."""

from __future__ import annotations

import click

from gitst.cli._parallel import format_option, recover_worktrees
from gitst.cli.output import emit_json, say
from gitst.plan.ci_template import install_spec, render
from gitst.plan.sync import SyncResult
from gitst.plan.sync import sync as run_sync


@click.command("sync")
@click.argument("base", required=False)
@click.option(
    "--remote",
    "remote",
    metavar="NAME",
    help="The remote to fetch BASE from and push to (default st.remote, else origin).",
)
@click.option("--rebase", is_flag=True, help="Rebase the branch onto BASE instead of merging BASE into it.")
@click.option("--push", is_flag=True, help="Push the branch afterwards (with a lease on the commit it was before).")
@click.option(
    "--plan-conflicts-only",
    is_flag=True,
    help="Do nothing unless a host's merge would conflict, and then only in plan files (what CI runs).",
)
@format_option
def sync(base: str | None, remote: str | None, rebase: bool, push: bool, plan_conflicts_only: bool, fmt: str) -> int:
    """Merge BASE (default st.sync.base, else main) from the remote into the current branch
    with the plan merge driver, so that a git host's own merge of the branch is clean.

    Nothing is pushed unless --push. Exit 3, nothing written, when the branch conflicts with
    BASE outside the plan files."""
    recover_worktrees()
    result = run_sync(base, remote_name=remote, rebase=rebase, push=push, plan_conflicts_only=plan_conflicts_only)
    if fmt == "json":
        emit_json(result.to_dict())
        return 0
    say(_sync_line(result))
    for moved in result.renumbered:  # the driver's own lines: which of this branch's ids moved
        say(moved)
    return 0


def _sync_line(result: SyncResult) -> str:
    """What the sync did, in one line."""
    upstream = f"{result.remote}/{result.base}"
    if result.action == "up-to-date":
        line = f"{result.branch} already contains {upstream}"
    elif result.action == "clean":
        line = f"{result.branch} merges cleanly with {upstream} as it is: nothing to do"
    else:
        how = "merged " + upstream + " into it" if result.action == "merged" else "rebased it onto " + upstream
        line = f"{result.branch}: {how} with the plan merge driver"
        if result.conflicts:
            line += f" (a host would have found conflicts in {', '.join(result.conflicts)})"
    if result.pushed:
        line += f"; pushed to {result.remote}"
    elif result.action in ("merged", "rebased"):
        line += "; not pushed (git push, or sync --push)"
    return line


@click.command("ci-template")
@click.argument("host", type=click.Choice(["github"]))
@click.option(
    "--install",
    "install",
    metavar="SPEC",
    help="What CI installs gitst from: one pip requirement pinned to a commit, e.g. "
    "'git+https://github.com/OWNER/gitst@<commit>' (default: st.ci.install, else where this gitst "
    "was installed from when CI can reach it).",
)
def ci_template(host: str, install: str | None) -> int:
    """Print a CI workflow that keeps open PRs mergeable when the base branch moves
    (`git st ci-template github --install SPEC > .github/workflows/gitst-sync.yml`).

    Exit 2, nothing printed, when it cannot tell where CI should install gitst from: there is
    no release on a package index, and a bare package name could be anyone's."""
    spec, source = install_spec(install)
    click.echo(render(host, spec), nl=False)
    if source != "--install":
        say(f"gitst is installed in CI from {spec} ({source})", err=True)
    return 0
