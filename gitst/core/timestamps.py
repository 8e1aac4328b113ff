"""Timestamps as gitst writes them: UTC, ISO 8601, milliseconds, ``Z`` (the seeds' form,
e.g. ``2026-04-10T12:48:21.988Z``), and back to epoch seconds for comparisons."""

from __future__ import annotations

import time
from datetime import datetime, timezone

# The schemas hold the same rule as a pattern (timestamps are never checked with `format`).
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"


def now() -> float:
    return time.time()


def iso(epoch: float) -> str:
    """``2026-04-10T12:48:21.988Z`` for ``epoch`` seconds."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse(text: str) -> float:
    """Epoch seconds of an ISO 8601 timestamp (``Z`` or an offset); ValueError when malformed."""
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    value = text[:-1] + "+00:00" if text.endswith("Z") else text
    # Python 3.10's fromisoformat takes at most 6 fraction digits.
    if "." in value:
        head, _, rest = value.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = head + "." + (rest[:digits] + "000000")[:6] + rest[digits:]
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def human_delta(seconds: float) -> str:
    """``in 29m 59s`` / ``3s ago`` for people."""
    future = seconds >= 0
    left = int(abs(seconds))
    hours, rest = divmod(left, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        text = f"{hours}h {minutes}m"
    elif minutes:
        text = f"{minutes}m {secs}s"
    else:
        text = f"{secs}s"
    return f"in {text}" if future else f"{text} ago"
