"""Hundreds of agents on one remote, over smart HTTP (issue 25): races, the ref set, reads, heartbeats.

    .venv/bin/python benchmarks/bench_remote_scale.py            # the issue's sizes (~25 min on 2 cores)
    .venv/bin/python benchmarks/bench_remote_scale.py --quick    # small sizes (~6 min)
    .venv/bin/python benchmarks/bench_remote_scale.py --parts races --sizes 32,64 --rounds 20   # ~7 min quiet
    .venv/bin/python benchmarks/bench_remote_scale.py --parts races --sizes 8 --delay 0.2   # a slow proxy
    .venv/bin/python benchmarks/bench_remote_scale.py --parts refs --claims 5000   # 35 min at load 16-38
    .venv/bin/python benchmarks/bench_remote_scale.py --parts races,refs   # some parts only

Every remote is a bare repository served by the real `git http-backend` behind a threaded HTTP
server on 127.0.0.1 (tests/e2e/remote/http_remote.py), pushes counted by a post-receive hook.

- races: N-way claim races (N = 2, 8, 32, 64 processes of `git st claim ISSUE --remote` on 4
  clones, 20 rounds each; ``--delay 0.2``: every request answered 200 ms late): exactly one
  winner per round and no half-claim (the claim ref the winner's, its counter moved with it,
  no loser holding the issue's lock in any clone); the latency distribution of a claim (p50 /
  p95 / max of a whole CLI process, winners and losers), a progress line every 5 rounds.
- refs: 5,000 claims made and released (through the library: remote_claims.acquire and
  release, each a real compare-and-swap push; 8 clones in parallel, one thread each; over
  file:// for speed: the ref set does not depend on the transport), then the number of refs
  under refs/st/ and the highest token; also a remote with old per-issue fence refs compacted.
  Config reads are cached per clone (as `git st` caches them per command): without it every
  fetch and push asked `git config` for the remote's deadline, 4 of the 17 git calls of a cycle.
- reads: `git st status`, `sessions --remote` and `check-issue` against 1,000 live claims and
  against 10, with 10,000 registry entries: the median time and the HTTP requests of each.
- beats: 50 agents on 5 clones (TTL 60 s, each agent's heartbeat every 20 s) for 10 minutes:
  pushes per minute (the target: clones x 60 / interval + claims made) and leases that lapsed
  under a live agent (a watcher reads every record every second).

Prints the load average beside the figures; rerun on a quiet box for the figures that matter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_loop import _env as loop_env  # noqa: E402
from tests.e2e.remote.conftest import count_pushes, forge_claims, pushes  # noqa: E402
from tests.e2e.remote.http_remote import SmartHTTP  # noqa: E402


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _env(home: Path) -> dict[str, str]:
    """bench_loop's environment (a git-st wrapper first on PATH, a private HOME and git config),
    with this process as every session's process (the agents here are its children)."""
    home.mkdir(parents=True, exist_ok=True)
    env = loop_env(home)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["ST_SESSION_PID"] = str(os.getpid())
    return env


def _bare(base: Path, name: str, env: dict[str, str]) -> Path:
    bare = base / f"{name}.git"
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=base, env=env)
    seed = base / f"{name}-seed"
    git("clone", "-q", str(bare), str(seed), cwd=base, env=env)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=seed, env=env)
    git("push", "-q", "origin", "main", cwd=seed, env=env)
    git("config", "http.receivepack", "true", cwd=bare, env=env)
    return bare


def _clones(url: str, base: Path, count: int, env: dict[str, str]) -> list[Path]:
    out = []
    for i in range(count):
        path = base / f"clone{i}"
        git("clone", "-q", url, str(path), cwd=base, env=env)
        git("config", "st.remote", "origin", cwd=path, env=env)
        out.append(path)
    return out


def _st(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float, str]:
    start = time.perf_counter()
    proc = subprocess.run(["git-st", *args], check=False, cwd=cwd, env=env, capture_output=True, text=True)
    return proc.returncode, time.perf_counter() - start, proc.stderr


def _pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _half_claims(bare: Path, clones: list[Path], issue: str, winner: str | None, env: dict[str, str]) -> int:
    """What a round left that nobody holds whole: the claim ref not the winner's, its bucket's
    counter not moved with it (to the same commit), or a local lock of the issue held by any
    session but the winner in any clone. 0 when the round left exactly one whole claim."""
    from gitst.sessions.remote_claims import counter_ref  # lazy: after main() set the environment

    claim = git("for-each-ref", "--format=%(objectname)", f"refs/st/claims/{issue}", cwd=bare, env=env)
    counter = git("for-each-ref", "--format=%(objectname)", counter_ref(issue), cwd=bare, env=env)
    record = json.loads(git("show", f"{claim}:claim.json", cwd=bare, env=env)) if claim else {}
    bad = int(record.get("session") != winner) + int(bool(claim) and counter != claim)
    for path in clones:
        lock = path / "state" / "locks" / f"issue-{issue}.json"
        owner = (json.loads(lock.read_text()).get("owner") or {}) if lock.exists() else {}
        bad += int(bool(owner) and owner.get("session") != winner)
    return bad


