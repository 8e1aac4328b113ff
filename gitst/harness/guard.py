"""PreToolUse: refuse a write to a path another live session reserved (docs/harness.md,
"PreToolUse").

A tool call that writes files (Edit, Write, MultiEdit, NotebookEdit, a shell command's
targets, Codex's apply_patch: :mod:`gitst.harness.toolpaths`) is checked with
:func:`gitst.sessions.reservations.conflicts` — the same question `git st reserve --check`
asks, a local read of the state dir and the last fetched remote table, no network. A
reserved path is refused with exit 2 and the reason on stderr (both harnesses' "block"
contract: the reason goes to the agent); anything else is allowed with exit 0 and no
output. This module imports only what that needs: it runs before every edit.
"""

from __future__ import annotations

import sys
from typing import Any

from gitst.core.terminal import sanitize
from gitst.git.repo import work_tree_top
from gitst.harness import toolpaths
from gitst.sessions import reservations
from gitst.sessions.identity import current

__all__ = ["REFUSED", "pre_tool_use"]

REFUSED = 2  # the harnesses' "block" exit status: stderr goes to the agent


def pre_tool_use(payload: dict[str, Any], session: str, cwd: str) -> int:
    """Exit 2 when the call writes a path another live session reserved, else 0."""
    top = work_tree_top(cwd)
    if top is None:
        return 0
    paths = toolpaths.written_paths(str(payload.get("tool_name")), payload.get("tool_input"), cwd=cwd, top=top)
    if not paths:
        return 0
    found = reservations.conflicts(paths, current(session or None), cwd=top)
    if not found:
        return 0
    lines = [f"gitst: {sanitize(c.describe())}" for c in found]
    lines.append(
        "  edit another file, or wait until that session releases it (`git st reserve --list` shows who holds what)"
    )
    print("\n".join(lines), file=sys.stderr)
    return REFUSED
