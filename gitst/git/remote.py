"""Talking to a remote: fetch refs into a local namespace, push with compare-and-swap, merge
without touching the work tree.

One function per git question (docs/architecture.md, "Running git"):

- :func:`fetch_refs` — ``git fetch --prune REMOTE SPEC…`` into local refs (no FETCH_HEAD, no
  tags, no auto maintenance), retried when another process of the same clone holds a ref lock;
- :func:`push_refs` — ``git push --porcelain [--atomic] --force-with-lease=REF:EXPECT …``: each
  ref moves only if the remote still holds what we expect (an empty expectation: the ref must
  not exist). The server checks the old value under its ref lock, so this is a true
  compare-and-swap; a rejection is returned, never raised;
- :func:`merge_tree_conflicts` — ``git merge-tree --write-tree`` (git ≥ 2.38): the paths a
  merge of two commits would leave conflicted, as a git host merges (no custom driver);
- :func:`remote_ref` — ``git ls-remote`` of one ref: has it moved since we fetched it?
- :func:`remote_url` — where a remote points (for messages).

The remote is untrusted and may be slow or gone, so every call to it has a deadline
(``timeout``, required: ``ST_REMOTE_TIMEOUT`` / ``st.remoteTimeout`` in the callers): git runs
in a process group of its own, killed whole when the deadline passes (the runner). A remote
name starting with ``-`` is refused (exit 2) and the remote is always given after ``--``, so
it can never reach git as an option (``--upload-pack=CMD``).

Every failure of a remote step is a :class:`RemoteUnreachable` (exit 4), which the callers
that carry on without the remote (``status``, ``heartbeat``, ``release``) catch. What git
said decides which one and its words:

- :class:`RemoteUnreachable` itself — the connection failed (DNS, refused, reset, TLS,
  authentication, no such repository on the host): "cannot reach the remote …";
- :class:`RemoteTimeout` — no answer within the deadline: "did not answer within 30s";
- :class:`RemoteRefused` — the host refused the refs (a pre-receive or update hook, a
  hidden ref, a full disk there): its own ``remote:`` lines;
- :class:`RemoteGitFailed` — git failed here, in this clone (``bad object``, a ref lock, a
  full disk): git's text, never "cannot reach".
"""

from __future__ import annotations

import os
import time

from gitst.core.errors import EnvironmentProblem, UsageError
from gitst.core.values import value_class
from gitst.git import config
from gitst.git.runner import NO_AUTO_MAINTENANCE, GitError, GitTimeout, decode, run, split_z

__all__ = [
    "PushResult",
    "RefUpdate",
    "RemoteGitFailed",
    "RemoteRefused",
    "RemoteTimeout",
    "RemoteUnreachable",
    "check_remote_name",
    "fetch_refs",
    "merge_tree_conflicts",
    "push_refs",
    "remote_branches",
    "remote_exists",
    "remote_ref",
    "remote_refs",
    "remote_url",
]

# Another process of this clone updating the same local ref: git says one of these. Also a
# worktree another process is adding right now: `git worktree add` writes its HEAD as the null
# id first, and a fetch's connectivity check meanwhile says "bad object worktrees/NAME/HEAD".
_LOCK_CONTENTION = (
    "cannot lock ref",
    "unable to create",
    ".lock': file exists",
    "unable to update local ref",
    "bad object worktrees/",
    # the connectivity check of a fetch racing other fetches of the same clone (160 racing
    # `next`s on three clones: twice in ~20 suite runs, exit 4 where a retry is a fetch more)
    "did not send all necessary objects",
)
_FETCH_TRIES = 40  # up to ~7 s of retries within the deadline (8, < 1 s, ran out with 8 racing `next`s at load 15)


# What git says when the connection itself failed (lower case; git's and curl's and ssh's words).
_UNREACHABLE_SIGNS = (
    "could not resolve",
    "name or service not known",
    "name resolution",
    "unable to look up",
    "connection refused",
    "timed out",
    "connection reset",
    "connection closed",
    "network is unreachable",
    "no route to host",
    "unable to connect",
    "failed to connect",
    "couldn't connect",
    "could not read from remote repository",
    "remote end hung up",
    "early eof",
    "protocol error",
    "remote error",
    "access denied",
    "permission denied",
    "authentication failed",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "host key verification failed",
    "does not appear to be a git repository",
    "repository not found",
    "unable to access",
    "the requested url returned error",
    "ssl",
    "certificate",
    "unable to find remote helper",
    "not allowed",
)
# What git says when this repository is the problem, whatever the remote did (checked first).
_LOCAL_SIGNS = (
    "bad object",
    "not a git repository",
    "unable to create",
    "unable to write",
    "unable to open",
    "cannot lock ref",
    "could not lock",
    "corrupt",
    "no space left",
    "read-only file system",
    "disk quota",
)


