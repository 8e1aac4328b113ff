"""Settings read from the environment, checked: a bad value is rejected, never ignored."""

from __future__ import annotations

import os

from gitst.core.errors import UsageError


def seconds(name: str, default: float, *, allow_zero: bool = True) -> float:
    """The number of seconds in environment variable ``name``, else ``default`` (unset or empty)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"{name} must be a finite number of seconds, got {raw!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{name} must be {'0 or more' if allow_zero else 'more than 0'}, got {raw!r}")
    return value


def positive_int(raw: str, source: str) -> int:
    """``raw`` (read from ``source``, e.g. an env var or git config key) as an integer > 0."""
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise UsageError(f"invalid {source} {raw!r}; expected an integer > 0")
    return value
