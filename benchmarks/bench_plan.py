"""Plan engine speed, measured in one run (figures are ratios, so the box does not matter much).

    .venv/bin/python benchmarks/bench_plan.py [--records 1000000] [--runs 7]

Prints:
- ``show`` on a big plan (1,000,000 records) ÷ ``show`` on a 1,000-record plan (target ≤ 1.5):
  reads are O(tail), so the file's length must not matter;
- ``set-status`` on the big plan ÷ on a 10-record plan (target ≤ 2);
- ``show`` on the big plan vs a full replay of the same file (in-process, the reducer alone);
- ``doctor`` throughput on the big plan in records/s (the full check, target ≥ 150,000/s).

Whole commands are timed with ``time.perf_counter`` around ``subprocess.run`` of the real CLI
(median of ``--runs``). The plans are generated directly (valid records, a checkpoint every
50 events), not through the CLI, so that a million records take seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

STATUSES = ("pending", "in_progress", "completed", "pending", "deferred")


def write_plan(path: Path, records: int, *, items: int = 20, interval: int = 50) -> None:
    """A valid plan of exactly ``records`` lines: init, upserts, then set_status/set_notes
    events, a checkpoint every ``interval`` events (seq = watermark, items = the state)."""
    state: dict[str, dict] = {}
    mutation = {"allow_multiple_in_progress": True, "actor": "bench", "pid": 1, "session": "bench"}
    ts = "2026-02-09T20:00:00Z"
    out = bytearray()
    seq = 0
    since = 0
    written = 0
    dumps = orjson.dumps
    with open(path, "wb") as handle:
        while written < records:
            seq += 1
            if seq == 1:
                record = {"v": 3, "ts": ts, "seq": seq, "lane": "event", "op": "init", "mutation": mutation}
            elif len(state) < items:
                item_id = f"st-{len(state) + 1:03d}"
                item = {
                    "id": item_id,
                    "step": f"Step {item_id}",
                    "status": "pending",
                    "deps": [],
                    "notes": "",
                    "comments": [],
                }
                state[item_id] = item
                record = {
                    "v": 3,
                    "ts": ts,
                    "seq": seq,
                    "lane": "event",
                    "op": "upsert",
                    "item": item,
                    "mutation": mutation,
                }
            elif seq % 3:
                item_id = f"st-{seq % items + 1:03d}"
                status = STATUSES[seq % len(STATUSES)]
                state[item_id] = {**state[item_id], "status": status}
                record = {
                    "v": 3,
                    "ts": ts,
                    "seq": seq,
                    "lane": "event",
                    "op": "set_status",
                    "id": item_id,
                    "status": status,
                    "mutation": mutation,
                }
            else:
                item_id = f"st-{seq % items + 1:03d}"
                notes = f"note {seq}"
                state[item_id] = {**state[item_id], "notes": notes}
                record = {
                    "v": 3,
                    "ts": ts,
                    "seq": seq,
                    "lane": "event",
                    "op": "set_notes",
                    "id": item_id,
                    "notes": notes,
                    "mutation": mutation,
                }
            out += dumps(record)
            out += b"\n"
            written += 1
            since += 1
            if since >= interval and written < records:
                out += dumps({"v": 3, "ts": ts, "seq": seq, "lane": "checkpoint", "items": list(state.values())})
                out += b"\n"
                written += 1
                since = 0
            if len(out) > 1 << 22:
                handle.write(out)
                out.clear()
        handle.write(out)


def _cli(*args: str, cwd: Path) -> None:
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from gitst.cli.main import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"`git st {' '.join(args)}` failed: {proc.stderr.decode()}")


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    from gitst.plan.doctor import scan
    from gitst.plan.store import read_full

    with tempfile.TemporaryDirectory(prefix="gitst-bench-") as tmp:
        root = Path(tmp)  # not a git work tree: the sidecar policy costs nothing here
        big, small, tiny = root / "big.jsonl", root / "small.jsonl", root / "tiny.jsonl"
        start = time.perf_counter()
        write_plan(big, args.records)
        write_plan(small, 1_000)
        write_plan(tiny, 10)
        print(
            f"generated {args.records:,} records ({big.stat().st_size / 1e6:.0f} MB) "
            f"in {time.perf_counter() - start:.1f}s"
        )
        os.environ["ST_CHECKPOINT_INTERVAL"] = "50"

        show_big = median_time(lambda: _cli("show", "--file", str(big), cwd=root), args.runs)
        show_small = median_time(lambda: _cli("show", "--file", str(small), cwd=root), args.runs)
        print(
            f"show: {args.records:,} records {show_big * 1000:.0f} ms, 1,000 records {show_small * 1000:.0f} ms"
            f" -> ratio {show_big / show_small:.2f} (target <= 1.5)"
        )

        flip = iter(["pending", "deferred"] * args.runs * 2)
        status_big = median_time(
            lambda: _cli(
                "set-status",
                "--file",
                str(big),
                "--allow-multiple-in-progress",
                "--id",
                "st-001",
                "--status",
                next(flip),
                cwd=root,
            ),
            args.runs,
        )
        status_tiny = median_time(
            lambda: _cli(
                "set-status",
                "--file",
                str(tiny),
                "--allow-multiple-in-progress",
                "--id",
                "st-001",
                "--status",
                next(flip),
                cwd=root,
            ),
            args.runs,
        )
        print(
            f"set-status: {args.records:,} records {status_big * 1000:.0f} ms, 10 records {status_tiny * 1000:.0f} ms"
            f" -> ratio {status_big / status_tiny:.2f} (target <= 2)"
        )

        from gitst.plan.store import read_tail

        tail = read_tail(big)
        print(
            f"a read of the big plan reads {tail.bytes_read / 1024:.0f} KiB of its "
            f"{big.stat().st_size / 1e6:.0f} MB (latest checkpoint + {tail.trailing_events} trailing events)"
        )

        start = time.perf_counter()
        full = read_full(big)
        replay_time = time.perf_counter() - start
        print(
            f"full replay of the big plan (in-process, reducer only): {replay_time * 1000:.0f} ms; "
            f"show (whole command) {show_big * 1000:.0f} ms -> show is {replay_time / show_big:.0f}x faster"
        )

        data = big.read_bytes()
        start = time.perf_counter()
        check = scan(data, str(big))
        doctor_time = time.perf_counter() - start
        print(
            f"doctor full check: {check.records:,} records in {doctor_time:.2f}s -> "
            f"{check.records / doctor_time:,.0f} records/s (target >= 150,000), "
            f"{len(check.errors)} errors; items {len(full)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
