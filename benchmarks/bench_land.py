"""What one uncontended `git st land` through a remote costs: git processes by subcommand,
merge-driver runs, CPU and wall time per land (docs/performance.md, "land: what one land costs").

    .venv/bin/python benchmarks/bench_land.py                      # file://, 6 rounds
    .venv/bin/python benchmarks/bench_land.py --transport daemon   # through `git daemon`
    .venv/bin/python benchmarks/bench_land.py --gitst /path/to/other/checkout   # before/after
    .venv/bin/python benchmarks/bench_land.py --trace              # every git command of the last lands
    .venv/bin/python benchmarks/bench_land.py --together 6         # six lands at once: the slot's polls
    .venv/bin/python benchmarks/bench_land.py --plain              # CPU without the logging git's own

The environment is `benchmarks/bench_next.py`'s (bench_loop's remote and clones, a logging
`git` first on PATH); the `git-st` wrapper also counts its `merge-driver` runs. Each round two
sessions on one clone run `git st next`, commit a file in their worktrees, then land one after
the other: the first lands on a base nothing moved since its `next` ("still"), the second on a
base the first just moved ("moved": its sync merges the first one's plan change with the plan
driver) — the swarm's common case. CPU is user + system of the `git-st land` process and all it
waited for (git, the merge driver, file://'s upload-pack and receive-pack). ``--gitst`` runs
another checkout (e.g. `git archive <commit> | tar -x -C DIR`) with the same interpreter, to
compare two versions in one sitting. The load (`os.getloadavg`) is printed beside the figures.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_loop  # the swarm benchmark's agent environment (benchmarks/ is on sys.path when run)
import bench_next  # its logging git and subcommand parsing

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("still", "moved")


SEP = "\x1f"  # between a logged command's arguments (an argument may hold spaces: `-c merge.x.driver=git-st …`)


PLAIN = False  # --plain: no logging `git` (its shell, printf and tr per git command cost CPU too)


def _loggers(home: Path, log: Path, drivers: Path) -> None:
    """The logging `git` writes each command's arguments apart (``SEP``); the `git-st`
    wrapper notes each `merge-driver` run (one line in ``drivers``). ``PLAIN``: git itself."""
    real = shutil.which("git", path=os.environ["PATH"])
    git = home / "bin" / "git"
    if PLAIN:
        git.unlink(missing_ok=True)
        real = ""
    # one write per command: lands running at once (--together) never interleave their lines
    if real:
        git.write_text(
            f'#!/bin/sh\nline=$(printf "%s\\037" "$@" | tr "\\n" " ")\necho "$line" >> "{log}"\nexec {real} "$@"\n'
        )
        git.chmod(0o755)
    wrapper = home / "bin" / "git-st"
    wrapper.write_text(
        f'#!/bin/sh\n[ "$1" = merge-driver ] && echo x >> "{drivers}"\nexec {sys.executable} -m gitst "$@"\n'
    )
    wrapper.chmod(0o755)


def subcommands(lines: list[str]) -> list[str]:
    """The git subcommand of each logged command (``-C DIR`` / ``-c KEY=VALUE`` skipped)."""
    names = []
    for line in lines:
        words = line.rstrip(SEP).split(SEP)
        while len(words) >= 2 and words[0] in ("-C", "-c"):
            words = words[2:]
        names.append(words[0] if words else "")
    return names


def _setup(work: Path, gitst: Path, transport: str, items: int) -> tuple[dict[str, str], bench_loop.Remote]:
    """The agents' environment (logging `git` and `git-st` into ``work``) and the remote,
    seeded with ``items`` independent items."""
    env = bench_next._env(work, gitst, work / "git.log")
    _loggers(work, work / "git.log", work / "drivers.log")
    remote = bench_loop.Remote(work, env, transport)
    remote.seed([{"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": []} for k in range(items)])
    return env, remote


def _take_and_work(place: Path, agent: dict[str, str]) -> Path:
    """`git st next` for ``agent`` in the clone ``place``, a file committed in the worktree."""
    import json  # lazy: only here

    taken = json.loads(_run(["git-st", "next", "--format", "json"], place, agent).stdout)
    worktree = Path(taken["path"])
    (worktree / f"{taken['id']}.txt").write_text(f"work on {taken['id']}\n")
    _run(["git", "add", "-A"], worktree, agent)
    _run(["git", "commit", "-q", "-m", f"work on {taken['id']}"], worktree, agent)
    return worktree


def together(transport: str, count: int, gitst: Path) -> tuple[list[str], int, float, list[dict]]:
    """``count`` sessions of one clone land at once (as tests/e2e/loop/test_land.py's six do):
    (every git command of all the lands, merge-driver runs, their CPU, each land's JSON)."""
    import json  # lazy: only here

    with tempfile.TemporaryDirectory(prefix="bench-land-") as tmp:
        work = Path(tmp)
        log, drivers = work / "git.log", work / "drivers.log"
        env, remote = _setup(work, gitst, transport, count)
        sleeper = subprocess.Popen(["sleep", "3600"])
        try:
            place = remote.clone(work / "clone")
            agents = []
            for k in range(count):
                agent = {**env, "ST_SESSION_ID": f"agent-{k}", "ST_SESSION_PID": str(sleeper.pid)}
                agents.append((_take_and_work(place, agent), agent))
            log.write_text("")
            drivers.write_text("")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            procs = [
                subprocess.Popen(
                    ["git-st", "land", "--format", "json"],
                    cwd=w,
                    env=a,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
                for w, a in agents
            ]
            answers = [json.loads(p.communicate()[0]) for p in procs]
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            return log.read_text().splitlines(), len(drivers.read_text().splitlines()), cpu, answers
        finally:
            sleeper.kill()
            sleeper.wait()
            remote.close()


def measure(transport: str, rounds: int, gitst: Path) -> tuple[dict[str, dict[str, list[float]]], dict, list]:
    with tempfile.TemporaryDirectory(prefix="bench-land-") as tmp:
        work = Path(tmp)
        log, drivers = work / "git.log", work / "drivers.log"
        env, remote = _setup(work, gitst, transport, 2 * rounds)
        try:
            return _rounds(remote.clone(work / "clone"), env, (log, drivers), rounds)
        finally:
            remote.close()


def _run(command: list[str], place: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(command, cwd=place, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc


def _rounds(place: Path, env: dict[str, str], logs: tuple[Path, Path], rounds: int):

    log, drivers = logs
    sleeper = subprocess.Popen(["sleep", "3600"])  # the sessions' live process: their claims stay live
    out = {kind: {k: [] for k in ("git", "driver", "cpu", "wall")} for kind in KINDS}
    by_sub: dict[str, collections.Counter[str]] = {kind: collections.Counter() for kind in KINDS}
    trace: dict[str, list[str]] = {}
    try:
        for k in range(rounds):
            agents = []
            for kind in KINDS:
                agent = {**env, "ST_SESSION_ID": f"agent-{k}-{kind}", "ST_SESSION_PID": str(sleeper.pid)}
                agents.append((kind, _take_and_work(place, agent), agent))
            for kind, worktree, agent in agents:
                log.write_text("")
                drivers.write_text("")
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                _run(["git-st", "land", "--format", "json"], worktree, agent)
                wall = time.monotonic() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                lines = [line.rstrip(SEP).replace(SEP, " ") for line in log.read_text().splitlines()]
                ran = subcommands(log.read_text().splitlines())
                out[kind]["git"].append(len(ran))
                out[kind]["driver"].append(len(drivers.read_text().splitlines()))
                out[kind]["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                out[kind]["wall"].append(wall)
                by_sub[kind].update(ran)
                trace[kind] = lines
    finally:
        sleeper.kill()
        sleeper.wait()
    return out, by_sub, trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["file", "daemon"], default="file")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--gitst", type=Path, default=ROOT, help="the gitst checkout to run (default: this one)")
    parser.add_argument("--trace", action="store_true", help="print every git command of the last round's lands")
    parser.add_argument("--together", type=int, default=0, help="N sessions land at once instead (the slot's queue)")
    parser.add_argument("--plain", action="store_true", help="CPU without the logging git (no git counts)")
    args = parser.parse_args()
    global PLAIN  # noqa: PLW0603 - one switch for the whole run, read where the wrappers are written
    PLAIN = args.plain
    load = os.getloadavg()
    if args.together:
        lines, driver, cpu, answers = together(args.transport, args.together, args.gitst.resolve())
        ran = collections.Counter(subcommands(lines))
        # a full look at the slot fetches every claim ref; a poll that found nothing changed is
        # one ls-remote of the slot's and the tickets' refs
        looks = sum("+refs/st/claims/*:" in line and "\x1ffetch\x1f" in line for line in lines)
        polls = sum("refs/st/claims/st.land*" in line for line in lines)
        print(f"git st land, {args.together} lands at once through {args.transport}, gitst at {args.gitst}")
        print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
        waits = sum(len(a["queue"]["places"]) for a in answers)
        print(f"  git processes in all: {sum(ran.values())}; merge-driver runs: {driver}; CPU {cpu:.2f} s")
        print(f"  rejected pushes: {sum(a['pushes_rejected'] for a in answers)}; places told while waiting: {waits}")
        print(f"  full looks at the slot (a fetch of every claim): {looks}; ls-remote polls: {polls}")
        print("  by subcommand: " + ", ".join(f"{sub} {n}" for sub, n in ran.most_common()))
        return
    got, by_sub, trace = measure(args.transport, args.rounds, args.gitst.resolve())
    print(f"git st land, {args.rounds} rounds of 2 lands through {args.transport}, gitst at {args.gitst}")
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
    for kind in KINDS:
        figures = got[kind]
        print(f"{kind}: the base {'unchanged since next' if kind == 'still' else 'moved by the land before'}")
        for name in ("git", "driver"):
            values = figures[name]
            print(
                f"  {name:<8} per land: median {statistics.median(values):g}, min {min(values):g}, max {max(values):g}"
            )
        for name in ("cpu", "wall"):
            values = sorted(figures[name])
            mid = statistics.median(values)
            print(f"  {name:<8} s per land: median {mid:.3f}, min {values[0]:.3f}, max {values[-1]:.3f}")
        per = ", ".join(f"{sub} {count / args.rounds:g}" for sub, count in by_sub[kind].most_common())
        print(f"  by subcommand (per land): {per}")
        if args.trace:
            print("\n".join(f"    git {line}" for line in trace[kind]))


if __name__ == "__main__":
    main()
