"""The append-only store: cadence of checkpoints, untouched prefixes, O(tail) reads, torn tails,
unknown fields surviving, broken tails refused for writes but readable."""

from __future__ import annotations

import json

from gitst.plan import engine
from gitst.plan.doctor import check_plan_bytes
from tests.support import checkpoints, events, plan_path, records, show_json, st, st_quick


def test_120_mutations_give_init_120_events_2_checkpoints_and_never_touch_earlier_bytes(repo, monkeypatch):
    """Must show 3. Mutations run in-process through the same engine the CLI calls (every
    20th through the real CLI), in a real git repo with the default interval."""
    monkeypatch.chdir(repo)
    assert st("init", cwd=repo).returncode == 0
    target = engine.Target.of(None)
    path = plan_path(repo)
    previous = path.read_bytes()
    first_bytes = previous
    last = None
    for i in range(120):
        if i % 20 == 19:
            result = st("add", "--step", f"via CLI {i}", cwd=repo)
            assert result.returncode == 0, result
            last = result.stdout.split()[1]
        elif i % 4 == 1:
            engine.set_notes(target, last, f"notes {i} ✓")
        elif i % 4 == 2:
            engine.set_status(target, last, "done")
        else:
            last = engine.add(target, step=f"Step {i}").messages[0].split()[1]
        current = path.read_bytes()
        assert current.startswith(previous), f"mutation {i} rewrote earlier bytes"
        assert len(current) > len(previous)
        previous = current
    assert path.read_bytes().startswith(first_bytes)
    all_records = records(path)
    assert len(all_records) == 1 + 120 + 2
    assert next(r["op"] for r in all_records if r["lane"] == "event") == "init"
    assert len(events(path)) == 121
    # a checkpoint when the trailing events reach 50: after seq 50 and seq 100
    assert [c["seq"] for c in checkpoints(path)] == [50, 100]
    assert [i for i, r in enumerate(all_records) if r["lane"] == "checkpoint"] == [50, 101]
    assert check_plan_bytes(path.read_bytes(), str(path)) == []


def test_torn_tail_is_skipped_by_readers_and_set_aside_by_the_next_writer(repo):
    assert st("init", cwd=repo).returncode == 0
    st_quick("add", "--step", "A", cwd=repo)
    path = plan_path(repo)
    whole = path.read_bytes()
    torn = b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":3,"lane":"event","op":"upsert","item":{"id":"st-0'
    path.write_bytes(whole + torn)

    shown = st("show", "--format", "json", cwd=repo)
    assert shown.returncode == 0, shown
    assert [i["id"] for i in json.loads(shown.stdout)["items"]] == ["st-001"]
    assert shown.stderr.startswith(".step/st-plan.jsonl:3: warning[ST_TORN_TAIL]: last line is a torn write (")

    doctor = st("doctor", cwd=repo)
    assert doctor.returncode == 1
    assert ".step/st-plan.jsonl:3: error[ST_TORN_TAIL]" in doctor.stderr

    result = st("add", "--step", "B", cwd=repo)
    assert result.returncode == 0, result
    set_aside = sorted((repo / ".step").glob("st-plan.jsonl.torn-*"))
    assert len(set_aside) == 1 and set_aside[0].read_bytes() == torn
    assert result.stdout.splitlines()[1] == f"set aside a torn last line of .step/st-plan.jsonl as {set_aside[0].name}"
    data = path.read_bytes()
    assert data.startswith(whole) and data.endswith(b"\n")
    assert records(path)[-1]["seq"] == 3  # the torn record never counted
    after = st("doctor", cwd=repo)
    assert after.returncode == 0, after
    assert "warning[ST_TORN_SET_ASIDE]" in after.stderr
    # set-aside files are ignored by git like the lock
    from tests.support import git

    assert "torn" not in git("status", "--porcelain", "--untracked-files=all", cwd=repo)


def test_a_whole_last_record_without_newline_is_used_and_completed(repo):
    assert st("init", cwd=repo).returncode == 0
    path = plan_path(repo)
    path.write_bytes(
        path.read_bytes()
        + json.dumps(
            {
                "v": 3,
                "ts": "2026-02-09T20:00:00Z",
                "seq": 2,
                "lane": "event",
                "op": "upsert",
                "item": {"id": "x", "step": "Hand", "deps": []},
            }
        ).encode()
    )
    assert [i["id"] for i in show_json(st, repo)] == ["x"]
    assert st("add", "--step", "B", cwd=repo).returncode == 0
    assert [r["seq"] for r in records(path)] == [1, 2, 3]
    assert path.read_bytes().endswith(b"\n")
    assert not list((repo / ".step").glob("*.torn-*"))


def test_unknown_fields_on_items_and_records_survive(repo):
    assert st("init", cwd=repo).returncode == 0
    path = plan_path(repo)
    hand = (
        json.dumps(
            {
                "v": 3,
                "ts": "2026-02-09T20:00:00Z",
                "seq": 2,
                "lane": "event",
                "op": "upsert_item",
                "x-origin": {"tool": "other"},
                "item": {"owner": "alice", "id": "st-001", "step": "A", "deps": [], "labels": ["p1"]},
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )
    path.write_bytes(path.read_bytes() + hand)
    for _ in range(3):
        assert st("set-notes", "st-001", "n", cwd=repo, env={"ST_CHECKPOINT_INTERVAL": "4"}).returncode == 0
    assert hand in path.read_bytes()  # the record's bytes, unknown fields and all, untouched
    (checkpoint,) = checkpoints(path)
    assert checkpoint["items"][0]["owner"] == "alice" and checkpoint["items"][0]["labels"] == ["p1"]
    (item,) = show_json(st, repo)
    assert (item["owner"], item["labels"], item["notes"]) == ("alice", ["p1"], "n")
    assert list(item)[:6] == ["id", "step", "status", "deps", "notes", "comments"]
    assert json.loads(st("export", cwd=repo).stdout)["items"][0]["owner"] == "alice"


def test_a_broken_tail_is_readable_but_refuses_writes(repo):
    assert st("init", cwd=repo).returncode == 0
    st_quick("add", "--step", "A", cwd=repo)
    path = plan_path(repo)
    path.write_bytes(
        path.read_bytes()
        + (
            b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":3,"lane":"event","op":"set_status",'
            b'"id":"nope","status":"completed"}\n'
        )
        + b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":3,"lane":"event","op":"set_notes","id":"st-001","notes":"x"}\n'
    )
    shown = st("show", "--format", "json", cwd=repo)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["items"][0]["notes"] == "x"
    assert (
        ".step/st-plan.jsonl:3: error[ST_REPLAY_UNKNOWN_ID]: set_status references unknown id 'nope'; record skipped"
        in shown.stderr
    )
    assert ".step/st-plan.jsonl:4: error[ST_TRAILING_SEQ]" in shown.stderr
    before = path.read_bytes()
    refused = st("add", "--step", "B", cwd=repo)
    assert refused.returncode == 1, refused
    assert "breaks the st contract after its latest checkpoint; nothing written" in refused.stderr
    assert "fix: git st doctor --file .step/st-plan.jsonl   then   git st doctor --repair-seq" in refused.stderr
    assert path.read_bytes() == before
    assert st("doctor", "--repair-seq", cwd=repo).returncode == 0
    assert st("add", "--step", "B", cwd=repo).returncode == 0
