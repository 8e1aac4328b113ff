"""The pre-commit hook's check of path reservations (docs/agent-loop.md, "Reservations").

Loaded only when the state dir says reservations exist (``state/reservations/active``,
:func:`gitst.hooks.entry.reservations_marked`): a commit that stages a path another live
session has reserved is refused, each path named with its owner. The override is
``ST_ALLOW_RESERVED=1`` for one commit (or ``git commit --no-verify``, which skips every check).
"""

from __future__ import annotations

import os
import sys

from gitst.core.diagnostics import Diagnostic
from gitst.sessions import reservations
from gitst.sessions.identity import current

OVERRIDE = "ST_ALLOW_RESERVED"
CODE = "HOOK_RESERVED_PATH"


def check_reserved(paths: list[str], top: str) -> list[Diagnostic]:
    """One error per staged path that a live reservation of another session covers."""
    found = reservations.conflicts(paths, current(), cwd=top)
    if not found:
        return []
    if os.environ.get(OVERRIDE, "").strip() not in ("", "0"):
        print(
            f"gitst pre-commit: {OVERRIDE} is set: committing {len(found)} path(s) other sessions reserve "
            f"({', '.join(sorted({c.path for c in found})[:3])})",
            file=sys.stderr,
        )
        return []
    fix = (
        f"leave these paths to their owner, or, agreed with it, commit anyway with {OVERRIDE}=1 git commit … "
        "(`git st reserve --list` shows who holds what)"
    )
    return [Diagnostic(c.path, None, CODE, c.describe(), fix=fix) for c in found]
