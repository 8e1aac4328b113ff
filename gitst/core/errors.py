"""Exceptions that carry a documented exit code (docs/conventions.md, "Exit codes").

Every expected failure (bad input, bad environment, a busy lock) is raised as one of
these; the CLI entry point prints ``error: <message>`` (plus the fix, when there is one)
on stderr and exits with the code. Nothing here imports anything heavy.
"""

from __future__ import annotations

__all__ = [
    "CONFLICT",
    "ENVIRONMENT",
    "OK",
    "PROBLEMS",
    "USAGE",
    "ConflictError",
    "EnvironmentProblem",
    "GitstError",
    "ProblemsFound",
    "UsageError",
]

OK = 0
PROBLEMS = 1  # a check found problems
USAGE = 2  # bad usage or rejected input; nothing was written
CONFLICT = 3  # lock busy, issue claimed by a live owner
ENVIRONMENT = 4  # not a git repo, git or gh missing where required


class GitstError(Exception):
    """Base class: an expected failure with a message for people and an exit code."""

    exit_code = USAGE

    def __init__(self, message: str, *, fix: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix
        if exit_code is not None:
            self.exit_code = exit_code

    def render(self) -> str:
        text = f"error: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class UsageError(GitstError):
    """Rejected input: unknown id, bad status, invalid identifier... (exit 2)."""

    exit_code = USAGE


class ProblemsFound(GitstError):
    """A check ran and found problems (exit 1)."""

    exit_code = PROBLEMS


class ConflictError(GitstError):
    """Somebody else holds what we need: a lock, a claim (exit 3)."""

    exit_code = CONFLICT


class EnvironmentProblem(GitstError):
    """The environment is not usable: not a git repo, git/gh missing (exit 4)."""

    exit_code = ENVIRONMENT
