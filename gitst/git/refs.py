"""Refs: every ref at once, branches, and fetched pull-request heads.

GitHub publishes every PR's head as ``refs/pull/<n>/head`` on the remote; a clone has them
only after fetching them with a refspec, for example::

    git config --add remote.origin.fetch '+refs/pull/*/head:refs/remotes/origin/pr/*'
    git fetch origin 'refs/pull/*/head:refs/pull/*/head'

:func:`pull_heads` finds them wherever they were fetched to: local ``refs/pull/<n>/head``
(the one-off form), and the destination of every configured ``remote.<name>.fetch``
refspec whose source covers ``refs/pull/<n>/head``. Two git calls in all (``for-each-ref``
and ``config --get-regexp``), whatever the number of refs.
"""

from __future__ import annotations

import os
import re

from gitst.core.values import value_class
from gitst.git import config
from gitst.git.runner import decode, run

__all__ = [
    "PullHead",
    "all_refs",
    "branch_exists",
    "branch_tips",
    "create_branch",
    "delete_branch",
    "delete_branch_at",
    "move_branch",
    "move_ref",
    "pull_heads",
    "pull_refspecs",
    "refs_under",
    "refs_under_all",
    "refs_with_upstreams",
    "tips_by_branch",
    "upstream_of",
    "valid_branch_name",
]

_PULL_HEAD = re.compile(r"^refs/pull/([0-9]+)/head$")


@value_class(frozen=True)
class PullHead:
    number: int
    ref: str  # the local ref that holds it
    oid: str


def _for_each_ref(
    cwd: str | os.PathLike[str] | None, prefixes: list[str] | None = None, *, upstream: bool = False
) -> tuple[dict[str, str], dict[str, str]]:
    """One ``for-each-ref`` (of ``prefixes``, else of every ref): ``{refname: object id}`` and,
    with ``upstream``, ``{branch refname: its upstream refname}``."""
    fmt = "--format=%(objectname) %(refname)" + (" %(upstream)" if upstream else "")
    out = decode(run(["for-each-ref", fmt, *(["--", *prefixes] if prefixes is not None else [])], cwd).stdout)
    refs, upstreams = {}, {}
    for line in out.splitlines():
        oid, _, rest = line.partition(" ")
        name, _, above = rest.partition(" ") if upstream else (rest, "", "")
        if name:
            refs[name] = oid
            if above:
                upstreams[name] = above
    return refs, upstreams


