"""`git st hooks install|uninstall|status`, `git st hook NAME`, `git st merge-driver`.

Parsing and rendering only: the work is in :mod:`gitst.hooks` and :mod:`gitst.plan.merge`.
`git st hook …` normally never reaches click (main.py dispatches it to
:func:`gitst.hooks.entry.run_hook` first); the click command exists for ``--help``. Nor does
git's plain `git st merge-driver %O %A %B %P` (:mod:`gitst.cli.merge_fast`, the body both run).
"""

from __future__ import annotations

from typing import Any

import click

from gitst.cli import merge_fast
from gitst.cli.output import emit_json, say
from gitst.hooks.entry import run_hook
from gitst.hooks.install import HOOK_NAMES, Report, install, status, uninstall


def _print_report(report: Report) -> None:
    where = f"hooks dir: {report.hooks_dir}"
    if report.core_hooks_path:
        where += f" (core.hooksPath = {report.core_hooks_path})"
    say(where)
    for line in report.lines:
        say(f"  {line}")
    for warning in report.warnings:
        say(f"warning: {warning}", err=True)


@click.group("hooks")
def hooks() -> None:
    """Install, uninstall or inspect gitst's git hooks.

    The hooks go where git really looks for them (core.hooksPath honoured; one install
    serves every linked worktree). A hook already there is kept as <hook>.pre-gitst and
    run first; `uninstall` puts it back byte for byte.
    """


_hook_option = click.option(
    "--hook",
    "names",
    multiple=True,
    type=click.Choice(HOOK_NAMES),
    help="Only this hook (repeatable). Default: all of them.",
)


@hooks.command("install")
@_hook_option
@click.option("--no-merge-driver", is_flag=True, help="Do not set up the plan merge driver (config + .gitattributes).")
def install_cmd(names: tuple[str, ...], no_merge_driver: bool) -> int:
    """Install the hook shims and the plan merge driver."""
    report = install(None, list(names) or None, merge_driver=not no_merge_driver)
    _print_report(report)
    return 0


@hooks.command("uninstall")
@_hook_option
def uninstall_cmd(names: tuple[str, ...]) -> int:
    """Remove gitst's hooks and put back the hooks they replaced."""
    report = uninstall(None, list(names) or None)
    _print_report(report)
    return 0


@hooks.command("status")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def status_cmd(fmt: str) -> int:
    """Show per hook whether it is ours, chained, foreign or missing."""
    data = status(None)
    if fmt == "json":
        emit_json(data)
        return 0
    where = f"hooks dir: {data['hooks_dir']}"
    if data["core_hooks_path"]:
        where += f" (core.hooksPath = {data['core_hooks_path']})"
    say(where)
    for hook in data["hooks"]:
        say(_hook_line(hook))
    md = data["merge_driver"]
    text = f"configured ({md['driver']})" if md["driver"] else "not configured (`git st hooks install` sets it up)"
    text += "; plan files " + ("use it" if md["plan_attribute"] else "do not use it (no merge=gitst-plan attribute)")
    say(f"merge driver: {text}")
    say(f"git-st on PATH: {data['git_st'] or 'no (the hooks will warn and let git go on)'}")
    say(f"st.hooksRequired: {str(data['hooks_required']).lower()}   st.autoRepair: {str(data['auto_repair']).lower()}")
    return 0


def _hook_line(hook: dict[str, Any]) -> str:
    """One hook's line of `hooks status`: its state, then what to know about it."""
    detail = []
    if hook["state"] == "chained":
        detail.append(f"runs {hook['name']}.pre-gitst first")
    elif hook["state"] == "foreign":
        detail.append("not gitst's; `git st hooks install` keeps it and runs it first")
    if hook["outdated"]:
        detail.append("outdated: run `git st hooks install`")
    detail.extend(hook["notes"])
    suffix = f"  ({'; '.join(detail)})" if detail else ""
    return f"  {hook['name']:<14} {hook['state']}{suffix}"


@click.command("hook", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(name: str, args: tuple[str, ...]) -> int:
    """Run one hook (the shims call this; so can you).

    NAME is a git hook (pre-commit, pre-push, post-merge, post-rewrite, post-checkout) or a
    pre-commit framework entry (validate FILES..., plan-append-only FILES...). ARGS are
    what git passes the hook.
    """
    return run_hook([name, *args])


@click.command("merge-driver")
@click.option(
    "--published",
    "published",
    multiple=True,
    metavar="REF",
    help="The published branch whose plan ids never change (default: st.sync.base on the remote, then locally).",
)
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False))
@click.argument("theirs", type=click.Path(dir_okay=False))
@click.argument("path", required=False, default=None)
def merge_driver(published: tuple[str, ...], base: str, ours: str, theirs: str, path: str | None) -> int:
    """Merge driver for plan files: git runs it as `git-st merge-driver %O %A %B %P`.

    Keeps the published side byte for byte (ours, unless theirs is on the published branch and
    ours is not: `git merge main` on a PR branch), appends the other side's new records
    re-sequenced after its seq watermark, then a checkpoint; the result is written to OURS
    (%A). Ids on the published branch never change. A contradictory
    merge (both sides set the same field of an item differently) exits 1 naming the item
    and fields, leaving OURS untouched and the file conflicted for you to resolve.
    """
    return merge_fast.merge_driver(published, base, ours, theirs, path)
