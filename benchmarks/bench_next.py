"""What one uncontended `git st next` through a remote costs: git processes, fetches, pushes,
`ls-remote`s, CPU and wall time per call (docs/performance.md, "next: one fetch").

    .venv/bin/python benchmarks/bench_next.py                      # file://, 12 calls
    .venv/bin/python benchmarks/bench_next.py --transport daemon   # through `git daemon`
    .venv/bin/python benchmarks/bench_next.py --gitst /path/to/other/checkout   # before/after
    .venv/bin/python benchmarks/bench_next.py --burst 12     # 12 at once on 3 clones (the swarm's start)
    .venv/bin/python benchmarks/bench_next.py --burst 12 --deps --runs 5   # ... on the swarm's plan
    .venv/bin/python benchmarks/bench_next.py --burst 12 --deps --runs 5 --resident   # ST_RESIDENT=1

A bare remote whose main holds a plan of ``--calls`` independent items and one clone, made by
`benchmarks/bench_loop.py`'s own code (st.remote, the plan driver, no ports; its daemon);
``--calls`` sessions each run one `git st next --format json` in turn (each takes the next
item: the remote holds the earlier claims, nobody races). A logging `git` first on PATH counts
the git processes gitst starts; CPU is user + system of the `git-st` process and everything
it waited for (git, and file://'s upload-pack and receive-pack; the daemon's are not ours).
``--burst N`` starts N sessions' `next` at once instead, spread over 3 clones (as the swarm's
twelve agents start), on a plan of 3N independent items: every take wins an item, the losers
of each race moving on; it prints the claim pushes (N when nobody collides), git processes,
the CPU of the whole burst and each take's wall time. ``--deps`` seeds the swarm's own plan
instead (`bench_loop.py`: 40 items, item k waiting on item k-4, so 4 are ready): of the N, 4
take an item and the rest exit 3 — the swarm's first takes, where the claim pushes beyond N
are the lost races that read a stale look (docs/performance.md, "The claim herd").
``--resident`` runs every `git-st` with ``ST_RESIDENT=1`` (docs/resident.md): CPU then
includes the resident process's (its workers and their git), read from ``/proc``.
``--runs R`` repeats the burst R times (each on a fresh remote) and prints each run and the
medians: how the racers interleave differs from run to run. ``--gitst`` runs another checkout of
gitst (e.g. `git archive <commit> | tar -x -C DIR`) with
the same interpreter, to compare two versions on the same box in one sitting. The box's load
(`os.getloadavg`) is printed: compare runs only at similar loads.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bench_loop  # the swarm benchmark's agent environment (benchmarks/ is on sys.path when run)

ROOT = Path(__file__).resolve().parents[1]


class _Options:
    resident = False  # --resident: the agents' git-st hands commands to a resident process


def _env(home: Path, gitst: Path, log: Path) -> dict[str, str]:
    """bench_loop's agent environment (an installed gitst's: bytecode written), running the
    checkout ``gitst``, with a logging `git` first on PATH (and ``ST_RESIDENT=1`` with
    ``--resident``: its resident process is started by the seeding commands)."""
    env = bench_loop._env(home)
    if _Options.resident:
        (home / "run").mkdir(mode=0o700)
        env.update(ST_RESIDENT="1", XDG_RUNTIME_DIR=str(home / "run"))
    real = shutil.which("git")
    wrapper = home / "bin" / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" | tr "\\n" " " >> "{log}"\necho >> "{log}"\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    if gitst != ROOT:
        env["PYTHONPATH"] = str(gitst)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(gitst / "gitst")], env=env, check=False)
    return env


def _subcommands(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        words = line.split()
        while len(words) >= 2 and words[0] in ("-C", "-c"):
            words = words[2:]
        names.append(words[0] if words else "")
    return names


def measure(transport: str, calls: int, gitst: Path) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-next-") as tmp:
        work = Path(tmp)
        log = work / "git.log"
        env = _env(work, gitst, log)
        remote = bench_loop.Remote(work, env, transport)  # the swarm's remote, clones and daemon
        try:
            items = [{"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": []} for k in range(calls)]
            remote.seed(items)  # independent items: every call takes one, none waits
            return _calls(remote.clone(work / "clone"), env, log, calls)
        finally:
            _stop_resident(env)
            remote.close()


def _calls(place: Path, env: dict[str, str], log: Path, calls: int) -> dict[str, list[float]]:
    sleeper = subprocess.Popen(["sleep", "3600"])  # the sessions' live process: their claims stay live
    out: dict[str, list[float]] = {k: [] for k in ("git", "fetch", "push", "ls-remote", "cpu", "wall")}
    try:
        for k in range(calls):
            log.write_text("")
            agent = {**env, "ST_SESSION_ID": f"agent-{k}", "ST_SESSION_PID": str(sleeper.pid)}
            served_before = _resident_cpu(env)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            command = ["git-st", "next", "--format", "json"]
            proc = subprocess.run(command, cwd=place, env=agent, capture_output=True, check=False)
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            served = _resident_cpu(env) - served_before
            if proc.returncode != 0:
                raise SystemExit(f"next failed ({proc.returncode}): {proc.stderr.decode()}")
            ran = _subcommands(log.read_text().splitlines())
            out["git"].append(len(ran))
            for name in ("fetch", "push", "ls-remote"):
                out[name].append(ran.count(name))
            out["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime + served)
            out["wall"].append(wall)
    finally:
        sleeper.kill()
        sleeper.wait()
    return out


def _burst_plan(count: int, deps: bool) -> list[dict]:
    """3 x ``count`` independent items, or (``deps``) the swarm's 40 items, item k waiting on k-4."""
    if deps:
        return [
            {
                "id": f"st-{k:03d}",
                "step": f"item {k}",
                "status": "pending",
                "deps": [f"st-{k - 4:03d}"] if k > 4 else [],
            }
            for k in range(1, 41)
        ]
    return [{"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": []} for k in range(3 * count)]