def _race_round(clones: list[Path], env: dict[str, str], n: int, issue: str) -> list[tuple[int, float, str]]:
    """``n`` processes of `git st claim ISSUE --remote` at once, session ``r<i>`` on clone ``i % clones``."""
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(
            pool.map(
                lambda i: _st(["claim", issue, "--remote"], clones[i % len(clones)], {**env, "ST_SESSION_ID": f"r{i}"}),
                range(n),
            )
        )


def races(
    base: Path, env: dict[str, str], sizes: list[int], rounds: int, clones_n: int = 4, delay: float = 0.0
) -> None:
    bare = _bare(base, "races", env)
    server = SmartHTTP(base).start()
    try:
        (base / "races").mkdir()
        clones = _clones(server.url("races.git"), base / "races", clones_n, env)
        server.delay = delay
        slow = f", every HTTP request delayed {delay * 1000:.0f} ms" if delay else ""
        print(f"\nraces over smart HTTP: N processes on {len(clones)} clones, {rounds} rounds each{slow}")
        print(
            f"{'N':>4}  {'rounds':>6}  {'1 winner':>8}  {'double':>6}  {'half':>4}  "
            f"{'p50':>6}  {'p95':>6}  {'max':>6}  {'errors':>6}  {'wall':>6}  load"
        )
        for n in sizes:
            ok = double = errors = half = 0
            latencies: list[float] = []
            started = time.perf_counter()
            for r in range(rounds):
                issue = f"race-{n}-{r}"
                results = _race_round(clones, env, n, issue)
                codes = [code for code, _, _ in results]
                latencies += [wall for _, wall, _ in results]
                winners = codes.count(0)
                for code, _, err in results:
                    if code not in (0, 3):  # neither won nor held by another: say what it was
                        errors += 1
                        print(f"  N={n} round {r}: a claim exited {code}: {err.strip()[-300:]}")
                winner = next((f"r{i}" for i, code in enumerate(codes) if code == 0), None)
                left = _half_claims(bare, clones, issue, winner, env)
                ok += winners == 1 and left == 0
                double += winners > 1
                half += left
                if rounds >= 5 and (r + 1) % 5 == 0 and r + 1 < rounds:  # a sign of life on a long run
                    print(f"  N={n}: {r + 1}/{rounds} rounds, {time.perf_counter() - started:.0f}s", flush=True)
            print(
                f"{n:>4}  {rounds:>6}  {ok:>8}  {double:>6}  {half:>4}  {_pct(latencies, 0.5):>5.2f}s  "
                f"{_pct(latencies, 0.95):>5.2f}s  {max(latencies):>5.2f}s  {errors:>6}  "
                f"{time.perf_counter() - started:>5.0f}s  {os.getloadavg()[0]:.0f}",
                flush=True,
            )
    finally:
        server.stop()


