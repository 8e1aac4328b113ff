"""The merge slot's queue (docs/agent-loop.md, "The merge slot"): agents that find the slot
held wait in line, are told their place, and are served in the order they came; a holder
that dies is passed over at once on its host."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.loop.conftest import item, session_env
from tests.e2e.loop.test_land import _clones, _next, _wait_for, _work
from tests.support import git


def _until_said(log: Path, text: str, proc: subprocess.Popen, deadline: float = 600) -> None:
    end = time.monotonic() + deadline
    while text not in (log.read_text() if log.exists() else ""):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < end, log.read_text()
        time.sleep(0.05)


def test_waiters_are_served_in_order_and_told_their_place(tmp_path, remote_kind):
    """Over file://, `git daemon` and smart HTTP: the tickets of the queue are claims of the
    remote like the slot."""
    bare = remote_kind.bare
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2), item(3)], count=1, url=remote_kind.url)
    holder_agent = subprocess.Popen(["sleep", "3600"])
    waiters_agent = subprocess.Popen(["sleep", "3600"])
    try:
        holder_env = session_env("holder", holder_agent.pid)
        held = _next(clones[0], holder_env)
        _work(held["path"], "h.txt")
        waiting = []
        for name in ("first", "second"):
            env = session_env(name, waiters_agent.pid)
            got = _next(clones[0], env)
            _work(got["path"], f"{name}.txt")
            waiting.append((got, env))
        marker = tmp_path / "stopped"
        holder = subprocess.Popen(
            ["git-st", "land"],
            cwd=held["path"],
            env={**holder_env, "ST_LAND_STOP_AT": "holding-slot", "ST_LAND_STOP_FILE": str(marker)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(marker, holder)  # it holds the slot now
        procs = []
        for (got, env), place in zip(waiting, ("1st in line", "2nd in line"), strict=True):
            log = tmp_path / f"{env['ST_SESSION_ID']}.err"
            proc = subprocess.Popen(
                ["git-st", "land", "--format", "json"],
                cwd=got["path"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=log.open("w"),
                text=True,
            )
            _until_said(log, f"{place} (held by session holder, landing st-001, since ", proc)
            procs.append(proc)
        holder.send_signal(signal.SIGKILL)  # the holder dies holding the slot: dead at once on this host
        holder.wait()
        holder_agent.kill()
        holder_agent.wait()
        answers = []
        for proc in procs:
            stdout, _ = proc.communicate(timeout=600)
            assert proc.returncode == 0, (stdout, (tmp_path / "first.err").read_text())
            answers.append(json.loads(stdout))
    finally:
        for proc in (holder_agent, waiters_agent):
            proc.kill()
            proc.wait()
    first, second = answers
    assert first["queue"]["first_place"] == 1 and second["queue"]["first_place"] == 2
    assert first["slot_token"] < second["slot_token"]  # served in the order they came
    log = git("log", "--format=%s", "main", cwd=bare).splitlines()
    assert log.index("st: land st-003") < log.index("st: land st-002")  # newest first: st-002 (first) landed first
    queue = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    assert [ref for ref in queue if "st.land" in ref] == []  # tickets and slot all given back
