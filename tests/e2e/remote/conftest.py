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
    worktree tests hand out (31000-31999, 42000-42999): a daemon there could take a block's port while a
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


class Served:
    """One bare remote served over ``kind`` (file / daemon / http): ``url`` to clone it,
    ``http`` the server (its stall and delay switches) when ``kind`` is http, and
    :meth:`requests`, the HTTP requests made since this remote was made."""

    def __init__(self, kind: str, bare: Path, url: str, http=None):
        self.kind = kind
        self.bare = bare
        self.url = url
        self.http = http
        self._first = len(http.requests) if http is not None else 0

    def requests(self) -> list[tuple[str, str]]:
        """(method, path) of every HTTP request made to this remote (none but http's)."""
        if self.http is None:
            return []
        with self.http.changed:
            return [request for request in self.http.requests[self._first :] if request[1].startswith(self._path)]

    @property
    def _path(self) -> str:
        return "/" + self.url.split("/", 3)[3] if self.kind == "http" else ""


class Servers:
    """One `git daemon` and one smart-HTTP server for all the tests of a module, each started
    at its first use and serving every bare remote under ``root``: each test makes its own bare
    there (:meth:`served`), so the tests share the servers and never a repository."""

    def __init__(self, root: Path):
        self.root = root
        self.daemon: Daemon | None = None
        self.http = None
        self.made = 0

    def served(self, kind: str) -> Served:
        self.made += 1
        home = self.root / f"r{self.made}"
        home.mkdir()
        bare = make_bare(home)
        name = f"r{self.made}/remote.git"
        if kind == "file":
            return Served("file", bare, bare.as_uri())
        if kind == "daemon":
            if self.daemon is None:
                self.daemon = Daemon(self.root)
                self.daemon.start()
            return Served("daemon", bare, self.daemon.url(name))
        if self.http is None:
            from tests.e2e.remote.http_remote import SmartHTTP

            self.http = SmartHTTP(self.root).start()
        git("config", "http.receivepack", "true", cwd=bare)
        self.http.stall, self.http.delay = None, 0.0  # what an earlier test set never carries over
        return Served("http", bare, self.http.url(name), self.http)

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
        if self.http is not None:
            self.http.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The module's `git daemon` and smart-HTTP server (:class:`Servers`), stopped after it."""
    shared = Servers(tmp_path_factory.mktemp("served"))
    yield shared
    shared.stop()


@pytest.fixture(params=["file", "daemon", "http"])
def remote_kind(request, servers):
    """The remote claim, heartbeat, landing and reservation tests run over each transport
    teams use: file:// (a shared disk), `git daemon` (git://) and smart HTTP (`git
    http-backend`, as GitHub and GitLab serve git); the servers are shared by the module's
    tests, the bare remote is the test's own. docs/remote.md, "Transports"."""
    return servers.served(request.param)


def count_pushes(bare: Path) -> Path:
    """A post-receive hook in ``bare`` appending one line per push it takes (any transport:
    file://, git:// and http all run receive-pack there); returns the log it writes."""
    log = bare / "pushes.log"
    hook = bare / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\necho push >> '{log}'\ncat >> '{log}.refs'\n")
    hook.chmod(0o755)
    return log


def pushes(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def forge_claims(
    bare: Path, issues: list[str], *, session: str = "other", host: str = "elsewhere", ttl: int = 3600
) -> None:
    """``refs/st/claims/ISSUE`` for every issue, live records of ``session`` on ``host``, made by
    one `git fast-import` (thousands in a second), as gitst writes them."""
    import json

    from gitst.core import timestamps

    now = timestamps.now()
    chunks = []
    for n, issue in enumerate(issues):
        record = {
            "version": 1,
            "issue": issue,
            "session": session,
            "host": host,
            "actor": "bench",
            "pid": 1,
            "liveness": "pid",
            "token": n + 1,
            "claimed_at": timestamps.iso(now),
            "renewed_at": timestamps.iso(now),
            "expires_at": timestamps.iso(now + ttl),
            "ttl": ttl,
            "nonce": f"{n:032x}",
        }
        data = json.dumps(record).encode()
        chunks.append(
            b"commit refs/st/claims/%s\ncommitter gitst <gitst@invalid> 0 +0000\ndata 0\n"
            b"M 100644 inline claim.json\ndata %d\n%s\n\n" % (issue.encode(), len(data), data)
        )
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=bare, input=b"".join(chunks), check=True)
