"""Where the suite's CPU goes: a pytest plugin that records, per test, the CPU of the test
process and of every process it started and reaped (``git st``, git, hooks, daemons), and
the wall time. ``--durations`` shows wall time only, which on a shared box says more about
the load than about the test.

    ST_TEST_CPU_LOG=/tmp/cpu .venv/bin/python -m pytest -n 2 --no-cov -p tests.cpu_profile
    .venv/bin/python -m tests.cpu_profile /tmp/cpu          # the top tests and files by CPU

An xdist worker runs one test at a time, so the difference of ``getrusage`` before and after
a test is that test's (fixtures' setup and teardown included; a process reaped later counts
to the test that reaped it). Each worker writes ``<dir>/<worker>.jsonl``; nothing is written
without ``ST_TEST_CPU_LOG``."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    directory = os.environ.get("ST_TEST_CPU_LOG")
    if not directory:
        yield
        return
    own, children = _cpu()
    started = time.monotonic()
    yield
    own_after, children_after = _cpu()
    record = {
        "test": item.nodeid,
        "self": round(own_after - own, 3),
        "children": round(children_after - children, 3),
        "wall": round(time.monotonic() - started, 3),
    }
    Path(directory).mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(directory) / f"{worker}.jsonl", "a") as log:
        log.write(json.dumps(record) + "\n")


def report(directory: Path, top: int = 40) -> str:
    """The ``top`` tests and the ``top`` files by CPU (test process + children), and the sums."""
    rows = [json.loads(line) for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]
    cpu = {row["test"]: row["self"] + row["children"] for row in rows}
    by_file: dict[str, float] = defaultdict(float)
    for row in rows:
        by_file[row["test"].split("::")[0]] += row["self"] + row["children"]
    own, children = sum(r["self"] for r in rows), sum(r["children"] for r in rows)
    wall = sum(r["wall"] for r in rows)
    out = [
        f"{len(rows)} tests: CPU {own + children:.1f} s (tests {own:.1f}, children {children:.1f}), wall {wall:.1f} s",
        f"-- top {top} tests by CPU (s): cpu self children wall",
    ]
    walls = {row["test"]: row for row in rows}
    for test, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])[:top]:
        row = walls[test]
        out.append(f"{seconds:8.1f} {row['self']:7.1f} {row['children']:7.1f} {row['wall']:7.1f}  {test}")
    out.append(f"-- top {top} files by CPU (s)")
    out += [f"{seconds:8.1f}  {name}" for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(out)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
