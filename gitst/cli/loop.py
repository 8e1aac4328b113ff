"""`git st next` and `git st land`: the agent loop (docs/agent-loop.md)."""

from __future__ import annotations

from typing import Any

import click

from gitst.cli._parallel import (
    format_option,
    offline_option,
    recover_worktrees,
    remote_option,
    session_option,
    ttl_option,
    ttl_value,
    warn_short_lived,
    who,
)
from gitst.cli.output import emit_json, say
from gitst.loop import take as taking
from gitst.loop import wait as waiting
from gitst.sessions.remote_claims import choose_remote
from gitst.settings import parse_seconds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitst.loop.land import Landed
    from gitst.loop.pr import PullRequest


@click.command("next")
@click.option("--id", "item_id", metavar="ID", help="Take this item only (exit 2 when it is closed or held).")
@click.option("--label", metavar="LABEL", help="Only items whose `labels` list holds LABEL.")
@click.option("--match", metavar="TEXT", help="Only items whose id, step or notes hold TEXT (any case).")
@click.option(
    "--wait",
    "wait",
    is_flag=False,
    flag_value="600",
    default=None,
    metavar="[SECONDS]",
    help="While no item can be taken yet (exit 3), keep trying with backoff for SECONDS (600 when "
    "given alone); exit 3 only after that. A try that fails on the remote or in git is tried again, "
    "3 times in a row at most.",
)
@remote_option
@offline_option
@ttl_option
@session_option
@format_option
def next_(
    item_id: str | None,
    label: str | None,
    match: str | None,
    wait: str | None,
    remote: str | None,
    offline: bool,
    ttl: str | None,
    session: str | None,
    fmt: str,
) -> int:
    """Take the next ready item of the plan on the base branch: claim it (through st.remote
    when set), create or resume its worktree, mark it in_progress there.

    Exit 0 took an item (its path is printed last; --format json for agents); 1 nothing left
    to take; 3 ready items are all held by live sessions or wait on dependencies (try again
    later; or --wait); 2 --id names an item that is completed, canceled or held; 4 the remote cannot be
    reached (nothing claimed)."""
    through, _pending = choose_remote(remote, offline=offline)
    me = who(session)
    recover_worktrees()
    warn_short_lived(me)
    filters = taking.Filters(item_id=item_id, label=label, match=match)
    tell = (lambda text: say(text, err=True)) if fmt == "json" else say
    seconds = 0.0 if wait is None else parse_seconds(wait, "--wait")
    try:
        taken, waited = waiting.take_waiting(
            me, remote=through, filters=filters, ttl=ttl_value(ttl), wait=seconds, say=tell
        )
    except taking.NothingToTake as nothing:
        if fmt == "json":
            emit_json(nothing.to_dict())
        say(nothing.render(), err=True)
        return nothing.exit_code
    if fmt == "json":
        emit_json({**taken.to_dict(), **waited.to_dict()})
        return 0
    _say_taken(taken)
    return 0


def _say_taken(taken: taking.Taken) -> None:
    item: dict[str, Any] = taken.item
    how = "resumed" if taken.resumed else "took"
    token = f"token {taken.token}" + (f", remote token {taken.remote_token}" if taken.remote_token else "")
    say(f"{how} {item['id']}: {item.get('step') or ''}")
    say(f"  branch {taken.branch} (from {taken.base.shown} at {taken.base.tip[:12]}; {token})")
    for passed in taken.passed:
        say(f"  passed over {passed['id']}: {passed['why']}", err=True)
    say(taken.path)


@click.command("land")
@click.option(
    "--wait",
    "wait",
    metavar="SECONDS",
    default="600",
    show_default=True,
    help="How long to wait for the merge slot before giving up (exit 3; run land again to resume).",
)
@click.option(
    "--pr/--push",
    "through_pr",
    default=None,
    help="Land through a pull request with gh (--pr), or by a fast-forward push (--push); "
    "default: st.land.mode (push).",
)
@remote_option(help="The remote whose base branch to land on (default st.remote, else origin).")
@session_option
@format_option
def land(wait: str, through_pr: bool | None, remote: str | None, session: str | None, fmt: str) -> int:
    """Land this worktree's item on the base branch: mark it completed, sync with the base,
    run the checks (st.land.check and the plan's doctor), push through the merge slot (waiting
    in line for it), release the claim and remove the worktree. Without st.remote the slot is
    a local lease and the local base is fast-forwarded. Prints the main worktree's path last.

    Exit 0 landed (or had landed: a land killed midway is finished); 1 a check failed; 2 not
    in an item's worktree, uncommitted changes; 3 a code conflict with the base
    (files named; nothing pushed), the item is another session's, the slot stayed busy, its PR
    was closed unmerged (the item given back) or GitHub would not merge it now; 4 the remote
    cannot be reached, gh is missing, not authenticated or failing. With --pr an open PR
    (merged later by GitHub) is exit 0 with "landed": false: land again there to finish."""
    from gitst.loop import land as landing  # lazy: `next` (a measured hot path) shares this module, needs none of it

    through, _pending = choose_remote(remote)
    me = who(session)
    recover_worktrees()
    tell = (lambda text: say(text, err=True)) if fmt == "json" else say
    route = None if through_pr is None else ("pr" if through_pr else "push")
    landed = landing.land(me, remote_name=through, wait=parse_seconds(wait, "--wait"), say=tell, route=route)
    code = 3 if landed.given_back else 0
    if fmt == "json":
        emit_json(landed.to_dict())
        return code
    if landed.pr is not None and not landed.on_base:
        _say_pr(landed, landed.pr)
        return code
    how = "was already on" if landed.already else "landed on"
    through = f" through PR #{landed.pr.number}" if landed.pr is not None else ""
    say(f"{landed.item} {how} {landed.base}{through} at {landed.commit[:12]} (branch {landed.branch})")
    if landed.removed:
        say(f"  removed its worktree {landed.worktree}")
    say(landed.main_worktree)
    return 0


def _say_pr(landed: Landed, pr: PullRequest) -> None:
    """An open PR (merged later, or by a person) or one closed unmerged (the item given back)."""
    if landed.given_back:
        say(f"{landed.item}: PR #{pr.number} was closed without merging; the item is given back")
    else:
        say(f"{landed.item}: PR #{pr.number} is open ({landed.pr_merge} merge): {pr.url}")
        say(f"  the claim and the worktree stay until it is merged; `git st land` in {landed.worktree} then finishes")
    say(landed.main_worktree)
