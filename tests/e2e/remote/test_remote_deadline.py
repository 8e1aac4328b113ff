"""A remote is untrusted and may never answer (issue 21.3 and its LOW items): every git call to
it has a deadline (ST_REMOTE_TIMEOUT), ends git's whole process group when it passes and exits 4
naming the remote; a host that refuses refs/st/* is exit 4 with its own words; a remote name
that looks like an option never reaches git; a failure of this clone is never "cannot reach".
Real clones, a real TCP listener that accepts and never answers, real hooks; nothing mocked."""

from __future__ import annotations

import json
import os
import selectors
import socket
import threading
from pathlib import Path

import pytest

from tests.e2e.remote.conftest import _free_port, clone
from tests.support import git, process_ends, session_env, st

DEADLINE = "1"


class Stall:
    """A TCP listener on 127.0.0.1 that accepts every connection, reads what it is sent and
    never answers; counts the connections accepted and those the other side closed."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", _free_port()))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.closed = 0
        self.changed = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        while not self.stopping:
            for key, _ in sel.select(0.1):
                if key.fileobj is self.sock:
                    conn, _ = self.sock.accept()
                    sel.register(conn, selectors.EVENT_READ)
                    with self.changed:
                        self.accepted += 1
                    continue
                conn = key.fileobj  # type: ignore[assignment]
                try:
                    data = conn.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(conn)
                    conn.close()
                    with self.changed:
                        self.closed += 1
                        self.changed.notify_all()
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]

    def all_closed(self, timeout: float = 60) -> bool:
        """Every connection accepted was closed by the other side (the process holding it is
        gone): waits up to ``timeout`` for it, a condition, never a fixed pause."""
        with self.changed:
            return self.changed.wait_for(lambda: self.accepted > 0 and self.closed == self.accepted, timeout)

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(timeout=10)


@pytest.fixture
def stall():
    listener = Stall()
    yield listener
    listener.stop()


def processes_in(directory: Path) -> list[str]:
    """Live processes whose working directory is under ``directory`` (git runs with -C there)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if cwd == str(directory) or cwd.startswith(str(directory) + os.sep):
            found.append(f"{entry}: {cmdline}")
    return found


def _env(session: str = "s1", **extra: str) -> dict:
    return session_env(session, **{"ST_HOST": "here", "ST_REMOTE_TIMEOUT": DEADLINE, **extra})


def assert_stopped(result, url: str, verb: str = "fetch") -> None:
    assert result.returncode == 4, result
    assert "Traceback" not in result.stderr, result
    assert f"the remote origin ({url}) did not answer within {DEADLINE}s" in result.stderr, result
    assert f"`git {verb}` was stopped" in result.stderr, result


@pytest.mark.parametrize("scheme", ["git", "http"])
def test_a_remote_that_never_answers_ends_every_command_with_exit_4_and_no_git_left(scheme, stall, bare, tmp_path):
    """claim, sessions --remote, worktree add, sync, heartbeat and release against a remote
    that accepts the connection and never answers: each exits 4 after the deadline naming
    the remote; status shows local state with the remote marked unreachable (exit 0); every
    connection was closed (git and its helpers are gone) and no process is left in the clone."""
    work = clone(bare.as_uri(), tmp_path / "work")
    held = st("claim", "5", "--remote", cwd=work, env=_env())  # through the good remote first
    assert held.returncode == 0, held
    url = f"{scheme}://127.0.0.1:{stall.port}/x"
    git("remote", "set-url", "origin", url, cwd=work)
    git("config", "st.remote", "origin", cwd=work)

    claim = st("claim", "7", "--remote", cwd=work, env=_env())
    assert_stopped(claim, url)
    assert not (work / "state" / "locks" / "issue-7.json").exists()  # nothing claimed here

    assert_stopped(st("sessions", "--remote", "--format", "json", cwd=work, env=_env()), url)
    # worktree add asks the remote which st/issue-9* branches exist before it claims
    assert_stopped(st("worktree", "add", "9", cwd=work, env=_env()), url, "ls-remote")
    assert_stopped(st("heartbeat", cwd=work, env=_env()), url)
    git("switch", "-q", "-c", "feature", cwd=work)
    assert_stopped(st("sync", cwd=work, env=_env()), url)

    status = st("status", "--format", "json", cwd=work, env=_env())
    assert status.returncode == 0, status
    remote = json.loads(status.stdout)["remote"]
    assert remote["name"] == "origin" and remote["claims"] == [], remote
    assert f"did not answer within {DEADLINE}s" in remote["error"], remote
    human = st("status", cwd=work, env=_env())
    assert human.returncode == 0 and "did not answer within" in human.stdout, human

    # the release is one push with a lease on the claim it pushed: that push is what stops
    assert_stopped(st("release", "5", cwd=work, env=_env()), url, "push")

    assert stall.accepted >= 7, stall.accepted
    assert stall.all_closed(), (stall.accepted, stall.closed)
    assert processes_in(tmp_path) == []


