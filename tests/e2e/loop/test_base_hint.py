"""The base at the commit a landing on this machine says it pushed (gitst/loop/base.py,
``refresh_to``; the merge slot's doorbell carries it): no fetch when the clone has the commit,
that commit alone fetched when it does not (no listing of the remote's refs first), and
anything wrong with the word — a commit the remote lacks, one behind what the clone read
already, one off the base's line, no commit id at all — the base read whole, as without it.
Real git over file://, `git daemon` and smart HTTP; every fetch still runs, counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitst.loop import base as bases
from tests.e2e.remote.conftest import clone
from tests.support import git, record_calls

TRACKING = "refs/remotes/origin/main"


@pytest.fixture
def fetches(monkeypatch) -> list[list[str]]:
    """The refspecs of every fetch the base makes, in order."""
    return record_calls(monkeypatch, bases.remote, "fetch_refs", lambda _remote, refspecs, *_, **__: list(refspecs))


def _land(place: Path, text: str, ref: str = "main") -> str:
    """A commit on ``place``'s HEAD pushed to the remote's ``ref``; its id."""
    (place / "landed.txt").write_text(text)
    git("add", "landed.txt", cwd=place)
    git("commit", "-q", "-m", text, cwd=place)
    git("push", "-q", "origin", f"HEAD:refs/heads/{ref}", cwd=place)
    return git("rev-parse", "HEAD", cwd=place).strip()


def _tracking(place: Path) -> str:
    return git("rev-parse", TRACKING, cwd=place).strip()


def _start(remote_kind, tmp_path: Path) -> tuple[Path, Path, str]:
    """A lander and a waiter, both at the remote's main (one commit); that commit."""
    seed = clone(remote_kind.url, tmp_path / "seed")
    first = _land(seed, "first")
    lander, waiter = clone(remote_kind.url, tmp_path / "lander"), clone(remote_kind.url, tmp_path / "waiter")
    return lander, waiter, first


def test_a_commit_this_clone_has_moves_the_base_without_a_fetch(remote_kind, tmp_path, fetches):
    lander, _waiter, first = _start(remote_kind, tmp_path)
    landed = _land(lander, "second")  # a landing from a worktree of this clone: the commit is here
    git("update-ref", TRACKING, first, cwd=lander)  # the tracking ref as it was before that push
    got = bases.refresh_to(bases.Base("main", "origin", first), landed, lander)
    assert got == bases.Base("main", "origin", landed)
    assert (_tracking(lander), fetches) == (landed, [])


def test_a_commit_from_another_clone_is_fetched_alone_without_listing_refs(remote_kind, tmp_path, fetches, monkeypatch):
    lander, waiter, first = _start(remote_kind, tmp_path)
    landed = _land(lander, "second")
    trace = tmp_path / "trace"
    trace.mkdir()
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))  # git's own account of what each git process did
    got = bases.refresh_to(bases.Base("main", "origin", first), landed, waiter)
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert got.tip == landed == _tracking(waiter)
    assert fetches == [[f"{landed}:{TRACKING}"]]
    regions = [
        json.loads(line).get("label")
        for name in trace.iterdir()
        for line in name.read_text().splitlines()
        if '"region_enter"' in line
    ]
    assert "fetch_refs" in regions and "remote_refs" not in regions  # fetched, the refs never listed


def _wrong(kind: str, lander: Path, waiter: Path, first: str) -> str:
    if kind == "unknown to the remote":
        return "0" * 40
    if kind == "not a commit id":
        return "main"
    bases.refresh(bases.Base("main", "origin", ""), waiter)  # the waiter already read the newer tip
    if kind == "behind what was read":
        return first
    git("checkout", "-q", "-b", "side", first, cwd=lander)  # on another branch of the remote, not after that tip
    side = _land(lander, "side", ref="side")
    if kind == "off the base's line, here":
        git("fetch", "-q", "origin", "side", cwd=waiter)
    return side


@pytest.mark.parametrize(
    "kind",
    [
        "unknown to the remote",
        "not a commit id",
        "behind what was read",
        "off the base's line",
        "off the base's line, here",
    ],
)
def test_a_wrong_word_reads_the_base_whole(remote_kind, tmp_path, fetches, kind):
    lander, waiter, first = _start(remote_kind, tmp_path)
    landed = _land(lander, "second")
    said = _wrong(kind, lander, waiter, first)
    got = bases.refresh_to(bases.Base("main", "origin", first), said, waiter)
    assert got.tip == landed == _tracking(waiter)  # the remote's tip: never the word's, never moved back
    assert fetches[-1] == [f"+refs/heads/main:{TRACKING}"]  # read whole, as without a word
