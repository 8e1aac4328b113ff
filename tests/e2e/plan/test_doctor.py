"""doctor names each broken rule with its line; --repair-seq seals seq collisions by appending
a canonical checkpoint (e.g. the file made by concatenating two branches' appends)."""

from __future__ import annotations

import json

import pytest

from tests.support import checkpoints, git, plan_path, records, show_json, st, st_quick

TS = "2026-02-09T20:00:00Z"


ITEM = {"id": "st-001", "step": "A", "status": "pending", "deps": [], "notes": "", "comments": []}


def _line(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


BROKEN = b"".join(
    [
        _line({"v": 3, "ts": TS, "seq": 1, "lane": "event", "op": "init"}),  # 1 ok
        _line({"v": 3, "ts": TS, "seq": 2, "lane": "event", "op": "upsert", "item": ITEM}),  # 2 ok
        b"\n",  # 3 blank
        b"this is not json\n",  # 4
        b"[1, 2]\n",  # 5
        _line({"v": 3, "ts": "yesterday", "seq": -1, "lane": "event", "op": "upsert"}),  # 6 shape
        _line({"v": 3, "ts": TS, "seq": 7, "lane": "checkpoint", "items": [ITEM]}),  # 7 cp seq
        _line(
            {"v": 3, "ts": TS, "seq": 8, "lane": "event", "op": "set_status", "id": "st-404", "status": "blocked"}
        ),  # 8
        _line(
            {"v": 3, "ts": TS, "seq": 8, "lane": "checkpoint", "items": [{**ITEM, "status": "completed"}]}
        ),  # 9 contract
        _line(
            {"v": 3, "ts": TS, "seq": 5, "lane": "event", "op": "set_notes", "id": "st-001", "notes": "x"}
        ),  # 10 trailing
        b'{"v":3,"ts":"2026-02-09T2',  # 11 torn
    ]
)


EXPECTED = [
    (3, "ST_BLANK_LINE", "warning"),
    (4, "JSON", "error"),
    (5, "SCHEMA", "error"),
    (6, "SCHEMA", "error"),
    (7, "ST_CHECKPOINT_SEQ", "error"),
    (8, "ST_REPLAY_UNKNOWN_ID", "error"),
    (9, "ST_REPLAY_CONTRACT", "error"),
    (10, "ST_TRAILING_SEQ", "error"),
    (11, "ST_TORN_TAIL", "error"),
]


def test_doctor_names_each_broken_rule_with_its_line(repo):
    assert st("init", cwd=repo).returncode == 0
    path = plan_path(repo)
    path.write_bytes(BROKEN)
    result = st("doctor", "--format", "json", cwd=repo)
    assert result.returncode == 1, result
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["path"] == ".step/st-plan.jsonl"
    assert [(d["line"], d["code"], d["severity"]) for d in report["diagnostics"]] == EXPECTED
    by_code = {d["code"]: d["message"] for d in report["diagnostics"]}
    assert by_code["ST_CHECKPOINT_SEQ"] == "checkpoint seq 7 must equal the watermark before it (2)"
    assert by_code["ST_TRAILING_SEQ"] == "seq 5 is not above the previous seq 8 after the latest checkpoint"
    assert by_code["ST_REPLAY_CONTRACT"] == (
        "checkpoint differs from the full replay of the events before it: "
        "item 'st-001' field 'status': checkpoint has 'completed', full replay has 'pending'"
    )
    # the shape findings are the schema's own words (validated through schemastore)
    assert "/seq: -1 is less than the minimum of 0" in by_code["SCHEMA"]
    assert "/ts:" in by_code["SCHEMA"]

    text = st("doctor", cwd=repo)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1] == "plan invalid: .step/st-plan.jsonl: 8 error(s), 1 warning(s)"
    for line, code, severity in EXPECTED:
        assert f".step/st-plan.jsonl:{line}: {severity}[{code}]: " in text.stderr, (line, code, text.stderr)
    github = st("doctor", "--format", "github", cwd=repo)
    assert "::error file=.step/st-plan.jsonl,line=9,title=ST_REPLAY_CONTRACT::" in github.stdout

    # repair seals the seq/replay findings and sets the torn tail aside; bad lines stay reported
    before = path.read_bytes()
    repaired = st("doctor", "--repair-seq", cwd=repo)
    assert repaired.returncode == 1, repaired
    assert repaired.stdout.splitlines()[:2] == [
        f"set aside a torn last line of .step/st-plan.jsonl as {next((repo / '.step').glob('*.torn-*')).name}",
        "repaired seq contract via checkpoint seq 8",
    ]
    after = path.read_bytes()
    assert after.startswith(before[: before.rindex(b"\n") + 1])
    final = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)["diagnostics"]
    assert [(d["line"], d["code"]) for d in final] == [
        (3, "ST_BLANK_LINE"),
        (4, "JSON"),
        (5, "SCHEMA"),
        (6, "SCHEMA"),
        (None, "ST_TORN_SET_ASIDE"),
    ]
    seal = records_after(after)[-1]
    assert seal["lane"] == "checkpoint" and seal["seq"] == 8 and seal["repair"] == {"op": "doctor_repair_seq"}
    assert seal["items"] == [{**ITEM, "notes": "x"}]


