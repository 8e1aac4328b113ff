"""The agent loop as a swarm (issue 23, "Targets"): agents on clones of one bare remote run
only the loop's commands (`git st next`, edit + commit, `git st land`), each in a fresh shell.

    .venv/bin/python benchmarks/bench_loop.py            # both transports, loop and plain git: the figures
    .venv/bin/python benchmarks/bench_loop.py --quick    # a smoke run: file://, 2 clones x 2 agents, 8 items
    .venv/bin/python benchmarks/bench_loop.py --transport daemon --clones 3 --agents 4 --items 40
    .venv/bin/python benchmarks/bench_loop.py --no-reserve  # shared-file items name no `paths`

A plan of ``--items`` items with dependencies (item k waits on item k-4); 15 % of the items
append a line to one shared file, the rest write a file of their own. Every agent loops: `next
--wait --format json` (exit 1: done), write and commit, `land --format json` (exit 3, a
conflict in the shared file: merge the base by hand, keeping both lines, commit, land again).
It prints the wall time (until every agent stopped: a waiting `next` sees that nothing is left
only at its next try) and when the last item first landed, the median and p95 of `next` and
`land` both as whole commands seen from the agent and as gitst's own time (the command minus
what it waited for: `waited` less `polled` of `next` — its sleeps —, `timings.own` of `land` —
the slot's wait and the check command taken out), and `next`'s take alone (the command less
`waited`: without the tries of a `--wait` that found nothing to take yet either; also apart:
the agents' first takes, all started at once, and the later ones), `next`'s tries that failed
on the remote or in git and were tried again (`retried`, with the first failures' words), the
CPU of the run's commands, items landed, items landed twice, items held by two agents at once,
pushes rejected (`pushes_rejected` of every land), conflicts found at land, agents that gave
up, and `doctor` on main. The shared-file items name the file in their ``paths`` field, so
``next`` reserves it and passes such an item over while another live agent holds it
(docs/agent-loop.md, "Reservations"); ``--no-reserve`` leaves that out.

``--work SECONDS`` gives each item that much work (0.5-1.5 times it, the same for an item and
agent in either run): the agent sleeps between taking the item and committing it, as an agent
edits code for a while — the issue's plain-git figure (127 s for 40 items) came from agents
that worked; by default (0) they work not at all, and the figures are the loop's own.

The plain-git baseline (``--baseline``, on by default) runs the same agents on the same
plan with no coordination: each picks a ready item from its clone's view of the plan,
marks it completed, commits its file and pushes (`git pull --rebase` and push again when
rejected, giving up after 12 rejections in a row); it prints its wall time, landings,
items landed more than once, rejected pushes and give-ups.

Every agent command runs in a fresh `bash -c`, with the environment of an installed gitst
(`PYTHONDONTWRITEBYTECODE` removed: an install has its bytecode; without it every command
would compile gitst again, ~0.6 s): `git-st` is `bin/git-st` run by an interpreter that starts
as an installed one's (a fresh venv; the dev venv's editable-install finder costs ~20 ms of
CPU at every start that `install.sh`'s install does not). ``--resident`` sets
``ST_RESIDENT=1`` for the agents (docs/resident.md) and counts the resident process's CPU
(its workers and their git) with the commands'. The box's load (`os.getloadavg`) is printed with the
figures: compare runs only on a quiet box.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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


def _installed_python(home: Path) -> Path:
    """An interpreter that starts as an installed gitst's does: a fresh venv (no pip) whose one
    ``.pth`` puts this checkout and the dev venv's site-packages (click, orjson, ...) on the
    path. The dev venv's own interpreter runs its editable install's finder at every start
    (pathlib, re, urllib.parse: ~20 ms of CPU), which `install.sh`'s non-editable install
    does not; the agents would pay it on every command."""
    venv = home / "installed"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    Path(purelib, "gitst-bench.pth").write_text("\n".join([str(ROOT), *ours]) + "\n")
    return venv / "bin" / "python"


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    bindir = home / "bin"
    bindir.mkdir(exist_ok=True)
    wrapper = bindir / "git-st"
    timer = shutil.which("time", path="/usr/bin:/bin")  # GNU time: each command's CPU, appended to cpu.log
    run = f'{timer} -a -o {home / "cpu.log"} -f "%U %S %C" ' if timer else ""
    # bin/git-st, as git runs it for `git st`, by an interpreter that starts as an installed one's
    wrapper.write_text(f'#!/bin/sh\nexec {run}{_installed_python(home)} {ROOT / "bin" / "git-st"} "$@"\n')
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
    for name in ("ST_SESSION_ID", "ST_SESSION_PID", "ST_REMOTE", "ST_STATE_DIR", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gitst")], env=env, check=False)
    return env


def _plan(count: int, reserve: bool = True) -> list[dict]:
    shared = {round(k / 0.15) for k in range(1, int(count * 0.15) + 1)}
    items = []
    for k in range(1, count + 1):
        deps = [f"st-{k - 4:03d}"] if k > 4 else []
        items.append(
            {"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": deps, "shared": k in shared}
        )
        if reserve and k in shared:  # the item names the file it edits: `next` reserves it
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
        self.next_own: list[float] = []
        self.next_take: list[float] = []  # the command less all it waited: the try that took the item
        self.next_take_first: list[float] = []  # the same, of each agent's first next (all start at once)
        self.land_own: list[float] = []
        self.landed: list[str] = []
        self.rejected = 0
        self.conflicts = 0
        self.gave_up = 0
        self.held: dict[str, str] = {}
        self.double_held = 0
        self.claimed_completed = 0
        self.landings = 0  # the baseline's pushes that landed an item (several per item when agents collide)
        self.reserve = True  # the shared-file items name the file in `paths` (next reserves it)
        self.work = 0.0  # --work: seconds an agent works on an item (0.5-1.5 times it)
        self.cpu = 0.0  # user + system of every process the agents started (the daemon's are not theirs)
        self.cpu_by_command: dict[str, tuple[int, float]] = {}  # `git st` subcommand: (runs, CPU seconds)
        self.tries = 0  # `next --wait`'s tries in all, the one that took an item included
        self.retried = 0  # of them, tries that failed (remote or git) and were tried again
        self.failures: list[str] = []  # what those failed tries said (`trying again` lines)
        self.resident_cpu: float | None = None  # the resident process's CPU in the run (--resident)
        self.items = 0  # the plan's items
        self.started = 0.0  # time.monotonic() when the agents started
        self.all_landed: float | None = None  # seconds from the start until every item was on the base

    def landed_one(self, item: str) -> None:
        """``item`` landed (the caller holds the lock): the moment the last one first lands is noted."""
        self.landed.append(item)
        if self.all_landed is None and len(set(self.landed)) >= self.items:
            self.all_landed = time.monotonic() - self.started


def _sh(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, float, str]:
    """``command`` in a fresh `bash -c`: exit code, stdout, seconds, stderr."""
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, time.monotonic() - start, proc.stderr


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
    first = True
    while True:
        code, out, took, err = _sh("git st next --wait 900 --format json", clone, env)
        with stats.lock:
            stats.next_times.append(took)
            if code == 0:
                answer = json.loads(out)
                stats.next_own.append(took - answer["waited"] + answer.get("polled", 0.0))
                stats.next_take.append(took - answer["waited"])
                (stats.next_take_first if first else []).append(took - answer["waited"])
                first = False
                stats.tries += answer.get("tries", 1)
                stats.retried += answer.get("retried", 0)
            stats.failures += [line for line in err.splitlines() if "trying again (" in line]
        if code == 1:
            return
        if code != 0:
            print(f"agent {name} gave up: `git st next` exit {code}: {err.strip()[-2000:]}", file=sys.stderr)
            with stats.lock:
                stats.gave_up += 1
            return
        taken = json.loads(out)
        item, worktree = taken["id"], Path(taken["path"])
        with stats.lock:
            if item in stats.held:
                stats.double_held += 1
            if item in stats.landed:
                stats.claimed_completed += 1
            stats.held[item] = name
        _work(stats, name, item)
        target = worktree / ("shared.txt" if item in shared else f"{item}.txt")
        with open(target, "a") as handle:
            handle.write(f"{item} by {name}\n")
        subprocess.run(["git", "add", "-A"], cwd=worktree, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"work on {item}"], cwd=worktree, env=env, check=True)
        for _attempt in range(5):
            code, out, took, err = _sh("git st land --format json", worktree, env)
            with stats.lock:
                stats.land_times.append(took)
            if code == 0:
                answer = json.loads(out)
                with stats.lock:
                    stats.landed_one(item)
                    stats.rejected += answer["pushes_rejected"]
                    stats.land_own.append(took - answer["timings"]["land"] + answer["timings"]["own"])
                    stats.held.pop(item, None)
                break
            if code == 3:
                with stats.lock:
                    stats.conflicts += 1
                _resolve_shared(worktree, env)
                continue
            print(
                f"agent {name}: `git st land` exit {code} on {item} (next resumes it): {err.strip()[-2000:]}",
                file=sys.stderr,
            )
            break
        else:
            print(
                f"agent {name} gave up on {item}: `git st land` exit 3 five times: {err.strip()[-2000:]}",
                file=sys.stderr,
            )
            with stats.lock:
                stats.gave_up += 1
            return


def _work(stats: Stats, name: str, item: str) -> None:
    """``--work``: the agent works on ``item`` for a while (its length fixed by agent and item)."""
    if stats.work > 0:
        time.sleep(stats.work * random.Random(f"{name}/{item}").uniform(0.5, 1.5))


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def _figures(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<18} (none)"
    return f"{name:<18} n={len(values):<4} median {statistics.median(values):.2f} s  p95 {_p95(values):.2f} s"


class Remote:
    """The bare remote (served by `git daemon` or as a file:// URL), the seed plan, the clones."""

    def __init__(self, work: Path, env: dict[str, str], transport: str) -> None:
        self.work, self.env, self.daemon = work, env, None
        self.bare = work / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], env=env, check=True)
        self.url = self.bare.as_uri()
        if transport == "daemon":
            port = _free_port()
            self.daemon = subprocess.Popen(
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
            self.url = f"git://127.0.0.1:{port}/remote.git"
            self._until_served()

    def _until_served(self) -> None:
        for _ in range(200):  # a start-up deadline of ~20 s, never a measured figure
            if (
                subprocess.run(
                    ["git", "ls-remote", self.url], env=self.env, capture_output=True, check=False
                ).returncode
                == 0
            ):
                return
            time.sleep(0.1)
        raise SystemExit("git daemon did not start")

    def seed(self, plan: list[dict]) -> None:
        seed = self.work / "seed"
        self.clone(seed)
        (seed / "items.json").write_text(json.dumps({"items": plan}))
        for args in (["init", "-q"], ["import-plan", "-q", "items.json"]):
            subprocess.run(["git", "st", *args], cwd=seed, env=self.env, check=True)
        (seed / ".gitattributes").write_text("**/.step/*.jsonl merge=gitst-plan\n")
        (seed / "shared.txt").write_text("shared\n")
        os.unlink(seed / "items.json")
        subprocess.run(["git", "add", "-A"], cwd=seed, env=self.env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "plan"], cwd=seed, env=self.env, check=True)
        subprocess.run(["git", "push", "-q", "origin", "main"], cwd=seed, env=self.env, check=True)

    def clone(self, place: Path) -> Path:
        subprocess.run(["git", "clone", "-q", self.url, str(place)], env=self.env, check=True, capture_output=True)
        settings = (
            ("st.remote", "origin"),
            ("st.worktree.ports", "off"),
            ("merge.gitst-plan.driver", "git-st merge-driver %O %A %B %P"),  # as `git st hooks install`
        )
        for key, value in settings:
            subprocess.run(["git", "config", key, value], cwd=place, env=self.env, check=True)
        return place

    def doctor(self) -> bool:
        check = self.clone(self.work / "check")
        return (
            subprocess.run(
                ["git", "st", "doctor"], cwd=check, env=self.env, capture_output=True, check=False
            ).returncode
            == 0
        )

    def main_log(self) -> list[str]:
        return git("log", "--format=%s", "main", cwd=self.bare).splitlines()

    def close(self) -> None:
        if self.daemon is not None:
            os.killpg(self.daemon.pid, 9)
            self.daemon.wait()


