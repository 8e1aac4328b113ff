"""The look of ``git st next`` shares its fetch with the sessions of the same clone that look
at the same moment (``gitst.sessions.remote_survey._fetch_shared``, docs/agent-loop.md): real
processes on a real clone, the holder's fetch held open until the test lets it end, so the
order is made, not timed. The fetch itself is replaced by one that logs and waits; the lock,
the stamp and the state dir are the real ones."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from gitst.core import filelocks
from gitst.sessions import remote_survey
from tests.support import git
from tests.unit.sessions.test_remote_owner import clone  # noqa: F401 - its bare remote and clone, shared

DEADLINE = 120.0  # a hang's limit, never a speed test
REFSPECS = ["+refs/st/claims/*:refs/st-remote/origin/claims/*"]


def _log(log: Path, line: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def _session(name: str, place: str, log: str, go: str, fresh: bool, since: int = 0) -> None:
    """One session's look: its fetch logs and waits for ``go``; its wait for the lock logs."""

    def fetch(remote, refspecs, cwd, timeout, deadline):
        _log(Path(log), f"fetch {name}")
        deadline = time.monotonic() + DEADLINE
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
        return True

    locked = filelocks.locked

    def logged(sidecar, timeout):
        _log(Path(log), f"waiting {name}")
        return locked(sidecar, timeout)

    if name.startswith("late"):  # the real one: it must not be reached
        fetch = remote_survey._fetch_within
    remote_survey._fetch_within = fetch
    remote_survey.filelocks.locked = logged
    try:
        remote_survey._fetch_shared("origin", REFSPECS, place, fresh=fresh, since=since)
    except remote_survey.RemoteTimeout:
        _log(Path(log), f"timeout {name}")
        return
    _log(Path(log), f"done {name}")


def _until(log: Path, count: int, word: str) -> list[str]:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if sum(line.startswith(word) for line in lines) >= count:
            return lines
        time.sleep(0.01)
    raise AssertionError(f"{count} x {word!r} never came: {log.read_text() if log.exists() else ''}")


@pytest.mark.parametrize(("fresh", "fetches"), [(False, 1), (True, 2)])
def test_sessions_that_look_at_once_share_one_fetch(clone, tmp_path, fresh, fetches):  # noqa: F811 - the fixture
    """A holder fetching; two sessions ask meanwhile and wait for the lock. Its fetch ended
    after they asked: they take it (1 fetch in all). Reading again after a lost race
    (``fresh``) takes only a fetch begun after the ask: the first waiter fetches, the second
    takes that one (2 in all)."""
    log, go = tmp_path / "log", tmp_path / "go"
    context = multiprocessing.get_context("fork")
    holder = context.Process(target=_session, args=("holder", str(clone), str(log), str(go), fresh))
    holder.start()
    _until(log, 1, "fetch")
    waiters = [context.Process(target=_session, args=(f"w{k}", str(clone), str(log), str(go), fresh)) for k in (1, 2)]
    for waiter in waiters:
        waiter.start()
    _until(log, 3, "waiting")  # both asked (and wait for the lock) while the holder fetches
    go.touch()
    for process in (holder, *waiters):
        process.join(DEADLINE)
        assert process.exitcode == 0
    lines = log.read_text().splitlines()
    assert sum(line.startswith("fetch") for line in lines) == fetches, lines
    assert sorted(line for line in lines if line.startswith("done")) == ["done holder", "done w1", "done w2"]


def test_a_fetch_begun_before_a_landing_here_is_not_shared_with_a_look_after_it(clone, tmp_path):  # noqa: F811
    """A holder's fetch under way; then a landing on this machine (its doorbell's ring, the
    moment ``next`` passes as ``since``); a look asking after it waits for the holder, but
    fetches again itself: the holder's fetch began before the landing and may not show it (the
    agent that landed would see its own item's dependents still waiting)."""
    log, go = tmp_path / "log", tmp_path / "go"
    context = multiprocessing.get_context("fork")
    holder = context.Process(target=_session, args=("holder", str(clone), str(log), str(go), False))
    holder.start()
    _until(log, 1, "fetch")
    landed = time.time_ns()
    after = context.Process(target=_session, args=("after", str(clone), str(log), str(go), False, landed))
    after.start()
    _until(log, 2, "waiting")
    go.touch()
    for process in (holder, after):
        process.join(DEADLINE)
        assert process.exitcode == 0
    lines = log.read_text().splitlines()
    assert [line for line in lines if line.startswith("fetch")] == ["fetch holder", "fetch after"], lines


def test_a_look_after_the_last_fetch_ended_fetches_again(clone, tmp_path):  # noqa: F811 - the fixture
    """One after the other, every look fetches: only a fetch under way when it asked is shared."""
    log, go = tmp_path / "log", tmp_path / "go"
    go.touch()
    context = multiprocessing.get_context("fork")
    for name in ("first", "second"):
        process = context.Process(target=_session, args=(name, str(clone), str(log), str(go), False))
        process.start()
        process.join(DEADLINE)
        assert process.exitcode == 0
    assert [line for line in log.read_text().splitlines() if line.startswith("fetch")] == [
        "fetch first",
        "fetch second",
    ]


def test_the_wait_for_another_sessions_fetch_counts_in_the_remote_deadline(clone, tmp_path, monkeypatch):  # noqa: F811
    """A holder whose fetch never ends (a remote that never answers): a session waiting for it
    ends at its own remote deadline (`ST_REMOTE_TIMEOUT`), exit 4's timeout, without a fetch of
    its own after the deadline (before: the wait, then a whole deadline more for its fetch)."""
    log, go = tmp_path / "log", tmp_path / "go"
    context = multiprocessing.get_context("fork")
    holder = context.Process(target=_session, args=("holder", str(clone), str(log), str(go), False))
    holder.start()
    _until(log, 1, "fetch")
    monkeypatch.setenv("ST_REMOTE_TIMEOUT", "1")
    late = context.Process(target=_session, args=("late", str(clone), str(log), str(go), False))
    late.start()
    late.join(DEADLINE)
    assert late.exitcode == 0
    go.touch()
    holder.join(DEADLINE)
    lines = log.read_text().splitlines()
    assert "timeout late" in lines and "fetch late" not in lines, lines


def test_clones_that_share_one_state_dir_never_share_a_fetch(clone, tmp_path, monkeypatch):  # noqa: F811
    """Two clones pointed at one state dir (`ST_STATE_DIR`): a look in the second never waits
    for, nor takes, the first clone's fetch (it brought the first clone's refs, not its own)."""
    monkeypatch.setenv("ST_STATE_DIR", str(tmp_path / "shared-state"))
    other = tmp_path / "other"
    git("clone", "-q", str(tmp_path / "remote.git"), str(other), cwd=tmp_path)
    log, go = tmp_path / "log", tmp_path / "go"
    context = multiprocessing.get_context("fork")
    holder = context.Process(target=_session, args=("holder", str(clone), str(log), str(go), False))
    holder.start()
    _until(log, 1, "fetch")
    second = context.Process(target=_session, args=("second", str(other), str(log), str(go), False))
    second.start()
    _until(log, 2, "fetch")  # its own fetch, while the first clone's is still under way
    go.touch()
    for process in (holder, second):
        process.join(DEADLINE)
        assert process.exitcode == 0
    lines = log.read_text().splitlines()
    assert lines.index("fetch second") < lines.index("done holder"), lines
