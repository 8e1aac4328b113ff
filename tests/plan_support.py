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
    return json.loads(lines[-1][len("update_plan: "):])


def show_json(st, cwd, *extra) -> list[dict]:
    result = st("show", "--format", "json", *extra, cwd=cwd)
    assert result.returncode == 0, result
    return json.loads(result.stdout)["items"]
