"""How long an agent waiting for the merge slot pauses between looks (gitst/loop/slot.py): shortest
at the front of the line, where the slot comes next, and never shorter than a tenth of the
time its holder has held it. Pauses are recorded, not slept: nothing here races the clock."""

from __future__ import annotations

import pytest

from gitst.core import timestamps
from gitst.loop import backoff, slot


@pytest.fixture
def slept(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(backoff.time, "sleep", pauses.append)
    return pauses


NOW = 1_780_000_000.0  # the clock as the pause reads it: fixed, so nothing here depends on time passing


@pytest.fixture(autouse=True)
def still_clock(monkeypatch):
    monkeypatch.setattr(slot.timestamps, "now", lambda: NOW)


def _holder(held_for: float) -> slot.Lease:
    since = timestamps.iso(NOW - held_for)
    return slot.Lease(slot.SLOT, "holder", since, True, "landing st-001")


def test_the_first_in_line_looks_within_a_tenth_the_others_within_a_quarter_second_per_place():
    assert pytest.approx(0.1) == slot.FIRST_PAUSE
    assert slot._pause_at(1, _holder(0.3)) == pytest.approx(slot.FIRST_PAUSE)
    assert slot._pause_at(1, None) == pytest.approx(slot.FIRST_PAUSE)  # free, nobody first: looks again soon
    assert slot._pause_at(2, _holder(0.3)) == pytest.approx(2 * slot.PLACE_PAUSE)
    assert slot._pause_at(3, None) == pytest.approx(3 * slot.PLACE_PAUSE)  # free, two others first


def test_a_holder_that_holds_long_is_not_asked_ten_times_a_second():
    assert slot._pause_at(1, _holder(60)) == pytest.approx(6.0)  # the backoff's own 2 s limit then holds
    assert slot._pause_at(1, _holder(5)) == pytest.approx(0.5)
    assert slot._pause_at(1, _holder(-30)) == pytest.approx(slot.FIRST_PAUSE)  # a holder's clock ahead of ours
    odd = slot.Lease(slot.SLOT, "holder", "not a time", True)
    assert slot._pause_at(1, odd) == pytest.approx(slot.FIRST_PAUSE)


def test_a_pause_limit_cuts_the_pause_and_the_doubling_goes_on_behind_it(slept):
    waits = backoff.Backoff(60, first=0.1, most=2.0)
    for _ in range(6):
        assert waits.pause(most=0.25)
    assert all(0.05 <= p <= 0.25 for p in slept), slept
    slept.clear()
    assert waits.pause()  # the limit lifted (a place further back): the doubled pause, 1-2 s
    assert 1.0 <= slept[0] <= 2.0, slept
