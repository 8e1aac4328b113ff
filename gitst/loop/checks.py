"""The repository's own check before ``land`` pushes: ``st.land.check`` (``ST_LAND_CHECK``).

The command is the repository owner's setting (git config or the environment, never a file a
clone commits), run as ``/bin/sh -c COMMAND`` with the worktree as current directory and stdin
closed — an argument list, the absolute ``/bin/sh`` (never one a ``PATH`` entry puts first).
"""

from __future__ import annotations

import sys

__all__ = ["run_check"]


def run_check(command: str, worktree: str) -> int:
    """The command's exit code. Its output goes to stderr, both streams: stdout is ``land``'s
    own (``--format json``), and the agent reads stderr for what failed."""
    import subprocess  # lazy: only a land with st.land.check set runs a command

    sys.stdout.flush()
    done = subprocess.run(  # noqa: S603 - an argument list; the command is the owner's own setting
        ["/bin/sh", "-c", command], cwd=worktree, stdin=subprocess.DEVNULL, stdout=sys.stderr, check=False
    )
    return done.returncode
