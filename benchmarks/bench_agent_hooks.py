"""The agent hooks (`git st hook-agent`, docs/harness.md): the no-op path against its fair
baseline, the same venv's own ``python -c pass`` (target <= 2x), the PreToolUse check of an
edit with no reservation, and SessionStart on a plan with 1,000 ready items (its output must
stay within the byte budget, st.agent.contextBytes, 4,000 by default).

What a reader reruns to check the figures in docs/performance.md ("Agent hooks")::

    .venv/bin/python benchmarks/bench_agent_hooks.py            # builds a throwaway venv for the no-op path
    .venv/bin/python benchmarks/bench_agent_hooks.py --venv ~/.local/share/gitst/venv

The no-op path needs no dependency (it imports the standard json, no orjson, no click), so
a throwaway venv with this checkout installed ``--no-deps`` (not editable: an editable
install's finder slows every interpreter start and flatters any ratio) runs it; the paths
past it (the reservation check, SessionStart) run with this checkout's ``.venv``. Each
command is a fresh process with the harness's payload on stdin, taking turns in every round
so a change in the machine's load hits all alike. Printed: median wall and CPU time (user +
system, ``os.wait4``), the ratios to ``python -c pass``, and SessionStart's output size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench_hook_noop import (  # the same throwaway venv (this script's folder is on sys.path)
    bench_env,
    make_venv,
    print_ratios,
    print_table,
)

ROOT = Path(__file__).resolve().parents[1]
SESSION = "0f0f0f0f-aaaa-4bbb-8ccc-123456789abc"


def timed(cmd: list[str], cwd: Path, env: dict, stdin: Path | None) -> tuple[float, float, bytes]:
    """(wall, CPU) seconds of one fresh process running ``cmd`` (CPU: it and its children,
    ``os.wait4``), and its stdout."""
    with open(stdin or os.devnull, "rb") as source:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = proc.stdout.read() if proc.stdout else b""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return wall, usage.ru_utime + usage.ru_stime, out


def payload(path: Path, event: str, cwd: Path, **fields: object) -> Path:
    data = {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd), "hook_event_name": event}
    path.write_text(json.dumps({**data, "permission_mode": "default", **fields}))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="an installed gitst's venv (default: a throwaway one)")
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--items", type=int, default=1000)
    opts = parser.parse_args()
    dev_bin = ROOT / ".venv" / "bin"
    with tempfile.TemporaryDirectory(prefix="gitst-agent-bench-") as tmp_name:
        tmp = Path(tmp_name)
        env = bench_env(tmp)
        home = Path(env["HOME"])
        env["XDG_CACHE_HOME"] = str(home / ".cache")
        venv = opts.venv.expanduser().resolve() if opts.venv else make_venv(tmp / "venv", env)
        python, git_st = venv / "bin" / "python", venv / "bin" / "git-st"
        subprocess.run([str(python), "-m", "compileall", "-q", str(venv / "lib")], env=env, check=False)
        dev_env = {**env, "PATH": f"{dev_bin}{os.pathsep}{env.get('PATH', '')}"}

        repo = tmp / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env, check=True)
        subprocess.run([str(dev_bin / "git-st"), "init", "-q"], cwd=repo, env=dev_env, check=True)
        items = [
            {"id": f"st-{n:04d}", "step": f"Ready item {n}: a step of ordinary length", "deps": []}
            for n in range(opts.items)
        ]
        (tmp / "items.json").write_text(json.dumps({"items": items}))
        subprocess.run(
            [str(dev_bin / "git-st"), "import-plan", "-q", str(tmp / "items.json")], cwd=repo, env=dev_env, check=True
        )
        stamps = home / ".cache" / "gitst" / "agent"
        stamps.mkdir(parents=True)
        far = time.time() + 10**6  # the session's heartbeat is fresh all through the run
        (stamps / f"{SESSION}.next").write_text(f"{far:.3f} {time.time():.3f}\n")

        post = payload(
            tmp / "post.json",
            "PostToolUse",
            repo,
            tool_name="Bash",
            tool_input={"command": "pytest -q"},
            tool_response={"stdout": "x" * 20000},
        )
        read = payload(tmp / "read.json", "PreToolUse", repo, tool_name="Read", tool_input={"file_path": "README"})
        edit = payload(
            tmp / "edit.json",
            "PreToolUse",
            repo,
            tool_name="Edit",
            tool_input={"file_path": str(repo / "src" / "a.py"), "old_string": "a", "new_string": "b"},
        )
        start = payload(tmp / "start.json", "SessionStart", repo, source="startup", model="bench")
        cmds = {
            "python -c pass": ([str(python), "-c", "pass"], env, None),
            "hook-agent PostToolUse (no-op)": ([str(git_st), "hook-agent", "PostToolUse"], env, post),
            "hook-agent PreToolUse Read (no-op)": ([str(git_st), "hook-agent", "PreToolUse"], env, read),
            "dev: python -c pass": ([str(dev_bin / "python"), "-c", "pass"], dev_env, None),
            "dev: PreToolUse Edit, no reservation": (
                [str(dev_bin / "git-st"), "hook-agent", "PreToolUse"],
                dev_env,
                edit,
            ),
            f"dev: SessionStart, {opts.items} ready": (
                [str(dev_bin / "git-st"), "hook-agent", "SessionStart"],
                dev_env,
                start,
            ),
        }
        outputs = {}
        for name, (cmd, cenv, stdin) in cmds.items():  # warm-up: bytecode written, caches filled
            outputs[name] = timed(cmd, repo, cenv, stdin)[2]
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        cpus: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(opts.runs):
            for name, (cmd, cenv, stdin) in cmds.items():
                wall, cpu, _ = timed(cmd, repo, cenv, stdin)
                walls[name].append(wall)
                cpus[name].append(cpu)
        load = os.getloadavg()[0]
        print(f"\n{opts.runs} rounds, taking turns; {os.cpu_count()} CPUs, load {load:.1f}; venv {venv}\n")
        print_table(list(cmds), walls, cpus)
        print_ratios(
            ["hook-agent PostToolUse (no-op)", "hook-agent PreToolUse Read (no-op)"], "python -c pass", walls, cpus
        )
        out = outputs[f"dev: SessionStart, {opts.items} ready"]
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        shown = sum(1 for line in context.splitlines() if line.startswith("  st-"))
        print(f"\nSessionStart with {opts.items} ready items: {len(out)} bytes of output (budget 4000),", end="")
        print(f" {shown} items shown,")
        print(f"  last line: {context.splitlines()[-1]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
