"""How much the parallel-agents machinery costs, measured in one run.

Prints, as medians of several runs of whole commands (time.perf_counter around
subprocess.run):

- the post-checkout hook's fast path (`post_checkout` on a checkout that is not a new
  worktree) as a ratio of the bare interpreter start-up (`python -c pass`);
- `git st claim` and `git st check-issue` on a free issue, in milliseconds, and as a ratio
  of the CLI's own start-up (`python -m gitst --version`).

Usage: python benchmarks/parallel_overhead.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def median_seconds(args: list[str], *, runs: int, cwd: str, env: dict) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "init",
            ],
            check=True,
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT), ST_SESSION_ID="bench", ST_SESSION_PID=str(os.getpid()))
        bare = median_seconds([sys.executable, "-c", "pass"], runs=runs, cwd=str(repo), env=env)
        hook = median_seconds(
            [
                sys.executable,
                "-c",
                (
                    "import sys; from gitst.worktrees.manager import post_checkout; "
                    "sys.exit(post_checkout(['a' * 40, 'b' * 40, '1'], '.'))"
                ),
            ],
            runs=runs,
            cwd=str(repo),
            env=env,
        )
        cli = [sys.executable, "-m", "gitst"]
        floor = median_seconds([*cli, "--version"], runs=runs, cwd=str(repo), env=env)
        check = median_seconds([*cli, "check-issue", "1"], runs=runs, cwd=str(repo), env=env)
        claim_samples = []
        for n in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [*cli, "claim", f"b{n}"],
                cwd=repo,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            claim_samples.append(time.perf_counter() - start)
        claim = statistics.median(claim_samples)
    print(f"post-checkout fast path: {hook * 1000:.1f} ms = {hook / bare:.2f}x `python -c pass` ({bare * 1000:.1f} ms)")
    print(f"git st check-issue: {check * 1000:.1f} ms = {check / floor:.2f}x `gitst --version` ({floor * 1000:.1f} ms)")
    print(f"git st claim:       {claim * 1000:.1f} ms = {claim / floor:.2f}x `gitst --version`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