def records_after(data: bytes) -> list[dict]:
    out = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _branch_plan(repo, name, commands, env=None):
    git("checkout", "-q", "-b", name, "main", cwd=repo)
    for args in commands:
        st_quick(*args, cwd=repo, env=env)
    git("commit", "-qam", f"plan on {name}", cwd=repo)
    data = plan_path(repo).read_bytes()
    git("checkout", "-q", "main", cwd=repo)
    return data


def _concatenated_branches(repo, env=None):
    """Base plan on main; two branches append; the file a `cat`/union merge would give."""
    st_quick("init", cwd=repo, env=env)
    for step in ("One", "Two", "Three"):
        st_quick("add", "--step", step, cwd=repo, env=env)
    git("add", ".step", cwd=repo)
    git("commit", "-qm", "plan", cwd=repo)
    base = plan_path(repo).read_bytes()
    ours = _branch_plan(repo, "a", [("set-status", "st-001", "done"), ("add", "--id", "a-1", "--step", "From A")], env)
    theirs = _branch_plan(
        repo,
        "b",
        [
            ("set-notes", "st-002", "from B"),
            ("add", "--id", "b-1", "--step", "From B"),
            ("set-status", "st-003", "blocked"),
        ],
        env,
    )
    assert ours.startswith(base) and theirs.startswith(base)
    git("checkout", "-q", "-b", "merged", "main", cwd=repo)
    merged = ours + theirs[len(base) :]
    plan_path(repo).write_bytes(merged)
    return merged


def _union_state(items):
    return {i["id"]: (i["status"], i["notes"]) for i in items}


EXPECTED_UNION = {
    "st-001": ("completed", ""),
    "st-002": ("pending", "from B"),
    "st-003": ("blocked", ""),
    "a-1": ("pending", ""),
    "b-1": ("pending", ""),
}


def test_repair_seq_seals_two_concatenated_branches(repo):
    merged = _concatenated_branches(repo)
    broken = st("doctor", "--format", "json", cwd=repo)
    assert broken.returncode == 1, broken
    found = [(d["line"], d["code"]) for d in json.loads(broken.stdout)["diagnostics"]]
    # base: init + 3 adds (lines 1-4); a: lines 5-6 (seq 5, 6); b: lines 7-9 (seq 5, 6, 7)
    assert found == [(7, "ST_TRAILING_SEQ"), (8, "ST_TRAILING_SEQ")]
    refused = st("add", "--step", "Nope", cwd=repo)
    assert refused.returncode == 1 and "--repair-seq" in refused.stderr

    repaired = st("doctor", "--repair-seq", cwd=repo)
    assert repaired.returncode == 0, repaired
    assert repaired.stdout.splitlines() == [
        "repaired seq contract via checkpoint seq 7",
        "seq contract ok: .step/st-plan.jsonl (10 records, watermark 7, 1 checkpoints)",
    ]
    assert plan_path(repo).read_bytes().startswith(merged)  # append only
    clean = st("doctor", cwd=repo)
    assert clean.returncode == 0 and clean.stderr == "", clean
    assert _union_state(show_json(st, repo)) == EXPECTED_UNION
    again = st("doctor", "--repair-seq", cwd=repo)
    assert again.stdout.splitlines()[0] == "repair skipped: seq contract already valid"
    assert st("add", "--step", "After", cwd=repo).returncode == 0
    assert records(plan_path(repo))[-1]["seq"] == 8


