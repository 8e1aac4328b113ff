"""What one `git st merge-driver %O %A %B %P` costs: CPU per call and modules imported, on a
small plan (docs/performance.md, "The merge driver and the loop's start-up"). git runs the
driver in a fresh interpreter for each plan file inside every merge, rebase and `git st land`.

    .venv/bin/python benchmarks/bench_merge_driver.py                        # 30 calls
    .venv/bin/python benchmarks/bench_merge_driver.py --gitst /tmp/before    # compare two checkouts

Each ``--gitst`` (default: this checkout; repeatable, e.g. `git archive <commit> | tar -x -C DIR`
for the version before) runs with the same interpreter, bytecode compiled first, taking turns
call by call; CPU is user + system of the `git-st` process and the git processes it waited for
(``RUSAGE_CHILDREN``). The box's load (``os.getloadavg``) is printed: compare runs only at
similar loads.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAN = ".step/st-plan.jsonl"
PROBE = (
    "import json, sys; before = set(sys.modules); from gitst.cli.main import main; code = main(sys.argv[1:]); "
    "print(json.dumps({'code': code, 'modules': len(set(sys.modules) - before)}), file=sys.stderr)"
)


def _env(home: Path, gitst: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ST_SESSION_ID")}
    (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    env["PYTHONPATH"] = str(gitst)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(gitst / "gitst")], env=env, check=False)
    return env


def _versions(repo: Path, env: dict[str, str]) -> tuple[bytes, bytes, bytes]:
    """A repository with the driver set up and a plan of 10 items; base, ours and theirs as
    git writes them for the driver (each side one comment more than base)."""

    def st(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "gitst", *args, "-q"], cwd=repo, env=env, check=True)

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
    subprocess.run(
        [sys.executable, "-m", "gitst", "hooks", "install"], cwd=repo, env=env, check=True, capture_output=True
    )
    st("init")
    for k in range(1, 11):
        st("add", "--id", f"st-{k:03d}", "--step", f"item {k}")
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-qm", "plan"], cwd=repo, env=env, check=True)
    plan = repo / PLAN
    base = plan.read_bytes()
    st("add-comment", "st-001", "ours")
    ours = plan.read_bytes()
    plan.write_bytes(base)
    st("add-comment", "st-002", "theirs")
    theirs = plan.read_bytes()
    plan.write_bytes(base)
    return base, ours, theirs


def measure(trees: list[Path], calls: int) -> dict[Path, tuple[list[float], int]]:
    with tempfile.TemporaryDirectory(prefix="bench-merge-driver-") as tmp:
        work = Path(tmp)
        envs = {tree: _env(work, tree) for tree in trees}
        repo = work / "repo"
        base, ours, theirs = _versions(repo, envs[trees[0]])
        for name, data in (("base", base), ("theirs", theirs)):
            (work / name).write_bytes(data)
        script = shutil.which("git-st", path=str(Path(sys.executable).parent)) or str(ROOT / "bin" / "git-st")
        out: dict[Path, tuple[list[float], int]] = {tree: ([], 0) for tree in trees}
        for _ in range(calls):
            for tree in trees:
                (work / "ours").write_bytes(ours)
                args = ["merge-driver", str(work / "base"), str(work / "ours"), str(work / "theirs"), PLAN]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(
                    [sys.executable, script, *args], cwd=repo, env=envs[tree], check=True, capture_output=True
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                out[tree][0].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        for tree in trees:
            (work / "ours").write_bytes(ours)
            args = ["merge-driver", str(work / "base"), str(work / "ours"), str(work / "theirs"), PLAN]
            proc = subprocess.run(
                [sys.executable, "-c", PROBE, *args],
                cwd=repo,
                env=envs[tree],
                capture_output=True,
                text=True,
                check=True,
            )
            out[tree] = (out[tree][0], json.loads(proc.stderr.splitlines()[-1])["modules"])
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--gitst", type=Path, action="append", help="a gitst checkout to run (default: this one)")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in (args.gitst or [ROOT])]
    load = os.getloadavg()
    got = measure(trees, args.calls)
    print(f"git st merge-driver on a 10-item plan, {args.calls} calls per checkout, taking turns")
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; after: {os.getloadavg()[0]:.1f}")
    for tree, (cpu, modules) in got.items():
        values = sorted(cpu)
        print(
            f"  {tree}: CPU s per call median {statistics.median(values):.3f}, min {values[0]:.3f}, "
            f"max {values[-1]:.3f}; modules gitst imports: {modules}"
        )


if __name__ == "__main__":
    main()