class _Progress:
    """Cycles done by all workers; a line every tenth of the run (the run is long on a loaded box)."""

    def __init__(self, total: int):
        self.total, self.done, self.start = total, 0, time.perf_counter()
        self.lock = threading.Lock()

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            if self.done % max(1, self.total // 10) == 0:
                wall = time.perf_counter() - self.start
                print(
                    f"  {self.done}/{self.total} cycles, {self.done / wall:.1f}/s, load {os.getloadavg()[0]:.0f}",
                    flush=True,
                )


def _cycle(clone: Path, worker: int, workers: int, count: int, progress: _Progress) -> int:
    """``count`` claims made and released through the library in ``clone``: each a real
    compare-and-swap on the remote (the claim ref and its bucket's counter in one atomic push,
    then the claim ref deleted with a lease), as `git st claim` / `release` make them; the
    highest token."""
    from gitst.sessions import identity, remote_claims  # lazy: after main() set the environment

    who = identity.current(f"w{worker}")
    top = 0
    for n in range(count):
        issue = str(n % 250 * workers + worker)  # each issue claimed and released count / 250 times
        got = remote_claims.acquire(issue, who, remote="origin", ttl=60, cwd=clone)
        top = max(top, int(got.record["token"]))
        remote_claims.release(issue, who, remote="origin", cwd=clone)
        progress.tick()
    return top


def refs(base: Path, env: dict[str, str], total: int, workers: int) -> None:
    from gitst.git import config  # lazy: after main() set the environment

    (base / "refs").mkdir()
    bare = _bare(base / "refs", "refs", env)
    clones = _clones(bare.as_uri(), base / "refs", workers, env)
    os.environ["ST_SESSION_PID"] = str(os.getpid())
    os.environ.setdefault("ST_REMOTE_TIMEOUT", "120")  # asked of every fetch and push: no `git config` each time
    config.cache_reads(True)  # one `git config --list` per clone, as `git st` does per command
    progress = _Progress(total)
    print(
        f"\nref set: {total} claims made and released by {workers} workers, one clone each "
        f"(load {os.getloadavg()[0]:.0f})"
    )
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        tops = list(pool.map(lambda w: _cycle(clones[w], w, workers, total // workers, progress), range(workers)))
    wall = time.perf_counter() - start
    total = total // workers * workers
    left = git("for-each-ref", "--format=%(refname)", "refs/st/", cwd=bare, env=env).split()
    print(f"  {total} claims made and released on {workers} clones in {wall:.0f}s ({total / wall:.1f} cycles/s)")
    print(f"  refs under refs/st/ now: {len(left)} ({', '.join(left[:8])}); highest token {max(tops)}")
    # a remote gitst used before: 1,000 old per-issue fence refs, compacted by `git st gc`
    forge_claims(bare, [f"old{n}" for n in range(1000)], ttl=-10)
    names = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare, env=env).split()
    moves = "".join(f"update refs/st/fence/{r.rsplit('/', 1)[1]} {r}\ndelete {r}\n" for r in names if "/old" in r)
    subprocess.run(["git", "update-ref", "--stdin"], cwd=bare, input=moves, text=True, check=True, env=env)
    before = len(git("for-each-ref", "--format=%(refname)", "refs/st/", cwd=bare, env=env).split())
    start = time.perf_counter()
    done = subprocess.run(
        ["git-st", "gc"], check=False, cwd=clones[0], env={**env, "ST_SESSION_ID": "gc"}, capture_output=True, text=True
    )
    code, wall, said = done.returncode, time.perf_counter() - start, done.stdout + done.stderr
    after = git("for-each-ref", "--format=%(refname)", "refs/st/", cwd=bare, env=env).split()
    print(f"  old per-issue fences: {before} refs before `git st gc`, {len(after)} after ({wall:.1f}s, exit {code})")
    if len(after) > 8:
        print(f"  gc said: {said.strip()[-500:]}")


def _registry(clone: Path, env: dict[str, str], size: int) -> None:
    """``size`` worktree registry entries (orphaned rows, as benchmarks/bench_status.py makes)."""
    registry = clone / "state" / "active-worktrees"
    registry.mkdir(parents=True, exist_ok=True)
    for issue in range(1, size + 1):
        entry = {"issue": str(issue), "branch": f"st/issue-{issue}", "path": str(clone.parent / f"wt-{issue}")}
        (registry / f"{issue}.json").write_text(json.dumps(entry))


def reads(base: Path, env: dict[str, str], registry: int, runs: int) -> None:
    server = SmartHTTP(base).start()
    try:
        print(f"\nreads over smart HTTP with {registry} registry entries: median of {runs} (requests per run)")
        print(f"{'claims':>6}  {'status':>16}  {'sessions --remote':>18}  {'check-issue':>16}")
        timings = {}
        for count in (10, 1000):
            (base / f"reads{count}").mkdir()
            bare = _bare(base / f"reads{count}", f"reads{count}", env)
            (base / f"reads{count}.git").symlink_to(bare)
            forge_claims(bare, [str(n) for n in range(count)])
            work = _clones(server.url(f"reads{count}.git"), base / f"reads{count}", 1, env)[0]
            _registry(work, env, registry)
            row = []
            for args in (
                ["status", "--format", "json"],
                ["sessions", "--remote", "--format", "json"],
                ["check-issue", "5"],
            ):
                _st(args, work, {**env, "ST_SESSION_ID": "reader"})
                walls = []
                for _ in range(runs):
                    first = len(server.requests)
                    _, wall, _ = _st(args, work, {**env, "ST_SESSION_ID": "reader"})
                    walls.append(wall)
                    requests = len(server.requests) - first
                row.append(f"{statistics.median(walls):>9.2f}s ({requests} rq)")
                timings[(count, args[0])] = statistics.median(walls)
            print(f"{count:>6}  " + "  ".join(row))
        print(f"  status with 1,000 claims / with 10: {timings[(1000, 'status')] / timings[(10, 'status')]:.2f}x")
    finally:
        server.stop()


def beats(base: Path, env: dict[str, str], agents: int, clones_n: int, ttl: int, duration: float) -> None:
    (base / "beats").mkdir()
    bare = _bare(base / "beats", "beats", env)
    server = SmartHTTP(base / "beats").start()
    interval = ttl / 3
    try:
        clones = _clones(server.url("beats.git"), base / "beats", clones_n, env)
        for a in range(agents):
            code, _, err = _st(
                ["claim", str(a), "--ttl", str(ttl)], clones[a % clones_n], {**env, "ST_SESSION_ID": f"a{a}"}
            )
            assert code == 0, err
        log = count_pushes(bare)
        stop = threading.Event()
        lapses: list[str] = []

        def watch() -> None:
            from gitst.core import timestamps  # lazy: after main() set the environment

            while not stop.wait(1.0):  # two git processes a second, whatever the number of claims
                names = git("for-each-ref", "--format=%(objectname):claim.json", "refs/st/claims/", cwd=bare, env=env)
                now = timestamps.now()
                blobs = subprocess.run(
                    ["git", "cat-file", "--batch"],
                    cwd=bare,
                    env=env,
                    input=(names + "\n").encode(),
                    capture_output=True,
                    check=True,
                ).stdout
                while blobs:  # "<oid> blob <size>\n<content>\n" per claim ("<name> missing\n" when gone)
                    head, _, rest = blobs.partition(b"\n")
                    fields = head.split()
                    if len(fields) != 3 or not fields[2].isdigit():
                        blobs = rest
                        continue
                    size = int(fields[2])
                    record, blobs = json.loads(rest[:size]), rest[size + 1 :]
                    expires = record.get("expires_at")
                    if expires and timestamps.parse(expires) < now:
                        lapses.append(str(record.get("issue")))

        def agent_loop(c: int) -> int:
            mine = [a for a in range(agents) if a % clones_n == c]
            beats_run = 0
            deadline = time.monotonic() + duration
            while time.monotonic() < deadline:
                started = time.monotonic()
                for a in mine:  # each agent beats once per interval, spread over it
                    code, _, err = _st(["heartbeat"], clones[c], {**env, "ST_SESSION_ID": f"a{a}"})
                    beats_run += 1
                    if code != 0:
                        print(f"  heartbeat a{a}: exit {code}: {err.strip()[:200]}")
                stop.wait(max(0.0, interval - (time.monotonic() - started)))
            return beats_run

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=clones_n) as pool:
            total_beats = sum(pool.map(agent_loop, range(clones_n)))
        elapsed = time.monotonic() - start
        stop.set()
        watcher.join()
        minutes = elapsed / 60
        target = clones_n * 60 / interval
        print(
            f"\nheartbeats over smart HTTP: {agents} agents on {clones_n} clones, TTL {ttl}s, a heartbeat per agent "
            f"every {interval:.0f}s, {elapsed:.0f}s"
        )
        print(
            f"  {total_beats} heartbeats, {pushes(log)} pushes: {pushes(log) / minutes:.1f} pushes/min "
            f"(target <= {target:.0f}/min: clones x 60 / interval); lapsed leases seen: {len(set(lapses))}"
        )
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes")
    parser.add_argument("--parts", default="races,refs,reads,beats")
    parser.add_argument("--sizes", default="", help="race sizes (default 2,8,32,64; 2,8 quick)")
    parser.add_argument("--rounds", type=int, help="rounds per race size (default 20; 5 quick)")
    parser.add_argument("--clones", type=int, default=4, help="clones the racing processes are spread over")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds every HTTP request waits (0.2: a slow proxy)")
    parser.add_argument("--agents", type=int, help="agents in the heartbeat run (default 50; 20 quick)")
    parser.add_argument("--beat-minutes", type=float, help="length of the heartbeat run (default 10; 2 quick)")
    parser.add_argument("--claims", type=int, help="claims made and released in `refs` (default 5,000; 400 quick)")
    parser.add_argument("--workers", type=int, default=8, help="clones (one thread each) making them in `refs`")
    options = parser.parse_args()
    parts = options.parts.split(",")
    quick = options.quick
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = _env(base / "home")
        os.environ.update({k: env[k] for k in ("HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PATH")})
        if "races" in parts:
            sizes = [int(n) for n in options.sizes.split(",") if n] or ([2, 8] if quick else [2, 8, 32, 64])
            races(base, env, sizes, options.rounds or (5 if quick else 20), options.clones, options.delay)
        if "refs" in parts:
            refs(base, env, options.claims or (400 if quick else 5000), options.workers)
        if "reads" in parts:
            reads(base, env, 1000 if quick else 10000, 3)
        if "beats" in parts:
            minutes = options.beat_minutes or (2.0 if quick else 10.0)
            beats(base, env, options.agents or (20 if quick else 50), 5, 60, minutes * 60)
    print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