def _swarm(target, places: list[Path], agents: int, env: dict[str, str], stats: Stats, shared: set[str]) -> float:
    threads = [
        threading.Thread(target=target, args=(f"c{c}a{a}", place, env, stats, shared))
        for c, place in enumerate(places)
        for a in range(agents)
    ]
    start = stats.started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - start


_SETUP = threading.Lock()


def _baseline_agent(name: str, clone: Path, env: dict[str, str], stats: Stats, shared: set[str]) -> None:
    """Plain git, no coordination: pick a ready item from this clone's view, complete it, push."""
    env = {**env, "ST_SESSION_ID": name}
    own = clone.parent / f"{clone.name}-{name}"  # each agent works in its own worktree of its clone
    with _SETUP:  # git config and the worktree list are the clone's: one agent at a time sets up
        subprocess.run(
            ["git", "worktree", "add", "-q", "--no-track", "-b", f"work-{name}", str(own), "origin/main"],
            cwd=clone,
            env=env,
            check=True,
        )
    clone = own
    rejected_in_a_row = 0
    while rejected_in_a_row < 12:
        subprocess.run(["git", "pull", "-q", "--rebase", "origin", "main"], cwd=clone, env=env, check=False)
        code, out, _took, _err = _sh("git st ready --format json", clone, env)
        ready = [i["id"] for i in json.loads(out or "{}").get("items", [])] if code == 0 else []
        if not ready:
            code, out, _took, _err = _sh("git st show --format json", clone, env)
            pending = [i for i in json.loads(out)["items"] if i["status"] != "completed"]
            if not pending:
                return
            time.sleep(0.5)
            continue
        item = ready[hash(name) % len(ready)]
        _work(stats, name, item)
        with open(clone / ("shared.txt" if item in shared else f"{item}.txt"), "a") as handle:
            handle.write(f"{item} by {name}\n")
        subprocess.run(["git", "st", "set-status", "-q", item, "completed"], cwd=clone, env=env, check=False)
        subprocess.run(["git", "add", "-A"], cwd=clone, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"st: land {item}"], cwd=clone, env=env, check=False)
        while rejected_in_a_row < 12:
            pushed = subprocess.run(
                ["git", "push", "-q", "origin", "HEAD:main"], cwd=clone, env=env, capture_output=True, check=False
            )
            if pushed.returncode == 0:
                rejected_in_a_row = 0
                with stats.lock:
                    stats.landed_one(item)
                break
            rejected_in_a_row += 1
            with stats.lock:
                stats.rejected += 1
            pulled = subprocess.run(
                ["git", "pull", "-q", "--rebase", "origin", "main"],
                cwd=clone,
                env=env,
                capture_output=True,
                check=False,
            )
            if pulled.returncode != 0:  # a conflict in the shared file: keep both lines
                with stats.lock:
                    stats.conflicts += 1
                _keep_both(clone, env)
    with stats.lock:
        stats.gave_up += 1