def test_repair_seq_seals_branches_that_each_wrote_checkpoints(repo):
    env = {"ST_CHECKPOINT_INTERVAL": "3"}
    _concatenated_branches(repo, env)
    path = plan_path(repo)
    report = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)
    codes = [d["code"] for d in report["diagnostics"]]
    assert "ST_REPLAY_CONTRACT" in codes, report  # b's checkpoint does not know a's events
    # before repair a reader trusts b's checkpoint and misses a's changes
    assert _union_state(show_json(st, repo)) != EXPECTED_UNION
    assert st("doctor", "--repair-seq", cwd=repo, env=env).returncode == 0
    assert st("doctor", cwd=repo).returncode == 0
    assert _union_state(show_json(st, repo)) == EXPECTED_UNION
    assert checkpoints(path)[-1]["repair"] == {"op": "doctor_repair_seq"}


def test_doctor_on_a_clean_or_missing_plan(repo):
    missing = st("doctor", cwd=repo)
    assert missing.returncode == 0 and missing.stdout.strip() == "no plan at .step/st-plan.jsonl (nothing to check)"
    assert st("init", cwd=repo).returncode == 0
    st_quick("add", "--step", "A", cwd=repo)
    ok = st("doctor", cwd=repo)
    assert ok.returncode == 0 and ok.stderr == ""
    assert ok.stdout.strip() == "seq contract ok: .step/st-plan.jsonl (2 records, watermark 2, 0 checkpoints)"
    report = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)
    assert report == {
        "path": ".step/st-plan.jsonl",
        "exists": True,
        "ok": True,
        "records": 2,
        "watermark": 2,
        "checkpoints": 0,
        "actions": [],
        "diagnostics": [],
    }


def test_doctor_finds_the_same_in_a_plan_too_large_for_the_compiled_schema(repo):
    """A plan under 256 KiB has its records checked by the schema compiled to Python, a larger
    one by jsonschema-rs (one validator per kind of record): the same broken lines give the
    same findings, word for word, either way - each a fresh `git st doctor`."""
    assert st("init", cwd=repo).returncode == 0
    path = plan_path(repo)
    path.write_bytes(BROKEN)
    small = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)["diagnostics"]
    first, rest = BROKEN.split(b"\n", 1)
    padded = json.loads(first) | {"pad": "x" * 300_000}  # an unknown field: kept, never judged
    path.write_bytes(_line(padded) + rest)
    assert path.stat().st_size > 256 << 10
    large = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)["diagnostics"]
    assert [(d["line"], d["code"]) for d in small] == [(line, code) for line, code, _ in EXPECTED]
    assert large == small


