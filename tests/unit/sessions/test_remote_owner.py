"""``gitst.sessions.claims.remote_owner`` (what ``git st check-issue`` asks the remote, moved
out of the CLI): the live owner of an issue on a real bare remote, nobody, no remote, or a
remote that cannot be reached (a message, not an error)."""

from __future__ import annotations

import os

import pytest

from gitst.sessions import claims, remote_claims
from gitst.sessions.identity import Identity, process_start
from gitst.statedir.paths import state_dir
from tests.support import git, init_repo


def _who(session: str) -> Identity:
    pid = os.getpid()
    return Identity(session=session, pid=pid, host=os.uname().nodename, actor="test", pid_start=process_start(pid))


@pytest.fixture
def clone(tmp_path, monkeypatch):
    seed = init_repo(tmp_path / "seed")
    git("clone", "-q", "--bare", str(seed), str(tmp_path / "remote.git"), cwd=tmp_path)
    git("clone", "-q", str(tmp_path / "remote.git"), str(tmp_path / "clone"), cwd=tmp_path)
    monkeypatch.chdir(tmp_path / "clone")
    return tmp_path / "clone"


def test_the_live_owner_there_and_nobody(clone):
    root = state_dir(clone)
    me, other = _who("me-1"), _who("other-1")
    remote_claims.acquire("7", other, remote="origin", ttl=600, cwd=clone)

    held = claims.remote_owner("7", me, root=root, remote="origin")
    assert held.remote == "origin" and held.unreachable is None
    assert held.owner is not None and held.owner["session"] == "other-1"
    assert held.published is not None and held.published.remote_renewed == []  # nothing of mine to publish

    free = claims.remote_owner("8", me, root=root, remote="origin")
    assert free.remote == "origin" and free.owner is None


def test_no_remote_asks_nothing(clone):
    found = claims.remote_owner("7", _who("me-1"), root=state_dir(clone), remote=None)
    assert found == claims.RemoteOwner()


def test_a_remote_that_cannot_be_reached_is_a_message(clone, tmp_path):
    git("remote", "add", "gone", str(tmp_path / "no-such-remote.git"), cwd=clone)
    found = claims.remote_owner("7", _who("me-1"), root=state_dir(clone), remote="gone")
    assert found.remote is None and found.owner is None
    assert found.unreachable is not None and "gone" in found.unreachable
