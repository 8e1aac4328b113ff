"""The SDLC writer's clock: `updated_at` moves forward on every write (rule 2), even for writes in
one millisecond or a clock that went back, so the validator's transition rules always pass."""

from __future__ import annotations

import time

from gitst.core import timestamps
from gitst.sdlc import writer
from gitst.sdlc.check import check


def test_fifty_writes_in_a_row_each_refresh_updated_at_and_pass_the_transition_rules(tmp_path):
    path = tmp_path / "state.json"
    writer.init(path, "2026-03-02-fast")
    previous = path.read_bytes()
    stamps = []
    for index in range(50):
        writer.record_invocation(path, f"agent-{index}")
        current = path.read_bytes()
        assert [d for d in check(current, "state.json", against=previous) if d.is_error] == []
        stamps.append(timestamps.parse(writer.read(path)["updated_at"]))
        previous = current
    assert stamps == sorted(set(stamps))  # strictly increasing


def test_a_clock_that_went_back_still_moves_updated_at_forward(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    writer.init(path, "2026-03-02-skew")
    first = writer.read(path)["updated_at"]
    monkeypatch.setattr(time, "time", lambda: timestamps.parse(first) - 3600)  # an hour back
    done = writer.set_phase(path, "next")
    assert done.state["updated_at"] == timestamps.iso(timestamps.parse(first) + 0.0015)  # one millisecond on
    # the phase metrics use the same instant, so nothing is later than updated_at
    assert done.state["metrics"]["phases"]["DESIGN"]["started_at"] == done.state["updated_at"]
    assert done.warnings == []
