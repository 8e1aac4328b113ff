"""What one uncontended `git st next` through a remote costs: git processes, fetches, pushes,
`ls-remote`s, CPU and wall time per call (docs/performance.md, "next: one fetch").

    .venv/bin/python benchmarks/bench_next.py                      # file://, 12 calls
    .venv/bin/python benchmarks/bench_next.py --transport daemon   # through `git daemon`
    .venv/bin/python benchmarks/bench_next.py --gitst /path/to/other/checkout   # before/after

A bare remote whose main holds a plan of ``--calls`` independent items and one clone set up
as `benchmarks/bench_loop.py` sets up its clones (st.remote, the plan driver, no ports);
``--calls`` sessions each run one `git st next --format json` in turn (each takes the next
item: the remote holds the earlier claims, nobody races). A logging `git` first on PATH counts
the git processes gitst starts; CPU is user + system of the `git-st` process and everything
it waited for (git, and file://'s upload-pack and receive-pack; the daemon's are not ours).
``--gitst`` runs another checkout of gitst (e.g. `git archive <commit> | tar -x -C DIR`) with
the same interpreter, to compare two versions on the same box in one sitting. The box's load
(`os.getloadavg`) is printed: compare runs only at similar loads.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(home: Path, gitst: Path, log: Path) -> dict[str, str]:
    bindir = home / "bin"
    bindir.mkdir()
    real = shutil.which("git")
    (bindir / "git-st").write_text(f'#!/bin/sh\nexec {sys.executable} -m gitst "$@"\n')
    (bindir / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" | tr "\\n" " " >> "{log}"\necho >> "{log}"\nexec {real} "$@"\n'
    )
    for name in ("git-st", "git"):
        (bindir / name).chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{bindir}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(gitst),
    )
    for name in ("ST_SESSION_ID", "ST_SESSION_PID", "ST_REMOTE", "ST_STATE_DIR", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(gitst / "gitst")], env=env, check=False)
    return env


def _git(*args: str, cwd: Path, env: dict[str, str]) -> None:
    real = shutil.which("git") or "git"
    subprocess.run([real, *args], cwd=cwd, env=env, check=True, capture_output=True)


def _setup(work: Path, env: dict[str, str], calls: int, url: str) -> Path:
    seed, place = work / "seed", work / "clone"
    _git("clone", "-q", url, str(seed), cwd=work, env=env)
    (seed / "README").write_text("bench\n")
    _git("add", "README", cwd=seed, env=env)
    _git("commit", "-q", "-m", "init", cwd=seed, env=env)
    items = [{"id": f"st-{k:03d}", "step": f"item {k}", "status": "pending", "deps": []} for k in range(1, calls + 1)]
    (work / "items.json").write_text(json.dumps({"items": items}))
    for args in (["init", "-q"], ["import-plan", "-q", str(work / "items.json")]):
        subprocess.run([sys.executable, "-m", "gitst", *args], cwd=seed, env=env, check=True, capture_output=True)
    (seed / ".gitattributes").write_text("**/.step/*.jsonl merge=gitst-plan\n")
    _git("add", "-A", ".step", ".gitattributes", cwd=seed, env=env)
    _git("commit", "-q", "-m", "plan", cwd=seed, env=env)
    _git("push", "-q", "origin", "main", cwd=seed, env=env)
    _git("clone", "-q", url, str(place), cwd=work, env=env)
    for key, value in (
        ("st.remote", "origin"),
        ("st.worktree.ports", "off"),
        ("merge.gitst-plan.driver", "git-st merge-driver %O %A %B %P"),
    ):
        _git("config", key, value, cwd=place, env=env)
    return place


def _subcommands(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        words = line.split()
        while len(words) >= 2 and words[0] in ("-C", "-c"):
            words = words[2:]
        names.append(words[0] if words else "")
    return names


def _daemon(base: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket  # lazy: the daemon transport only

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", f"--base-path={base}"]
    args += ["--listen=127.0.0.1", f"--port={port}", str(base)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"git://127.0.0.1:{port}/remote.git"
        except OSError:
            time.sleep(0.05)
    raise SystemExit("git daemon did not start")


def measure(transport: str, calls: int, gitst: Path) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-next-") as tmp:
        work = Path(tmp)
        log = work / "git.log"
        env = _env(work, gitst, log)
        _git("init", "-q", "--bare", "-b", "main", str(work / "remote.git"), cwd=work, env=env)
        daemon = None
        url = (work / "remote.git").as_uri()
        if transport == "daemon":
            daemon, url = _daemon(work)
        try:
            place = _setup(work, env, calls, url)
            return _calls(place, env, log, calls)
        finally:
            if daemon is not None:
                os.killpg(daemon.pid, 9)
                daemon.wait()


def _calls(place: Path, env: dict[str, str], log: Path, calls: int) -> dict[str, list[float]]:
    sleeper = subprocess.Popen(["sleep", "3600"])  # the sessions' live process: their claims stay live
    out: dict[str, list[float]] = {k: [] for k in ("git", "fetch", "push", "ls-remote", "cpu", "wall")}
    try:
        for k in range(calls):
            log.write_text("")
            agent = {**env, "ST_SESSION_ID": f"agent-{k}", "ST_SESSION_PID": str(sleeper.pid)}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            command = ["git-st", "next", "--format", "json"]
            proc = subprocess.run(command, cwd=place, env=agent, capture_output=True, check=False)
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                raise SystemExit(f"next failed ({proc.returncode}): {proc.stderr.decode()}")
            ran = _subcommands(log.read_text().splitlines())
            out["git"].append(len(ran))
            for name in ("fetch", "push", "ls-remote"):
                out[name].append(ran.count(name))
            out["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            out["wall"].append(wall)
    finally:
        sleeper.kill()
        sleeper.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["file", "daemon"], default="file")
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--gitst", type=Path, default=ROOT, help="the gitst checkout to run (default: this one)")
    args = parser.parse_args()
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
