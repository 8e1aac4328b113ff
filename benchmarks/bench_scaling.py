"""Plan performance on every axis, measured in one run: a scaling table, the original `st`
command by command, and every target of issue 15 as met / not met with its ratio.

    .venv/bin/python benchmarks/bench_scaling.py [--peer PATH] [--runs 21] [--records 1000000] [--quick]

Every figure is a whole command in a fresh process, as an agent harness runs it: wall time
(``time.perf_counter`` around the child) and peak resident memory as the OS reports it for
that child (``os.wait4`` → ``ru_maxrss``). Comparisons take turns (ours, theirs, ours, …) and
report medians, so a change in the machine's load hits both sides alike; read the ratios.
Children run with compiled bytecode, as an installed package does (pip compiles it when it
installs): ``PYTHONDONTWRITEBYTECODE`` is dropped and ``PYTHONPYCACHEPREFIX`` points into the
run's temporary directory, for both tools alike, after one warm-up run of each command.

1. Scaling: plans of every shape (records x items) — doctor's time, its throughput in MB/s
   next to the floor (``orjson`` parsing every line of the same file in a child process),
   peak RSS of doctor and of show. Linear in items: doctor, validate and the pre-commit check
   of a new plan written one upsert per item, 4,000 items ÷ 2,000 (and 40,000 ÷ 20,000).
2. The original `st_plan.py` (MIT; ``--peer``, default ``../shared/peer/st_plan.py`` next to
   this checkout when it exists; never copied here) on the same plan files, every plan
   command: on a 200-item plan and on a plan of 10,000 events over 1,000 items.
3. Start-up and the targets kept from before: show ÷ ``python -c pass``; show on 1M records
   ÷ on 1,000; set-status on 1M ÷ on 10; the no-op pre-commit hook ÷ ``python -c pass``;
   a commit appending 10 events to a 1M-record plan; reads of a 1M-record plan without any
   checkpoint.

``--quick`` shrinks every size (a smoke run: the ratios are then not the targets').
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import orjson

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PEER = REPO.parent / "shared" / "peer" / "st_plan.py"
TS = "2026-02-09T20:00:00Z"
MUTATION = {"allow_multiple_in_progress": True, "actor": "bench", "pid": 1, "session": "bench"}
STATUSES = ("pending", "in_progress", "completed", "pending", "deferred")

FLOOR = r"""
import gc, sys, orjson
gc.disable()  # as the check does: the cyclic GC would walk every parsed object again and again
loads = orjson.loads
with open(sys.argv[1], "rb") as handle:
    carry = b""
    while True:
        block = handle.read(1 << 22)
        if not block:
            break
        block = carry + block
        cut = block.rfind(b"\n") + 1
        carry = block[cut:]
        for line in block[:cut].split(b"\n"):
            if line:
                loads(line)
    if carry.strip():
        loads(carry)
