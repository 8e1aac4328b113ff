"""The reducer turns any record into state or a ReplayError — never another exception.

Readers apply the tail's records with it (``git st show`` on a plan someone hand-edited),
so a record of any JSON shape must end as a diagnostic, not a traceback.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.plan.reducer import PlanState, ReplayError, replay

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
ops = (
    st.sampled_from(
        [
            "init",
            "replace",
            "replace_all",
            "upsert",
            "upsert_item",
            "set_status",
            "set_deps",
            "set_notes",
            "add_comment",
            "remove",
            "bogus",
        ]
    )
    | json_values
)
fields = st.fixed_dictionaries(
    {
        "v": st.just(3),
        "ts": st.just("2026-02-09T20:00:00Z"),
        "seq": st.integers(0, 50),
        "lane": st.sampled_from(["event", "checkpoint"]) | json_values,
    },
    optional={
        "op": ops,
        "id": st.sampled_from(["st-001", "st-002"]) | json_values,
        "status": st.sampled_from(["done", "pending", "in_progress"]) | json_values,
        "deps": json_values | st.lists(st.sampled_from(["st-001", "st-002"]) | json_values, max_size=3),
        "notes": json_values,
        "comment": json_values,
        "item": json_values,
        "items": json_values,
    },
)
SEED = [
    {
        "v": 3,
        "ts": "2026-02-09T20:00:00Z",
        "seq": 1,
        "lane": "event",
        "op": "upsert",
        "item": {"id": "st-001", "step": "a", "deps": []},
    }
]


@pytest.mark.slow  # starts first (tests/conftest.py)
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fields, min_size=1, max_size=4))
def test_any_record_becomes_state_or_a_replay_error(records):
    state = replay(SEED)
    for record in records:
        try:
            state.apply(record)
        except ReplayError as exc:
            assert (exc.code.startswith("ST_REPLAY_") or exc.code == "SCHEMA") and exc.message
    assert isinstance(state, PlanState)
    state.items()
