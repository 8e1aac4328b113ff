"""The PR route of ``git st land`` (``st.land.mode = pr``, ``land --pr``; docs/agent-loop.md).

GitHub, through the one ``gh`` runner (:mod:`gitst.pipeline.gh`): the open PR of the item's
branch found (``gh pr list --head BRANCH --state all --json …``) or created (``gh pr
create``), merged per ``st.land.prMerge`` (``gh pr merge [--auto] --merge|--squash|--rebase
--match-head-commit SHA``) and read back (``gh pr view N --json …``). ``--head`` matches a
fork's PR from a branch of the same name too: a PR whose head is another repository's
(``isCrossRepository``) is never this landing's, and GitHub merges only the commit this
landing pushed. The branch is pushed with a lease on its tip on the
remote. The PR the worktree opened is remembered in its registry entry
(``active-worktrees/<item>.json``, field ``pr``), so a later ``land`` knows that a CLOSED PR
was *this* landing's (the item is given back) and not an older attempt's.

Titles and bodies come from the plan (untrusted text): sanitized, one line for the title,
passed as ``--title=…`` arguments, never through a shell. Every way ``gh`` fails is one
:class:`GhFailed` (exit 4) with the fix; a PR that cannot be merged *now* is exit 3.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import ConflictError, EnvironmentProblem, ProblemsFound
from gitst.core.terminal import sanitize
from gitst.core.values import value_class
from gitst.git import objects, remote
from gitst.git.history import is_ancestor
from gitst.pipeline.gh import GhUnavailable, gh_json, gh_text, is_pr_number
from gitst.sessions import claims, registry, remote_claims, remote_holds
from gitst.sessions.identity import Identity

__all__ = [
    "CLOSED",
    "MERGED",
    "OPEN",
    "GhFailed",
    "PullRequest",
    "body_of",
    "create",
    "delete_branch",
    "end_hold",
    "find",
    "forget",
    "hold",
    "merge",
    "push_branch",
    "remember",
    "remembered",
    "title_of",
    "view",
]

PathLike = str | os.PathLike[str] | None
Say = Callable[[str], None]

OPEN, MERGED, CLOSED = "OPEN", "MERGED", "CLOSED"
FIELDS = "number,url,state,headRefName,headRefOid,mergedAt,isCrossRepository"
TITLE_MAX = 200  # GitHub takes 256; room for the id
BODY_MAX = 60_000  # GitHub takes 65,536
_PULL_URL = re.compile(r"https?://\S+/pull/([0-9]{1,18})\b")


class GhFailed(EnvironmentProblem):
    """``gh`` missing, not authenticated, or failing (exit 4): nothing half-done that the next
    ``land`` cannot finish."""


@value_class(frozen=True)
class PullRequest:
    number: int
    url: str
    state: str  # OPEN, MERGED, CLOSED
    head: str = ""  # headRefName
    head_oid: str = ""
    merged_at: str | None = None
    # the head is another repository's (a fork's): never a PR gitst opened. Unknown (a gh that
    # did not say) counts as another's.
    cross: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "url": self.url, "state": self.state, "merged_at": self.merged_at}


def _fix(reason: str) -> str:
    if "not installed" in reason or "not executable" in reason:
        return "install the GitHub CLI (https://cli.github.com), or land with `git st land --push`"
    if "not authenticated" in reason:
        return "`gh auth login` (or set GH_TOKEN), then `git st land` again: it resumes"
    if "unknown json field" in reason.lower() or "unknown flag" in reason.lower():
        return (
            "update the GitHub CLI (https://cli.github.com): land asks it for isCrossRepository and "
            "--match-head-commit; then `git st land` again: it resumes"
        )
    return "check that `gh pr list` works in this repository, then `git st land` again: it resumes"


def _failed(doing: str, gone: GhUnavailable) -> GhFailed:
    return GhFailed(f"{doing}: {sanitize(gone.reason)}", fix=_fix(gone.reason))


def _pr(raw: object) -> PullRequest | None:
    """A PR as gh prints it; None for a row that is not one (a broken or hostile gh)."""
    if not isinstance(raw, dict) or not is_pr_number(raw.get("number")):
        return None
    state = str(raw.get("state") or "").upper()
    if state not in (OPEN, MERGED, CLOSED):
        return None
    merged_at = raw.get("mergedAt")
    return PullRequest(
        int(raw["number"]),
        sanitize(str(raw.get("url") or "")),
        state,
        str(raw.get("headRefName") or ""),
        str(raw.get("headRefOid") or ""),
        str(merged_at) if merged_at else None,
        raw.get("isCrossRepository") is not False,
    )


def view(number: int, cwd: PathLike) -> PullRequest:
    """``gh pr view N --json …``."""
    try:
        found = _pr(gh_json(["pr", "view", str(number), "--json", FIELDS], cwd))
    except GhUnavailable as gone:
        raise _failed(f"could not read PR #{number} with gh", gone) from None
    if found is None:
        raise GhFailed(f"gh printed no PR for #{number}", fix=_fix(""))
    return found


def find(branch: str, head: str, number: int | None, cwd: PathLike) -> PullRequest | None:
    """The PR this landing goes through: the one it opened (``number``, any state), else the
    open PR whose head is ``branch`` of this repository, else a merged one whose head was
    ``head`` (a land killed after GitHub merged); None when there is none (one is created).
    A fork's PR from a branch named ``branch`` (``gh pr list --head`` lists it too) is never
    one of them: merging it would put another repository's commits on the base."""
    if number is not None:
        return view(number, cwd)
    args = ["pr", "list", "--head", branch, "--state", "all", "--limit", "100", "--json", FIELDS]
    try:
        rows = gh_json(args, cwd)
    except GhUnavailable as gone:
        raise _failed(f"could not list the PRs of {branch} with gh", gone) from None
    listed = map(_pr, rows if isinstance(rows, list) else [])
    prs = [pr for pr in listed if pr is not None and pr.head == branch and not pr.cross]
    opened = sorted((pr for pr in prs if pr.state == OPEN), key=lambda pr: pr.number)
    if opened:
        return opened[0]
    return next((pr for pr in prs if pr.state == MERGED and pr.head_oid == head), None)


