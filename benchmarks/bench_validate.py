"""`git st validate` speed on a big st plan, measured in one run.

    .venv/bin/python benchmarks/bench_validate.py [--records 1000000] [--slice 20000] [--runs 3]

Prints, for a generated plan of ``--records`` records (valid records, a checkpoint every 50
events; the plan benchmark's generator):

- records/s of the full st check as `git st validate` runs it in-process
  (``gitst.validate.kinds.check("st-plan", ...)``: orjson per line, the ``st-record`` schema through
  jsonschema-rs, the seq rules and the full replay) — target >= 150,000 records/s;
- records/s of the whole command ``git st validate --kind st-plan FILE`` (subprocess, start-up
  included);
- records/s of a plain python-jsonschema loop (``json.loads`` + the reference validator's
  ``is_valid`` per line, no replay) on the first ``--slice`` records;
- records/s of orjson parsing alone (``orjson.loads`` per line), the floor;
- records/s of the nesting limit every reader applies (docs/security.md: a length guard, two
  byte counts for a line longer than 257 bytes, the precise scan only for a line holding more
  than 128 brackets) and its share of the st check's time - what the limit costs
  `git st doctor` / `validate` on this plan.

Each figure is the median of ``--runs`` runs; the ratios at the end are computed from them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

from tests.reference_schema import reference_validator  # noqa: E402


def _bench_plan():
    """The plan benchmark's module: its plan generator and its timer (one of each, not two)."""
    spec = importlib.util.spec_from_file_location("bench_plan", REPO / "benchmarks" / "bench_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--slice", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from gitst.validate import kinds

    bench_plan = _bench_plan()
    _median_seconds = bench_plan.median_time

    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        plan = Path(tmp) / ".step" / "st-plan.jsonl"
        plan.parent.mkdir()
        bench_plan.write_plan(plan, args.records)
        data = plan.read_bytes()
        lines = data.splitlines()
        records = len(lines)
        print(f"plan: {records:,} records, {len(data) / 1e6:.1f} MB")

        found: list = []
        kinds.check("st-plan", data[: data.index(b"\n", 100_000) + 1], str(plan))  # warm-up: imports, schema compile
        check_s = _median_seconds(
            lambda: found.__setitem__(slice(None), kinds.check("st-plan", data, str(plan))), args.runs
        )
        errors = [d for d in found if d.is_error]
        if errors:
            print(f"warning: the generated plan has {len(errors)} errors, first: {errors[0].to_text()}")
        check_rate = records / check_s

        command = [sys.executable, "-m", "gitst", "validate", "--kind", "st-plan", "-q", str(plan)]
        env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
        cli_s = _median_seconds(lambda: subprocess.run(command, check=True, cwd=tmp, env=env), args.runs)
        cli_rate = records / cli_s

        reference = reference_validator("st-record")  # python-jsonschema, a test dependency
        part = lines[: args.slice]

        def jsonschema_loop():
            for line in part:
                reference.is_valid(json.loads(line))

        loop_rate = len(part) / _median_seconds(jsonschema_loop, args.runs)

        loads = orjson.loads

        def parse_only():
            for line in lines:
                loads(line)

        parse_rate = records / _median_seconds(parse_only, args.runs)

        from gitst.core.jsonio import MIN_DEEP_BYTES, too_deep

        def limit_only():  # what the plan's readers do per line (gitst.plan.store.iter_plan_lines)
            for line in lines:
                if len(line) > MIN_DEEP_BYTES:
                    too_deep(line)

        limit_s = _median_seconds(limit_only, args.runs)
        limit_rate = records / limit_s

    print(f"st check in-process (formats.check):    {check_rate:>12,.0f} records/s   (target >= 150,000)")
    print(f"git st validate (whole command):        {cli_rate:>12,.0f} records/s")
    print(f"python-jsonschema loop ({len(part):,} slice): {loop_rate:>12,.0f} records/s")
    print(f"orjson parsing alone:                   {parse_rate:>12,.0f} records/s")
    print(f"nesting limit alone (reader pre-check): {limit_rate:>12,.0f} records/s")
    print(
        f"ratios: check / jsonschema loop = {check_rate / loop_rate:.1f}x, "
        f"check / orjson parse = {check_rate / parse_rate:.2f}, "
        f"check vs target = {check_rate / 150_000:.2f}, "
        f"nesting limit / check time = {limit_s / check_s:.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
