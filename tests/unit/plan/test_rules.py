"""Validation of mutations: self-dependency, unknown dependency, cycles (no recursion limit),
in_progress/completed with unresolved deps, more than one in_progress — and reads never fail."""

from __future__ import annotations

import pytest

from gitst.core.errors import UsageError
from gitst.plan import model, rules


def test_rules_are_iterative_and_compare_before_and_after():
    n = 20_000  # far past Python's recursion limit
    items = [
        model.normalize_item({"id": f"n{i}", "step": "s", "deps": [f"n{i + 1}"] if i < n - 1 else ["n0"]})
        for i in range(n)
    ]
    found = rules.violations(items)
    assert len(found) == 1 and found[0].key == ("cycle", frozenset(f"n{i}" for i in range(n)))
    # an existing violation does not block an unrelated mutation; a new one does
    before = [model.normalize_item({"id": "a", "step": "s", "deps": ["gone"]})]
    rules.check_mutation(before, [{**before[0], "notes": "x"}])
    with pytest.raises(UsageError, match="item 'b' cannot depend on itself"):
        rules.check_mutation(before, [*before, model.normalize_item({"id": "b", "step": "s", "deps": ["b"]})])
    # two separate cycles are both named
    two = [
        model.normalize_item(raw)
        for raw in (
            {"id": "a", "step": "s", "deps": ["b"]},
            {"id": "b", "step": "s", "deps": ["a"]},
            {"id": "c", "step": "s", "deps": ["d"]},
            {"id": "d", "step": "s", "deps": ["c"]},
        )
    ]
    assert sorted(v.message for v in rules.violations(two)) == [
        "dependency cycle detected: a -> b -> a",
        "dependency cycle detected: c -> d -> c",
    ]