def title_of(item: dict[str, Any]) -> str:
    """``st-007: the step`` on one line, control characters escaped, at most TITLE_MAX."""
    step = " ".join(str(item.get("step") or "").split())
    title = sanitize(f"{item['id']}: {step}" if step else str(item["id"]))
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"


def body_of(item: dict[str, Any], session: str) -> str:
    notes = sanitize(str(item.get("notes") or "")).strip()
    tail = f"Landed by `git st land` for plan item `{sanitize(str(item['id']))}` (session `{sanitize(session)}`)."
    body = f"{notes}\n\n{tail}" if notes else tail
    return body[:BODY_MAX]


def create(branch: str, base: str, title: str, body: str, cwd: PathLike) -> PullRequest:
    """``gh pr create`` (it prints the PR's URL), then the PR read back."""
    args = ["pr", "create", "--base", base, "--head", branch, f"--title={title}", f"--body={body}"]
    try:
        printed = gh_text(args, cwd)
    except GhUnavailable as gone:
        raise _failed(f"could not open a PR for {branch} with gh", gone) from None
    match = _PULL_URL.search(printed)
    if match is None or not is_pr_number(int(match.group(1))):
        raise GhFailed("gh pr create printed no PR URL", fix=_fix(""))
    return view(int(match.group(1)), cwd)


def merge(pr: PullRequest, how: str, method: str, head: str, cwd: PathLike) -> PullRequest:
    """``auto``: ``gh pr merge --auto`` (GitHub merges once its checks pass; gh merges at once
    a PR that already may be: a PR GitHub calls "clean" is merged without ``--auto``); ``now``:
    ``gh pr merge`` (exit 3 when GitHub will not merge it now). Either only while the PR's
    head is ``head``, the commit this landing pushed (``--match-head-commit``): a commit
    pushed to the PR's branch after it is never merged unseen. The PR read back."""
    args = ["pr", "merge", str(pr.number), f"--{method}", "--match-head-commit", head]
    try:
        gh_text([*args, "--auto"] if how == "auto" else args, cwd)
    except GhUnavailable as gone:
        if how == "auto" and "clean status" in gone.stderr:
            return merge(pr, "now", method, head, cwd)
        if "head branch was modified" in gone.stderr.lower():
            raise ConflictError(
                f"PR #{pr.number} ({pr.url}) has a head other than the commit this landing pushed "
                f"({head[:12]}): somebody pushed to its branch; nothing merged, it stays open",
                fix="`git st land` again: it tells what to merge first",
            ) from None
        if "already merged" in gone.stderr:  # merged by GitHub (or a person) meanwhile: read it back
            return view(pr.number, cwd)
        if "not mergeable" in gone.stderr or "prohibits the merge" in gone.stderr:
            raise ConflictError(
                f"GitHub did not merge PR #{pr.number} ({pr.url}): {sanitize(gone.reason)}; it stays open",
                fix="its checks or reviews first; then `git st land` again, or let GitHub merge it "
                "(git config st.land.prMerge auto)",
            ) from None
        raise _failed(f"could not merge PR #{pr.number} with gh", gone) from None
    return view(pr.number, cwd)


