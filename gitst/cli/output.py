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
- :func:`colour_enabled` / :func:`painter` - colour for a person at a terminal: on when the
  stream is a terminal (and ``TERM`` is not ``dumb``), off with ``NO_COLOR``, forced with
  ``CLICOLOR_FORCE`` (https://no-color.org, https://bixense.com/clicolors); never in a pipe
  unless forced. :func:`terminal_width` is the width long lines are cut to (None in a pipe).
"""

from __future__ import annotations

import os
import re
import sys

from gitst.core.terminal import sanitize
from gitst.settings import bool_setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

__all__ = [
    "ROLES",
    "colour_enabled",
    "colour_report",
    "emit_json",
    "is_terminal",
    "paint",
    "painter",
    "sanitize",
    "say",
    "terminal_width",
    "write",
]


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
    from gitst.core.jsonio import dumps_deep, dumps_pretty  # lazy: orjson (and its dataclasses, uuid) for JSON only

    if is_terminal():
        write(dumps_pretty(value).decode("utf-8").rstrip("\n"))
    else:
        write(dumps_deep(value))


# SGR codes per role: statuses, dep_states, and the prefixes of messages.
ROLES: dict[str, str] = {
    "pending": "",
    "in_progress": "33;1",  # bold yellow
    "completed": "32",  # green
    "blocked": "31;1",  # bold red
    "deferred": "2",  # dim
    "canceled": "2",
    "ready": "32",
    "waiting_on_deps": "33",
    "blocked_manual": "31",
    "n/a": "2",
    "error": "31;1",
    "warning": "33;1",
    "fix": "36",
    "heading": "1",
    "id": "36",
}


def colour_enabled(stream: TextIO | None = None) -> bool:
    """Whether text written to ``stream`` (stdout by default) may carry colour."""
    if bool_setting("no_color"):
        return False
    if bool_setting("clicolor_force"):
        return True
    return is_terminal(stream) and os.environ.get("TERM") != "dumb"


def paint(text: str, role: str) -> str:
    """``text`` in the colour of ``role`` (unchanged for a role without one)."""
    code = ROLES.get(role, "")
    return f"\x1b[{code}m{text}\x1b[0m" if code and text else text


def _plain(text: str, role: str) -> str:
    return text


def painter(stream: TextIO | None = None) -> Callable[[str, str], str]:
    """:func:`paint` when ``stream`` may carry colour, else a function that returns the text."""
    return paint if colour_enabled(stream) else _plain


_SEVERITY = re.compile(r"^(.*?: )(error|warning)(\[[A-Z0-9_]+\]:)")
_PREFIXES = (("error:", "error"), ("warning:", "warning"), ("  fix:", "fix"))


def colour_report(text: str, stream: TextIO | None = None) -> str:
    """An error report or diagnostics for ``stream`` (stderr by default): ``error:``,
    ``warning:`` and ``  fix:`` prefixes and the ``error[CODE]`` of diagnostic lines in
    colour when the stream may carry it; the text unchanged otherwise."""
    target = sys.stderr if stream is None else stream
    if not colour_enabled(target):
        return text
    lines = []
    for line in text.split("\n"):
        out = line
        for prefix, role in _PREFIXES:
            if line.startswith(prefix):
                out = paint(prefix, role) + line[len(prefix) :]
                break
        else:
            match = _SEVERITY.match(line)
            if match:
                head, severity, code = match.groups()
                out = head + paint(severity + code, severity) + line[match.end() :]
        lines.append(out)
    return "\n".join(lines)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width in columns when ``stream`` is a terminal (``COLUMNS`` wins), else None."""
    if not is_terminal(stream):
        return None
    import shutil  # lazy: a terminal's width only (shutil loads bz2 and lzma; plan reads in a pipe skip it)

    return shutil.get_terminal_size().columns
