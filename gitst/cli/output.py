"""How every command prints: one JSON style, UTF-8 text whatever the locale, and human
output that a hostile string cannot turn into terminal control sequences.

- :func:`emit_json` - the one JSON style of ``--format json``: indented (2 spaces) when
  stdout is a terminal, one compact line when it is a pipe or a file (gh's convention), the
  same values either way; keys keep their order, text is never ``\\u``-escaped.
- :func:`write` - a line of text to stdout or stderr as UTF-8, exactly as given (JSON).
- :func:`say` - a line for a person: :func:`sanitize` then :func:`write`.
- :func:`sanitize` - what a person reads: control characters (ESC, CR, BEL, C1, …) from ids,
  steps, branch names and records are shown escaped (``\\x1b``), never sent to the terminal.
  JSON output is never sanitized: it is exact, and JSON escapes control characters itself.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from gitst.core.terminal import sanitize

__all__ = ["emit_json", "is_terminal", "sanitize", "say", "write"]


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


def say(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """A line for a person (stdout, or stderr with ``err``): control characters escaped
    (:func:`sanitize`), UTF-8. Never for JSON, which :func:`emit_json` and :func:`write` keep
    exact. ``nl=False`` writes no newline (and nothing at all for empty text)."""
    shown = sanitize(str(text))
    if nl:
        write(shown, err=err)
    elif shown:
        stream = sys.stderr if err else sys.stdout
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(shown)
        else:
            buffer.write(shown.encode("utf-8", "surrogateescape"))
        stream.flush()


def emit_json(value: Any) -> None:
    """``value`` as JSON on stdout in the one style of ``--format json`` (module docstring)."""
    from gitst.core.jsonio import dumps_deep, dumps_pretty

    if is_terminal():
        write(dumps_pretty(value).decode("utf-8").rstrip("\n"))
    else:
        write(dumps_deep(value))