def push_branch(branch: str, remote_name: str, pushed: str | None, cwd: PathLike) -> str:
    """Push HEAD to ``branch`` on the remote with a lease on the tip there (``pushed`` is what
    this landing pushed before). A tip this worktree neither pushed nor has (somebody pushed to
    the PR's branch) is never overwritten: exit 3, merge it first. HEAD's commit."""
    head = objects.resolve_commit("HEAD", cwd) or ""
    tracking = f"refs/remotes/{remote_name}/{branch}"
    timeout = settings.remote_timeout(cwd)
    there = remote.fetch_refs(remote_name, [f"+refs/heads/{branch}:{tracking}"], cwd, timeout=timeout, missing_ok=True)
    tip = (objects.resolve_commit(tracking, cwd) or "") if there else ""
    if tip == head:
        return head
    if tip and tip != pushed and not is_ancestor(tip, head, cwd):
        raise ConflictError(
            f"{remote_name}/{branch} has commits this worktree does not (pushed by someone else); nothing pushed",
            fix=f"`git merge {remote_name}/{branch}` here (they are the PR's), then `git st land` again",
        )
    done = remote.push_refs(remote_name, [remote.RefUpdate(f"refs/heads/{branch}", head, tip)], cwd, timeout=timeout)
    if not done.ok:
        raise ConflictError(
            f"{remote_name}/{branch} moved while it was pushed; nothing lost",
            fix="`git st land` again",
        )
    return head


def delete_branch(branch: str, remote_name: str, pushed: str, cwd: PathLike) -> bool:
    """Delete ``branch`` on the remote when it still is ``pushed`` (a lease: a commit somebody
    else pushed there is never deleted). False when it was not (or could not be) deleted."""
    update = remote.RefUpdate(f"refs/heads/{branch}", None, pushed)
    try:
        return remote.push_refs(remote_name, [update], cwd, timeout=settings.remote_timeout(cwd)).ok
    except EnvironmentProblem:
        return False


# --- what the worktree remembers: the PR it opened ---------------------------------------------


def remembered(item: str, root: Path) -> dict[str, Any] | None:
    """The PR this item's worktree opened (its registry entry's ``pr``), or None."""
    entry = registry.read_worktree_entry(item, root=root) or {}
    record = entry.get("pr")
    return record if isinstance(record, dict) and is_pr_number(record.get("number")) else None


def remember(item: str, pr: PullRequest, *, pushed: str, remote_name: str, session: str, root: Path) -> None:
    record = {
        "number": pr.number,
        "url": pr.url,
        "remote": remote_name,
        "pushed": pushed,
        "session": session,
        "at": timestamps.iso(timestamps.now()),
    }
    registry.write_worktree_entry({"issue": item, "pr": record}, root=root)


def forget(item: str, root: Path) -> None:
    if registry.read_worktree_entry(item, root=root) is not None:
        registry.write_worktree_entry({"issue": item}, root=root, drop=("pr",))


# --- while the PR is open: the PR holds the item -----------------------------------------------


def hold(who: Identity, item: str, pr: PullRequest, *, remote_name: str, root: Path, cwd: PathLike, say: Say) -> None:
    """The PR is open: the item's claim on the remote is handed to it
    (:func:`gitst.sessions.remote_holds.hold`, ``st.land.prHold``), so no agent on any clone
    takes the item while it waits — whether the session that opened it lives on, ends (its
    SessionEnd releases every claim it holds) or is killed — and the session's own claim is
    released here (this clone's ``next`` passes over the item by the worktree's remembered
    PR). When the claim cannot be handed over it stays the session's, with a warning."""
    ttl = settings.float_setting("land_pr_hold", cwd)
    try:
        held = remote_holds.hold(
            item, who, remote=remote_name, pr={"number": pr.number, "url": pr.url}, ttl=ttl, cwd=cwd
        )
    except (EnvironmentProblem, ConflictError, ProblemsFound) as failed:
        say(f"gitst: warning: {item}'s claim stays this session's, not handed to PR #{pr.number}: {failed.message}")
        return
    if held is None:
        say(f"gitst: warning: this session holds no claim on {item} on {remote_name} to hand to PR #{pr.number}")
        return
    claims.release(who, root=root, issue=item, keep_remote=True)


def end_hold(
    item: str, pr: PullRequest, record: dict[str, Any], *, remote_name: str | None, cwd: PathLike, say: Say
) -> None:
    """The PR was merged or closed: its hold on the item's claim ends, whichever session runs
    this — the hold of the PR found, or of the one the worktree remembers (``record``, from
    :func:`remembered`) when it was replaced; on the remote the hold was made on (the record's,
    else ``remote_name``). Nothing when this worktree remembers no PR (none was left open, so
    none held the item). A remote that cannot be reached now leaves it to its expiry, said with
    the fix."""
    where = str(record.get("remote") or remote_name or "")
    if not record or not where:
        return
    numbers = [pr.number, *([record["number"]] if record.get("number") != pr.number else [])]
    try:
        for number in numbers:
            if remote_holds.end_hold(item, remote=where, number=number, cwd=cwd):
                return
    except (EnvironmentProblem, ConflictError, ProblemsFound) as failed:
        say(
            f"gitst: warning: PR #{pr.number}'s hold on {item} stays on {where} until it expires "
            f"(st.land.prHold): {failed.message}; `git push {where} :{remote_claims.claim_ref(item)}` ends it"
        )
