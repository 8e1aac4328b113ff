"""How every command prints: one JSON style, UTF-8 text whatever the locale, and human
output that a hostile string cannot turn into terminal control sequences.

- :func:`emit_json` - the one JSON style of ``--format json``: indented (2 spaces) when
  stdout is a terminal, one compact line when it is a pipe or a file (gh's convention), the
  same values either way; keys keep their order, text is never ``\\u``-escaped.
- :func:`write` - a line of text to stdout or stderr as UTF-8.
- :func:`sanitize` - what a person reads: control characters (ESC, CR, BEL, C1, …) from ids,
  steps, branch names and records are shown escaped (``\\x1b``), never sent to the terminal.
  JSON output is never sanitized: it is exact, and JSON escapes control characters itself.
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = ["emit_json", "is_terminal", "sanitize", "write"]

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    """``text`` with every control character but tab and newline escaped (``\\x1b``)."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def is_terminal(stream: TextIO | None = None) -> bool:
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def write(text: str, *, err: bool = False) -> None:
    """``text`` and a newline, as UTF-8 whatever the locale says (never mangled or escaped)."""
    stream = sys.stderr if err else sys.stdout
    data = (text + "\n").encode("utf-8", "surrogateescape")
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8", "replace"))
        stream.flush()
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


def emit_json(value: Any) -> None:
    """``value`` as JSON on stdout in the one style of ``--format json`` (module docstring)."""
    from gitst.core.jsonio import dumps_deep, dumps_pretty

    if is_terminal():
        write(dumps_pretty(value).decode("utf-8").rstrip("\n"))
    else:
        write(dumps_deep(value))
