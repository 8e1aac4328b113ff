"""Reading what a user hands a command: ``--from FILE`` or ``-`` for stdin."""

from __future__ import annotations

import sys

from gitst.core.errors import UsageError


def read_source(source: str) -> bytes:
    """The bytes of ``source``: stdin for ``-``, else the file (relative to the current
    directory); a file that cannot be read is refused (exit 2)."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        with open(source, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
