"""Read the one JSON object a harness writes on a hook's stdin, without waiting for EOF.

Claude Code and Codex write the hook's payload (one JSON object) to the command's stdin.
Some callers keep the pipe open after it (bkildow/wt-cli #8: a hook that reads to EOF
hangs until the harness's hook timeout kills it), so the reader stops as soon as the bytes
read so far are one whole JSON object: after each chunk that ends in ``}`` (whitespace after
it allowed), it tries to parse what it has. EOF ends the read too; a read that gets no
complete object within :data:`READ_TIMEOUT` seconds, or more than :data:`MAX_BYTES`, is a
:class:`PayloadError` (the entry fails open on it).

Imports only ``os``, ``select``, ``time`` and CPython's C JSON scanner (``_json``, what the
standard ``json`` parses with): this is on every hook's path. Not orjson — importing it loads
``dataclasses``, ``inspect``, ``uuid`` and more, tens of ms — and not the ``json`` package on
the way to a whole object either: its Python modules cost a fifth of the interpreter's own
start-up. A malformed or partial text makes the scanner import ``json.decoder`` for its
error, which is then the slow path. Without ``_json`` (not CPython) the ``json`` package does
the same job.
"""

from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_BYTES", "READ_TIMEOUT", "PayloadError", "read_payload"]

READ_TIMEOUT = 10.0  # seconds without a whole object: the harness sent nothing we can use
MAX_BYTES = 64 * 1024 * 1024  # a PostToolUse payload holds the tool's output: generous
_CHUNK = 1 << 16
_BLANK = b" \t\r\n"


try:
    import _json as _c_json
except ImportError:  # not CPython: the json package parses
    _c_json = None  # type: ignore[assignment]


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


class _Rules:
    """What the C scanner reads from its context: strict JSON, plain dicts, no NaN."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constants)
    memo: dict[str, str] = {}  # noqa: RUF012 - the scanner's own attribute


def _loads(text: str) -> object:
    """One JSON value filling ``text`` (whitespace around it allowed); ValueError if not."""
    if _c_json is None:
        import json  # lazy: only where CPython's scanner is missing

        return json.loads(text)
    start = len(text) - len(text.lstrip())
    try:
        scan: Any = _c_json.make_scanner(_Rules)  # type: ignore[arg-type]  # the context is duck-typed
        value, end = scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("more after the JSON value")
    return value


class PayloadError(Exception):
    """No usable payload on stdin (not JSON, not an object, too big, or nothing in time)."""


def _whole(data: bytes) -> dict[str, Any] | None:
    """The object ``data`` holds when it is one whole JSON object (else None)."""
    stripped = data.rstrip(_BLANK)
    if not stripped.endswith(b"}"):
        return None
    try:
        value = _loads(stripped.decode("utf-8"))
    except (ValueError, RecursionError):  # not whole yet (or not JSON: EOF or the timeout says so)
        return None
    if not isinstance(value, dict):
        raise PayloadError("the hook payload is not a JSON object")
    return value


def read_payload(fd: int = 0, *, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
    """The payload object on ``fd``; ``{}`` when the harness closed stdin without writing
    (a hand run with ``</dev/null``). Never blocks past ``timeout`` seconds."""
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PayloadError(f"no whole JSON object on stdin within {timeout:g} s ({len(data)} bytes read)")
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError) as exc:  # stdin closed or not selectable
            raise PayloadError(f"cannot read stdin: {exc}") from None
        if not ready:
            continue
        chunk = os.read(fd, _CHUNK)
        if not chunk:  # EOF
            if not data.strip(_BLANK):
                return {}
            if data.lstrip(_BLANK)[:1] != b"{":
                raise PayloadError("the hook payload is not a JSON object")
            value = _whole(data)
            if value is None:
                raise PayloadError("the hook payload on stdin is not one JSON object")
            return value
        data += chunk
        if len(data) > MAX_BYTES:
            raise PayloadError(f"the hook payload is over {MAX_BYTES} bytes")
        value = _whole(data)
        if value is not None:
            return value
