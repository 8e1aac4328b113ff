"""Limits every reader applies (docs/security.md): JSON nested deeper than 128 levels is
``JSON_DEPTH``, an integer beyond 2^53 - 1 ``JSON_NUMBER`` or, where a schema bounds it,
``SCHEMA``. orjson parses 1,024 levels but encodes only 255, so such input used to pass one
command and crash the next; now every reader refuses it with its code and the writers never
write what a reader would refuse.
"""

from __future__ import annotations

import json

import pytest

from tests.support import assert_refused, mutate, ok, plan_path, records, session_env, st

pytestmark = pytest.mark.usefixtures("nothing_written_outside")

DEEP = "[" * 300 + "]" * 300  # parses in orjson (1,024 levels), far past every reader's 128
EVENT = '{{"v":3,"ts":"2026-01-01T00:00:00Z","seq":{seq},"lane":"event","op":"set_notes","id":"st-001","notes":"n"}}'


@pytest.fixture
def planned(repo):
    mutate(repo, "init")
    mutate(repo, "add", "First")
    return repo


def append_line(repo, line: str) -> bytes:
    plan = plan_path(repo)
    plan.write_bytes(plan.read_bytes() + line.encode() + b"\n")
    return plan.read_bytes()


def test_import_of_deep_json_is_refused_and_writes_nothing(planned, tmp_path):
    before = plan_path(planned).read_bytes()
    snapshot = tmp_path / "deep.json"
    snapshot.write_text(json.dumps([{"id": "d", "step": "deep"}])[:-2] + ', "x": ' + DEEP + "}]")
    result = st("import-plan", str(snapshot), cwd=planned)
    assert_refused(result, 2)
    assert "nested deeper than 128 levels" in result.stderr
    assert plan_path(planned).read_bytes() == before


def test_a_deep_plan_line_is_json_depth_for_readers_doctor_validate_and_writers(planned):
    line = EVENT.format(seq=3)[:-1] + ', "x": ' + DEEP + "}"
    data = append_line(planned, line)
    for args in (["show"], ["show", "--format", "json"], ["export"], ["ready"]):
        result = st(*args, cwd=planned)
        assert result.returncode == 0 and "error[JSON_DEPTH]" in result.stderr, result
        assert "Traceback" not in result.stderr
    assert json.loads(st("show", "--format", "json", cwd=planned).stdout)["items"][0]["id"] == "st-001"
    doctor = st("doctor", cwd=planned)
    assert doctor.returncode == 1 and ".step/st-plan.jsonl:3: error[JSON_DEPTH]" in doctor.stderr, doctor
    validated = st("validate", ".step/st-plan.jsonl", cwd=planned)
    assert validated.returncode == 1 and "error[JSON_DEPTH]" in validated.stderr, validated
    assert_refused(st("add", "Second", cwd=planned), 1)  # every mutation: refused, not a crash
    assert plan_path(planned).read_bytes() == data
    repaired = st("doctor", "--repair-seq", cwd=planned)  # the documented way out: a sealing checkpoint
    assert "repaired seq contract" in repaired.stdout, repaired  # (the bad line itself stays an error)
    ok(st("add", "Second", cwd=planned))
    assert plan_path(planned).read_bytes().startswith(data)  # history kept, appended after


def test_an_item_too_deep_for_a_checkpoint_is_named_by_doctor_and_removable(planned):
    item = {"id": "st-002", "step": "deep", "status": "pending", "deps": [], "notes": "", "comments": []}
    event = {"v": 3, "ts": "2026-01-01T00:00:00Z", "seq": 3, "lane": "event", "op": "upsert", "item": item}
    line = json.dumps(event, separators=(",", ":"))[:-2] + ',"z":' + "[" * 126 + "]" * 126 + "}}"  # 128 deep
    data = append_line(planned, line)
    doctor = st("doctor", cwd=planned)
    assert doctor.returncode == 1 and "error[JSON_DEPTH]" in doctor.stderr and "st-002" in doctor.stderr, doctor
    assert "fix: git st remove st-002" in doctor.stderr
    result = st("add", "Third", cwd=planned, env={"ST_CHECKPOINT_INTERVAL": "1"})  # its checkpoint cannot hold it
    assert_refused(result, 2)
    assert "st-002" in result.stderr and plan_path(planned).read_bytes() == data
    ok(st("remove", "st-002", cwd=planned, env={"ST_CHECKPOINT_INTERVAL": "1"}))
    ok(st("add", "Third", cwd=planned, env={"ST_CHECKPOINT_INTERVAL": "1"}))
    ok(st("doctor", cwd=planned))


