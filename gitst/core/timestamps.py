"""Timestamps as gitst writes them: UTC, ISO 8601, milliseconds, ``Z`` (the seeds' form,
e.g. ``2026-04-10T12:48:21.988Z``), and back to epoch seconds for comparisons."""

from __future__ import annotations

import functools
import re
import time
from datetime import datetime, timedelta, timezone

__all__ = [
    "human_delta",
    "iso",
    "moment",
    "now",
    "parse",
]

# The schemas hold the same rule as a pattern (timestamps are never checked with `format`).
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"


@functools.lru_cache(maxsize=1)
def _compiled() -> re.Pattern[str]:
    """:data:`TIMESTAMP_PATTERN`, compiled on first use."""
    return re.compile(TIMESTAMP_PATTERN)


def now() -> float:
    return time.time()


def iso(epoch: float) -> str:
    """``2026-04-10T12:48:21.988Z`` for ``epoch`` seconds."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def moment(value: object) -> datetime | None:
    """The aware ``datetime`` of a timestamp of the seeds' form (:data:`TIMESTAMP_PATTERN`:
    seconds and an offset required, up to 9 fraction digits), else None: a wrong shape or
    an impossible date such as February 30. A leap second (``:60``) counts as ``:59``."""
    if not isinstance(value, str):
        return None
    match = _compiled().fullmatch(value)
    if match is None:
        return None
    fraction, offset = match.group(1), match.group(2)
    year, month, day = int(value[0:4]), int(value[5:7]), int(value[8:10])
    hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
    micro = int((fraction or ".0")[1:7].ljust(6, "0"))
    if offset == "Z":
        tz = timezone.utc
    else:
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        if hours > 23 or minutes > 59:
            return None
        sign = 1 if offset[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return datetime(year, month, day, hour, minute, min(second, 59), micro, tzinfo=tz)
    except ValueError:
        return None


def parse(text: str) -> float:
    """Epoch seconds of a timestamp (:func:`moment`); ValueError when it is not one."""
    when = moment(text)
    if when is None:
        raise ValueError(f"not a timestamp: {text!r}")
    return when.timestamp()


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
