"""Reading what a user hands a command: ``--from FILE``, ``--input FILE``,
``--response-file FILE`` or ``-`` for stdin.

A named file is opened the one way gitst opens every file (:mod:`gitst.core.safepaths`): it
must be a regular file - a symbolic link, a FIFO, a device (``/dev/zero``) or a socket is
refused before a byte is read (exit 2), so nothing hangs or grows without bound. Standard
input stays allowed, but is bounded like a file: at most :data:`MAX_INPUT_BYTES`.
"""

from __future__ import annotations

import sys

from gitst.core.errors import UsageError
from gitst.core.safepaths import read_bytes

__all__ = ["MAX_INPUT_BYTES", "read_source"]

MAX_INPUT_BYTES = 64 << 20  # 64 MiB: a plan export of ~200,000 items, a very long agent response


def read_source(source: str) -> bytes:
    """The bytes of ``source``: stdin for ``-``, else the file (relative to the current
    directory); a file that cannot be read, is not a regular file or is larger than
    :data:`MAX_INPUT_BYTES` is refused (exit 2)."""
    if source == "-":
        shown = "standard input"
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        shown = source
        try:
            found = read_bytes(source, limit=MAX_INPUT_BYTES)
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
        if found is None:
            raise UsageError(f"cannot read {source}: No such file or directory")
        data = found
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(
            f"{shown} holds more than {MAX_INPUT_BYTES >> 20} MiB: refused, nothing written",
            fix="split the input, or give the large text as a file gitst does not have to read (a path in a field)",
        )
    return data