def _where(remote: str, cwd: str | os.PathLike[str] | None) -> str:
    url = remote_url(remote, cwd) if not remote.startswith("-") else None
    return f"{remote} ({url})" if url and url != remote else remote


def _gist(detail: str, count: int = 3) -> str:
    """git's last ``count`` lines, joined (what it said last is what went wrong)."""
    lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
    return " / ".join(line[:300] for line in lines[-count:])


class RemoteUnreachable(EnvironmentProblem):
    """A step on the remote failed (exit 4): what every caller that carries on without the
    remote catches. This class itself: the remote could not be reached (git's own words)."""

    def __init__(self, remote: str, detail: str, cwd: str | os.PathLike[str] | None = None):
        super().__init__(
            f"cannot reach the remote {_where(remote, cwd)}: {_gist(detail) or 'git failed'}",
            fix="check the network and the remote's URL (`git remote -v`), or pass --offline to work locally",
        )
        self.remote = remote
        self.detail = detail


class RemoteTimeout(RemoteUnreachable):
    """The remote did not answer within the deadline; git and all it started were killed."""

    def __init__(self, remote: str, timeout: float, verb: str, cwd: str | os.PathLike[str] | None = None):
        EnvironmentProblem.__init__(
            self,
            f"the remote {_where(remote, cwd)} did not answer within {timeout:g}s: `git {verb}` was stopped",
            fix="check the network and the remote (`git remote -v`); if it is only slow, give it longer "
            "(ST_REMOTE_TIMEOUT=SECONDS, or `git config st.remoteTimeout SECONDS`), or pass --offline to work locally",
        )
        self.remote = remote
        self.detail = f"no answer within {timeout:g}s"
        self.timeout = timeout


class RemoteRefused(RemoteUnreachable):
    """The remote was reached and refused to take the refs (a hook, its settings, its disk)."""

    def __init__(self, remote: str, refs: dict[str, str], said: str, cwd: str | os.PathLike[str] | None = None):
        names = ", ".join(f"{ref} ({why})" for ref, why in sorted(refs.items()))
        host = [line.strip()[len("remote:") :].strip() for line in said.splitlines() if line.startswith("remote:")]
        told = _gist("\n".join(line for line in host if line), 5)
        EnvironmentProblem.__init__(
            self,
            f"the remote {_where(remote, cwd)} refused {names}" + (f"; it said: {told}" if told else ""),
            fix="the remote's hooks or settings do not accept these refs: ask whoever runs it to allow "
            "refs/st/* (and the branch), or work without the remote (--offline, or unset st.remote)",
        )
        self.remote = remote
        self.detail = told
        self.refs = refs


class RemoteGitFailed(RemoteUnreachable):
    """git failed here, in this repository, while talking to the remote (``fatal: bad object``
    of a broken worktree, a ref lock, a full disk): git's words, never "cannot reach"."""

    def __init__(self, remote: str, verb: str, detail: str, cwd: str | os.PathLike[str] | None = None):
        EnvironmentProblem.__init__(
            self,
            f"`git {verb}` with the remote {_where(remote, cwd)} failed in this repository: "
            f"{_gist(detail) or 'git failed'}",
            fix="git's message says what is wrong in this clone (`git fsck` and `git worktree prune` find most of "
            "it); it is not the remote's fault, and it stays until it is repaired",
        )
        self.remote = remote
        self.detail = detail


def _failure(remote: str, verb: str, detail: str, cwd: str | os.PathLike[str] | None) -> RemoteUnreachable:
    """The error a failed ``git VERB`` with ``remote`` is: this repository's fault, the
    connection's, or (neither said) git's words as they are, never "cannot reach"."""
    said = detail.lower()
    if any(sign in said for sign in _LOCAL_SIGNS):
        return RemoteGitFailed(remote, verb, detail, cwd)
    if any(sign in said for sign in _UNREACHABLE_SIGNS):
        return RemoteUnreachable(remote, detail, cwd)
    failed = RemoteGitFailed(remote, verb, detail, cwd)
    failed.message = f"`git {verb}` with the remote {_where(remote, cwd)} failed: {_gist(detail) or 'git failed'}"
    failed.fix = "git's message says what went wrong; `git remote -v` shows where the remote points"
    return failed


