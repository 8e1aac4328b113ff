"""The MCP `show` tool on a 10,000-item plan (issue 24, point 3), beside `git st show`.

    .venv/bin/python benchmarks/bench_mcp.py [--items 10000] [--runs 7]

A repository whose plan holds ``--items`` items (a chain of dependencies every 10th item, notes
on every item), served by one `git st mcp` that the `mcp` SDK's stdio client starts. It prints
the medians of:

- the server's start-up (spawn to `initialize` answered);
- `show` (the default listing: the first 100 items, `total`, `truncated`) and `show` with one
  id (the item, its dependents and its history: a full read of the file), each one call
  to a running server, and the bytes each returns; the first `show` reads the plan, the next
  ones find it unchanged (the server keeps the last read while the file's inode, size and
  mtime stay the same);
- `git st show --format json` and `git st show ID --format json` in a fresh process each, the
  CLI's cost of the same reads (interpreter start-up included).

Needs the extra: `pip install 'gitst[mcp]'` (`./install.sh --dev` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
GIT_ST = [sys.executable, "-m", "gitst"]


def _plan(repo: Path, items: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    rows = [
        {
            "id": f"st-{n:05d}",
            "step": f"step {n}: do the thing",
            "status": "completed" if n <= items // 3 else "pending",  # deps of a completed one are too
            "deps": [f"st-{n - 1:05d}"] if n % 10 == 0 else [],
            "notes": "notes " * 20,
        }
        for n in range(1, items + 1)
    ]
    (repo.parent / "items.json").write_text(json.dumps({"items": rows}))
    for args in (["init", "-q"], ["import-plan", "-q", str(repo.parent / "items.json")]):
        subprocess.run([*GIT_ST, *args], cwd=repo, check=True, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return env


async def _serve(repo: Path, runs: int, probe: str) -> dict[str, object]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "gitst", "mcp"], cwd=str(repo), env=_env())
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        startup = time.perf_counter() - start
        out: dict[str, object] = {"startup": startup}
        for label, args in (("show", {}), ("show id", {"id": probe})):
            times, size = [], 0
            for _ in range(runs):
                begin = time.perf_counter()
                result = await session.call_tool("show", args)
                times.append(time.perf_counter() - begin)
                assert not result.is_error, result.content
                size = len(result.content[0].text.encode())
            out[label] = (statistics.median(times), size)
            out[label + " first"] = (times[0], size)
        return out


def _cli(repo: Path, runs: int, args: list[str]) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(runs):
        begin = time.perf_counter()
        proc = subprocess.run([*GIT_ST, *args], cwd=repo, env=_env(), capture_output=True, check=True)
        times.append(time.perf_counter() - begin)
        size = len(proc.stdout)
    return statistics.median(times), size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    probe = f"st-{options.items // 2:05d}"
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        _plan(repo, options.items)
        served = anyio.run(_serve, repo, options.runs, probe)
        cli_all = _cli(repo, options.runs, ["show", "--format", "json"])
        cli_one = _cli(repo, options.runs, ["show", probe, "--format", "json"])
    print(f"plan of {options.items} items; medians of {options.runs} runs; load {os.getloadavg()[0]:.1f}")
    print(f"  git st mcp start-up (spawn to initialize)     {served['startup'] * 1000:8.0f} ms")
    for label, (median, size) in (
        ("mcp show, first call (plan read)", served["show first"]),
        ("mcp show (first 100 items; plan unchanged)", served["show"]),
        (f"mcp show id={probe}", served["show id"]),
        ("git st show --format json (all items)", cli_all),
        (f"git st show {probe} --format json", cli_one),
    ):
        print(f"  {label:<44} {median * 1000:8.0f} ms  {size:>10,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
