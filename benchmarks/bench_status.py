"""`git st status` against the size of the worktree registry (issue 21, point 10).

    .venv/bin/python benchmarks/bench_status.py [--runs 3] [--sizes 500,10000]

A repository with one real worktree (`git st worktree add 1`, its PR in the pipeline state)
and registry entries copied from it up to each size (their directories do not exist: the
orphaned rows an interrupted swarm leaves behind). For each size it prints the median wall
time and CPU time (user + system of the child and its git processes) of a whole
`git st status --format json` in a fresh process, and the number of git processes it ran
(a `git` first on PATH counts them), which must not grow with the registry.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIT_ST = [sys.executable, "-m", "gitst"]


def _run(args: list[str], cwd: Path, env: dict) -> None:
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _grow(repo: Path, size: int) -> None:
    registry = repo / "state" / "active-worktrees"
    entry = json.loads((registry / "1.json").read_text())
    for issue in range(2, size + 1):
        target = registry / f"{issue}.json"
        if not target.exists():
            path = str(repo.parent / "repo.worktrees" / f"issue-{issue}")
            target.write_text(json.dumps(dict(entry, issue=str(issue), branch=f"st/issue-{issue}", path=path)))


def _timed(cwd: Path, env: dict) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    _run([*GIT_ST, "status", "--format", "json"], cwd, env)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="500,10000")
    options = parser.parse_args()
    sizes = sorted(int(size) for size in options.sizes.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home, repo, bindir = base / "home", base / "repo", base / "bin"
        home.mkdir()
        bindir.mkdir()
        log = base / "git-calls.log"
        real_git = shutil.which("git")
        (bindir / "git").write_text(f'#!/bin/sh\n[ -n "$COUNT_GIT" ] && echo x >> "{log}"\nexec "{real_git}" "$@"\n')
        (bindir / "git").chmod(0o755)
        # what an installed gitst runs: its bytecode compiled (pip does that), not recompiled by
        # every process because the caller's environment says PYTHONDONTWRITEBYTECODE
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
            "ST_SESSION_ID": "bench",
            "ST_SESSION_PID": str(os.getpid()),
        }
        _run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gitst")], base, env)
        _run(["git", "init", "-q", "-b", "main", str(repo)], base, env)
        identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        _run(["git", *identity, "commit", "-q", "--allow-empty", "-m", "init"], repo, env)
        _run([*GIT_ST, "worktree", "add", "1"], repo, env)
        _run([*GIT_ST, "pipeline", "set", "1", "pr_number", "42"], repo, env)
        print(f"{'entries':>8}  {'wall (median)':>13}  {'cpu (median)':>12}  {'git processes':>13}")
        for size in sizes:
            _grow(repo, size)
            _timed(repo, env)  # warm-up: bytecode, the page cache
            samples = [_timed(repo, env) for _ in range(options.runs)]
            log.unlink(missing_ok=True)
            _run([*GIT_ST, "status", "--format", "json"], repo, {**env, "COUNT_GIT": "1"})
            calls = len(log.read_text().splitlines())
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            print(f"{size:>8}  {wall:>12.2f}s  {cpu:>11.2f}s  {calls:>13}")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
