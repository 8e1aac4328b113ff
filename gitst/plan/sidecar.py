"""The lock sidecar policy: ``<plan>.lock`` must be ignored and untracked in any git work tree.

A mutation takes a file lock on ``<plan>.lock``; in a git work tree (main or linked) that
file would otherwise show up in ``git status`` or, worse, get committed. So before any write
the sidecar must be ignored (``git check-ignore`` semantics) and not in the index; otherwise
the mutation is refused (exit 2) with the exact fix.

``git st init`` fixes it itself: it appends ``/<plan name>.lock`` (and ``/<plan name>.torn-*``,
the set-aside torn tails) to the ``.gitignore`` *next to the plan* (``.step/.gitignore`` for
the default plan). That file is committed with the plan, so every clone and every worktree
of a commit that has the plan also has the rule. A tracked sidecar is untracked with
``git rm --cached`` (the file on disk stays).
"""

from __future__ import annotations

import os
from pathlib import Path

from gitst.core.errors import UsageError
from gitst.core.jsonio import atomic_write_bytes
from gitst.core.values import Value
from gitst.git.repo import repo_info
from gitst.git.runner import GitError
from gitst.plan.files import gitignore_path, read_gitignore
from gitst.plan.location import PlanLocation


class SidecarStatus(Value):
    """Where the lock sidecar stands with git."""

    __slots__ = ("git_cwd", "ignored", "in_work_tree", "tracked")

    def __init__(self, in_work_tree: bool, ignored: bool = True, tracked: bool = False, git_cwd: Path | None = None):
        self.in_work_tree = in_work_tree
        self.ignored = ignored
        self.tracked = tracked
        self.git_cwd = git_cwd


def status(location: PlanLocation) -> SidecarStatus:
    """Whether the plan's lock sidecar is inside a git work tree, ignored, tracked."""
    from gitst.git.attributes import check_ignore  # lazy: not in doctor's pinned imports
    from gitst.git.index import is_tracked  # lazy: rare path, not in add's pinned imports

    cwd = location.git_dir
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        return SidecarStatus(in_work_tree=False)
    lock = location.full_lock
    try:
        lock.relative_to(info.toplevel)
    except ValueError:
        try:
            lock.resolve().relative_to(info.toplevel.resolve())
        except ValueError:
            return SidecarStatus(in_work_tree=False)
    return SidecarStatus(
        in_work_tree=True,
        ignored=check_ignore(lock, cwd),
        tracked=is_tracked(lock, cwd),
        git_cwd=cwd,
    )


def ignore_rules(plan: Path) -> list[str]:
    name = Path(plan).name
    return [f"/{name}.lock", f"/{name}.torn-*"]


_GITIGNORE_MOST = 1 << 20  # a longer .gitignore next to the plan: git is asked


def surely_ignored(plan: Path, worktree: str | os.PathLike[str]) -> bool:
    """True when the lock sidecar of ``plan``, in a worktree git checked out a moment ago, is
    surely ignored and untracked — what :func:`require_ignored` asks ``git check-ignore``: the
    ``.gitignore`` next to the plan (the deepest, so the strongest, rules) holds the sidecar's
    rule and no negation at all, and the commit has no sidecar (``not_in_checkout``). False
    means: let git say (a linked or unreadable ``.gitignore`` included: git reads none through
    a link). ``git st next`` marks the item in the worktree it just made without the git call."""
    from gitst.git.worktrees import not_in_checkout  # lazy: not in the plan commands' pinned imports

    try:
        fd = os.open(gitignore_path(plan), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_GITIGNORE_MOST + 1)
    lines = [line.rstrip(b" ") for line in data.split(b"\n")]  # git's own trimming: trailing blanks only
    rule = ignore_rules(plan)[0].encode()
    if len(data) > _GITIGNORE_MOST or rule not in lines or any(line[:1] == b"!" for line in lines):
        return False
    return not_in_checkout(worktree, os.path.relpath(plan, worktree) + ".lock")


def _gitignore_shown(shown_plan: str) -> str:
    return os.path.join(os.path.dirname(shown_plan), ".gitignore")


def _ignored_and_untracked(location: PlanLocation) -> bool:
    """The common case, in one git call: the sidecar is ignored and not tracked (``git
    check-ignore`` consulting the index says both at once). False also when git cannot answer
    this way (outside a work tree): :func:`status` then looks closer."""
    from gitst.git.attributes import check_ignore  # lazy: not in doctor's pinned imports

    try:
        return check_ignore(location.full_lock, location.git_dir, index=True)
    except GitError:
        return False


def require_ignored(location: PlanLocation) -> None:
    """Refuse (exit 2) a write whose lock sidecar git would see; the fix says what to run."""
    if _ignored_and_untracked(location):
        return
    found = status(location)
    if not found.in_work_tree or (found.ignored and not found.tracked):
        return
    import shlex  # lazy: refusal only; pinned out of `git st add`

    shown_plan, shown_lock = location.shown, location.shown_lock
    q_plan = shlex.quote(shown_plan)
    if found.tracked:
        raise UsageError(
            f"lock sidecar {shown_lock} is tracked by git; the plan lock must never be committed",
            fix=f"git st init --file {q_plan}   (or: git rm --cached -- {shlex.quote(shown_lock)} && git commit)",
        )
    if not found.ignored:
        rule = ignore_rules(location.path)[0]
        raise UsageError(
            f"lock sidecar {shown_lock} is not ignored by git; a write would leave it in `git status`",
            fix=(
                f"git st init --file {q_plan}   (or: echo {shlex.quote(rule)} >> "
                f"{shlex.quote(_gitignore_shown(shown_plan))})"
            ),
        )


def ensure_ignored(location: PlanLocation) -> list[str]:
    """Make the sidecar ignored and untracked (``init``); one message per thing done."""
    from gitst.git.attributes import check_ignore  # lazy: not in doctor's pinned imports
    from gitst.git.index import untrack  # lazy: rare path, not in add's pinned imports

    if _ignored_and_untracked(location):
        return []
    found = status(location)
    if not found.in_work_tree:
        return []
    messages = []
    plan, lock = location.full, location.full_lock
    shown_plan, shown_lock = location.shown, location.shown_lock
    if not found.ignored:
        gitignore = gitignore_path(plan)
        old = read_gitignore(location)  # never through a link: a linked one is refused
        present = {line.strip() for line in old.decode("utf-8", "replace").splitlines()}
        missing = [rule for rule in ignore_rules(plan) if rule not in present]
        text = old if not old or old.endswith(b"\n") else old + b"\n"
        text += "".join(f"{rule}\n" for rule in missing).encode("utf-8")
        atomic_write_bytes(gitignore, text)
        if not check_ignore(lock, found.git_cwd or plan.parent):
            raise UsageError(
                f"added {', '.join(missing)} to {_gitignore_shown(shown_plan)} "
                f"but git still does not ignore {shown_lock}",
                fix="look for a negating rule (`git check-ignore -v --no-index` shows which rule applies)",
            )
        messages.append(
            f"ignored {shown_lock}: added {' '.join(missing) or 'its rule'} to {_gitignore_shown(shown_plan)} "
            "(commit it so every clone and worktree inherits the rule)"
        )
    if found.tracked:
        untrack(lock, found.git_cwd)
        messages.append(f"untracked {shown_lock} (git rm --cached; commit the removal)")
    return messages
