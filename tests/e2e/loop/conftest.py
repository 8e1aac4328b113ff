"""Fixtures of the agent loop's tests (docs/agent-loop.md): a plan on main, racing `next`
processes (every one a fresh `git-st` process with its own session), real clones of a bare
remote. Nothing mocked; nothing timed: each wait is on a process's exit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.remote.conftest import bare, daemon, remote_kind, servers  # noqa: F401 - the remote tests' fixtures, shared
from tests.support import git, st_quick

PLAN = ".step/st-plan.jsonl"


def write_plan(repo: Path, items: list[dict]) -> None:
    """A plan of ``items`` committed on the current branch of ``repo`` (set up in-process)."""
    st_quick("init", "-q", cwd=repo)
    source = repo.parent / f"{repo.name}-items.json"
    source.write_text(json.dumps({"items": items}))
    st_quick("import-plan", "-q", str(source), cwd=repo)
    # the line `git st hooks install` writes: plans merge with the plan driver (sync, land)
    (repo / ".gitattributes").write_text("**/.step/*.jsonl merge=gitst-plan\n")
    git("add", "-A", ".step", ".gitattributes", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)


def item(n: int, deps: list[int] = (), status: str = "pending", **extra: object) -> dict:
    return {"id": f"st-{n:03d}", "step": f"step {n}", "status": status, "deps": [f"st-{d:03d}" for d in deps], **extra}


def set_status(repo: Path, ids: list[str], status: str = "completed", *, push: bool = False) -> None:
    """Mark ``ids`` in the plan of ``repo``'s checked-out branch and commit (and push)."""
    for item_id in ids:
        st_quick("set-status", "-q", item_id, status, "--allow-multiple-in-progress", cwd=repo)
    git("commit", "-q", "-am", f"{status}: {' '.join(ids)}", cwd=repo)
    if push:
        git("push", "-q", "origin", "HEAD:main", cwd=repo)


def session_env(session: str, pid: int, **extra: str) -> dict:
    env = dict(os.environ)
    env.update({"ST_SESSION_ID": session, "ST_SESSION_PID": str(pid), **extra})
    return env


def race(
    places: list[Path], sessions: list[str], pid: int, *args: str, env: dict[str, str] | None = None
) -> list[tuple[str, int, str, str]]:
    """Every session runs `git-st next --format json ARGS` at once (session i in
    ``places[i % len(places)]``, with ``env`` added); (session, exit code, stdout, stderr) of each."""
    procs = []
    for i, session in enumerate(sessions):
        proc = subprocess.Popen(
            ["git-st", "next", "--format", "json", *args],
            cwd=places[i % len(places)],
            env={**session_env(session, pid), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append((session, proc))
    out = []
    for session, proc in procs:
        stdout, stderr = proc.communicate(timeout=600)  # a hang's deadline, never a speed test
        out.append((session, proc.returncode, stdout, stderr))
    return out


def winners(results: list[tuple[str, int, str, str]]) -> dict[str, str]:
    """item id -> the session that took it; asserts every loser exited 3 with JSON, no traceback."""
    taken: dict[str, str] = {}
    for session, code, stdout, stderr in results:
        assert "Traceback" not in stderr, stderr
        assert stdout, (session, code, stderr)  # every exit prints its JSON; say why this one did not
        answer = json.loads(stdout)
        if code == 0:
            assert answer["id"] not in taken, (answer["id"], taken[answer["id"]], session)
            taken[answer["id"]] = session
        else:
            assert code == 3, (session, code, stdout, stderr)
            assert answer["item"] is None and answer["reason"] == "wait", answer
    return taken


def land_all(agents: list[tuple[dict, dict]]) -> list[tuple[subprocess.Popen, str, str]]:
    """Every agent (what its `next` printed, its environment) runs `git-st land --format json`
    in its worktree at once; (process, stdout, stderr) of each once all have exited."""
    procs = [
        subprocess.Popen(
            ["git-st", "land", "--format", "json"],
            cwd=taken["path"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for taken, env in agents
    ]
    return [(p, *p.communicate(timeout=900)) for p in procs]  # a hang's deadline, never a speed test


class Sessions:
    """A live process per round standing for that round's agents; killed after the round so
    the round's claims are dead (reclaimable) when the next round starts."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> int:
        self.proc = subprocess.Popen(["sleep", "3600"])
        return self.proc.pid

    def end(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=60)
            self.proc = None
