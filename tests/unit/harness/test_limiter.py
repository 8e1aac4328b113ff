"""The heartbeat rate limit of the agent hooks (gitst.harness.limiter): one state write per
TTL/3 per session; with st.remote set, one pushing heartbeat per machine per interval, unless
a session's lease would be at risk. Real repositories and real heartbeats; the beats are
counted by wrapping the one function that runs them."""

from __future__ import annotations

import pytest

from gitst.harness import limiter
from tests.support import git, init_repo

TTL = 900.0


@pytest.fixture
def beats(monkeypatch, tmp_path) -> list[str]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("ST_LOCK_TTL", str(TTL))
    monkeypatch.setenv("ST_AGENT_PUSH_INTERVAL", "60")
    ran: list[str] = []
    real = limiter._heartbeat

    def counted(session: str, cwd: str) -> None:
        ran.append(session)
        real(session, cwd)

    monkeypatch.setattr(limiter, "_heartbeat", counted)
    return ran


def test_one_state_write_per_ttl_third_per_session(tmp_path, beats):
    repo = str(init_repo(tmp_path / "repo"))
    t0 = 1_000_000.0
    assert limiter.beat("s1", cwd=repo, now=t0) == "beat"
    assert not limiter.due("s1", now=t0 + 1) and not limiter.due("s1", now=t0 + TTL / 3 - 1)
    assert limiter.due("s1", now=t0 + TTL / 3 + 1)
    assert limiter.due("s2", now=t0 + 1)  # another session has its own stamp
    assert beats == ["s1"]


def test_one_push_per_machine_per_interval_unless_a_lease_is_at_risk(tmp_path, beats):
    repo = init_repo(tmp_path / "repo")
    git("config", "st.remote", "origin", cwd=repo)
    cwd = str(repo)
    t0 = 2_000_000.0
    assert limiter.beat("a", cwd=cwd, now=t0) == "beat"  # a new session: at risk (never beat), beats
    assert limiter.beat("b", cwd=cwd, now=t0 + 1) == "beat"  # also new
    # b's next turn comes within the machine's interval after a's push
    assert limiter.beat("a", cwd=cwd, now=t0 + TTL / 3 + 1) == "beat"
    assert limiter.beat("b", cwd=cwd, now=t0 + TTL / 3 + 2) == "deferred"
    assert not limiter.due("b", now=t0 + TTL / 3 + 3)  # deferred until the window opens
    assert limiter.due("b", now=t0 + TTL / 3 + 62)
    assert limiter.beat("b", cwd=cwd, now=t0 + TTL / 3 + 62) == "beat"
    # a lease at risk (2/3 TTL since the session's last beat) beats inside the window
    assert limiter.beat("a", cwd=cwd, now=t0 + TTL * 2 / 3 + 2) == "beat"
    assert limiter.beat("b", cwd=cwd, now=t0 + TTL * 2 / 3 + 3) == "deferred"
    assert limiter.beat("b", cwd=cwd, now=t0 + TTL / 3 + 1 + TTL * 2 / 3 + 62) == "beat"
    assert beats == ["a", "b", "a", "b", "a", "b"]