@pytest.mark.parametrize("seq", ["18446744073709551615", "1e300", "9007199254740992"])
def test_a_seq_beyond_2_53_fails_doctor_and_validate_not_the_next_mutation(planned, seq):
    data = append_line(planned, EVENT.format(seq=seq))
    doctor = st("doctor", cwd=planned)
    assert doctor.returncode == 1 and ".step/st-plan.jsonl:3: error[SCHEMA]" in doctor.stderr, doctor
    validated = st("validate", ".step/st-plan.jsonl", cwd=planned)
    assert validated.returncode == 1 and "error[SCHEMA]" in validated.stderr, validated
    assert_refused(st("add", "Second", cwd=planned), 1)
    assert plan_path(planned).read_bytes() == data
    assert "repaired seq contract via checkpoint seq 2" in st("doctor", "--repair-seq", cwd=planned).stdout
    ok(st("add", "Second", cwd=planned))
    assert [r["seq"] for r in records(plan_path(planned))][-2:] == [2, 3]  # the watermark ignores the bad seq


def test_a_plan_whose_seq_would_pass_2_53_refuses_to_grow(planned):
    top = 2**53 - 1
    append_line(planned, EVENT.format(seq=top))
    data = plan_path(planned).read_bytes()
    result = st("add", "Second", cwd=planned)
    assert_refused(result, 2)
    assert "used up its seq numbers" in result.stderr and plan_path(planned).read_bytes() == data


def test_an_imported_integer_beyond_2_53_is_refused_not_turned_into_a_float(planned, tmp_path):
    snapshot = tmp_path / "big.json"
    snapshot.write_text('[{"id": "b", "step": "big", "x": 18446744073709551616}]')
    before = plan_path(planned).read_bytes()
    result = st("import-plan", str(snapshot), cwd=planned)
    assert_refused(result, 2)
    assert "beyond 2^53-1" in result.stderr and plan_path(planned).read_bytes() == before


def test_a_lock_token_beyond_2_53_is_reported_not_a_crash(repo):
    me = session_env("me")
    ok(st("claim", "7", cwd=repo, env=me))
    path = repo / "state" / "locks" / "issue-7.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "token": 2**64 - 1}))
    listed = st("lock", "list", cwd=repo)
    assert listed.returncode == 1 and "error[JSON_NUMBER]" in listed.stderr and "beyond 2^53-1" in listed.stderr
    for args in (["lock", "acquire", "issue-7"], ["lock", "release", "issue-7"], ["claim", "7"], ["heartbeat"]):
        result = st(*args, cwd=repo, env=me)
        assert result.returncode in (1, 2) and "Traceback" not in result.stderr and "error" in result.stderr, result
    assert json.loads(path.read_text())["token"] == 2**64 - 1  # reported, never rewritten


def test_deep_state_files_are_json_depth_in_every_reader(repo, tmp_path):
    ok(st("pipeline", "set", "7", "current_phase", "build", cwd=repo))
    (repo / "state" / "pipeline" / "7.json").write_text('{"7": {"x": ' + DEEP + "}}")
    for args in (["pipeline", "show", "7"], ["pipeline", "set", "7", "current_phase", "qa"]):
        result = st(*args, cwd=repo)
        assert_refused(result, 1)
        assert "nested deeper than 128 levels" in result.stderr
    listed = st("pipeline", "list", cwd=repo)
    assert listed.returncode == 1 and "error[JSON_DEPTH]" in listed.stderr, listed
    ok(st("lock", "acquire", "res", cwd=repo, env=session_env("me")))
    (repo / "state" / "locks" / "res.json").write_text('{"resource": "res", "token": 1, "owner": ' + DEEP + "}")
    locks = st("lock", "list", cwd=repo)
    assert locks.returncode == 1 and "error[JSON_DEPTH]" in locks.stderr, locks
    stream = tmp_path / "deep.aide.jsonl"
    stream.write_text('{"t": "meta.set", "p": ' + DEEP + "}\n")
    replayed = st("aide", "replay", str(stream), cwd=repo)
    assert "Traceback" not in replayed.stderr and replayed.returncode in (0, 1), replayed
    assert "JSON_DEPTH" in replayed.stdout + replayed.stderr
    validated = st("validate", str(stream), "state/pipeline/7.json", "state/locks/res.json", cwd=repo)
    assert validated.returncode == 1 and validated.stderr.count("error[JSON_DEPTH]") == 3, validated


def test_the_merge_driver_refuses_a_deep_line_without_touching_ours(planned, tmp_path):
    plan = plan_path(planned).read_bytes()
    base, ours, theirs = tmp_path / "base", tmp_path / "ours", tmp_path / "theirs"
    base.write_bytes(plan)
    ours.write_bytes(plan)
    theirs.write_bytes(plan + (EVENT.format(seq=3)[:-1] + ', "x": ' + DEEP + "}\n").encode())
    result = st("merge-driver", str(base), str(ours), str(theirs), ".step/st-plan.jsonl", cwd=planned)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result
    assert ours.read_bytes() == plan
