"""The suite's own schedule (tests/conftest.py): `-n auto` runs two workers per core; under
`--dist worksteal` each worker's first chunk of the collection starts with its share of the
long (`slow`) tests, longest first, and every test is still run exactly once."""

from __future__ import annotations

import os

import pytest

from tests.conftest import SLOW_SECONDS, WORKERS_PER_CORE, _worksteal_order, pytest_xdist_auto_num_workers


class Item:
    """What the ordering reads of a pytest item: its `slow` marker (seconds or none)."""

    def __init__(self, name: str, seconds: float | None = None, marked: bool = False):
        self.name = name
        self.marker = pytest.mark.slow(seconds).mark if seconds else (pytest.mark.slow.mark if marked else None)

    def get_closest_marker(self, name: str):
        return self.marker if name == "slow" else None

    def __repr__(self) -> str:
        return self.name


def _chunks(ordered: list, workers: int) -> list[list]:
    """The contiguous chunks xdist's worksteal scheduler sends the idle workers at the start."""
    chunks, left, start = [], len(ordered), 0
    for i in range(workers):
        size = left // (workers - i)
        chunks.append(ordered[start : start + size])
        start, left = start + size, left - size
    return chunks


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_each_worker_starts_on_its_share_of_the_long_tests(workers):
    fast = [Item(f"fast{n}") for n in range(40)]
    slow = [Item("s70", 70), Item("s60", 60), Item("s40", 40), Item("s35", 35), Item("marked", marked=True)]
    items = fast[:10] + slow[:2] + fast[10:30] + slow[2:] + fast[30:]
    ordered = _worksteal_order(list(items), workers)
    assert sorted(map(repr, ordered)) == sorted(map(repr, items))  # a permutation: nothing lost or doubled
    chunks = _chunks(ordered, workers)
    loads = []
    for chunk in chunks:
        head = [item for item in chunk if item.marker is not None]
        assert chunk[: len(head)] == head, chunk  # the long tests come first in the chunk
        seconds = [item.marker.args[0] if item.marker.args else SLOW_SECONDS for item in head]
        assert seconds == sorted(seconds, reverse=True), chunk  # longest first
        loads.append(sum(seconds))
    assert all(loads), loads  # every worker starts on a long test
    assert max(loads) - min(loads) <= 70, loads  # balanced within the longest test (LPT)
    assert [i for i in ordered if i.marker is None] == fast  # the short ones keep their order


def test_more_long_tests_than_a_chunk_holds_still_runs_each_once():
    items = [Item(f"s{n}", 10 + n) for n in range(9)] + [Item("fast0"), Item("fast1")]
    ordered = _worksteal_order(list(items), 4)
    assert sorted(map(repr, ordered)) == sorted(map(repr, items))
    assert ordered[0].name == "s8"


def test_auto_runs_two_workers_per_core_unless_told_otherwise(monkeypatch, pytestconfig):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(pytestconfig.option, "numprocesses", "auto", raising=False)
    assert pytest_xdist_auto_num_workers(pytestconfig) == WORKERS_PER_CORE * cores == 2 * cores
    monkeypatch.setattr(pytestconfig.option, "numprocesses", "logical")
    assert pytest_xdist_auto_num_workers(pytestconfig) is None  # xdist's own count
    monkeypatch.setattr(pytestconfig.option, "numprocesses", "auto")
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert pytest_xdist_auto_num_workers(pytestconfig) is None  # xdist reads the variable itself


def test_a_setup_made_once_a_run_lives_where_all_its_workers_and_no_other_run_look(tmp_path_factory, monkeypatch):
    """tests.support.run_shared_dir: the parent of an xdist worker's base temp (the run's
    pytest-N, holding every worker's popen-gwN); without xdist the run's own base temp, never
    its parent (pytest-of-<user>, which every earlier run shares)."""
    from tests.support import run_shared_dir

    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert run_shared_dir(tmp_path_factory) == base.parent
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert run_shared_dir(tmp_path_factory) == base
