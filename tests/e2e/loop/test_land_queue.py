"""The merge slot's queue (docs/agent-loop.md, "The merge slot"): agents that find the slot
held wait in line, are told their place, and are served in the order they came; a holder
that dies is passed over at once on its host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from gitst.loop import slot
from tests.e2e.loop.conftest import item, session_env
from tests.e2e.loop.test_land import _clones, _next, _wait_for, _work
from tests.support import git, logged_git, logging_git, run


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


def _stopped_land(place: str, env: dict, marker: Path) -> subprocess.Popen:
    """A `land` that stops holding the slot (ST_LAND_STOP_AT) until it is killed."""
    return subprocess.Popen(
        ["git-st", "land"],
        cwd=place,
        env={**env, "ST_LAND_STOP_AT": "holding-slot", "ST_LAND_STOP_FILE": str(marker)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_the_holders_ticket_is_not_counted_and_a_waiters_goes_back_in_its_landing_push(tmp_path, remote_kind):
    """A waiter that takes the slot keeps its ticket until its landing's atomic push gives both
    back (one push fewer holding the slot); meanwhile the others do not count it as ahead. Over
    file://, `git daemon` and smart HTTP."""
    bare = remote_kind.bare
    _landing, clones = _clones(tmp_path, bare, [item(1), item(2), item(3)], count=1, url=remote_kind.url)
    agents = [subprocess.Popen(["sleep", "3600"]) for _ in range(3)]
    try:
        envs = [session_env(name, proc.pid) for name, proc in zip(("holder", "first", "second"), agents, strict=True)]
        taken = [_next(clones[0], env) for env in envs]
        for got, name in zip(taken, ("h", "f", "s"), strict=True):
            _work(got["path"], f"{name}.txt")
        holder = _stopped_land(taken[0]["path"], envs[0], tmp_path / "holder.stopped")
        _wait_for(tmp_path / "holder.stopped", holder)
        first_log = tmp_path / "first.err"
        first = subprocess.Popen(
            ["git-st", "land", "--format", "json"],  # JSON on stdout, what it waits for on stderr
            cwd=taken[1]["path"],
            env={**envs[1], "ST_LAND_STOP_AT": "holding-slot", "ST_LAND_STOP_FILE": str(tmp_path / "first.stopped")},
            stdout=subprocess.DEVNULL,
            stderr=first_log.open("w"),
        )
        _until_said(first_log, "1st in line (held by session holder", first)
        git_log = tmp_path / "git.log"
        logged = {**envs[2], "PATH": f"{logging_git(tmp_path / 'bin', git_log)}{os.pathsep}{os.environ['PATH']}"}
        second_log = tmp_path / "second.err"
        second = subprocess.Popen(
            ["git-st", "land", "--format", "json"],
            cwd=taken[2]["path"],
            env=logged,
            stdout=subprocess.PIPE,
            stderr=second_log.open("w"),
            text=True,
        )
        _until_said(second_log, "2nd in line (held by session holder", second)
        for proc in (holder, agents[0]):  # the holder dies: the first takes the slot over at once, and stops
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        _wait_for(tmp_path / "first.stopped", first)
        # the first holds the slot, its ticket still on the remote: the second is next all the same
        _until_said(second_log, "1st in line (held by session first, landing st-002", second)
        for proc in (first, agents[1]):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        stdout, _ = second.communicate(timeout=600)
        assert second.returncode == 0, second_log.read_text()
    finally:
        for proc in agents:
            proc.kill()
            proc.wait()
    answer = json.loads(stdout)
    assert answer["queue"]["first_place"] == 2 and answer["pushes_rejected"] == 0
    pushes = [words for words in logged_git(git_log) if words[0] == "push"]
    ticket = "refs/st/claims/" + slot.ticket_name("second")
    # its ticket, the slot, the base with the slot and the ticket given back, its item's claim
    assert len(pushes) == 4, pushes
    assert ticket in " ".join(pushes[0])
    landing = pushes[2]
    assert "--atomic" in landing and f":{ticket}" in landing and ":refs/st/claims/st.land" in landing
    claims = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    left = {ref.rsplit("/", 1)[1] for ref in claims}
    # the killed lands' claims and the first's ticket (it died holding the slot): dead, gc's to delete
    assert left == {"st-001", "st-002", slot.ticket_name("first")}, left
    swept = run(["git-st", "gc"], cwd=clones[0])
    assert swept.returncode == 0, swept
    assert git("for-each-ref", "refs/st/claims/", cwd=bare) == ""
