"""Claims hold in real agent harnesses (docs/claims.md, "Who is acting").

Claude Code, Codex and CI runners run every tool call in a fresh shell that exits right
after the command. The agent here behaves the same way: a long-lived Python process that
runs each `git st` command through a fresh `bash -c` holding more than one command (as
the harnesses do, so bash cannot simply exec git), with no ST_SESSION_PID. Its claim must
live as long as the agent does — not as long as the shell — and die with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import read_json, session_env, st

AGENT = r"""
import json, subprocess, sys
cwd = sys.argv[1]
for line in sys.stdin:
    command = json.loads(line)
    # One fresh shell per tool call, like the harnesses: cd, the command, then the shell's own
    # bookkeeping (Claude Code records the working directory after every command).
    script = f"cd {cwd} && {command}; status=$?; pwd -P >/dev/null; exit $status"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    print(json.dumps({"rc": done.returncode, "out": done.stdout, "err": done.stderr}), flush=True)
"""


class Agent:
    """A long-lived agent process; :meth:`run` is one tool call (a fresh `bash -c`)."""

    def __init__(self, repo, **env: str):
        full = {k: v for k, v in os.environ.items() if k != "ST_SESSION_PID"}
        full.update(env)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, shlex.quote(str(repo))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=full,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def run(self, command: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


def _claim_survives_and_dies_with_the_agent(repo, env_a: dict, env_b: dict) -> None:
    first, second = Agent(repo, **env_a), Agent(repo, **env_b)
    try:
        got = first.run("git st claim 7 --format json")
        assert got["rc"] == 0, got
        session_a = json.loads(got["out"])["session"]
        lock = read_json(repo / "state" / "locks" / "issue-7.json")
        assert lock["owner"]["pid"] == first.pid  # the agent, not its shell nor git-st
        assert lock["owner"].get("liveness", "pid") == "pid"
        started = time.monotonic()
        commands = ["git st claim 7", "git st heartbeat", "git st check-issue 7", "git st sessions --format json"]
        refusals = 0
        with ThreadPoolExecutor(2) as pool:
            for number in range(20):
                mine = pool.submit(first.run, commands[number % len(commands)])
                if number % 2:  # the other agent tries every other round, all through the 5 s
                    refused = pool.submit(second.run, "git st claim 7").result(timeout=60)
                    assert refused["rc"] == 3, (number, refused)
                    assert f"issue 7 is claimed by session {session_a}" in refused["err"]
                    refusals += 1
                done = mine.result(timeout=60)
                assert done["rc"] == 0, (number, done)
                if commands[number % len(commands)].startswith("git st sessions"):
                    states = {s["session"]: s["state"] for s in json.loads(done["out"])["sessions"]}
                    assert states[session_a] == "live", states
                time.sleep(max(0.0, started + 0.27 * (number + 1) - time.monotonic()))  # spread over >= 5 s
        assert time.monotonic() - started >= 5.0 and refusals == 10
        assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"]["session"] == session_a

        first.kill()
        taken = second.run("git st claim 7")
        assert taken["rc"] == 0, taken  # at once: no TTL to wait for
        assert f"taken over from dead session {session_a}" in taken["out"]
    finally:
        first.kill()
        second.kill()


@pytest.mark.slow  # starts first (tests/conftest.py)
def test_an_agent_running_each_command_in_a_fresh_shell_keeps_its_claim(tmp_path):
    from tests.support import init_repo

    plain, named = init_repo(tmp_path / "plain"), init_repo(tmp_path / "named")
    with ThreadPoolExecutor(2) as pool:  # both ways at once: the 5 s spread is the slow part
        by_pid = pool.submit(_claim_survives_and_dies_with_the_agent, plain, {}, {})
        by_id = pool.submit(
            _claim_survives_and_dies_with_the_agent, named, {"ST_SESSION_ID": "agent-A"}, {"ST_SESSION_ID": "agent-B"}
        )
        by_pid.result(timeout=120)
        by_id.result(timeout=120)


def test_whoami_names_the_agent_and_the_rule(repo):
    agent = Agent(repo, ST_SESSION_ID="agent-A")
    try:
        got = agent.run("git st whoami --format json")
        assert got["rc"] == 0, got
        me = json.loads(got["out"])
        assert me["session"] == "agent-A" and me["source"] == "ST_SESSION_ID"
        assert me["pid"] == agent.pid and me["rule"] == "agent" and me["liveness"] == "pid"
        assert me["process"].startswith("python")
        verdicts = [step["verdict"] for step in me["chain"]]
        assert verdicts[-1] == "agent" and "shell" in verdicts  # the fresh bash was skipped
        assert me["started_at"] and me["host"] and me["actor"] == "tester"
        text = agent.run("git st whoami")
        assert text["rc"] == 0 and "rule      agent:" in text["out"] and f"pid       {agent.pid}" in text["out"]
    finally:
        agent.kill()


def test_an_explicit_session_without_a_session_process_lives_by_heartbeat(repo):
    """`setsid` + a double fork: the command's ancestors end at init, so no agent process is
    found. With ST_SESSION_ID the session lives by its heartbeat, never dead because a shell
    exited; without one, the user is told at once."""
    env = {k: v for k, v in os.environ.items() if k != "ST_SESSION_PID"}
    out = repo.parent / "orphan.txt"

    def orphan(command: str, **extra: str) -> str:
        out.unlink(missing_ok=True)
        script = f"( cd {shlex.quote(str(repo))} && {{ {command}; }} > {out} 2>&1 & )"
        subprocess.run(["setsid", "bash", "-c", script], env={**env, **extra}, check=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if out.exists() and out.read_text().endswith("\ndone\n"):
                return out.read_text()
            time.sleep(0.05)
        raise AssertionError(out.read_text() if out.exists() else "no output")

    text = orphan("git st claim 7; echo done", ST_SESSION_ID="nohost")
    assert "claimed by session nohost" in text, text
    lock = read_json(repo / "state" / "locks" / "issue-7.json")
    assert lock["owner"]["liveness"] == "heartbeat"
    chat = read_json(repo / "state" / "active-chats" / "nohost.json")
    assert chat["rule"] == "fallback" and chat["liveness"] == "heartbeat"
    time.sleep(0.2)  # the shells that ran it are long gone
    refused = st("claim", "7", cwd=repo, env=session_env("B"))
    assert refused.returncode == 3 and "claimed by session nohost" in refused.stderr
    listed = json.loads(st("sessions", "--format", "json", cwd=repo, env=session_env("B")).stdout)
    assert {s["session"]: s["state"] for s in listed["sessions"]}["nohost"] == "live"

    warned = orphan("git st claim 8; echo done")  # no session id at all
    assert "note: session pid-" in warned and "exits with this command's shell" in warned, warned


def _read_until(fd: int, marker: bytes, timeout: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_a_person_at_an_interactive_login_shell_keeps_the_shell_as_the_session(repo):
    """The old behaviour for people: typed into a terminal's login shell, the session is
    that shell, and the claim dies when the shell exits."""
    env = {k: v for k, v in os.environ.items() if k not in ("ST_SESSION_PID", "ST_SESSION_ID")}
    env["PS1"] = "$ "
    pid, fd = pty.fork()
    if pid == 0:  # the child: an interactive login bash on the new terminal
        os.chdir(repo)
        os.execvpe("bash", ["bash", "--login", "-i"], env)
    try:
        whoami = repo.parent / "whoami.json"
        path = shlex.quote(env["PATH"])
        line = f"export PATH={path}; git st whoami --format json > {whoami}; git st claim 7; echo marker-$?\n"
        os.write(fd, line.encode())
        _read_until(fd, b"marker-0")
        me = json.loads(whoami.read_text())
        assert me["pid"] == pid and me["rule"] == "interactive-shell" and me["process"] == "bash", me
        lock = read_json(repo / "state" / "locks" / "issue-7.json")
        assert lock["owner"]["pid"] == pid and lock["owner"]["session"] == f"pid-{pid}@{me['host']}"
        refused = st("claim", "7", cwd=repo, env=session_env("B"))
        assert refused.returncode == 3, refused
        os.write(fd, b"exit\n")
        _read_until(fd, b"exit")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    taken = st("claim", "7", cwd=repo, env=session_env("B"))
    assert taken.returncode == 0 and "taken over from dead session" in taken.stdout, taken