def test_a_pre_receive_hook_that_hangs_is_stopped_with_its_whole_process_group(bare, tmp_path):
    """A slow pre-receive on a file:// remote (git's own child processes, not a socket): the
    push is stopped at the deadline, exit 4 naming the remote, and the hook's `sleep` is gone."""
    hook = bare / "hooks" / "pre-receive"
    pidfile = tmp_path / "hook.pid"
    hook.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {pidfile}\nwait\n")
    hook.chmod(0o755)
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=_env(ST_REMOTE_TIMEOUT="8"))
    assert result.returncode == 4, result
    assert f"the remote origin ({bare.as_uri()}) did not answer within 8s" in result.stderr, result
    assert "`git push` was stopped" in result.stderr, result
    pid = int(pidfile.read_text())
    assert process_ends(pid), f"the hook's sleep {pid} is still running"
    assert git("for-each-ref", "refs/st/", cwd=bare) == ""
    assert not (work / "state" / "locks" / "issue-7.json").exists()


def test_a_bad_deadline_is_refused(bare, tmp_path):
    work = clone(bare.as_uri(), tmp_path / "work")
    for value in ("soon", "0", "-3", "1e308"):
        result = st("claim", "7", "--remote", cwd=work, env=_env(ST_REMOTE_TIMEOUT=value))
        assert result.returncode == 2 and "ST_REMOTE_TIMEOUT" in result.stderr, result


def test_a_host_that_refuses_refs_st_is_exit_4_with_its_own_words(bare, tmp_path):
    """A pre-receive hook that declines refs/st/*: exit 4 with the host's message, not exit 3
    "kept changing" after six rounds; nothing claimed here."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/st/* are not accepted on this host; ask ops' >&2\nexit 1\n")
    hook.chmod(0o755)
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=session_env("s1"))
    assert result.returncode == 4, result
    assert "kept changing" not in result.stderr, result
    assert f"the remote origin ({bare.as_uri()}) refused refs/st/claims/7" in result.stderr, result
    assert "refs/st/* are not accepted on this host; ask ops" in result.stderr, result
    assert not (work / "state" / "locks" / "issue-7.json").exists()


@pytest.mark.parametrize("where", ["--remote", "ST_REMOTE", "st.remote", "sync --remote", "sessions --remote"])
def test_a_remote_name_that_is_an_option_never_reaches_git(where, bare, tmp_path):
    """`--remote '--upload-pack=CMD'` (or ST_REMOTE / st.remote) is refused, exit 2, and CMD
    never runs."""
    work = clone(bare.as_uri(), tmp_path / "work")
    pwned = tmp_path / "PWNED"
    evil = f"--upload-pack=touch {pwned}; git-upload-pack"
    env = session_env("s1")
    if where == "--remote":
        result = st("claim", "7", f"--remote={evil}", cwd=work, env=env)
    elif where == "ST_REMOTE":
        result = st("claim", "7", cwd=work, env={**env, "ST_REMOTE": evil})
    elif where == "st.remote":
        git("config", "st.remote", evil, cwd=work)
        result = st("claim", "7", cwd=work, env=env)
    elif where == "sync --remote":
        git("switch", "-q", "-c", "feature", cwd=work)
        result = st("sync", "--remote", evil, cwd=work, env=env)
    else:
        result = st("sessions", f"--remote={evil}", cwd=work, env=env)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result
    if where in ("ST_REMOTE", "st.remote", "sync --remote"):  # click itself refuses the others
        assert "never starts with '-'" in result.stderr, result
    assert not pwned.exists()
    assert not (work / "state" / "locks" / "issue-7.json").exists()


def test_a_failure_of_this_clone_is_not_reported_as_an_unreachable_remote(bare, tmp_path):
    """A half-made worktree (its HEAD names a missing object) makes every fetch fail with
    `fatal: bad object`: exit 4 with git's words, never "cannot reach the remote"."""
    other = clone(bare.as_uri(), tmp_path / "other")
    assert st("claim", "7", "--remote", cwd=other, env=session_env("s2")).returncode == 0
    work = clone(bare.as_uri(), tmp_path / "work")
    git("worktree", "add", "-q", "-b", "half", str(tmp_path / "half"), cwd=work)
    (work / ".git" / "worktrees" / "half" / "HEAD").write_text("0123456789012345678901234567890123456789\n")
    for args in (["claim", "7", "--remote"], ["sessions", "--remote"]):
        result = st(*args, cwd=work, env=session_env("s1"))
        assert result.returncode == 4, result
        assert "bad object worktrees/half/HEAD" in result.stderr, result
        assert "cannot reach" not in result.stderr, result
        assert "failed in this repository" in result.stderr, result