def _keep_both(clone: Path, env: dict[str, str]) -> None:
    text = (clone / "shared.txt").read_text()
    kept = [line for line in text.splitlines() if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
    (clone / "shared.txt").write_text("\n".join(kept) + "\n")
    subprocess.run(["git", "add", "-A"], cwd=clone, env=env, check=False)
    rebased = subprocess.run(
        ["git", "-c", "core.editor=true", "rebase", "--continue"], cwd=clone, env=env, capture_output=True, check=False
    )
    if rebased.returncode != 0:
        subprocess.run(["git", "rebase", "--abort"], cwd=clone, env=env, capture_output=True, check=False)


def _resident_cpu(env: dict[str, str]) -> tuple[int | None, float]:
    """(pid, CPU seconds so far: its own and its reaped workers', their git included) of the
    resident process ``env`` hands commands to (docs/resident.md); (None, 0.0) when none runs."""
    out = subprocess.run(
        ["git-st", "resident", "status", "--format", "json"],  # the agents' interpreter: their resident process
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    pid = json.loads(out or "{}").get("pid")
    if not pid:
        return None, 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return pid, sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def run(
    transport: str,
    clones: int,
    agents: int,
    items: int,
    *,
    baseline: bool,
    reserve: bool = True,
    resident: bool = False,
    work_seconds: float = 0.0,
) -> None:
    load = os.getloadavg()
    modes = [("gitst loop", _agent)] + ([("plain git", _baseline_agent)] if baseline else [])
    for mode, target in modes:
        work = Path(tempfile.mkdtemp(prefix="bench-loop-"))
        env = _env(work)
        if resident and mode == "gitst loop":
            (work / "run").mkdir(mode=0o700)
            env.update(ST_RESIDENT="1", XDG_RUNTIME_DIR=str(work / "run"))
        remote = Remote(work, env, transport)
        try:
            plan = _plan(items, reserve)
            remote.seed(plan)
            places = [remote.clone(work / f"clone{c}") for c in range(clones)]
            shared = {i["id"] for i in plan if i["shared"]}
            stats = Stats()
            stats.reserve, stats.work, stats.items = reserve, work_seconds, items
            resident_before = _resident_cpu(env) if "ST_RESIDENT" in env else (None, 0.0)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall = _swarm(target, places, agents, env, stats, shared)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            stats.cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            stats.cpu_by_command = _cpu_by_command(work / "cpu.log")
            if resident_before[0] is not None:
                resident_after = _resident_cpu(env)
                if resident_after[0] != resident_before[0]:
                    print("the resident process was replaced during the run: its CPU is not counted", file=sys.stderr)
                else:
                    stats.resident_cpu = resident_after[1] - resident_before[1]
                    stats.cpu += stats.resident_cpu
            _report(mode, transport, (clones, agents, items, len(shared)), wall, stats, remote, load)
        finally:
            if "ST_RESIDENT" in env:
                subprocess.run(["git-st", "resident", "stop"], env=env, capture_output=True, check=False)
            remote.close()
            shutil.rmtree(work, ignore_errors=True)


def _cpu_by_command(log: Path) -> dict[str, tuple[int, float]]:
    """Runs and CPU seconds (user + system, the git it waited for included) of each `git st`
    subcommand, from GNU time's lines in ``log``: `USER SYSTEM PYTHON …/bin/git-st SUBCOMMAND …`."""
    got: dict[str, tuple[int, float]] = {}
    lines = log.read_text().splitlines() if log.exists() else []
    for line in lines:
        words = line.split()
        if len(words) < 5 or not words[3].endswith("/bin/git-st") or words[4] == "resident":
            continue  # GNU time's "Command exited with non-zero status N" lines; the benchmark's own
        runs, cpu = got.get(words[4], (0, 0.0))
        got[words[4]] = (runs + 1, cpu + float(words[0]) + float(words[1]))
    return got


def _report(
    mode: str,
    transport: str,
    size: tuple[int, int, int, int],
    wall: float,
    stats: Stats,
    remote: Remote,
    load: tuple[float, float, float],
) -> None:
    clones, agents, items, shared = size
    landed_once = len(set(stats.landed))
    log = remote.main_log()
    per_item = {item: log.count(f"st: land {item}") for item in set(stats.landed)}
    print(
        f"== {mode}, transport {transport}: {clones} clones x {agents} agents, {items} items ({shared} share a file"
        + (", reserved through `paths`)" if stats.reserve and mode == "gitst loop" else ")")
        + (f"; {stats.work:g} s of work per item (0.5-1.5 times it)" if stats.work else "")
    )
    print(f"load before          {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after {os.getloadavg()[0]:.1f}")
    print(f"wall time            {wall:.1f} s")
    landed_at = f"{stats.all_landed:.1f} s" if stats.all_landed is not None else "never"
    print(f"all items landed at  {landed_at} (the last item's first landing, from the agents' start)")
    print(f"cpu of all commands  {stats.cpu:.1f} s ({stats.cpu / wall:.2f} cores busy on average)")
    if stats.resident_cpu is not None:
        print(f"  the resident process: {stats.resident_cpu:.1f} s cpu (its workers and their git; the clients below)")
    for name, (runs, cpu) in sorted(stats.cpu_by_command.items(), key=lambda kv: -kv[1][1]):
        print(f"  git st {name:<12} {runs:>4} runs  {cpu:6.1f} s cpu  ({cpu / runs:.2f} s each)")
    if mode == "gitst loop":
        print(_figures("next (command)", stats.next_times))
        print(_figures("next (gitst own)", stats.next_own))
        print(_figures("next (the take)", stats.next_take))
        later = list(stats.next_take)
        for value in stats.next_take_first:
            later.remove(value)
        print(_figures("  first of each", stats.next_take_first))
        print(_figures("  the later ones", later))
        print(f"next tries           {stats.tries} for {len(stats.next_take)} items taken")
        print(f"tries failed, again  {stats.retried}")
        for line in stats.failures[:5]:
            print(f"  {line[:300]}")
        print(_figures("land (command)", stats.land_times))
        print(_figures("land (gitst own)", stats.land_own))
        print(f"held by two at once  {stats.double_held}")
        print(f"claims of completed  {stats.claimed_completed}")
    twice = sum(1 for n in per_item.values() if n > 1)
    print(f"items landed         {landed_once} of {items}; landings {len(stats.landed)}; more than once {twice}")
    print(f"lost plan updates    {sum(1 for n in per_item.values() if n == 0)}")
    print(f"pushes rejected      {stats.rejected}")
    print(f"conflicts at land    {stats.conflicts}")
    print(f"agents giving up     {stats.gave_up}")
    print(f"doctor on main       {'clean' if remote.doctor() else 'PROBLEMS'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["file", "daemon", "both"], default="both")
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the plain-git run")
    parser.add_argument(
        "--no-reserve", dest="reserve", action="store_false", help="shared-file items name no `paths` (no reservation)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: file://, 2 clones x 2 agents, 8 items")
    parser.add_argument("--work", type=float, default=0.0, help="seconds of work per item (0.5-1.5 times it)")
    parser.add_argument(
        "--resident",
        action="store_true",
        help="the agents' git-st hands commands to a resident process (ST_RESIDENT=1)",
    )
    args = parser.parse_args()
    if args.quick:
        args.transport, args.clones, args.agents, args.items = "file", 2, 2, 8
    for transport in ("file", "daemon") if args.transport == "both" else (args.transport,):
        run(
            transport,
            args.clones,
            args.agents,
            args.items,
            baseline=args.baseline,
            reserve=args.reserve,
            resident=args.resident,
            work_seconds=args.work,
        )


if __name__ == "__main__":
    main()
