"""Helpers for the locks / sessions / worktree tests: session environments, dead pids, state files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from gitst.schemas.catalog import reference_validator, validator


def session_env(session: str, pid: int | None = None, **extra: str) -> dict:
    """Environment of a session: its id and its session pid (default: this live test process)."""
    env = {"ST_SESSION_ID": session, "ST_SESSION_PID": str(pid if pid is not None else os.getpid())}
    env.update(extra)
    return env


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def assert_valid(record: dict, schema: str) -> None:
    """The record matches its schema in both validators (fast and reference)."""
    assert validator(schema).is_valid(record), [e.message for e in validator(schema).errors(record)]
    assert reference_validator(schema).is_valid(record)


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (relative path -> content); symlinks as their target."""
    result = {}
    if not Path(directory).exists():
        return result
    for path in sorted(Path(directory).rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            result[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            result[rel] = path.read_bytes()
    return result


def reclaim_log(state: Path) -> list[dict]:
    path = Path(state) / "locks" / "reclaims.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]
