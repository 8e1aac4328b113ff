"""Port blocks for worktrees: a registry, not a hash.

``st.worktree.ports`` (``ST_WORKTREE_PORTS``; default ``3100-3999/10``, ``off`` for none)
cuts a range into blocks. ``worktree add`` takes the lowest block that no other worktree of
this state dir holds and on which nothing listens on 127.0.0.1, records it in the
issue's registry entry (``ports``), passes it to the setup script (``ST_PORT``,
``ST_PORT_LAST``, ``ST_PORT_COUNT``) and prints it. A block is held while its worktree's
claim is live (or its add or remove is in flight); a released, stale or dead claim frees it,
and the next add that takes it drops it from the old entry, so no two entries ever show one
block. Choosing and recording happen under one flock (``active-worktrees/ports.lock``):
two concurrent adds never get overlapping blocks. Hashing a branch name to a port collides
(two names, one port); a registry does not.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from gitst.core.errors import ConflictError
from gitst.sessions import locks, registry
from gitst.sessions.claims import issue_lock_name
from gitst.settings import worktree_ports
from gitst.statedir.records import CorruptRecord

__all__ = ["block_of", "env_of", "held_blocks", "listening", "pick", "render", "spec_for"]


def block_of(start: int, count: int) -> dict[str, Any]:
    return {"start": start, "end": start + count - 1, "count": count}


def render(ports: dict[str, Any] | None) -> str:
    """``3100-3109`` (or ``-`` for none)."""
    if not ports:
        return "-"
    return f"{ports['start']}-{ports['end']}" if ports["count"] > 1 else str(ports["start"])


def env_of(ports: dict[str, Any] | None) -> dict[str, str]:
    """The variables a worktree's setup script (and ``--print-env``) gets for its block."""
    if not ports:
        return {}
    return {"ST_PORT": str(ports["start"]), "ST_PORT_LAST": str(ports["end"]), "ST_PORT_COUNT": str(ports["count"])}


def listening(port: int) -> bool:
    """True when something already holds ``port`` on 127.0.0.1 (a bind would fail)."""
    import socket  # lazy: only a block of ports being handed out binds (st.worktree.ports off: never)

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


Blocks = list[tuple[str, dict[str, Any]]]  # (issue, its ports)


def held_blocks(root: Path, *, except_issue: str | None = None) -> tuple[Blocks, Blocks]:
    """(blocks held, blocks recorded but free again): ``(issue, ports)`` pairs of the registry.

    A block is held while its entry's claim is live or an operation on it is pending.
    """
    held, freed = [], []
    for issue, _path, entry, _problem in registry.list_worktree_entries(root):
        if entry is None or issue == except_issue or not isinstance(entry.get("ports"), dict):
            continue
        try:
            state = locks.state_of(locks.read(issue_lock_name(issue), root))
        except CorruptRecord:
            state = locks.LIVE  # cannot tell: keep its block out of reach
        if state == locks.LIVE or entry.get("pending"):
            held.append((issue, entry["ports"]))
        else:
            freed.append((issue, entry["ports"]))
    return held, freed


def _overlaps(start: int, end: int, ports: dict[str, Any]) -> bool:
    return start <= ports["end"] and ports["start"] <= end


def pick(root: Path, issue: str, spec: tuple[int, int, int], *, keep: dict[str, Any] | None = None) -> dict[str, Any]:
    """The block for ``issue``: ``keep`` (its current block) when still free, else the lowest
    free block of ``spec``; ConflictError (exit 3) when every block is taken.

    Call with the ports lock held (:func:`gitst.sessions.registry.ports_lock_path`), and
    record the answer before letting go of it. Entries that still show the chosen block
    but no longer hold it lose it (the registry never shows one block twice).
    """
    first, last, size = spec
    held, freed = held_blocks(root, except_issue=issue)
    choice = None
    if keep and not any(_overlaps(keep["start"], keep["end"], other) for _, other in held):
        choice = keep
    else:
        busy = 0
        for start in range(first, last - size + 2, size):
            end = start + size - 1
            if any(_overlaps(start, end, other) for _, other in held):
                continue
            if any(listening(port) for port in range(start, end + 1)):
                busy += 1
                continue
            choice = block_of(start, size)
            break
        if choice is None:
            blocks = (last - first + 1) // size
            raise ConflictError(
                f"no free port block in {first}-{last} ({blocks} block(s) of {size}: {len(held)} held by "
                f"live worktrees, {busy} with a port something already listens on)",
                fix="remove finished worktrees (`git st worktree clean --merged`), widen the range "
                "(`git config st.worktree.ports 3100-4999/10`), or turn ports off (`git config st.worktree.ports off`)",
            )
    for other_issue, ports in freed:
        if _overlaps(choice["start"], choice["end"], ports):
            registry.write_worktree_entry({"issue": other_issue}, root=root, drop=("ports",))
    return choice


def spec_for(cwd: str | os.PathLike[str] | None) -> tuple[int, int, int] | None:
    return worktree_ports(cwd)
