"""Validation of mutations: self-dependency, unknown dependency, cycles (no recursion limit),
in_progress/completed with unresolved deps, more than one in_progress — and reads never fail."""

from __future__ import annotations

import json

import pytest

from tests.support import plan_path, records, show_json, st, st_quick


@pytest.fixture
def plan_repo(repo):
    st_quick("init", cwd=repo)
    return repo


def _rejected(result, message):
    assert result.returncode == 2, result
    assert result.stderr.startswith(f"error: {message}"), result


def test_self_unknown_and_cycle_are_rejected(plan_repo):
    path = plan_path(plan_repo)
    _rejected(st("add", "--id", "a", "--step", "A", "--deps", "a", cwd=plan_repo), "item 'a' cannot depend on itself")
    _rejected(
        st("add", "--step", "A", "--deps", "st-999", cwd=plan_repo),
        "item 'st-001' references unknown dependency 'st-999'",
    )
    st_quick("add", "--step", "A", cwd=plan_repo)
    st_quick("add", "--step", "B", "--deps", "st-001", cwd=plan_repo)
    st_quick("add", "--step", "C", "--deps", "st-002:relates-to", cwd=plan_repo)
    before = path.read_bytes()
    _rejected(
        st("set-deps", "st-001", "st-003", cwd=plan_repo),
        "dependency cycle detected: st-001 -> st-003 -> st-002 -> st-001",
    )
    assert path.read_bytes() == before


def test_unresolved_deps_block_in_progress_and_completed(plan_repo):
    st_quick("add", "--step", "A", cwd=plan_repo)
    st_quick("add", "--step", "B", "--deps", "st-001", cwd=plan_repo)
    _rejected(
        st("set-status", "st-002", "in_progress", cwd=plan_repo),
        "item 'st-002' cannot be in_progress; unresolved dependencies: st-001",
    )
    _rejected(
        st("set-status", "st-002", "completed", cwd=plan_repo),
        "item 'st-002' cannot be completed; unresolved dependencies: st-001",
    )
    _rejected(
        st("add", "--step", "C", "--status", "done", "--deps", "st-001", cwd=plan_repo),
        "item 'st-003' cannot be completed; unresolved dependencies: st-001",
    )
    assert st("set-status", "st-001", "done", cwd=plan_repo).returncode == 0
    assert st("set-status", "st-002", "done", cwd=plan_repo).returncode == 0
    # reopening a dependency of a completed item is refused too
    _rejected(
        st("set-status", "st-001", "pending", cwd=plan_repo),
        "item 'st-002' cannot be completed; unresolved dependencies: st-001",
    )


def test_more_than_one_in_progress_needs_the_flag_which_is_recorded(plan_repo):
    for step in ("A", "B", "C"):
        st_quick("add", "--step", step, cwd=plan_repo)
    assert st("set-status", "st-001", "doing", cwd=plan_repo).returncode == 0
    _rejected(
        st("set-status", "st-002", "doing", cwd=plan_repo),
        "multiple in_progress items: st-001, st-002 (pass --allow-multiple-in-progress to allow it)",
    )
    ok = st("set-status", "st-002", "doing", "--allow-multiple-in-progress", cwd=plan_repo)
    assert ok.returncode == 0, ok
    assert records(plan_path(plan_repo))[-1]["mutation"]["allow_multiple_in_progress"] is True
    # reads never fail because of it
    assert [i["status"] for i in show_json(st, plan_repo)] == ["in_progress", "in_progress", "pending"]
    assert st("emit-update-plan", cwd=plan_repo).returncode == 0
    # a mutation that does not add another in_progress item is not blocked by the existing two
    assert st("set-notes", "st-003", "fine", cwd=plan_repo).returncode == 0
    # ... but a third one is
    _rejected(st("set-status", "st-003", "doing", cwd=plan_repo), "multiple in_progress items: st-001, st-002, st-003")


def test_a_10000_long_chain_works_and_its_cycle_is_found(plan_repo, tmp_path):
    n = 10_000
    chain = [{"id": f"c{i}", "step": f"Step {i}", "deps": [f"c{i - 1}"] if i else []} for i in range(n)]
    snapshot = tmp_path / "chain.json"
    snapshot.write_text(json.dumps(chain))
    result = st("import-plan", "--input", str(snapshot), "--replace", cwd=plan_repo)
    assert result.returncode == 0, result
    blocked = st("blocked", "--format", "json", cwd=plan_repo)
    assert len(json.loads(blocked.stdout)["items"]) == n - 1
    closing = st("set-deps", "c0", f"c{n - 1}", cwd=plan_repo)
    assert closing.returncode == 2, closing
    assert closing.stderr.startswith("error: dependency cycle detected: c0 -> c9999 -> c9998 -> ")
    assert closing.stderr.split("\n")[0].endswith("-> c1 -> c0")