"""


# --- plans -----------------------------------------------------------------------------------


def write_plan(
    path: Path,
    *,
    items: int,
    events: int = 0,
    interval: int = 50,
    chain: bool = False,
    op: str = "set_status",
) -> int:
    """A valid plan as gitst writes it: ``init``, one upsert per item (each depending on the one
    before with ``chain``), then ``events`` more events of kind ``op`` cycling over the items, a
    checkpoint of every item each ``interval`` events (0: never). Returns the record count."""
    state: dict[str, dict] = {}
    dumps = orjson.dumps
    seq = since = written = 0
    out = bytearray()

    def emit(record: dict) -> None:
        nonlocal since, written
        out.extend(dumps(record))
        out.extend(b"\n")
        written += 1
        since += 1
        if interval and since >= interval:
            out.extend(dumps({"v": 3, "ts": TS, "seq": seq, "lane": "checkpoint", "items": list(state.values())}))
            out.extend(b"\n")
            written += 1
            since = 0

    with open(path, "wb") as handle:
        seq += 1
        emit({"v": 3, "ts": TS, "seq": seq, "lane": "event", "op": "init", "mutation": MUTATION})
        for n in range(1, items + 1):
            seq += 1
            item_id = f"st-{n:03d}"
            deps = [{"id": f"st-{n - 1:03d}", "type": "blocks"}] if chain and n > 1 else []
            item = {"id": item_id, "step": f"Step {n}", "status": "pending", "deps": deps, "notes": "", "comments": []}
            state[item_id] = item
            emit({"v": 3, "ts": TS, "seq": seq, "lane": "event", "op": "upsert", "item": item, "mutation": MUTATION})
            if len(out) > 1 << 22:
                handle.write(out)
                out.clear()
        for n in range(events):
            seq += 1
            item_id = f"st-{n % items + 1:03d}"
            if op == "set_status":
                status = "completed" if chain else STATUSES[n % len(STATUSES)]
                state[item_id] = {**state[item_id], "status": status}
                fields: dict = {"id": item_id, "status": status}
            elif op == "set_notes":
                state[item_id] = {**state[item_id], "notes": f"note {n}"}
                fields = {"id": item_id, "notes": f"note {n}"}
            else:  # add_comment
                comment = {"ts": TS, "author": "bench", "text": f"comment number {n} on {item_id}"}
                state[item_id] = {**state[item_id], "comments": [*state[item_id]["comments"], comment]}
                fields = {"id": item_id, "comment": comment}
            emit({"v": 3, "ts": TS, "seq": seq, "lane": "event", "op": op, **fields, "mutation": MUTATION})
            if len(out) > 1 << 22:
                handle.write(out)
                out.clear()
        handle.write(out)
    return written


def truncating(*paths: Path):
    """A ``before`` hook that cuts append-only plans back to their present size: what a
    mutation appended is gone, so every run measures the same file."""
    sizes = {path: path.stat().st_size for path in paths}

    def restore() -> None:
        for path, size in sizes.items():
            os.truncate(path, size)

    return restore


def append_events(path: Path, count: int) -> bytes:
    """``count`` set_notes events after the plan's watermark (its last line's seq)."""
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - (1 << 20)))
        last = handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    high = orjson.loads(last)["seq"]
    return b"".join(
        orjson.dumps(
            {"v": 3, "ts": TS, "seq": high + i + 1, "lane": "event", "op": "set_notes", "id": "st-001", "notes": str(i)}
        )
        + b"\n"
        for i in range(count)
    )


# --- running children ----------------------------------------------------------------------------


class Sample(NamedTuple):
    """One command's cost: wall seconds, CPU seconds (user + system of the process and of the
    children it waited for: git included) and peak RSS in MB."""

    wall: float
    cpu: float
    rss: float


class Runner:
    """Runs commands in fresh processes. ``basis`` says which time the targets judge: ``cpu``
    (default: on a machine shared with other work, wall time measures the neighbours too) or
    ``wall``; the tables print both."""

    def __init__(self, env: dict, runs: int, basis: str = "cpu"):
        self.env = env
        self.runs = runs
        self.basis = basis

    def t(self, sample: Sample) -> float:
        return sample.cpu if self.basis == "cpu" else sample.wall

    def once(self, cmd: list[str], cwd: Path, *, check: bool = True) -> Sample:
        """One run of ``cmd`` in a fresh process."""
        with tempfile.TemporaryFile() as err:
            actions = [
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
            ]
            here = os.getcwd()
            os.chdir(cwd)
            try:
                start = time.perf_counter()
                pid = os.posix_spawnp(cmd[0], cmd, self.env, file_actions=actions)
                _, status, usage = os.wait4(pid, 0)
                elapsed = time.perf_counter() - start
            finally:
                os.chdir(here)
            code = os.waitstatus_to_exitcode(status)
            if check and code not in (0, 1):
                err.seek(0)
                raise SystemExit(f"`{' '.join(cmd)}` failed ({code}): {err.read().decode(errors='replace')}")
        return Sample(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)

    def median(self, cmd: list[str], cwd: Path, runs: int | None = None, before=None) -> Sample:
        """Medians of ``runs`` runs (the peak RSS is the highest), after one warm-up run."""
        if before:
            before()
        self.once(cmd, cwd)  # warm-up, unmeasured: compiles the bytecode it imports
        samples = []
        for _ in range(runs or self.runs):
            if before:
                before()
            samples.append(self.once(cmd, cwd))
        return _medians(samples)

    def turns(self, cmds: dict[str, list[str]], cwd: Path, runs: int | None = None, before=None) -> dict[str, Sample]:
        """Medians of each command, the commands taking turns in every round."""
        samples: dict[str, list[Sample]] = {name: [] for name in cmds}
        for cmd in cmds.values():  # warm-up, unmeasured: compiles the bytecode they import
            if before:
                before()
            self.once(cmd, cwd)
        for _ in range(runs or self.runs):
            for name, cmd in cmds.items():
                if before:
                    before()
                samples[name].append(self.once(cmd, cwd))
        return {name: _medians(values) for name, values in samples.items()}


def _medians(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.wall for s in samples),
        statistics.median(s.cpu for s in samples),
        max(s.rss for s in samples),
    )


class Targets:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, str]] = []

    def at_most(self, name: str, value: float, limit: float, unit: str = "") -> None:
        self.rows.append((name, value, limit, "<=" + unit))

    def at_least(self, name: str, value: float, limit: float, unit: str = "") -> None:
        self.rows.append((name, value, limit, ">=" + unit))

    def show(self) -> int:
        print("\n## Targets\n")
        print("| target | measured | limit | |")
        print("|---|---|---|---|")
        missed = 0
        for name, value, limit, how in self.rows:
            ok = value <= limit if how.startswith("<=") else value >= limit
            missed += not ok
            unit = how[2:]
            print(f"| {name} | {_num(value)}{unit} | {how[:2]} {_num(limit)}{unit} | {'met' if ok else 'NOT MET'} |")
        print(f"\n{len(self.rows) - missed} of {len(self.rows)} targets met")
        return missed


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.2f}"


def _git(*args: str, cwd: Path, env: dict) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def _repo(root: Path, env: dict) -> Path:
    """A git repository whose plan's lock sidecar is ignored (what `git st init` leaves)."""
    root.mkdir(parents=True)
    _git("init", "-q", "-b", "main", cwd=root, env=env)
    (root / ".step").mkdir()
    (root / ".step" / ".gitignore").write_text("/st-plan.jsonl.lock\n/st-plan.jsonl.torn-*\n")
    (root / "README").write_text("bench\n")
    _git("add", "-A", cwd=root, env=env)
    _git("commit", "-q", "-m", "init", cwd=root, env=env)
    return root


