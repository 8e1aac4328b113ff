"""Fixtures for claims through a git remote: a bare remote, clones of it, and `git daemon`
serving it on 127.0.0.1 (the smart protocol over a socket), started and stopped per test."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import git


def make_bare(root: Path) -> Path:
    """A bare remote whose main holds one commit (made in a scratch clone, as a user would)."""
    bare = root / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=root)
    seed = root / "seed"
    git("clone", "-q", str(bare), str(seed), cwd=root)
    (seed / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=seed)
    git("commit", "-q", "-m", "init", cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    return bare


def clone(url: str, path: Path) -> Path:
    git("clone", "-q", url, str(path), cwd=path.parent)
    return path


@pytest.fixture
def bare(tmp_path) -> Path:
    return make_bare(tmp_path)


def _free_port() -> int:
    """A free port below the kernel's ephemeral range and away from the port blocks the
    worktree tests hand out (41000-42999): a daemon there could take a block's port while a
    test running at the same time (pytest -n) expects that block to be free."""
    import random

    for port in random.sample(range(20000, 30000), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-29999")


class Daemon:
    """`git daemon` serving ``base`` on 127.0.0.1:port, read and write."""

    def __init__(self, base: Path):
        self.base = base
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, name: str = "remote.git") -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                f"--base-path={self.base}",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                "--max-connections=64",
                str(self.base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("git daemon exited at start") from None
                time.sleep(0.02)
        raise RuntimeError("git daemon did not accept connections within 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)  # the daemon and the children serving connections
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def daemon(bare):
    served = Daemon(bare.parent)
    served.start()
    yield served
    served.stop()


@pytest.fixture
def smart_http(bare):
    """`git http-backend` behind a threaded HTTP server on 127.0.0.1 serving ``bare`` (push
    enabled); see tests/e2e/remote/http_remote.py for its stall and delay switches."""
    from tests.e2e.remote.http_remote import SmartHTTP

    served = SmartHTTP(bare.parent).start()
    yield served
    served.stop()
