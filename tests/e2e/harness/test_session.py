"""A scripted session of three "agents" on two clones of one bare remote (st.remote set):
processes that send the hook payloads a Claude Code session sends, in order, each hook and
tool in a fresh shell (tests/e2e/harness/agent.py). Claims appear; the hooks' heartbeats
keep a claim alive across a long tool call and past its TTL; a killed agent's claim is taken
over (after its TTL at most); a compaction saves a snapshot the next session's SessionStart
prints. Every wait is on a condition (a log line, a process's exit) with a generous deadline."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import item, write_plan
from tests.e2e.remote.conftest import clone, make_bare
from tests.support import git, process_ends, st

AGENT = Path(__file__).with_name("agent.py")
TTL = 20  # seconds: B's claim is held longer than this, kept alive by its hooks alone
DEADLINE = 300  # a hang's deadline, never a speed test


def entries(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def wait_for(log: Path, test, what: str) -> dict:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        for entry in entries(log):
            if test(entry):
                return entry
        time.sleep(0.1)
    raise AssertionError(f"no {what} in {log} within {DEADLINE} s:\n" + (log.read_text() if log.exists() else ""))


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_agent_left():
    """Every agent's process group ends with the test, whatever failed on the way."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def start(tmp_path: Path, name: str, session: str, cwd: Path, log: Path, script: list) -> subprocess.Popen:
    cfg = tmp_path / f"{name}.json"
    cfg.write_text(json.dumps({"session": session, "cwd": str(cwd), "log": str(log), "script": script}))
    env = {**os.environ, "ST_LOCK_TTL": str(TTL), "ST_AGENT_PUSH_INTERVAL": "1"}
    proc = subprocess.Popen([sys.executable, str(AGENT), str(cfg)], cwd=cwd, env=env, start_new_session=True)
    _STARTED.append(proc)
    return proc


@pytest.mark.slow
def test_three_agents_on_two_clones(tmp_path):
    bare = make_bare(tmp_path)
    seed = clone(str(bare), tmp_path / "landing")
    write_plan(seed, [item(1), item(2)])
    git("push", "-q", "origin", "HEAD:main", cwd=seed)
    clones = []
    for name in ("c1", "c2"):
        path = clone(str(bare), tmp_path / name)
        git("config", "st.remote", "origin", cwd=path)
        clones.append(path)
    c1, c2 = clones
    log = tmp_path / "events.jsonl"
    go = tmp_path / "c-done"
    a = start(tmp_path, "a", "agent-a", c1, log, [["start"], ["next", DEADLINE], ["tool", "sleep 900"]])
    took_a = wait_for(log, lambda e: e["session"] == "agent-a" and e["kind"] in ("took", "gave-up"), "A's next")
    assert took_a["kind"] == "took" and took_a["item"]["id"] == "st-001", took_a
    script_b = [
        ["start"],
        ["next", DEADLINE],
        *[["tool", "sleep 2"]] * 3,
        ["tool", "sleep 8"],  # the long tool call: no hook runs during it (the TTL/3 beats leave 2/3 TTL)
        ["compact"],
        ["log", "compacted"],
        ["busy", str(go)],
        ["end"],
    ]
    b = start(tmp_path, "b", "agent-b", c2, log, script_b)
    took_b = wait_for(log, lambda e: e["session"] == "agent-b" and e["kind"] in ("took", "gave-up"), "B's next")
    assert took_b["kind"] == "took" and took_b["item"]["id"] == "st-002", took_b
    os.killpg(a.pid, signal.SIGKILL)  # the agent and its tool die at once, no SessionEnd
    assert process_ends(a.pid)
    a.wait()
    wait_for(log, lambda e: e.get("name") == "compacted", "B's compaction")
    while time.time() - took_b["at"] <= TTL:  # B's claim outlives its TTL: only its hooks renew it
        time.sleep(0.2)
    c = start(tmp_path, "c", "agent-c", c2, log, [["start"], ["next", DEADLINE]])
    took_c = wait_for(log, lambda e: e["session"] == "agent-c" and e["kind"] in ("took", "gave-up"), "C's next")
    assert c.wait(timeout=DEADLINE) == 0
    # C took over the killed agent's item, never the live one's
    assert took_c["kind"] == "took" and took_c["item"]["id"] == "st-001", took_c
    tries = [e for e in entries(log) if e["session"] == "agent-c" and e["kind"] == "tool" and "next" in e["command"]]
    assert all("st-002" not in (json.loads(t["stdout"]).get("id") or "") for t in tries if t["rc"] == 0)
    # B still holds st-002, seen from the other clone through the remote
    held = st("check-issue", "st-002", "--format", "json", cwd=c1, env={"ST_SESSION_ID": "observer"})
    assert held.returncode == 1, held
    # the compaction's snapshot is what C started with
    context = next(e for e in entries(log) if e["session"] == "agent-c" and e.get("event") == "SessionStart")
    text = json.loads(context["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert "Snapshot of session agent-b" in text and "PreCompact" in text, text
    go.write_text("")
    assert b.wait(timeout=DEADLINE) == 0
    end_b = wait_for(log, lambda e: e["session"] == "agent-b" and e.get("event") == "SessionEnd", "B's SessionEnd")
    assert "released issue st-002" in end_b["stderr"], end_b
    for entry in entries(log):
        assert "Traceback" not in (entry.get("stderr") or ""), entry
        if entry["kind"] == "hook" and entry["event"] != "SessionStart":
            assert entry["rc"] == 0 and entry["stdout"] == "", entry