# --- the parts ---------------------------------------------------------------------------------


def _ms(sample: Sample) -> str:
    return f"{sample.cpu * 1000:.0f} / {sample.wall * 1000:.0f}"


def _s(sample: Sample) -> str:
    return f"{sample.cpu:.2f} / {sample.wall:.2f}"


def scaling(run: Runner, st: list[str], tmp: Path, targets: Targets, quick: bool, records: int) -> None:
    k = 10 if quick else 1
    print("## Scaling: doctor, show and memory by shape (records x items)\n")
    print("Times are CPU / wall seconds; MB/s and ratios on the judged basis.\n")
    print(
        "| shape | records | items | MB | doctor s | doctor MB/s | floor s | doctor ÷ floor "
        "| doctor peak MB | show s | show peak MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    shapes = [
        ("few items, checkpoints", {"items": 20, "events": 200_000 // k}),
        ("10,000 items, checkpoints", {"items": 10_000 // k}),
        ("10,000-long deps chain, checkpoints", {"items": 10_000 // k, "chain": True}),
        ("many comments, checkpoints", {"items": 50, "events": 5_000 // k, "op": "add_comment"}),
        ("many checkpoints of many items", {"items": 1_000 // k, "events": 20_000 // k}),
        ("no checkpoint, one upsert per item", {"items": 40_000 // k, "interval": 0}),
        (f"{records // 1000:,}k records, 20 items, checkpoints", {"items": 20, "events": records - 21 - records // 51}),
        (
            f"{records // 1000:,}k records, 20 items, no checkpoint",
            {"items": 20, "events": records - 21, "interval": 0},
        ),
    ]
    floor_cmd = [sys.executable, "-c", FLOOR]
    for index, (name, spec) in enumerate(shapes):
        path = tmp / f"shape{index}.jsonl"
        count = write_plan(path, **spec)
        megabytes = path.stat().st_size / 1e6
        runs = 1 if count >= 500_000 else 3
        doctor = run.median([*st, "doctor", "--file", str(path)], tmp, runs)
        floor = run.median([*floor_cmd, str(path)], tmp, runs)
        show = run.median([*st, "show", "--file", str(path)], tmp, runs)
        print(
            f"| {name} | {count:,} | {spec['items']:,} | {megabytes:.0f} | {_s(doctor)} "
            f"| {megabytes / run.t(doctor):.0f} | {_s(floor)} | {run.t(doctor) / run.t(floor):.2f} "
            f"| {doctor.rss:.0f} | {_s(show)} | {show.rss:.0f} |"
        )
        targets.at_most(f"doctor ÷ orjson floor, {name}", run.t(doctor) / run.t(floor), 4.0)
        if name.endswith("20 items, checkpoints"):
            targets.at_least(f"doctor on {count:,} records (records/s)", count / run.t(doctor), 150_000)
            targets.at_most(f"doctor peak RSS on {count:,} records", doctor.rss, 150, " MB")
        if name.endswith("no checkpoint") and count >= 500_000:
            targets.at_most(f"show peak RSS, {count:,} records without checkpoint", show.rss, 200, " MB")
            targets.at_most(f"show ÷ doctor, {count:,} records without checkpoint", run.t(show) / run.t(doctor), 2.0)
            status = run.median(
                [*st, "set-status", "st-001", "deferred", "--file", str(path), "--allow-multiple-in-progress"],
                tmp,
                1,
                before=truncating(path),
            )
            targets.at_most(f"set-status peak RSS, {count:,} records without checkpoint", status.rss, 200, " MB")
            targets.at_most(
                f"set-status ÷ doctor, {count:,} records without checkpoint", run.t(status) / run.t(doctor), 2.0
            )
        path.unlink()

    print("\n## Linear in items: one upsert per item, no checkpoint (CPU / wall seconds)\n")
    print("| items | doctor s | validate s | pre-commit (new plan) s |")
    print("|---|---|---|---|")
    measured: dict[int, tuple[Sample, Sample, Sample]] = {}
    for items in (2_000, 4_000, 20_000, 40_000):
        repo = _repo(tmp / f"linear{items}", run.env)
        plan = repo / ".step" / "st-plan.jsonl"
        write_plan(plan, items=items, interval=0)
        _git("add", "-A", cwd=repo, env=run.env)
        doctor = run.median([*st, "doctor"], repo, 5)
        validate = run.median([*st, "validate", "--kind", "st-plan", str(plan)], repo, 5)
        hook = run.median([*st, "hook", "pre-commit"], repo, 5)
        measured[items] = (doctor, validate, hook)
        print(f"| {items:,} | {_s(doctor)} | {_s(validate)} | {_s(hook)} |")
        shutil.rmtree(repo)
    for small, large in ((2_000, 4_000), (20_000, 40_000)):
        for what, column in (("doctor", 0), ("validate", 1), ("pre-commit check of a new plan", 2)):
            ratio = run.t(measured[large][column]) / run.t(measured[small][column])
            targets.at_most(f"{what}, {large:,} ÷ {small:,} items", ratio, 2.2)


PEER_COMMANDS: list[tuple[str, list[str]]] = [
    ("show", ["show"]),
    ("ready", ["ready"]),
    ("blocked", ["blocked"]),
    ("emit-update-plan", ["emit-update-plan"]),
    ("export", ["export"]),
    ("doctor", ["doctor"]),
    ("init", ["init"]),
    ("add", ["add", "--step", "Write the benchmark"]),
    ("set-status", ["set-status", "--id", "st-005", "--status", "completed"]),
    ("set-deps", ["set-deps", "--id", "st-007", "--deps", "st-005"]),
    ("set-notes", ["set-notes", "--id", "st-005", "--notes", "measured"]),
    ("add-comment", ["add-comment", "--id", "st-005", "--text", "fast enough", "--author", "bench"]),
    ("remove", ["remove", "--id", "LAST"]),
    ("import-plan", ["import-plan", "--input", "IMPORT"]),
]


def peer_comparison(run: Runner, st: list[str], peer: Path, tmp: Path, targets: Targets, quick: bool) -> None:
    print("\n## The original `st_plan.py`, command by command (medians, taking turns; CPU / wall ms)\n")
    repo = _repo(tmp / "peer", run.env)
    plan = repo / ".step" / "st-plan.jsonl"
    imported = tmp / "import.json"
    imported.write_bytes(
        orjson.dumps({"items": [{"id": f"im-{n}", "step": f"imported {n}", "deps": []} for n in range(5)]})
    )
    theirs = [sys.executable, str(peer)]
    for label, spec, want, runs in (
        ("200 items", {"items": 200}, 1.0, run.runs),
        (
            "10,000 events, 1,000 items",
            {"items": 1_000, "events": 9_000 // (10 if quick else 1), "op": "set_notes"},
            None,
            max(3, run.runs // 4),  # the original takes seconds here
        ),
    ):
        write_plan(plan, **spec)
        original = plan.read_bytes()

        def restore(original: bytes = original) -> None:
            plan.write_bytes(original)

        last = f"st-{spec['items']:03d}"
        print(f"\n### {label} ({plan.stat().st_size / 1e3:,.0f} kB, as gitst writes it; {runs} rounds)\n")
        print("| command | gitst ms | original ms | gitst ÷ original |")
        print("|---|---|---|---|")
        for name, template in PEER_COMMANDS:
            args = [last if a == "LAST" else str(imported) if a == "IMPORT" else a for a in template]
            result = run.turns({"ours": [*st, *args], "peer": [*theirs, *args]}, repo, runs, before=restore)
            ratio = run.t(result["ours"]) / run.t(result["peer"])
            print(f"| {name} | {_ms(result['ours'])} | {_ms(result['peer'])} | {ratio:.2f} |")
            if want is not None:
                targets.at_most(f"{name} ÷ original, {label}", ratio, want)
            elif name == "show":
                targets.at_least(f"original ÷ show, {label}", 1 / ratio, 3.0)
            elif name == "add":
                targets.at_least(f"original ÷ add, {label}", 1 / ratio, 2.0)
        restore()
    shutil.rmtree(repo)


def startup_and_kept(run: Runner, st: list[str], tmp: Path, targets: Targets, quick: bool, records: int) -> None:
    print("\n## Start-up, big plans and the hook (CPU / wall ms)\n")
    repo = _repo(tmp / "small", run.env)
    plan = repo / ".step" / "st-plan.jsonl"
    write_plan(plan, items=200)
    bare = [sys.executable, "-c", "pass"]
    result = run.turns({"pass": bare, "show": [*st, "show"]}, repo)
    print(f"- python -c pass {_ms(result['pass'])}, git st show (200 items) {_ms(result['show'])}")
    targets.at_most("show ÷ python -c pass", run.t(result["show"]) / run.t(result["pass"]), 4.0)

    big, small, tiny = tmp / "big.jsonl", tmp / "small.jsonl", tmp / "tiny.jsonl"
    write_plan(big, items=20, events=records - 21 - records // 51)
    write_plan(small, items=20, events=1_000 - 21 - 1_000 // 51)
    write_plan(tiny, items=5, events=4, interval=0)
    shows = run.turns({"big": [*st, "show", "--file", str(big)], "small": [*st, "show", "--file", str(small)]}, tmp)
    print(f"- show: {records:,} records {_ms(shows['big'])}, 1,000 records {_ms(shows['small'])}")
    targets.at_most(f"show {records:,} ÷ 1,000 records", run.t(shows["big"]) / run.t(shows["small"]), 1.5)
    flip = ["set-status", "st-001", "deferred", "--allow-multiple-in-progress", "--file"]
    statuses = run.turns(
        {"big": [*st, *flip, str(big)], "tiny": [*st, *flip, str(tiny)]}, tmp, before=truncating(big, tiny)
    )
    print(f"- set-status: {records:,} records {_ms(statuses['big'])}, 10 records {_ms(statuses['tiny'])}")
    targets.at_most(f"set-status {records:,} ÷ 10 records", run.t(statuses["big"]) / run.t(statuses["tiny"]), 2.0)

    (repo / "README").write_text("edited\n")
    _git("add", "README", cwd=repo, env=run.env)
    hooks = run.turns({"pass": bare, "hook": [*st, "hook", "pre-commit"]}, repo)
    print(f"- no-op pre-commit hook {_ms(hooks['hook'])}, python -c pass {_ms(hooks['pass'])}")
    targets.at_most("no-op pre-commit hook ÷ python -c pass", run.t(hooks["hook"]) / run.t(hooks["pass"]), 2.0)
    _git("reset", "-q", cwd=repo, env=run.env)

    shutil.copyfile(big, plan)
    _git("add", "-A", cwd=repo, env=run.env)
    _git("commit", "-q", "--no-verify", "-m", "big plan", cwd=repo, env=run.env)
    with open(plan, "ab") as handle:
        handle.write(append_events(plan, 10))
    _git("add", "-A", cwd=repo, env=run.env)
    hook = run.median([*st, "hook", "pre-commit"], repo, 3)
    print(
        f"- commit appending 10 events to a {records:,}-record plan ({plan.stat().st_size / 1e6:.0f} MB): "
        f"{_ms(hook)} ms, peak {hook.rss:.0f} MB"
    )
    targets.at_most(f"pre-commit, 10 events appended to {records:,} records", run.t(hook), 1.0, " s")
    targets.at_most(f"pre-commit peak RSS, 10 events appended to {records:,} records", hook.rss, 300, " MB")
    shutil.rmtree(repo)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(  # resolved here: the benchmark runs the peer from its temp dir
        "--peer", type=lambda p: Path(p).resolve(), default=DEFAULT_PEER if DEFAULT_PEER.exists() else None
    )
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="small sizes, few runs: a smoke run")
    parser.add_argument("--only", choices=("scaling", "peer", "startup"), help="run one part")
    parser.add_argument(
        "--basis", choices=("cpu", "wall"), default="cpu", help="the time targets judge (both are printed)"
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.runs = min(opts.runs, 3)
        opts.records = min(opts.records, 100_000)
    targets = Targets()
    with tempfile.TemporaryDirectory(prefix="gitst-scaling-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
        env = {
            **os.environ,
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
        }
        for name in (
            "PYTHONDONTWRITEBYTECODE",
            "ST_CHECKPOINT_INTERVAL",
            "ST_SESSION_ID",
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
        ):
            env.pop(name, None)
        wrapper = tmp / "git-st"
        wrapper.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
            "from gitst.cli.main import main\nsys.exit(main())\n"
        )
        wrapper.chmod(0o755)
        st = [str(wrapper)]
        run = Runner(env, opts.runs, opts.basis)
        load = os.getloadavg()[0]
        print(f"Targets judged on {opts.basis} time; {opts.runs} rounds; {os.cpu_count()} CPUs, load {load:.1f}\n")
        if opts.only in (None, "scaling"):
            scaling(run, st, tmp, targets, opts.quick, opts.records)
        if opts.only in (None, "peer"):
            if opts.peer is not None:
                peer_comparison(run, st, opts.peer, tmp, targets, opts.quick)
            else:
                print("\n(no --peer and no ../shared/peer/st_plan.py: the comparison with the original is skipped)")
        if opts.only in (None, "startup"):
            startup_and_kept(run, st, tmp, targets, opts.quick, opts.records)
    return 1 if targets.show() else 0


if __name__ == "__main__":
    raise SystemExit(main())
