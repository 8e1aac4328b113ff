"""TailCache (gitst.plan.files): the long-lived readers' plan read — the MCP server and the
board — is done again exactly when the file changed, whatever the change (an append, a rewrite
by rename), and never hides the plan's own error."""

from __future__ import annotations

import os

from gitst.plan import engine
from gitst.plan.files import TailCache
from gitst.plan.location import PlanLocation


def test_an_unchanged_plan_is_not_read_again_and_any_change_is(repo, monkeypatch):
    monkeypatch.chdir(repo)
    engine.init(PlanLocation.of(None))
    location = PlanLocation.of(None)
    cache = TailCache()
    first = cache.read(location)
    assert cache.read(location) is first  # unchanged: the same read
    engine.add(location, step="appended")  # an append
    second = cache.read(location)
    assert second is not first and [i["step"] for i in second.state.items()] == ["appended"]
    text = location.full.read_bytes()
    replacement = location.full.with_name("replacement")
    replacement.write_bytes(text)
    os.replace(replacement, location.full)  # a rewrite by rename: a new inode
    assert cache.read(location) is not second


def test_a_plan_that_is_not_there_yet_is_read_every_time_never_kept(repo, monkeypatch):
    monkeypatch.chdir(repo)
    cache = TailCache()
    assert list(cache.read(PlanLocation.of(None)).state.items()) == []  # no file: an empty plan
    engine.init(PlanLocation.of(None))
    engine.add(PlanLocation.of(None), step="now there")
    assert [i["step"] for i in cache.read(PlanLocation.of(None)).state.items()] == ["now there"]