def burst(transport: str, count: int, gitst: Path, *, deps: bool = False) -> tuple[list[str], float, list[float], int]:
    """``count`` sessions' `next` started at once on 3 clones: the git subcommands they ran, the
    CPU of all of them, each one's wall time, how many took an item (the others exit 3 with
    ``deps``: nothing left ready)."""
    with tempfile.TemporaryDirectory(prefix="bench-next-burst-") as tmp:
        work = Path(tmp)
        log = work / "git.log"
        env = _env(work, gitst, log)
        real = shutil.which("git", path="/usr/bin:/bin") or "git"  # one write per line: sessions run at once
        (work / "bin" / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec {real} "$@"\n')
        remote = bench_loop.Remote(work, env, transport)
        sleeper = subprocess.Popen(["sleep", "3600"])
        try:
            remote.seed(_burst_plan(count, deps))
            places = [remote.clone(work / f"clone{c}") for c in range(3)]
            walls: list[float] = []
            took: list[int] = []

            def one(k: int) -> None:
                agent = {**env, "ST_SESSION_ID": f"agent-{k}", "ST_SESSION_PID": str(sleeper.pid)}
                start = time.monotonic()
                proc = subprocess.run(
                    ["git-st", "next", "--format", "json"],
                    cwd=places[k % 3],
                    env=agent,
                    capture_output=True,
                    check=False,
                )
                walls.append(time.monotonic() - start)
                took.append(proc.returncode == 0)
                if proc.returncode != 0 and not (deps and proc.returncode == 3):
                    print(f"agent-{k}: next failed ({proc.returncode}): {proc.stderr.decode()}", file=sys.stderr)

            log.write_text("")
            threads = [threading.Thread(target=one, args=(k,)) for k in range(count)]
            served_before = _resident_cpu(env)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            served = _resident_cpu(env) - served_before
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime + served
            return _subcommands(log.read_text().splitlines()), cpu, sorted(walls), sum(took)
        finally:
            sleeper.kill()
            sleeper.wait()
            _stop_resident(env)
            remote.close()


def _print_burst(transport: str, count: int, gitst: Path, *, deps: bool = False, runs: int = 1) -> None:
    load = os.getloadavg()
    plan = "the swarm's plan (4 ready)" if deps else f"{3 * count} independent items"
    print(f"git st next, {count} sessions at once on 3 clones through {transport}, {plan}, gitst at {gitst}")
    rows = []
    for _ in range(runs):
        ran, cpu, walls, took = burst(transport, count, gitst.resolve(), deps=deps)
        rows.append((ran.count("push"), took, len(ran), ran.count("fetch"), cpu, statistics.median(walls), walls[-1]))
        print(
            f"  claim pushes {rows[-1][0]} for {took} items taken; git processes {len(ran)}; fetches {rows[-1][3]}; "
            f"cpu {cpu:.2f} s; takes' wall s: median {rows[-1][5]:.2f}, slowest {walls[-1]:.2f}"
        )
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
    if runs > 1:
        mid = [statistics.median(row[k] for row in rows) for k in range(7)]
        print(
            f"  medians of {runs} runs: claim pushes {mid[0]:g} for {mid[1]:g} items; git processes {mid[2]:g}; "
            f"fetches {mid[3]:g}; cpu {mid[4]:.2f} s ({mid[4] / count:.3f} s per take); "
            f"takes' wall s: median {mid[5]:.2f}, slowest {mid[6]:.2f}"
        )


def _resident_cpu(env: dict[str, str]) -> float:
    """The CPU so far of the resident process ``env``'s git-st hands commands to (its workers
    and their git included); 0 without ``--resident``."""
    return bench_loop._resident_cpu(env)[1] if "ST_RESIDENT" in env else 0.0


def _stop_resident(env: dict[str, str]) -> None:
    if "ST_RESIDENT" in env:
        subprocess.run(["git-st", "resident", "stop"], env=env, capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["file", "daemon"], default="file")
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--gitst", type=Path, default=ROOT, help="the gitst checkout to run (default: this one)")
    parser.add_argument("--burst", type=int, default=0, help="N sessions at once on 3 clones instead")
    parser.add_argument("--deps", action="store_true", help="--burst on the swarm's plan (4 items ready)")
    parser.add_argument("--runs", type=int, default=1, help="--burst this many times, then the medians")
    parser.add_argument(
        "--resident", action="store_true", help="git-st hands commands to a resident process (ST_RESIDENT=1)"
    )
    args = parser.parse_args()
    _Options.resident = args.resident
    if args.burst:
        _print_burst(args.transport, args.burst, args.gitst, deps=args.deps, runs=args.runs)
        return
    load = os.getloadavg()
    got = measure(args.transport, args.calls, args.gitst.resolve())
    print(f"git st next, {args.calls} uncontended calls through {args.transport}, gitst at {args.gitst}")
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
    for name in ("git", "fetch", "push", "ls-remote"):
        values = got[name]
        print(f"  {name:<10} per call: median {statistics.median(values):g}, min {min(values):g}, max {max(values):g}")
    for name in ("cpu", "wall"):
        values = sorted(got[name])
        mid = statistics.median(values)
        print(f"  {name:<10} s per call: median {mid:.3f}, min {values[0]:.3f}, max {values[-1]:.3f}")


if __name__ == "__main__":
    main()
