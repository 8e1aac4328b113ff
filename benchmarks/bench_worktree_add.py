"""What one `git st worktree add` costs: git processes and CPU per call (docs/performance.md,
"worktree add and next: what git is asked").

    .venv/bin/python benchmarks/bench_worktree_add.py                 # this checkout, 10 adds
    .venv/bin/python benchmarks/bench_worktree_add.py --gitst DIR     # another checkout (git archive)

One repository (one commit, ports off); ``--calls`` sessions each add the worktree of a new
issue, in turn. A logging `git` first on PATH counts the git processes gitst starts; CPU is
user + system of the `git-st` process and every git it waited for. The box's load is printed:
compare runs only at similar loads (run both checkouts in one sitting).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIT_ST = Path(sys.executable).with_name("git-st")


def _env(work: Path, gitst: Path, log: Path) -> dict[str, str]:
    real = shutil.which("git")
    folder = work / "bin"
    folder.mkdir()
    (folder / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" | tr "\\n" " " >> "{log}"\necho >> "{log}"\nexec {real} "$@"\n'
    )
    (folder / "git").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "ST_"))}
    env |= {"PATH": f"{folder}{os.pathsep}{GIT_ST.parent}{os.pathsep}{env['PATH']}", "HOME": str(work)}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x", "PYTHONPYCACHEPREFIX": str(work / "pyc")}
    if gitst != ROOT:
        env["PYTHONPATH"] = str(gitst)
    return env


def measure(calls: int, gitst: Path) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-wtadd-") as tmp:
        work = Path(tmp)
        log = work / "git.log"
        env = _env(work, gitst, log)
        repo = work / "repo"
        for args in (
            ["init", "-q", "-b", "main", str(repo)],
            ["-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"],
        ):
            subprocess.run(["git", *args], env=env, check=True)
        subprocess.run(["git", "-C", str(repo), "config", "st.worktree.ports", "off"], env=env, check=True)
        sleeper = subprocess.Popen(["sleep", "3600"])  # the sessions' live process
        out: dict[str, list[float]] = {"git": [], "cpu": []}
        try:
            for k in range(-1, calls):  # the first (k = -1) warms the bytecode cache
                log.write_text("")
                agent = {**env, "ST_SESSION_ID": f"s-{k}", "ST_SESSION_PID": str(sleeper.pid)}
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                proc = subprocess.run(
                    ["git-st", "worktree", "add", f"i{k + 1}"], cwd=repo, env=agent, capture_output=True, check=False
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if proc.returncode != 0:
                    raise SystemExit(f"worktree add failed: {proc.stderr.decode()}")
                if k >= 0:
                    out["git"].append(len(log.read_text().splitlines()))
                    out["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        finally:
            sleeper.kill()
            sleeper.wait()
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--gitst", type=Path, default=ROOT, help="the gitst checkout to run (default: this one)")
    args = parser.parse_args()
    load = os.getloadavg()
    got = measure(args.calls, args.gitst.resolve())
    print(f"git st worktree add, {args.calls} calls, gitst at {args.gitst}")
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
    print(f"  git processes per call: median {statistics.median(got['git']):g}, max {max(got['git']):g}")
    cpu = sorted(got["cpu"])
    print(f"  cpu s per call: median {statistics.median(cpu):.3f}, min {cpu[0]:.3f}, max {cpu[-1]:.3f}")


if __name__ == "__main__":
    main()
