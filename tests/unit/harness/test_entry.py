"""The agent hook's no-op path (`git st hook-agent`): what it imports is pinned, like the
pre-commit hook's (docs/harness.md, "The budget"); and the payload reader never waits for EOF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gitst.harness.payload import PayloadError, read_payload
from tests.support import REPO_ROOT, env_without_coverage

HEAVY = (
    "click",
    "subprocess",
    "orjson",
    "pathlib",
    "dataclasses",
    "typing",
    "gitst.plan",
    "gitst.sessions.heartbeats",
    "gitst.sessions.reservations",
    "gitst.harness.handlers",
    "gitst.harness.guard",
    "gitst.worktrees.manager",
    "gitst.snapshots.store",
    "gitst.core.jsonio",
    "gitst.git.runner",
)

# what the interpreter loaded before (site's .pth files may import pathlib or re) is not ours
PROBE = f"""
import sys
before = set(sys.modules)
sys.path.insert(0, {str(REPO_ROOT)!r})
from gitst.cli.main import main
code = main(["hook-agent", sys.argv[1]])
print(code, [m for m in {HEAVY!r} if m in sys.modules and m not in before])
"""


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "pytest"}}),
        ("UserPromptSubmit", {"prompt": "go on"}),
        ("PreToolUse", {"tool_name": "Read", "tool_input": {"file_path": "x.py"}}),
        ("Notification", {"message": "waiting"}),  # an event gitst does not handle
    ],
)
def test_the_no_op_path_imports_nothing_heavy(tmp_path, event, payload):
    session = "0f0f0f0f-aaaa-4bbb-8ccc-123456789abc"
    stamps = tmp_path / "cache" / "gitst" / "agent"
    stamps.mkdir(parents=True)
    now = time.time()
    (stamps / f"{session}.next").write_text(f"{now + 600:.3f} {now:.3f}\n")  # the last beat: just now
    env = env_without_coverage({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    data = json.dumps({"session_id": session, "cwd": str(tmp_path), "hook_event_name": event, **payload})
    out = subprocess.run(
        [sys.executable, "-c", PROBE, event],
        cwd=tmp_path,
        input=data,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == "0 []", out
    assert out.stderr == ""


def test_the_reader_returns_on_a_whole_object_while_stdin_stays_open():
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b'{"session_id": "s", "nested": {"a": [1, "}"]}}\n')
        assert read_payload(read_fd, timeout=60) == {"session_id": "s", "nested": {"a": [1, "}"]}}
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_the_reader_in_pieces_at_eof_and_on_garbage():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b'{"a": ')
    os.write(write_fd, b"1}")
    os.close(write_fd)
    assert read_payload(read_fd, timeout=60) == {"a": 1}
    os.close(read_fd)
    read_fd, write_fd = os.pipe()
    os.close(write_fd)
    assert read_payload(read_fd, timeout=60) == {}  # stdin closed without a payload
    os.close(read_fd)
    for bad in (b"[1, 2]", b"{nope"):
        read_fd, write_fd = os.pipe()
        os.write(write_fd, bad)
        os.close(write_fd)
        with pytest.raises(PayloadError):
            read_payload(read_fd, timeout=60)
        os.close(read_fd)


def test_the_reader_gives_up_on_a_silent_open_stdin():
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b'{"half": ')
        with pytest.raises(PayloadError, match="no whole JSON object"):
            read_payload(read_fd, timeout=0.2)
    finally:
        os.close(read_fd)
        os.close(write_fd)
