"""One timestamp parser for every reader (lock expiry, SDLC state, aide envelopes)."""

from __future__ import annotations

import pytest

from gitst.core import timestamps


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("2026-04-10T12:48:21.988Z", 1775825301.988),
        ("2026-04-10T14:48:21.988+02:00", 1775825301.988),
        ("2026-04-10T12:48:21.123456789Z", 1775825301.123456),  # 9 digits: microseconds kept
        ("2026-12-31T23:59:60Z", 1798761599.0),  # a leap second counts as :59
    ],
)
def test_good_timestamps(text, epoch):
    assert timestamps.parse(text) == pytest.approx(epoch, abs=1e-6)
    assert timestamps.moment(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30T00:00:00Z",
        "2026-04-10 12:48:21Z",
        "2026-04-10T12:48Z",
        "2026-04-10T12:48:21",
        "yesterday",
        "2026-04-10T12:48:21Z\n",
        "2026-04-10T12:48:21+24:00",
        "",
        None,
        5,
    ],
)
def test_anything_else_is_not_a_timestamp(text):
    assert timestamps.moment(text) is None
    with pytest.raises(ValueError):
        timestamps.parse(text)


def test_iso_round_trips():
    assert timestamps.iso(timestamps.parse("2026-04-10T12:48:21.988Z")) == "2026-04-10T12:48:21.988Z"
