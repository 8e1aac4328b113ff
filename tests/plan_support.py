"""Small helpers shared by the plan tests (reading the plan file the way a reviewer would)."""

from __future__ import annotations

import json
from pathlib import Path

PLAN = Path(".step/st-plan.jsonl")


def plan_path(root: Path) -> Path:
    return Path(root) / PLAN


def records(path: Path) -> list[dict]:
    """Every line of a plan file as JSON (fails loudly on a line that is not JSON)."""
    return [json.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def events(path: Path) -> list[dict]:
    return [r for r in records(path) if r["lane"] == "event"]


def checkpoints(path: Path) -> list[dict]:
    return [r for r in records(path) if r["lane"] == "checkpoint"]


def update_plan_line(stdout: str) -> dict:
    lines = stdout.splitlines()
    assert lines and lines[-1].startswith("update_plan: "), stdout
    return json.loads(lines[-1][len("update_plan: ") :])


def show_json(st, cwd, *extra) -> list[dict]:
    result = st("show", "--format", "json", *extra, cwd=cwd)
    assert result.returncode == 0, result
    return json.loads(result.stdout)["items"]


def st_quick(*args: str, cwd, env: dict | None = None) -> None:
    """Run the CLI's own ``main()`` in this process — the same code path as ``git-st`` without
    an interpreter start-up. For *setting up* a plan; what a test checks goes through the real
    executable (``tests.helpers.st``)."""
    import os

    from gitst.cli.main import main

    saved_env = {name: os.environ.get(name) for name in (env or {})}
    old_cwd = os.getcwd()
    os.environ.update(env or {})
    os.chdir(cwd)
    try:
        rc = main(list(args))
    finally:
        os.chdir(old_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert rc == 0, (args, rc)
