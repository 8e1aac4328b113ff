"""Path reservations (issue 23 point 2): what "may I edit PATH" and the pre-commit hook cost.

    .venv/bin/python benchmarks/bench_reserve.py [--reservations 100] [--runs 15]

In a scratch repository with ``--reservations`` reservations held by another (live) session,
it prints the median and p95 of

- ``conflicts()`` in-process (what an MCP server or harness calls before each edit),
- ``git st reserve --check PATH`` as a fresh process (an agent's edit hook),
- ``git commit`` of one unreserved file through the installed pre-commit hook, with no
  reservation in the clone (the hook's no-op path: one ``stat``) and with them (the hook loads
  the reservation check).

Plain Python timing; state the box's load beside the figures (``uptime``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _line(name: str, values: list[float]) -> str:
    return f"{name:48s} median {statistics.median(values) * 1000:8.1f} ms   p95 {_p95(values) * 1000:8.1f} ms"


def _timed(args: list[str], cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, cwd=cwd, env=env, check=False, capture_output=True)
        out.append(time.perf_counter() - start)
    return out


def _commits(repo: Path, env: dict[str, str], runs: int, tag: str) -> list[float]:
    out = []
    for i in range(runs):
        (repo / "free").mkdir(exist_ok=True)
        (repo / "free" / f"{tag}{i}.txt").write_text(f"{i}\n")
        subprocess.run(["git", "add", "free"], cwd=repo, env=env, check=True)
        start = time.perf_counter()
        done = subprocess.run(
            ["git", "commit", "-q", "-m", f"c{i}"], cwd=repo, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        out.append(time.perf_counter() - start)
    return out


def run(count: int, runs: int) -> None:
    from gitst.sessions import reservations
    from gitst.sessions.identity import Identity

    work = Path(tempfile.mkdtemp(prefix="bench-reserve-"))
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.update({"ST_SESSION_ID": "bench-b", "ST_SESSION_PID": str(os.getpid())})
    for name in ("ST_STATE_DIR", "ST_REMOTE"):
        env.pop(name, None)
    try:
        repo = work / "repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        for key, value in (("user.name", "bench"), ("user.email", "bench@invalid")):
            subprocess.run(["git", "config", key, value], cwd=repo, check=True)
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "init"], cwd=repo, env=env, check=True)
        subprocess.run(["git-st", "hooks", "install", "--hook", "pre-commit"], cwd=repo, env=env, check=True)
        figures = [_line("git commit, no reservation in the clone", _commits(repo, env, runs, "a"))]
        owner = Identity("bench-a", os.getpid(), os.uname().nodename, "bench")
        reservations.reserve([f"src/mod{i}/**" for i in range(count)], owner, cwd=repo)
        me = Identity("bench-b", os.getpid(), os.uname().nodename, "bench")
        in_process = []
        for _ in range(runs):
            start = time.perf_counter()
            found = reservations.conflicts([f"src/mod{count // 2}/app.py", "docs/x.md"], me, cwd=repo)
            in_process.append(time.perf_counter() - start)
        assert found and found[0].owner == "bench-a"
        figures.append(_line(f"conflicts() in-process, {count} reservations", in_process))
        check = _timed(["git-st", "reserve", "--check", f"src/mod{count // 2}/app.py"], repo, env, runs)
        figures.append(_line(f"git st reserve --check, {count} reservations", check))
        figures.append(_line(f"git commit, {count} reservations (none hit)", _commits(repo, env, runs, "b")))
        print(f"load: {os.getloadavg()[0]:.1f} (1-min average), {runs} runs each")
        for line in figures:
            print(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reservations", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    run(args.reservations, args.runs)


if __name__ == "__main__":
    main()
