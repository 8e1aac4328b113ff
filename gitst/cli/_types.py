"""Types the click declarations share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["F"]

# A function a click decorator (an option, an argument) returns as it got it, declared.
F = TypeVar("F", bound=Callable[..., Any])