def all_refs(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Every ref of the repository: ``{refname: object id}`` (one ``for-each-ref``)."""
    return _for_each_ref(cwd)[0]


def refs_under(prefix: str, cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{refname: object id}`` of the refs under ``prefix`` (``refs/st-remote/origin/``)."""
    return refs_under_all([prefix], cwd)


def refs_under_all(prefixes: list[str], cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """:func:`refs_under` of several prefixes (or whole ref names) at once: one ``for-each-ref``."""
    return _for_each_ref(cwd, prefixes)[0]


def refs_with_upstreams(cwd: str | os.PathLike[str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """Every ref ``{refname: object id}`` (as :func:`all_refs`) and every branch's upstream
    ``{refname: upstream refname}`` (as :func:`upstream_of`), from one ``for-each-ref``."""
    return _for_each_ref(cwd, upstream=True)


def branch_exists(branch: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    return run(["show-ref", "--verify", "--quiet", f"refs/heads/{branch}"], cwd, check=False).returncode == 0


def upstream_of(branch: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The full name of ``branch``'s upstream (``refs/remotes/origin/main``), None without one."""
    proc = run(["for-each-ref", "--format=%(upstream)", f"refs/heads/{branch}"], cwd, check=False)
    return decode(proc.stdout).strip() or None if proc.returncode == 0 else None


def delete_branch(branch: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """``git branch -D BRANCH``: the caller has decided nothing is lost (it checks merges itself)."""
    run(["branch", "-D", "--", branch], cwd)


def create_branch(branch: str, oid: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Create ``branch`` at ``oid`` only if it does not exist (atomic under git's ref lock);
    False when it already exists (another process may have just created it)."""
    proc = run(["update-ref", "--create-reflog", f"refs/heads/{branch}", oid, ""], cwd, check=False)
    return proc.returncode == 0


def delete_branch_at(branch: str, oid: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Delete ``branch`` only while it still points at ``oid`` (what we created, nothing since)."""
    return run(["update-ref", "-d", f"refs/heads/{branch}", oid], cwd, check=False).returncode == 0


def move_branch(branch: str, new: str, old: str, cwd: str | os.PathLike[str] | None = None, *, why: str) -> bool:
    """Move ``branch`` from ``old`` to ``new`` only while it still points at ``old`` (a
    compare-and-swap under git's ref lock, ``why`` in the reflog); False when it moved."""
    return move_ref(f"refs/heads/{branch}", new, old, cwd, why=why)


def move_ref(ref: str, new: str, old: str, cwd: str | os.PathLike[str] | None = None, *, why: str) -> bool:
    """:func:`move_branch` for any full ref name (``old`` "": only while it does not exist)."""
    proc = run(["update-ref", "-m", why, ref, new, old], cwd, check=False)
    return proc.returncode == 0


# A branch name of letters, digits, ``.``, ``_``, ``-`` and ``/`` only (no ``@``: nothing git would
# expand, like ``@{-1}``) whose every component is non-empty, starts with neither ``.`` nor ``-``
# and does not end with ``.lock``, with no ``..`` and no ``.`` at its end: every rule of
# git's check_refname_format and strbuf_check_branch_ref holds for it, so it needs no git.
_PLAIN_COMPONENT = r"(?!\.)(?!-)[A-Za-z0-9._-]+(?<!\.lock)"
_PLAIN_BRANCH = re.compile(rf"(?!HEAD$){_PLAIN_COMPONENT}(?:/{_PLAIN_COMPONENT})*")


def valid_branch_name(branch: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """True when git accepts ``branch`` as a branch name (``check-ref-format --branch``): a
    plain name (``st/issue-7``, :data:`_PLAIN_BRANCH`) without asking git, any other one by
    git's own answer."""
    if not branch or branch.startswith("-"):
        return False
    if _PLAIN_BRANCH.fullmatch(branch) and ".." not in branch and not branch.endswith("."):
        return True
    return run(["check-ref-format", "--branch", branch], cwd, check=False).returncode == 0


def pull_refspecs(cwd: str | os.PathLike[str] | None = None) -> list[tuple[str, str]]:
    """``(source, destination)`` of every configured fetch refspec with a ``*`` on both sides."""
    specs = []
    for _, value in config.get_regexp(r"^remote\..*\.fetch$", cwd):
        spec = value.strip().lstrip("+")
        if spec.startswith("^") or ":" not in spec:
            continue
        src, dst = spec.split(":", 1)
        if src.count("*") == 1 and dst.count("*") == 1:
            specs.append((src, dst))
    return specs


def _source_of(local: str, src: str, dst: str) -> str | None:
    """The remote ref that refspec ``src:dst`` fetched into ``local`` (None if it did not)."""
    head, tail = dst.split("*")
    if not (local.startswith(head) and local.endswith(tail)) or len(local) < len(head) + len(tail):
        return None
    middle = local[len(head) : len(local) - len(tail)]
    return src.replace("*", middle)


def pull_heads(cwd: str | os.PathLike[str] | None = None, *, refs: dict[str, str] | None = None) -> list[PullHead]:
    """Every fetched PR head in the repository, sorted by PR number then ref."""
    refs = all_refs(cwd) if refs is None else refs
    specs = [("refs/pull/*", "refs/pull/*"), *pull_refspecs(cwd)]
    found: dict[tuple[int, str], PullHead] = {}
    for name, oid in refs.items():
        for src, dst in specs:
            source = _source_of(name, src, dst)
            match = _PULL_HEAD.match(source) if source else None
            if match:
                number = int(match.group(1))
                if 0 < number < 2**53:  # refs/pull/0/head or a 30-digit one name no PR
                    found[(number, name)] = PullHead(number=number, ref=name, oid=oid)
                break
    return [found[key] for key in sorted(found)]


def branch_tips(
    branch: str, cwd: str | os.PathLike[str] | None = None, *, refs: dict[str, str] | None = None
) -> dict[str, str]:
    """``{ref: oid}`` for the local branch and every remote-tracking copy of it.

    The local branch may be ahead of what was pushed; the remote-tracking copy is what a
    PR's head can be. Both count as the branch's tip.
    """
    refs = all_refs(cwd) if refs is None else refs
    return dict(tips_by_branch(refs).get(branch, {}))


def tips_by_branch(refs: dict[str, str]) -> dict[str, dict[str, str]]:
    """:func:`branch_tips` of every branch at once, from one pass over ``refs``:
    ``{branch: {ref: oid}}`` (the local branch first, then ``refs/remotes/<remote>/<branch>``)."""
    tips: dict[str, dict[str, str]] = {}
    for name, oid in refs.items():
        if name.startswith("refs/heads/"):
            tips.setdefault(name[len("refs/heads/") :], {})[name] = oid
    for name, oid in refs.items():
        if name.startswith("refs/remotes/"):
            remote, slash, branch = name[len("refs/remotes/") :].partition("/")
            if remote and slash and branch:
                tips.setdefault(branch, {})[name] = oid
    return tips
