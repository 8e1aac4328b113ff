"""The agent loop as a swarm (issue 23, "Targets"): agents on clones of one bare remote run
only the loop's commands (`git st next`, edit + commit, `git st land`), each in a fresh shell.

    .venv/bin/python benchmarks/bench_loop.py [--transport file|daemon] [--clones 3] [--agents 4] [--items 40]
                                              [--reserve]

A plan of ``--items`` items with dependencies (item k waits on item k-4); 15 % of the items
append a line to one shared file, the rest write a file of their own. Every agent loops:
`next --format json` (exit 1: done; exit 3: sleep 0.5 s and ask again), write and commit,
`land --format json` (exit 3, a conflict in the shared file: merge the base by hand, keeping
both lines, commit, land again). It prints the wall time, the median and p95 of `next` and
`land` (whole commands, seen from the agent: no check command is configured), items landed,
items landed twice, pushes rejected (`pushes_rejected` of every land), conflicts found at
land, agents that gave up, and `doctor` on main. ``--reserve``: the shared-file items name the
file in their ``paths`` field, so ``next`` reserves it and passes such an item over while
another live agent holds it (docs/agent-loop.md, "Reservations").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    bindir = home / "bin"
    bindir.mkdir(exist_ok=True)
    wrapper = bindir / "git-st"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m gitst "$@"\n')
    wrapper.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{bindir}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(ROOT),
    )
    for name in ("ST_SESSION_ID", "ST_SESSION_PID", "ST_REMOTE", "ST_STATE_DIR"):
        env.pop(name, None)
    return env


def _plan(count: int, reserve: bool = False) -> list[dict]:
    shared = {round(k / 0.15) for k in range(1, int(count * 0.15) + 1)}
    items = []
    for k in range(1, count + 1):
        deps = [f"st-{k - 4:03d}"] if k > 4 else []
        items.append(
            {"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": deps, "shared": k in shared}
        )
        if reserve and k in shared:  # --reserve: the item names the file it edits; `next` reserves it
            items[-1]["paths"] = ["shared.txt"]
    return items


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.next_times: list[float] = []
        self.land_times: list[float] = []
        self.landed: list[str] = []
        self.rejected = 0
        self.conflicts = 0
        self.gave_up = 0
        self.held: dict[str, str] = {}
        self.double_held = 0


def _sh(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, time.monotonic() - start


def _resolve_shared(worktree: Path, env: dict[str, str]) -> None:
    """What an agent does with a conflict in the shared file: merge the base, keep both lines."""
    subprocess.run(["git", "fetch", "-q", "origin", "main"], cwd=worktree, env=env, check=False)
    merged = subprocess.run(
        ["git", "merge", "-q", "--no-edit", "origin/main"], cwd=worktree, env=env, check=False, capture_output=True
    )
    if merged.returncode != 0:
        text = (worktree / "shared.txt").read_text()
        kept = [line for line in text.splitlines() if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
        (worktree / "shared.txt").write_text("\n".join(kept) + "\n")
        subprocess.run(["git", "add", "shared.txt"], cwd=worktree, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "--no-edit"], cwd=worktree, env=env, check=True)


def _agent(name: str, clone: Path, env: dict[str, str], stats: Stats, shared: set[str]) -> None:
    try:
        _loop(name, clone, env, stats, shared)
    except (subprocess.CalledProcessError, OSError, ValueError) as failed:
        print(f"agent {name} gave up: {failed}", file=sys.stderr)
        with stats.lock:
            stats.gave_up += 1


def _loop(name: str, clone: Path, env: dict[str, str], stats: Stats, shared: set[str]) -> None:
    env = {**env, "ST_SESSION_ID": name, "ST_SESSION_PID": str(os.getpid())}
    while True:
        code, out, took = _sh("git st next --format json", clone, env)
        with stats.lock:
            stats.next_times.append(took)
        if code == 1:
            return
        if code == 3:
            time.sleep(0.5)
            continue
        if code != 0:
            with stats.lock:
                stats.gave_up += 1
            return
        taken = json.loads(out)
        item, worktree = taken["id"], Path(taken["path"])
        with stats.lock:
            if item in stats.held:
                stats.double_held += 1
            stats.held[item] = name
        target = worktree / ("shared.txt" if item in shared else f"{item}.txt")
        with open(target, "a") as handle:
            handle.write(f"{item} by {name}\n")
        subprocess.run(["git", "add", "-A"], cwd=worktree, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"work on {item}"], cwd=worktree, env=env, check=True)
        for _attempt in range(5):
            code, out, took = _sh("git st land --format json", worktree, env)
            with stats.lock:
                stats.land_times.append(took)
            if code == 0:
                with stats.lock:
                    stats.landed.append(item)
                    stats.rejected += json.loads(out)["pushes_rejected"]
                    stats.held.pop(item, None)
                break
            if code == 3:
                with stats.lock:
                    stats.conflicts += 1
                _resolve_shared(worktree, env)
                continue
            break
        else:
            with stats.lock:
                stats.gave_up += 1
            return


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def run(transport: str, clones: int, agents: int, items: int, reserve: bool = False) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-loop-"))
    env = _env(work)
    daemon = None
    try:
        bare = work / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], env=env, check=True)
        url = bare.as_uri()
        if transport == "daemon":
            port = _free_port()
            daemon = subprocess.Popen(
                [
                    "git",
                    "daemon",
                    "--reuseaddr",
                    "--export-all",
                    "--enable=receive-pack",
                    f"--base-path={work}",
                    "--listen=127.0.0.1",
                    f"--port={port}",
                    str(work),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            time.sleep(1.0)
            url = f"git://127.0.0.1:{port}/remote.git"
        seed = work / "seed"
        subprocess.run(["git", "clone", "-q", url, str(seed)], env=env, check=True, capture_output=True)
        plan = _plan(items, reserve)
        (seed / "items.json").write_text(json.dumps({"items": plan}))
        for args in (["init", "-q"], ["import-plan", "-q", "items.json"]):
            subprocess.run(["git", "st", *args], cwd=seed, env=env, check=True)
        (seed / ".gitattributes").write_text("**/.step/*.jsonl merge=gitst-plan\n")
        (seed / "shared.txt").write_text("shared\n")
        os.unlink(seed / "items.json")
        subprocess.run(["git", "add", "-A"], cwd=seed, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "plan"], cwd=seed, env=env, check=True)
        subprocess.run(["git", "push", "-q", "origin", "main"], cwd=seed, env=env, check=True)
        places = []
        for c in range(clones):
            place = work / f"clone{c}"
            subprocess.run(["git", "clone", "-q", url, str(place)], env=env, check=True, capture_output=True)
            settings = (
                ("st.remote", "origin"),
                ("st.worktree.ports", "off"),
                ("merge.gitst-plan.driver", "git-st merge-driver %O %A %B %P"),  # as `git st hooks install`
            )
            for key, value in settings:
                subprocess.run(["git", "config", key, value], cwd=place, env=env, check=True)
            places.append(place)
        shared = {i["id"] for i in plan if i["shared"]}
        stats = Stats()
        threads = [
            threading.Thread(target=_agent, args=(f"c{c}a{a}", places[c], env, stats, shared))
            for c in range(clones)
            for a in range(agents)
        ]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - start
        check = work / "check"
        subprocess.run(["git", "clone", "-q", url, str(check)], env=env, check=True, capture_output=True)
        doctor = subprocess.run(["git", "st", "doctor"], cwd=check, env=env, capture_output=True, check=False)
        landed_once = len(set(stats.landed))
        print(
            f"transport {transport}: {clones} clones x {agents} agents, {items} items ({len(shared)} share a file"
            + (", reserved through `paths`)" if reserve else ")")
        )
        print(f"wall time            {wall:.1f} s")
        for name, times in (("next", stats.next_times), ("land", stats.land_times)):
            median, p95 = statistics.median(times), _p95(times)
            print(f"{name}  (n={len(times)})  median {median:.2f} s  p95 {p95:.2f} s")
        print(f"items landed         {landed_once} of {items}; landed twice {len(stats.landed) - landed_once}")
        print(f"held by two at once  {stats.double_held}")
        print(f"pushes rejected      {stats.rejected}")
        print(f"conflicts at land    {stats.conflicts}")
        print(f"agents giving up     {stats.gave_up}")
        print(f"doctor on main       {'clean' if doctor.returncode == 0 else 'PROBLEMS'}")
    finally:
        if daemon is not None:
            os.killpg(daemon.pid, 9)
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["file", "daemon"], default="file")
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--reserve", action="store_true", help="shared-file items name it in `paths` (reserved)")
    args = parser.parse_args()
    run(args.transport, args.clones, args.agents, args.items, args.reserve)


if __name__ == "__main__":
    main()
