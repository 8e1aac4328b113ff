"""Race test: concurrent writers on one plan never lose, duplicate or skip a seq."""

from __future__ import annotations

import multiprocessing
import subprocess

from gitst.plan import engine
from gitst.plan.doctor import check_plan_bytes
from tests.support import checkpoints, events, plan_path, records, st

PROCESSES = 8
MUTATIONS = 100


def _racer(plan: str, index: int) -> None:
    target = engine.Target.of(plan)
    for i in range(MUTATIONS):
        item = f"p{index}-{i // 3}"
        if i % 3 == 0:
            engine.add(target, step=f"racer {index} item {i // 3}", item_id=item)
        elif i % 3 == 1:
            engine.set_notes(target, item, f"racer {index} note {i}")
        else:
            engine.set_status(target, item, "completed")


def test_8_processes_x_100_mutations_give_800_gapless_unique_seqs(tmp_path):
    """In-process writers (the engine the CLI calls) in 8 forked processes. Outside a git work
    tree so that the run measures the lock and the seqs, not 3,200 `git check-ignore` calls
    (the CLI race below and test_plan_sidecar cover the git side)."""
    path = tmp_path / ".step" / "st-plan.jsonl"
    engine.init(engine.Target.of(str(path)))
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_racer, args=(str(path), n)) for n in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * PROCESSES

    all_events = events(path)
    assert len(all_events) == 1 + PROCESSES * MUTATIONS  # init + 800 new records
    new = all_events[1:]
    seqs = [e["seq"] for e in new]
    assert seqs == list(range(2, 2 + PROCESSES * MUTATIONS))  # unique, gapless, in file order
    every = records(path)
    for index, record in enumerate(every):
        if record["lane"] == "checkpoint":
            assert record["seq"] == every[index - 1]["seq"]
    assert len(checkpoints(path)) == (1 + PROCESSES * MUTATIONS) // 50
    assert check_plan_bytes(path.read_bytes(), str(path)) == []
    # every racer's every mutation landed: items complete, notes set
    items = {i["id"]: i for i in checkpoints(path)[-1]["items"]}
    assert len(items) >= PROCESSES * 33


def test_concurrent_cli_writers(repo):
    assert st("init", cwd=repo).returncode == 0
    script = 'for i in 1 2 3; do git-st add --step "$0 $i" >/dev/null || exit 1; done'
    procs = [subprocess.Popen(["sh", "-c", script, f"writer{n}"], cwd=repo) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    seqs = [e["seq"] for e in events(plan_path(repo))]
    assert seqs == list(range(1, 14))
    ids = [r["item"]["id"] for r in events(plan_path(repo))[1:]]
    assert sorted(ids) == [f"st-{n:03d}" for n in range(1, 13)]