def check_remote_name(remote: str, source: str = "the remote") -> str:
    """``remote`` when it can name a remote; a name starting with ``-`` is refused (exit 2):
    git would take it for an option (``--upload-pack=CMD`` runs CMD)."""
    if remote.startswith("-") or "\0" in remote:
        shown = remote.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        raise UsageError(
            f"{source} {shown!r} is not a remote name: a remote never starts with '-' (git would read it as an option)",
            fix="name a remote (`git remote -v` lists them) or give its URL",
        )
    return remote


def remote_url(remote: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``remote.<name>.url`` (None for a remote given as a URL or path)."""
    return config.get(f"remote.{remote}.url", cwd)


def remote_exists(remote: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """A configured remote name, or something git can use as one (a URL or a path). A name
    starting with ``-`` is refused (exit 2, :func:`check_remote_name`)."""
    check_remote_name(remote)
    return remote_url(remote, cwd) is not None or "/" in remote or ":" in remote


def fetch_refs(
    remote: str,
    refspecs: list[str],
    cwd: str | os.PathLike[str] | None = None,
    *,
    timeout: float,
    missing_ok: bool = False,
) -> bool:
    """Fetch ``refspecs`` from ``remote`` and prune what the remote deleted (within them),
    all within ``timeout`` seconds (retries included).

    A glob refspec that matches nothing is not an error; an exact one the remote lacks is
    one, unless ``missing_ok`` (then False is returned). A :class:`RemoteUnreachable` (or
    one of its kinds) when it fails."""
    check_remote_name(remote)
    args = [
        *NO_AUTO_MAINTENANCE,
        "fetch",
        "--quiet",
        "--no-tags",
        "--prune",
        "--no-write-fetch-head",
        "--no-auto-maintenance",
        "--no-recurse-submodules",
        "--",
        remote,
        *refspecs,
    ]
    deadline = time.monotonic() + timeout
    delay, err = 0.01, ""
    for attempt in range(_FETCH_TRIES):
        left = deadline - time.monotonic()
        if left <= 0:
            raise RemoteTimeout(remote, timeout, "fetch", cwd)
        try:
            proc = run(args, cwd, check=False, timeout=left)
        except GitTimeout:
            raise RemoteTimeout(remote, timeout, "fetch", cwd) from None
        if proc.ok:
            return True
        err = decode(proc.stderr)
        if missing_ok and "couldn't find remote ref" in err:
            return False
        if attempt + 1 == _FETCH_TRIES or not any(sign in err for sign in _LOCK_CONTENTION):
            break
        time.sleep(delay)  # another process of this clone is updating the same ref
        delay = min(delay * 2, 0.2)
    raise _failure(remote, "fetch", err, cwd)


def remote_branches(
    remote: str, patterns: list[str], cwd: str | os.PathLike[str] | None = None, *, timeout: float
) -> set[str]:
    """The branches of ``remote`` matching ``patterns`` (``git ls-remote --heads``; a pattern
    matches whole trailing parts of the name, ``*`` as in a glob): their short names, within
    ``timeout`` seconds (:class:`RemoteTimeout` past it, as every remote call)."""
    try:
        proc = run(
            [*NO_AUTO_MAINTENANCE, "ls-remote", "--heads", "--", remote, *patterns], cwd, check=False, timeout=timeout
        )
    except GitTimeout:
        raise RemoteTimeout(remote, timeout, "ls-remote", cwd) from None
    if not proc.ok:
        raise RemoteUnreachable(remote, decode(proc.stderr), cwd)
    names = set()
    for line in decode(proc.stdout).splitlines():
        _oid, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/"):
            names.add(ref[len("refs/heads/") :])
    return names


def remote_ref(remote: str, ref: str, cwd: str | os.PathLike[str] | None = None, *, timeout: float) -> str | None:
    """The object id ``ref`` (a full name: ``refs/heads/main``) has on ``remote`` now, None when
    it has no such ref: one ``git ls-remote``, which asks the remote and writes nothing here
    (cheaper than a fetch when the caller only wants to know whether the ref moved)."""
    return remote_refs(remote, [ref], cwd, timeout=timeout).get(ref)


def remote_refs(
    remote: str, patterns: list[str], cwd: str | os.PathLike[str] | None = None, *, timeout: float
) -> dict[str, str]:
    """``{refname: object id}`` of the refs on ``remote`` now whose full name matches one of
    ``patterns`` (a full name, or one with a ``*`` glob: ``refs/st/claims/st.land*``): one
    ``git ls-remote``, nothing written here."""
    import fnmatch  # lazy: only the callers that poll the remote

    check_remote_name(remote)
    try:
        proc = run([*NO_AUTO_MAINTENANCE, "ls-remote", "--", remote, *patterns], cwd, check=False, timeout=timeout)
    except GitTimeout:
        raise RemoteTimeout(remote, timeout, "ls-remote", cwd) from None
    if not proc.ok:
        raise _failure(remote, "ls-remote", decode(proc.stderr), cwd)
    found = {}
    for line in decode(proc.stdout).splitlines():
        oid, _, name = line.partition("\t")
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            found[name] = oid
    return found


@value_class(frozen=True)
class RefUpdate:
    """Move ``ref`` on the remote to ``new`` (None: delete it) if it still is ``expect``
    (``""``: it must not exist)."""

    ref: str
    new: str | None
    expect: str


@value_class(frozen=True)
class PushResult:
    ok: bool
    rejected: dict[str, str]  # ref -> git's reason ("stale info", "failed to update ref", …)


# A ref the remote did not move because another push got there first: a lost compare-and-swap,
# not a refusal (the caller reads again). Any other "[remote rejected] (why)" is the host's no.
_RACE_SIGNS = (
    "stale info",
    "failed to update ref",
    "failed to lock",
    "cannot lock ref",
    "incorrect old value",
    "atomic",
    "fetch first",
    "non-fast-forward",
    "not pushed",
)


def push_refs(
    remote: str,
    updates: list[RefUpdate],
    cwd: str | os.PathLike[str] | None = None,
    *,
    timeout: float,
    atomic: bool = False,
    verify: bool = False,
) -> PushResult:
    """Push ``updates`` with a lease each (``--atomic``: all or none), within ``timeout``
    seconds. The pre-push hook runs only with ``verify`` (a branch); gitst's own records
    (claims) are pushed without it. A lost lease is a rejection returned; a ref the remote
    refuses (its hook, its settings) is :class:`RemoteRefused`."""
    check_remote_name(remote)
    try:
        proc = run(_push_args(remote, updates, atomic=atomic, verify=verify), cwd, check=False, timeout=timeout)
    except GitTimeout:
        raise RemoteTimeout(remote, timeout, "push", cwd) from None
    statuses = _push_statuses(decode(proc.stdout))
    if not statuses:  # no ref was even tried: the remote was not reached, or git failed here
        raise _failure(remote, "push", decode(proc.stderr) or decode(proc.stdout), cwd)
    rejected = {ref: summary.strip("[] ") for ref, (flag, summary) in statuses.items() if flag == "!"}
    missing = [u.ref for u in updates if u.ref not in statuses]
    for ref in missing:
        rejected[ref] = "not pushed"
    refused = {ref: why for ref, why in rejected.items() if not any(sign in why for sign in _RACE_SIGNS)}
    if refused:
        raise RemoteRefused(remote, refused, decode(proc.stderr), cwd)
    return PushResult(ok=proc.ok and not rejected, rejected=rejected)


def _push_args(remote: str, updates: list[RefUpdate], *, atomic: bool, verify: bool) -> list[str]:
    """``git push`` with a lease per ref: ``--force-with-lease=REF:EXPECT``, then the refspecs."""
    args = ["push", "--porcelain", *([] if verify else ["--no-verify"]), *(["--atomic"] if atomic else [])]
    args += [f"--force-with-lease={u.ref}:{u.expect}" for u in updates]
    args += ["--", remote]
    args += [f"{u.new}:{u.ref}" if u.new is not None else f":{u.ref}" for u in updates]
    return args


def _push_statuses(porcelain: str) -> dict[str, tuple[str, str]]:
    """``{remote ref: (flag, summary)}`` from ``git push --porcelain``'s ref lines."""
    statuses: dict[str, tuple[str, str]] = {}
    for line in porcelain.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1 and ":" in parts[1]:
            statuses[parts[1].rsplit(":", 1)[1]] = (parts[0], parts[2])
    return statuses


def merge_tree_conflicts(
    ours: str,
    theirs: str,
    cwd: str | os.PathLike[str] | None = None,
    *,
    overrides: dict[str, str] | None = None,
) -> list[str] | None:
    """The paths a merge of ``ours`` and ``theirs`` would leave conflicted, computed in memory
    (no work tree, no index). ``overrides`` are ``-c KEY=VALUE`` settings for this one merge
    (e.g. a merge driver). None when the two have no common history."""
    flags = [arg for key, value in (overrides or {}).items() for arg in ("-c", f"{key}={value}")]
    args = [*flags, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs]
    proc = run(args, cwd, check=False)
    if proc.returncode == 0:
        return []
    if proc.returncode != 1:
        if b"refusing to merge unrelated histories" in proc.stderr:
            return None
        raise GitError(["merge-tree", "--write-tree", ours, theirs], proc.returncode, decode(proc.stderr))
    fields = split_z(proc.stdout)
    return sorted(set(fields[1:]))  # first: the tree id; then the conflicted paths
