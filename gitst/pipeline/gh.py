"""Running the GitHub CLI (``gh``) for JSON: an argument list, a timeout, no prompts.

Every way ``gh`` can be unusable — not installed, not authenticated, no GitHub remote,
an API error, a hang, output that is not JSON — is raised as :class:`GhUnavailable`
with a one-line reason, so a caller can skip its step and say why instead of crashing.

Timeout: ``ST_GH_TIMEOUT`` seconds, default 30.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Any

from gitst.core.jsonio import JSONDecodeError, loads
from gitst.settings import float_setting

EXIT_AUTH = 4  # gh's documented exit status for "authentication required"
MAX_PR_NUMBER = 2**53 - 1  # the JSON interop limit, as for every number gitst reads


def is_pr_number(value: object) -> bool:
    """A PR number as gh prints one: an integer from 1 to 2^53 - 1 (a 0, a negative, a float,
    a bool or a huge number from a broken or hostile gh is no PR)."""
    return type(value) is int and 0 < value <= MAX_PR_NUMBER


class GhUnavailable(Exception):
    """gh could not give an answer; ``reason`` says why in one line."""

    def __init__(self, reason: str, *, stderr: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.stderr = stderr


def gh_timeout() -> float:
    return float_setting("gh_timeout")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _run(
    argv: list[str], cwd: str | os.PathLike[str] | None, env: dict[str, str], wait: float
) -> tuple[int, bytes, bytes]:
    """Run gh in a process group of its own; on timeout the whole group is killed, so the
    children gh started (an extension, a pager, a credential helper) do not outlive it."""
    import subprocess  # lazy: `next` and `land` import this module; only the PR route runs gh

    proc = subprocess.Popen(  # noqa: S603 - an argument list, no shell
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        raise
    return proc.returncode, stdout, stderr


def _gh(args: Sequence[str], cwd: str | os.PathLike[str] | None, timeout: float | None) -> bytes:
    """Run ``gh ARGS``; its stdout, or GhUnavailable with the one-line reason."""
    import subprocess  # lazy: as in _run

    wait = gh_timeout() if timeout is None else timeout
    env = dict(os.environ, GH_PROMPT_DISABLED="1", GH_NO_UPDATE_NOTIFIER="1", NO_COLOR="1")
    try:
        returncode, stdout, raw_stderr = _run(["gh", *args], cwd, env, wait)
    except FileNotFoundError:
        raise GhUnavailable("gh is not installed (no `gh` on PATH)") from None
    except PermissionError:
        raise GhUnavailable("gh on PATH is not executable") from None
    except subprocess.TimeoutExpired:
        raise GhUnavailable(f"gh did not answer within {wait:g}s (ST_GH_TIMEOUT)") from None
    stderr = raw_stderr.decode("utf-8", "replace")
    if returncode == EXIT_AUTH or "Bad credentials" in stderr or "HTTP 401" in stderr:
        raise GhUnavailable("gh is not authenticated (run `gh auth login` or set GH_TOKEN)", stderr=stderr)
    if returncode != 0:
        detail = _first_line(stderr) or "no message"
        raise GhUnavailable(f"gh failed (exit {returncode}): {detail}", stderr=stderr)
    return stdout


def gh_json(args: Sequence[str], cwd: str | os.PathLike[str] | None = None, *, timeout: float | None = None) -> Any:
    """Run ``gh ARGS`` (which must print JSON) and return the decoded output."""
    stdout = _gh(args, cwd, timeout)
    try:
        return loads(stdout)
    except JSONDecodeError:
        raise GhUnavailable("gh printed something that is not JSON") from None


def gh_text(args: Sequence[str], cwd: str | os.PathLike[str] | None = None, *, timeout: float | None = None) -> str:
    """Run ``gh ARGS`` for what it prints as text (``gh pr create`` prints the PR's URL)."""
    return _gh(args, cwd, timeout).decode("utf-8", "replace")
