"""How long the pre-commit hook takes, measured in one run.

1. Nothing relevant staged (a README edit): ``git-st hook pre-commit`` ÷ ``python -c pass``
   of the same interpreter — the fast path's overhead over bare start-up (target ≤ 2).
   Also shown: the whole shim as git runs it (``sh .git/hooks/pre-commit``).
2. A 100,000-record plan: HEAD holds it and 10 appended events are staged (the everyday
   commit: only the appended lines are checked, from the state HEAD's version ends in, read
   O(tail)); and the same plan staged as a new file (no HEAD version: the full scan). The
   ratio of the two is printed. What remains of the appended case grows with the file only
   through reading the two blobs from git and comparing their bytes.

Each figure is the median of several runs (the fast-path commands take turns) of the whole
command (``time.perf_counter`` around ``subprocess.run``). Usage::

    .venv/bin/python benchmarks/bench_hooks.py [--runs N] [--records N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(cmd: list[str], cwd: Path, runs: int, env: dict) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        samples.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return statistics.median(samples)


def interleaved(cmds: dict[str, list[str]], cwd: Path, runs: int, env: dict) -> dict[str, float]:
    """Median time of each command, the commands taking turns in every round so that a
    change in the machine's load hits them all alike."""
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            samples[name].append(timed(cmd, cwd, 1, env))
    return {name: statistics.median(values) for name, values in samples.items()}


def git(*args: str, cwd: Path, env: dict) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def plan_bytes(records: int, interval: int = 50) -> tuple[bytes, int, list[dict]]:
    """A valid plan of exactly ``records`` records: events on 50 items, a checkpoint every
    ``interval`` events. Returns (bytes, watermark, items at the end)."""
    from gitst.plan.reducer import PlanState
    from gitst.plan.store import build_checkpoint, build_event, encode_record

    ts = "2026-02-09T20:00:00Z"
    state = PlanState()
    out = []
    seq = 0
    trailing = 0
    statuses = ("pending", "in_progress", "completed")
    n = 0
    while len(out) < records:
        seq += 1
        if n < 50:
            item = {
                "id": f"st-{n + 1:03d}",
                "step": f"step {n + 1}",
                "status": "pending",
                "deps": [],
                "notes": "",
                "comments": [],
            }
            event = build_event("upsert", seq, {"item": item}, ts=ts)
        elif n % 2:
            event = build_event("set_notes", seq, {"id": f"st-{n % 50 + 1:03d}", "notes": f"note {n}"}, ts=ts)
        else:
            event = build_event("set_status", seq, {"id": f"st-{n % 50 + 1:03d}", "status": statuses[n % 3]}, ts=ts)
        n += 1
        state.apply_event(event)
        out.append(encode_record(event))
        trailing += 1
        if trailing >= interval and len(out) < records:
            out.append(encode_record(build_checkpoint(state.items(), seq, ts=ts)))
            trailing = 0
    return b"".join(out), seq, state.items()


def append_events(watermark: int, count: int) -> bytes:
    from gitst.plan.store import build_event, encode_record

    return b"".join(
        encode_record(
            build_event(
                "set_notes", watermark + i + 1, {"id": "st-001", "notes": f"appended {i}"}, ts="2026-02-09T21:00:00Z"
            )
        )
        for i in range(count)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--records", type=int, default=100_000)
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bindir = tmp / "bin"
        bindir.mkdir()
        wrapper = bindir / "git-st"
        wrapper.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            "from gitst.cli.main import main\nsys.exit(main())\n"
        )
        wrapper.chmod(0o755)
        env = dict(os.environ)
        env.update(
            PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"),
            HOME=str(tmp),
        )
        (tmp / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
        repo = tmp / "repo"
        repo.mkdir()
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        (repo / "README").write_text("bench\n")
        (repo / ".step").mkdir()
        (repo / ".step" / ".gitignore").write_text("/st-plan.jsonl.lock\n/st-plan.jsonl.torn-*\n")
        git("add", "-A", cwd=repo, env=env)
        git("commit", "-q", "-m", "init", cwd=repo, env=env)
        subprocess.run(
            [str(wrapper), "hooks", "install", "--hook", "pre-commit", "--no-merge-driver"],
            cwd=repo,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )

        # 1. nothing relevant staged
        (repo / "README").write_text("bench, edited\n")
        git("add", "README", cwd=repo, env=env)
        fast = interleaved(
            {
                "bare": [sys.executable, "-c", "pass"],
                "hook": [str(wrapper), "hook", "pre-commit"],
                "shim": ["sh", ".git/hooks/pre-commit"],
            },
            repo,
            opts.runs,
            env,
        )
        bare, hook, shim = fast["bare"], fast["hook"], fast["shim"]
        print(f"python -c pass                                   {bare * 1000:8.1f} ms")
        print(
            f"git-st hook pre-commit, nothing relevant staged  {hook * 1000:8.1f} ms   "
            f"ratio {hook / bare:.2f} (target <= 2)"
        )
        print(f"  the same through the installed shim (sh)       {shim * 1000:8.1f} ms   ratio {shim / bare:.2f}")
        git("reset", "-q", "README", cwd=repo, env=env)

        # 2. a 100,000-record plan
        data, high, _items = plan_bytes(opts.records)
        plan = repo / ".step" / "st-plan.jsonl"
        plan.write_bytes(data)
        git("add", "-A", cwd=repo, env=env)
        runs = max(3, opts.runs // 5)
        new = timed([str(wrapper), "hook", "pre-commit"], repo, runs, env)
        git("commit", "-q", "--no-verify", "-m", "plan", cwd=repo, env=env)
        plan.write_bytes(data + append_events(high, 10))
        git("add", "-A", cwd=repo, env=env)
        appended = timed([str(wrapper), "hook", "pre-commit"], repo, runs, env)
        size = len(data) / 1e6
        print(
            f"staged {opts.records:,}-record plan ({size:.1f} MB), 10 events appended to HEAD's  "
            f"{appended * 1000:8.1f} ms"
        )
        print(f"staged {opts.records:,}-record plan ({size:.1f} MB), new file (no HEAD version)   {new * 1000:8.1f} ms")
        print(f"  appended ÷ new file (the commit check ÷ the full scan)                  ratio {appended / new:.2f}")


if __name__ == "__main__":
    main()