def test_repair_seq_after_a_union_merge_keeps_both_branches_items(repo, tmp_path):
    """Issue 20, point 2: branches x and y each ran `git st add` (both allocated st-002),
    joined with `git merge-file --union` (what a host or `merge=union` does): the repair keeps
    every item, renumbers the colliding auto id as the merge driver does, and says so."""

    def run_st(*args):
        result = st(*args, cwd=repo, env={"ST_UPDATE_PLAN": "0"})
        assert result.returncode == 0, result
        return result

    run_st("init")
    run_st("add", "--step", "one")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    git("switch", "-q", "-c", "x", cwd=repo)
    assert "upserted st-002" in run_st("add", "--step", "x item").stdout
    git("commit", "-q", "-am", "x", cwd=repo)
    git("switch", "-q", "-c", "y", "main", cwd=repo)
    assert "upserted st-002" in run_st("add", "--step", "y item").stdout
    run_st("add", "--step", "y child", "--deps", "st-002")
    git("commit", "-q", "-am", "y", cwd=repo)
    plan = plan_path(repo)
    versions = {name: tmp_path / name for name in ("x", "base", "y")}
    for name, rev in (("x", "x"), ("base", "main"), ("y", "y")):
        versions[name].write_bytes(git("show", f"{rev}:.step/st-plan.jsonl", cwd=repo).encode() + b"\n")
    git("merge-file", "--union", str(versions["x"]), str(versions["base"]), str(versions["y"]), cwd=repo)
    git("switch", "-q", "x", cwd=repo)
    plan.write_bytes(versions["x"].read_bytes())

    repaired = st("doctor", "--repair-seq", cwd=repo)
    assert repaired.returncode == 0, repaired
    assert (
        'renumbered st-002 "y item" to st-004: two branches both added st-002 and were joined without the '
        "plan merge driver"
    ) in repaired.stdout.splitlines(), repaired
    items = {item["step"]: item for item in show_json(st, repo)}
    assert {step: item["id"] for step, item in items.items()} == {
        "one": "st-001",
        "x item": "st-002",
        "y child": "st-003",
        "y item": "st-004",
    }
    assert [edge["id"] for edge in items["y child"]["deps"]] == ["st-004"]  # the reference followed
    assert st("doctor", cwd=repo).returncode == 0


def test_a_replay_contract_break_says_restore_the_lines_never_repair_seq(repo):
    """Issue 20 (low): a checkpoint that differs from the replay of the events before it means
    those events were changed or deleted; --repair-seq would adopt the replay and lose them."""
    env = {"ST_CHECKPOINT_INTERVAL": "2", "ST_UPDATE_PLAN": "0"}
    for args in (["init"], ["add", "--step", "one"], ["add", "--step", "two"]):
        assert st(*args, cwd=repo, env=env).returncode == 0
    plan = plan_path(repo)
    lines = plan.read_bytes().splitlines(keepends=True)
    last = max(n for n, line in enumerate(lines) if json.loads(line)["lane"] == "checkpoint")
    assert json.loads(lines[last - 1])["op"] == "upsert"
    lines[last - 1] = lines[last - 1].replace(b'"step":"', b'"step":"edited ')  # a hand edit of an event
    plan.write_bytes(b"".join(lines))
    for command in (["doctor"], ["validate", ".step/st-plan.jsonl"]):
        found = st(*command, cwd=repo)
        assert found.returncode == 1, found
        assert "ST_REPLAY_CONTRACT" in found.stderr + found.stdout, found
        assert "restore the changed or deleted lines" in found.stderr + found.stdout, found
        assert "--repair-seq" not in found.stderr.replace("not --repair-seq", ""), found


@pytest.mark.parametrize("big", [2**53, 2**64 - 1, -(2**63)])
def test_integers_beyond_2_53_in_unknown_item_fields_are_refused(repo, big):
    """Issue 21 (low): docs/security.md promises integers at most 2^53-1 in every plan
    record; an unknown item field (which no schema types) is no exception. doctor names it,
    writers refuse to carry it into a checkpoint, import refuses it."""
    env = {"ST_UPDATE_PLAN": "0"}
    assert st("init", cwd=repo, env=env).returncode == 0
    plan = plan_path(repo)
    item = {**ITEM, "estimate": {"points": [1, big]}}
    plan.write_bytes(
        plan.read_bytes() + _line({"v": 3, "ts": TS, "seq": 2, "lane": "event", "op": "upsert", "item": item})
    )
    found = st("doctor", cwd=repo)
    assert found.returncode == 1, found
    assert f"field 'estimate' of item 'st-001' holds the integer {big}, beyond 2^53-1" in found.stderr, found
    before = plan.read_bytes()
    refused = st("add", "--step", "next", cwd=repo, env={**env, "ST_CHECKPOINT_INTERVAL": "1"})
    assert refused.returncode == 1 and plan.read_bytes() == before, refused
    assert "Traceback" not in refused.stderr
