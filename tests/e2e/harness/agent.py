"""One scripted "agent" of tests/e2e/harness/test_session.py, run as its own process: it
sends the hook payloads a Claude Code session sends, in order, each through a fresh
``bash -c 'git st hook-agent EVENT'`` (as Claude Code runs hook commands), and runs its
tools in fresh ``bash -c`` shells too (so the session process gitst finds is this Python
process). Its session id is the payload's ``session_id`` and, for its tool shells,
``CLAUDE_SESSION_ID``.

Usage: ``python agent.py CONFIG.json``; CONFIG: ``session``, ``cwd``, ``log`` (JSONL it
appends to), ``script``: a list of steps:

- ``["start"]``: SessionStart (its context is logged);
- ``["tool", COMMAND]``: PreToolUse, the command, PostToolUse (a Bash tool call);
- ``["next", DEADLINE]``: the tool ``git st next --format json`` until it takes an item
  (exit 1 or 3: again a second later), at most DEADLINE seconds;
- ``["compact"]``: PreCompact; ``["end"]``: SessionEnd;
- ``["log", NAME]``: a marker in the log; ``["busy", FILE]``: ``sleep 1`` tool calls until
  FILE exists (an agent at work, its hooks beating).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


class Agent:
    def __init__(self, cfg: dict):
        self.session = cfg["session"]
        self.cwd = cfg["cwd"]
        self.log_path = Path(cfg["log"])
        self.env = {k: v for k, v in os.environ.items() if k not in ("ST_SESSION_ID", "ST_SESSION_PID")}
        self.env["CLAUDE_SESSION_ID"] = self.session

    def log(self, kind: str, **fields: object) -> None:
        with self.log_path.open("a") as handle:
            handle.write(json.dumps({"session": self.session, "kind": kind, "at": time.time(), **fields}) + "\n")

    def shell(self, command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """``command`` in a fresh ``bash -c`` (a hang's deadline: 900 s, never a speed test)."""
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=900,
            check=False,
        )

    def hook(self, event: str, **fields: object) -> subprocess.CompletedProcess[str]:
        payload = {
            "session_id": self.session,
            "transcript_path": f"/tmp/{self.session}.jsonl",
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        proc = self.shell(f"git st hook-agent {event}", stdin=json.dumps(payload))
        self.log("hook", event=event, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
        return proc

    def tool(self, command: str) -> subprocess.CompletedProcess[str]:
        tool_input = {"command": command, "description": "step"}
        self.hook("PreToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id=f"toolu_{time.time_ns()}")
        proc = self.shell(command)
        self.log("tool", command=command, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
        response = {"stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:], "interrupted": False}
        self.hook("PostToolUse", tool_name="Bash", tool_input=tool_input, tool_response=response)
        return proc

    def take(self, deadline: float) -> None:
        end = time.monotonic() + deadline
        while True:
            proc = self.tool("git st next --format json")
            if proc.returncode == 0:
                self.log("took", item=json.loads(proc.stdout))
                return
            if proc.returncode not in (1, 3) or time.monotonic() > end:
                self.log("gave-up", rc=proc.returncode)
                return
            time.sleep(1)

    def run(self, script: list[list]) -> None:
        for step in script:
            kind = step[0]
            if kind == "start":
                self.hook("SessionStart", source="startup", model="test")
            elif kind == "tool":
                self.tool(step[1])
            elif kind == "next":
                self.take(step[1])
            elif kind == "compact":
                self.hook("PreCompact", trigger="auto", custom_instructions="")
            elif kind == "end":
                self.hook("SessionEnd", reason="prompt_input_exit")
            elif kind == "log":
                self.log("mark", name=step[1])
            elif kind == "busy":  # a busy agent: short tool calls until FILE exists (a hang's deadline: 900 s)
                end = time.monotonic() + 900
                while not Path(step[1]).exists() and time.monotonic() < end:
                    self.tool("sleep 1")
        self.log("done")


if __name__ == "__main__":
    Agent(json.loads(Path(sys.argv[1]).read_text())).run(json.loads(Path(sys.argv[1]).read_text())["script"])
