"""Setting up a new worktree: copy the untracked files it needs, run the trusted setup script.

Two steps, the same for ``git st worktree add``, ``git st worktree setup`` and the
post-checkout hook:

1. **Copy.** Every value of ``git config st.worktree.copy`` (multi-valued) is a glob —
   git's ``:(glob)`` pathspec, relative to the main worktree's root: ``*`` stays inside one
   directory, ``**/`` crosses directories (``.env*``, ``config/*.local.json``,
   ``**/.env``). Untracked files of the main worktree that match — ignored ones included,
   that is the point: ``.env`` is usually ignored — are copied into the new worktree with
   their mode (a symlink is copied as a symlink). A file that already exists there is
   never overwritten.
2. **Setup script.** The committed file ``.gitst/worktree-setup`` (a POSIX shell script,
   run as ``/bin/sh .gitst/worktree-setup`` in the new worktree — the absolute path, never
   an ``sh`` found on ``PATH``) runs only when the user has
   trusted that exact content: ``git st trust`` stores its SHA-256 in the local, never
   committed ``git config st.worktree.trusted`` (multi-valued; each value
   ``sha256:<hex>``). Any change to the file gives another hash, so a changed script is
   untrusted again until the user reviews and trusts it. The script must also be
   committed unchanged: a worktree whose copy differs from ``HEAD`` skips it
   (``modified``). Its output goes to stderr; it gets ``ST_ISSUE``, ``ST_BRANCH``,
   ``ST_WORKTREE``, ``ST_MAIN_WORKTREE``, ``ST_SESSION_ID`` and the worktree's port block
   (``ST_PORT``, ``ST_PORT_LAST``, ``ST_PORT_COUNT``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import UsageError
from gitst.core.safepaths import read_bytes
from gitst.core.values import value_class
from gitst.git.config import add_local, get_all, unset_local
from gitst.git.index import untracked_matching
from gitst.git.objects import blob_at, resolve_commit
from gitst.git.repo import require_repo
from gitst.git.worktrees import not_in_checkout, uncommitted_changes
from gitst.worktrees.changes import copy_digest
from gitst.worktrees.ports import env_of

SETUP_FILE = ".gitst/worktree-setup"
TRUST_KEY = "st.worktree.trusted"
COPY_KEY = "st.worktree.copy"
HASH_PREFIX = "sha256:"
SHELL = "/bin/sh"  # the trusted script's interpreter: an absolute path, never looked up on PATH

ABSENT, UNTRUSTED, CHANGED, MODIFIED, RAN, FAILED = "absent", "untrusted", "changed", "modified", "ran", "failed"
_STRIPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "ST_PORT",  # the worktree's own block is set below; never one inherited from the caller's shell
    "ST_PORT_LAST",
    "ST_PORT_COUNT",
)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@value_class
class SetupConfig:
    rev: str
    content: bytes

    @property
    def sha256(self) -> str:
        return sha256_hex(self.content)


def committed_config(cwd: str | os.PathLike[str] | None, rev: str = "HEAD") -> SetupConfig | None:
    """``.gitst/worktree-setup`` as committed at ``rev`` (None when absent)."""
    content = blob_at(cwd, rev, SETUP_FILE)
    return None if content is None else SetupConfig(rev, content)


def trusted_hashes(cwd: str | os.PathLike[str] | None = None) -> list[str]:
    return [v[len(HASH_PREFIX) :] for v in get_all(TRUST_KEY, cwd) if v.startswith(HASH_PREFIX)]


def trust_state(config: SetupConfig | None, cwd: str | os.PathLike[str] | None = None) -> str:
    """``absent``, ``trusted``, ``untrusted`` (nothing trusted yet) or ``changed`` (another
    version was trusted, not this one)."""
    if config is None:
        return ABSENT
    hashes = trusted_hashes(cwd)
    if config.sha256 in hashes:
        return "trusted"
    return CHANGED if hashes else UNTRUSTED


# --- git st trust ---------------------------------------------------------------------------------


def _config_or_fail(cwd: str | os.PathLike[str] | None, rev: str) -> SetupConfig:
    if resolve_commit(rev, cwd) is None:
        raise UsageError(f"unknown revision {rev!r}")
    config = committed_config(cwd, rev)
    if config is None:
        raise UsageError(
            f"there is no {SETUP_FILE} committed at {rev}; nothing to trust",
            fix=f"commit a setup script as {SETUP_FILE} first (a POSIX sh script run in each new worktree)",
        )
    return config


def trust_info(cwd: str | os.PathLike[str] | None, rev: str = "HEAD") -> dict[str, Any]:
    """What ``git st trust --show`` prints."""
    require_repo(cwd)
    config = committed_config(cwd, rev)
    working = _working_copy_differs(cwd, config)
    return {
        "file": SETUP_FILE,
        "rev": rev,
        "sha256": config.sha256 if config else None,
        "state": trust_state(config, cwd),
        "working_copy_differs": working,
        "trusted": trusted_hashes(cwd),
    }


def trust(cwd: str | os.PathLike[str] | None, rev: str = "HEAD") -> dict[str, Any]:
    """Record the hash of ``.gitst/worktree-setup`` at ``rev`` as trusted."""
    require_repo(cwd)
    config = _config_or_fail(cwd, rev)
    already = config.sha256 in trusted_hashes(cwd)
    if not already:
        add_local(TRUST_KEY, HASH_PREFIX + config.sha256, cwd)
    return {
        "file": SETUP_FILE,
        "rev": rev,
        "sha256": config.sha256,
        "already": already,
        "working_copy_differs": _working_copy_differs(cwd, config),
    }


def revoke(cwd: str | os.PathLike[str] | None, rev: str = "HEAD") -> dict[str, Any]:
    require_repo(cwd)
    config = _config_or_fail(cwd, rev)
    was = config.sha256 in trusted_hashes(cwd)
    unset_local(TRUST_KEY, HASH_PREFIX + config.sha256, cwd)
    return {"file": SETUP_FILE, "rev": rev, "sha256": config.sha256, "was_trusted": was}


def _on_disk(path: Path, top: Path) -> bytes | None:
    """The script in the work tree, read the one way a file a clone controls is read
    (:mod:`gitst.core.safepaths`): None when it is missing, unreadable, a link anywhere
    below ``top`` (``.gitst -> /elsewhere`` included), a FIFO or a device."""
    try:
        return read_bytes(path, top)
    except (OSError, UsageError):
        return None


def _working_copy_differs(cwd: str | os.PathLike[str] | None, config: SetupConfig | None) -> bool:
    top = require_repo(cwd).work_tree
    data = _on_disk(top / SETUP_FILE, top)
    if config is None:
        return data is not None
    return data != config.content


# --- the setup run --------------------------------------------------------------------------------


def copy_patterns(main_root: str | os.PathLike[str]) -> list[str]:
    """The values of ``st.worktree.copy``; exit 2 for one that reaches outside the main
    worktree (absolute, or climbing out with ``..``) — checked before ``add`` claims or
    creates anything."""
    patterns = settings.get_all("worktree_copy", main_root)
    for pattern in patterns:
        parts = pattern.replace("\\", "/").split("/")
        if not pattern or os.path.isabs(pattern) or pattern.startswith(":") or ".." in parts:
            raise UsageError(
                f"{COPY_KEY} value {pattern!r} is not a glob inside the repository",
                fix=f"give a pattern relative to the main worktree's root, e.g. `git config --replace-all "
                f"{COPY_KEY} .env` (or `git config --unset-all {COPY_KEY}`)",
            )
    return patterns


def copy_untracked(main_root: Path, target: Path, patterns: list[str]) -> tuple[list[str], list[str]]:
    """Copy untracked files of ``main_root`` matching ``patterns`` into ``target``.

    Returns (copied, skipped-because-present), paths relative to the roots.
    """
    copied, skipped = [], []
    target = Path(target)
    for rel in untracked_matching(patterns, main_root):
        parts = Path(rel).parts
        if not parts or ".." in parts or Path(rel).is_absolute():
            continue
        source = Path(main_root) / rel
        dest = target / rel
        if os.path.lexists(dest):
            skipped.append(rel)
            continue
        if any(p.is_symlink() for p in [target / Path(*parts[:i]) for i in range(1, len(parts))]):
            skipped.append(rel)  # never write through a symlinked directory of the worktree
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), dest)
        elif source.is_file():
            import shutil  # lazy: every `next` imports this module; only st.worktree.copy copies

            shutil.copy2(source, dest)
        else:
            continue
        copied.append(rel)
    return copied, skipped


def run_setup(
    worktree: Path,
    *,
    main_root: Path,
    issue: str,
    branch: str,
    session: str,
    ports: dict[str, Any] | None = None,
    previous: dict[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """Copy the configured files, then run the trusted setup script; the ``setup`` record.
    ``fresh``: git checked the worktree out a moment ago (no script on disk then: none committed).

    The record keeps the SHA-256 of every copy (``copied_sha256``, carried over from
    ``previous`` for copies made by an earlier run), so ``worktree remove`` can tell gitst's
    unchanged copies from the user's own files. ``ports`` (the worktree's port block) is
    passed to the script as ``ST_PORT``, ``ST_PORT_LAST`` and ``ST_PORT_COUNT``.
    """
    say = say or (lambda text: print(text, file=sys.stderr))
    worktree = Path(worktree)
    patterns = copy_patterns(main_root)
    copied, skipped = copy_untracked(Path(main_root), worktree, patterns)
    if copied:
        say(f"gitst: copied {len(copied)} untracked file(s) from {main_root}: {', '.join(copied)}")
    if skipped:
        say(f"gitst: left {len(skipped)} file(s) that already exist in the worktree: {', '.join(skipped)}")
    digests = dict((previous or {}).get("copied_sha256") or {})
    for rel in copied:
        digest = copy_digest(worktree / rel)
        if digest is not None:
            digests[rel] = digest
    command, made = _run_script(
        worktree,
        main_root=Path(main_root),
        issue=issue,
        branch=branch,
        session=session,
        ports=ports,
        say=say,
        fresh=fresh,
    )
    record: dict[str, Any] = {"at": timestamps.iso(timestamps.now()), "copied": copied, "command": command}
    if digests:
        record["copied_sha256"] = digests
    created = {**((previous or {}).get("created_sha256") or {}), **made}
    if created and len(created) <= MAX_CREATED:
        record["created_sha256"] = created
    return record


# Files the setup script may create that gitst records as its own (beyond: not recorded, so
# `worktree remove` counts them as work, the safe side).
MAX_CREATED = 5000


def _untracked_digests(worktree: Path) -> dict[str, str]:
    """SHA-256 of every untracked, not ignored file of ``worktree`` (one ``git status``)."""
    found: dict[str, str] = {}
    for line in uncommitted_changes(worktree):
        if line.startswith("?? ") and len(found) <= MAX_CREATED:
            digest = copy_digest(worktree / line[3:])
            if digest is not None:
                found[line[3:]] = digest
    return found


def _run_script(
    worktree: Path,
    *,
    main_root: Path,
    issue: str,
    branch: str,
    session: str,
    ports: dict[str, Any] | None,
    say: Callable[[str], None],
    fresh: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run the trusted script: (the ``command`` record, the untracked files it created or
    changed with their SHA-256 — gitst's own, like the copies). ``fresh``: a worktree just
    checked out without the script on disk has none committed (no git asked)."""
    absent = fresh and not_in_checkout(worktree, SETUP_FILE)
    config = None if absent else committed_config(worktree, "HEAD")
    if config is None:
        return {"status": ABSENT}, {}
    info = {"file": SETUP_FILE, "sha256": config.sha256}
    state = trust_state(config, worktree)
    short = config.sha256[:12]
    if state != "trusted":
        why = "it changed since you last trusted it" if state == CHANGED else "it has not been trusted"
        say(
            f"gitst: skipped the setup script {SETUP_FILE} (sha256 {short}): {why}.\n"
            f"  review it (git -C {worktree} show HEAD:{SETUP_FILE}), then run "
            f"`git -C {worktree} st trust` and `git st worktree setup {issue}`"
        )
        return {"status": state, **info}, {}
    script = worktree / SETUP_FILE
    on_disk = _on_disk(script, worktree)
    if on_disk != config.content:
        say(f"gitst: skipped the setup script: {script} differs from the committed, trusted {SETUP_FILE}")
        return {"status": MODIFIED, **info}, {}
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED_ENV}
    env.update(
        {
            "ST_ISSUE": issue,
            "ST_BRANCH": branch,
            "ST_WORKTREE": str(worktree),
            "ST_MAIN_WORKTREE": str(main_root),
            "ST_SESSION_ID": session,
        }
    )

    env.update(env_of(ports))
    say(f"gitst: running the trusted setup script {SETUP_FILE} (sha256 {short}) in {worktree}")
    before = _untracked_digests(worktree)
    import subprocess  # lazy: every `next` imports this module; only a trusted setup script runs

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        proc = subprocess.run(  # noqa: S603 - an argument list, no shell; the script was trusted by hash
            [SHELL, SETUP_FILE],  # never an `sh` a PATH entry the repository controls puts first
            cwd=worktree,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else None,
            check=False,  # a failing script is reported below, not raised
        )
    except OSError as exc:
        say(f"gitst: could not run the setup script: {exc}")
        return {"status": FAILED, **info, "exit_code": None}, {}
    made = {rel: digest for rel, digest in _untracked_digests(worktree).items() if before.get(rel) != digest}
    if len(made) > MAX_CREATED:
        made = {}
    if proc.returncode != 0:
        say(f"gitst: the setup script failed with exit status {proc.returncode}")
        return {"status": FAILED, **info, "exit_code": proc.returncode}, made
    return {"status": RAN, **info, "exit_code": 0}, made


def _has_fileno(stream: IO[str]) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
