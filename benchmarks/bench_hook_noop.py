"""The pre-commit hook with nothing relevant staged, against its fair baseline: the same
venv's own ``python -c pass``.

What a reader reruns to check the figure in docs/performance.md::

    .venv/bin/python benchmarks/bench_hook_noop.py              # builds a throwaway venv
    .venv/bin/python benchmarks/bench_hook_noop.py --venv ~/.local/share/gitst/venv

The hook runs as git runs it: the shim ``git st hooks install`` wrote execs ``git-st hook
pre-commit``, the console script in the venv's ``bin/``. So the baseline is that venv's
``python -c pass`` — not the dev checkout's ``.venv``, whose editable install makes every
interpreter start import an extra finder (pathlib and more: ~2x slower start, which flatters
any ratio). Without ``--venv`` this checkout is installed (not editable, no dependencies: the
hook's fast path imports none) into a temporary venv, as ``pip install`` would.

In one run, taking turns in every round (so a change in the machine's load hits all alike),
each a fresh process: ``python -c pass``, ``python -S -c pass`` (start-up without site), one
``git diff --cached`` (the one git call the hook makes), ``git-st hook pre-commit`` and the
whole shim (``sh .git/hooks/pre-commit``). Bytecode is compiled first, as pip does at install
(``PYTHONDONTWRITEBYTECODE`` is dropped). Printed: median wall and CPU time (user + system of
the process and its children, ``os.wait4``) of each, and hook ÷ ``python -c pass`` — the ratio
of the medians and the median of the per-round ratios (paired). Target: <= 2.

hyperfine, where installed, gives the same picture::

    hyperfine -N -w 5 'VENV/bin/python -c pass' 'VENV/bin/git-st hook pre-commit'   # in a repo with README staged
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


def sample(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process running ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else b""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def git(*args: str, cwd: Path, env: dict) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def bench_env(tmp: Path) -> dict:
    """This environment with a fresh HOME (its own git identity) under ``tmp``, no system git
    config, and nothing that would point git or gitst elsewhere."""
    home = tmp / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
    drop = ("PYTHONDONTWRITEBYTECODE", "GIT_DIR", "GIT_INDEX_FILE", "ST_SESSION_ID")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
    return env


def make_venv(where: Path, env: dict) -> Path:
    print(f"installing this checkout into a throwaway venv ({where}) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", str(ROOT)],
        check=True,
        env=env,
    )
    return where


def print_table(names: list[str], walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> None:
    """A markdown table of each command's median wall and CPU ms."""
    width = max(len(name) for name in names)
    print(f"| {'command':<{width}} | wall ms | CPU ms |")
    print(f"|{'-' * (width + 2)}|---------|--------|")
    for name in names:
        wall, cpu = statistics.median(walls[name]) * 1e3, statistics.median(cpus[name]) * 1e3
        print(f"| {name:<{width}} | {wall:7.1f} | {cpu:6.1f} |")
    print()


def print_ratios(names: list[str], base: str, walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> None:
    """Each of ``names`` ÷ ``base``, wall and CPU: the ratio of the medians and the median of
    the per-round ratios (paired). Target: <= 2."""
    for name in names:
        for basis, data in (("wall", walls), ("CPU", cpus)):
            of_medians = statistics.median(data[name]) / statistics.median(data[base])
            paired = statistics.median(h / b for h, b in zip(data[name], data[base], strict=True) if b > 0)
            print(
                f"{name} ÷ {base} ({basis}): {of_medians:.2f} (ratio of medians), "
                f"{paired:.2f} (median of paired ratios)   target <= 2"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="an installed gitst's venv (default: a throwaway one)")
    parser.add_argument("--runs", type=int, default=41)
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gitst-hook-bench-") as tmp_name:
        tmp = Path(tmp_name)
        env = bench_env(tmp)
        venv = opts.venv.expanduser().resolve() if opts.venv else make_venv(tmp / "venv", env)
        python, git_st = venv / "bin" / "python", venv / "bin" / "git-st"
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # the shim finds git-st on PATH
        subprocess.run([str(python), "-m", "compileall", "-q", str(venv / "lib")], env=env, check=False)

        repo = tmp / "repo"
        repo.mkdir()
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        (repo / "README").write_text("bench\n")
        (repo / "src").mkdir()
        (repo / "src" / "app.py").write_text("print('hi')\n")
        git("add", "-A", cwd=repo, env=env)
        git("commit", "-q", "-m", "init", cwd=repo, env=env)
        # what `hooks install` sets up: the shim and the plan's merge=gitst-plan line
        # (run by this checkout's interpreter: the throwaway venv has no click; the shim holds no path)
        installer = {**env, "PYTHONPATH": str(ROOT)}
        subprocess.run(
            [sys.executable, "-m", "gitst", "hooks", "install"],
            cwd=repo,
            env=installer,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        git("add", "-A", cwd=repo, env=env)
        git("commit", "-q", "--no-verify", "-m", "hooks", cwd=repo, env=env)
        (repo / "README").write_text("bench, edited\n")
        (repo / "src" / "app.py").write_text("print('hello')\n")
        git("add", "-A", cwd=repo, env=env)

        cmds = {
            "python -c pass": [str(python), "-c", "pass"],
            "python -S -c pass": [str(python), "-S", "-c", "pass"],
            "git diff --cached (one git call)": ["git", "diff", "--cached", "--name-only", "-z"],
            "git-st hook pre-commit": [str(git_st), "hook", "pre-commit"],
            "the shim (sh .git/hooks/pre-commit)": ["sh", ".git/hooks/pre-commit"],
        }
        for cmd in cmds.values():  # warm-up: bytecode written, caches filled
            sample(cmd, repo, env)
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        cpus: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(opts.runs):
            for name, cmd in cmds.items():
                wall, cpu = sample(cmd, repo, env)
                walls[name].append(wall)
                cpus[name].append(cpu)

        load = os.getloadavg()[0]
        print(f"\n{opts.runs} rounds, taking turns; {os.cpu_count()} CPUs, load {load:.1f}; venv {venv}")
        version = subprocess.run([str(python), "-V"], capture_output=True, text=True, check=False).stdout.strip()
        print(f"python {version}\n")
        print_table(list(cmds), walls, cpus)
        print_ratios(["git-st hook pre-commit", "the shim (sh .git/hooks/pre-commit)"], "python -c pass", walls, cpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
