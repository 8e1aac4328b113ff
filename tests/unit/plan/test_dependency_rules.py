"""The doctor's dependency rules kept up to date one item at a time (``rules.DependencyRules``)
say exactly what the whole-plan rules (``rules.violations``) say after every change, and
report as new exactly the breaks that were not there before — whatever the changes."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from gitst.plan import model, rules
from gitst.plan.reducer import PlanState

IDS = [f"i{n}" for n in range(7)]
STRUCTURAL = ("self-dep", "unknown-dep", "cycle")


def _expected(state: PlanState) -> dict:
    return {
        v.key: v.message
        for v in rules.violations(state.items(), allow_multiple_in_progress=True)
        if v.key[0] in STRUCTURAL
    }


def _item(item_id: str, deps: list[str]) -> dict:
    return model.normalize_item({"id": item_id, "step": f"step {item_id}", "deps": deps})


changes = hs.lists(
    hs.one_of(
        hs.tuples(hs.just("upsert"), hs.sampled_from(IDS), hs.lists(hs.sampled_from(IDS), max_size=3)),
        hs.tuples(hs.just("remove"), hs.sampled_from(IDS), hs.just([])),
        hs.tuples(
            hs.just("replace"),
            hs.just(""),
            hs.lists(hs.tuples(hs.sampled_from(IDS), hs.lists(hs.sampled_from(IDS), max_size=3)), max_size=5),
        ),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes)
def test_the_kept_breaks_equal_the_whole_plan_rules_after_every_change(steps):
    state = PlanState()
    tracker = rules.DependencyRules()
    for op, item_id, arg in steps:
        before = dict(tracker.breaks)
        if op == "replace":
            items = list({i: _item(i, deps) for i, deps in arg}.values())
            state = PlanState(items)
            new = tracker.reset(state.items())
            assert [v.key for v in new] == [key for key in _expected(state) if key not in before]  # its order
        elif op == "remove":
            state.apply_event({"v": 3, "lane": "event", "op": "remove", "id": item_id})
            new = tracker.change(item_id, None)
        else:
            state.apply_event({"v": 3, "lane": "event", "op": "upsert", "item": _item(item_id, arg)})
            new = tracker.change(item_id, state.get(item_id))
        expected = _expected(state)
        assert tracker.breaks == expected
        # each new break once (the order within one change is the tracker's own)
        assert Counter(v.key for v in new) == Counter(key for key in expected if key not in before)
        assert all(tracker.breaks[v.key] == v.message for v in new)


def test_a_plan_built_in_order_costs_work_linear_in_its_items():
    def work(n: int, *, chain: bool) -> int:
        tracker = rules.DependencyRules()
        for i in range(n):
            deps = [f"i{i - 1}"] if chain and i else []
            tracker.change(f"i{i}", _item(f"i{i}", deps))
        assert not tracker.breaks
        return tracker.work

    for chain in (False, True):
        small, big = work(1_000, chain=chain), work(4_000, chain=chain)
        assert big <= 4.4 * small, (chain, small, big)
        assert big <= 3 * 4_000


def test_closing_and_opening_a_cycle_is_reported_once_each_time():
    tracker = rules.DependencyRules([_item("a", ["b"]), _item("b", [])])
    assert tracker.breaks == {}
    new = tracker.change("b", _item("b", ["a"]))
    assert [v.message for v in new] == ["dependency cycle detected: a -> b -> a"]
    assert tracker.change("b", _item("b", ["a"])) == []  # unchanged: nothing new
    assert tracker.change("b", _item("b", [])) == [] and tracker.breaks == {}
    assert [v.message for v in tracker.change("a", _item("a", ["b", "a"]))] == ["item 'a' cannot depend on itself"]
    assert [v.message for v in tracker.change("b", None)] == ["item 'a' references unknown dependency 'b'"]
