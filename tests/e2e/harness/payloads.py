"""The recorded hook payloads (tests/fixtures/harness) and a harness-like sender: the real
`git-st hook-agent EVENT` in a subprocess, the payload on its stdin."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support import FIXTURES, Result

HARNESS_FIXTURES = FIXTURES / "harness"


def payload(name: str, *, session: str, cwd: Path, worktree: Path | str = "", harness: str = "claude") -> dict:
    """The fixture ``harness/name.json`` with its placeholders filled in."""
    text = (HARNESS_FIXTURES / harness / f"{name}.json").read_text()
    for key, value in (
        ("$SESSION", session),
        ("$CWD", str(cwd)),
        ("$WORKTREE", str(worktree)),
        ("$HOME", os.environ["HOME"]),
    ):
        text = text.replace(key, value)
    return json.loads(text)


def send(
    event: str,
    data: dict | bytes,
    *,
    cwd: Path,
    env: dict | None = None,
    keep_open: bool = False,
    timeout: float = 300,  # a hang's deadline, never a speed test
) -> Result:
    """Run `git-st hook-agent EVENT` with ``data`` on stdin, as the harness does. With
    ``keep_open`` the write end of stdin stays open until the hook has exited (a harness
    that never sends EOF): the hook must not wait for it."""
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.Popen(
        ["git-st", "hook-agent", event],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.write(raw)
    proc.stdin.flush()
    if not keep_open:
        proc.stdin.close()
    try:
        code = proc.wait(timeout=timeout)
    finally:
        if keep_open:
            proc.stdin.close()
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    return Result(code, out, err, ["git-st", "hook-agent", event])
