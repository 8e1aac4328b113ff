"""`git st pipeline show/list/get/set/unset` on real files in a real repository's state dir."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitst.pipeline.state import normalize
from tests.support import git_st, st

# Seed 001's example file, byte for byte apart from the issue number in the key.
SEED_EXAMPLE = (
    '{ "42": { "current_phase": "building", "active_agent": "builder", '
    '"active_agent_kind": "creative", "issue_type": "feature", "pr_number": "42", '
    '"started_at": "2026-04-10T12:48:21.988Z", "last_updated": "2026-04-10T13:06:54.627Z", '
    '"plan_iterations": "1", "review_fix_count": "0", "qa_fix_count": "0", "review_passed": "true", '
    '"qa_passed": "false", "complexity": "standard", '
    '"pipeline_run_id": "run-42-20260410124821-6b11c423", "prompt_rewrite_count": "0", '
    '"sub_issues": [43, 44], "steps": { "plan": { "architect": { "status": "completed" } } }, '
    '"tokens": { "_runs": [] } }, "lastActivity": "2026-04-10T13:06:54.627Z", '
    '"heartbeat_pid": 47281}'
)

SEED_PUBLIC_VIEW = {
    "issue": 42,
    "current_phase": "building",
    "active_agent": "builder",
    "issue_type": "feature",
    "pr_number": 42,
    "started_at": "2026-04-10T12:48:21.988Z",
    "last_updated": "2026-04-10T13:06:54.627Z",
    "active_agent_kind": "creative",
    "complexity": "standard",
    "pipeline_run_id": "run-42-20260410124821-6b11c423",
    "plan_iterations": 1,
    "review_fix_count": 0,
    "qa_fix_count": 0,
    "prompt_rewrite_count": 0,
    "review_passed": True,
    "qa_passed": False,
    "sub_issues": [43, 44],
    "steps": {"plan": {"architect": {"status": "completed"}}},
    "tokens": {"_runs": []},
    "heartbeat_pid": 47281,
    "last_activity": "2026-04-10T13:06:54.627Z",
    "extra": {},
}


def pipeline_file(repo: Path, issue: int | str) -> Path:
    return repo / "state" / "pipeline" / f"{issue}.json"


def write_file(repo: Path, issue: int | str, text: str) -> Path:
    path = pipeline_file(repo, issue)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_json(path: Path):
    return json.loads(path.read_text())


# --- the seed's example and its coercion table -------------------------------------------


def test_show_json_on_the_seed_example_is_the_public_view(repo):
    write_file(repo, 42, SEED_EXAMPLE)
    result = git_st("pipeline", "show", "42", "--format", "json", cwd=repo)
    assert result.returncode == 0, result
    view = json.loads(result.stdout)
    assert view == SEED_PUBLIC_VIEW
    assert "verdict" not in view and "branch" not in view


def test_show_internal_adds_verdict_and_branch(repo):
    write_file(repo, 42, SEED_EXAMPLE)
    result = st("pipeline", "show", "42", "--format", "json", "--internal", cwd=repo)
    assert result.returncode == 0, result
    view = json.loads(result.stdout)
    # review_passed "true" + qa_passed "false": either "false" → FAIL; branch is reserved.
    assert view == {**SEED_PUBLIC_VIEW, "verdict": "FAIL", "branch": None}


def test_seed_example_normalizes_to_exactly_the_table(repo):
    wrapper = json.loads(SEED_EXAMPLE)
    table_fields = ("current_phase", "active_agent", "issue_type", "pr_number", "started_at", "last_updated")
    expected = {name: SEED_PUBLIC_VIEW[name] for name in table_fields}
    assert normalize(wrapper["42"], wrapper) == {**expected, "verdict": "FAIL", "branch": None}


def test_show_text_and_list_on_the_seed_example(repo):
    write_file(repo, 42, SEED_EXAMPLE)
    shown = st("pipeline", "show", "42", cwd=repo)
    assert shown.returncode == 0, shown
    lines = {line.split()[0]: line.split(None, 1)[1] for line in shown.stdout.splitlines()[1:]}
    assert lines["current_phase"] == "building"
    assert lines["pr_number"] == "42"
    assert lines["review_passed"] == "true" and lines["qa_passed"] == "false"
    assert "verdict" not in lines

    listed = st("pipeline", "list", "--internal", cwd=repo)
    assert listed.returncode == 0, listed
    header, row = listed.stdout.splitlines()
    assert header.split() == ["ISSUE", "PHASE", "AGENT", "TYPE", "PR", "LAST", "UPDATED", "VERDICT"]
    assert row.split() == ["42", "building", "builder", "feature", "42", "2026-04-10T13:06:54.627Z", "FAIL"]

    as_json = st("pipeline", "list", "--format", "json", cwd=repo)
    assert json.loads(as_json.stdout) == [SEED_PUBLIC_VIEW]


def test_coercion_table_defaults_empty_values_and_fallbacks(repo):
    write_file(
        repo,
        7,
        json.dumps(
            {
                "7": {"active_agent": "", "pr_number": " 57abc", "qa_passed": "true", "future": {"x": 1}},
                "lastActivity": "2026-04-11T00:00:00.000Z",
            }
        ),
    )
    write_file(
        repo,
        8,
        json.dumps(
            {
                "8": {
                    "current_phase": "",
                    "pr_number": "abc",
                    "review_passed": "true",
                    "qa_passed": "true",
                    "started_at": "s",
                    "last_updated": "u",
                }
            }
        ),
    )
    write_file(repo, 9, json.dumps({"lastActivity": "2026-04-12T00:00:00.000Z"}))
    result = st("pipeline", "list", "--format", "json", "--internal", cwd=repo)
    assert result.returncode == 0, result
    views = {v["issue"]: v for v in json.loads(result.stdout)}
    assert sorted(views) == [7, 8, 9]
    seven, eight, nine = views[7], views[8], views[9]
    assert seven["current_phase"] == "unknown"  # default
    assert seven["active_agent"] is None  # "" → null
    assert seven["issue_type"] == "feature"  # default
    assert seven["pr_number"] == 57  # parseInt(" 57abc")
    assert seven["started_at"] is None
    assert seven["last_updated"] == "2026-04-11T00:00:00.000Z"  # falls back to lastActivity
    assert seven["verdict"] is None  # qa "true", review missing
    assert seven["extra"] == {"future": {"x": 1}}
    assert eight["current_phase"] == "unknown"  # "" → default
    assert eight["pr_number"] is None  # parseInt("abc") is NaN
    assert eight["verdict"] == "PASS"
    assert (eight["started_at"], eight["last_updated"]) == ("s", "u")  # passthrough; preferred
    assert nine["last_updated"] == "2026-04-12T00:00:00.000Z" and nine["current_phase"] == "unknown"


@pytest.mark.parametrize(
    ("review", "qa", "verdict"),
    [
        ("true", "true", "PASS"),
        ("true", "false", "FAIL"),
        ("false", "true", "FAIL"),
        ("false", None, "FAIL"),
        (None, "false", "FAIL"),
        ("true", None, None),
        (None, None, None),
        ("yes", "true", None),
        ("TRUE", "true", None),
    ],
)
def test_verdict_rule(review, qa, verdict):
    inner = {k: v for k, v in (("review_passed", review), ("qa_passed", qa)) if v is not None}
    assert normalize(inner)["verdict"] == verdict


# --- get / set / unset ------------------------------------------------------------------


def test_set_round_trip_keeps_unknown_fields_and_the_wrapper(repo):
    seeded = json.loads(SEED_EXAMPLE)
    seeded["42"]["future_field"] = {"kept": [1, "two"]}
    seeded["written_by_a_newer_script"] = True
    path = write_file(repo, 42, json.dumps(seeded))

    result = git_st("pipeline", "set", "42", "current_phase", "reviewing", cwd=repo)
    assert result.returncode == 0, result
    after = read_json(path)
    assert list(after) == ["42", "lastActivity", "heartbeat_pid", "written_by_a_newer_script"]
    assert after["heartbeat_pid"] == 47281 and after["written_by_a_newer_script"] is True
    inner = after["42"]
    assert inner["current_phase"] == "reviewing"
    assert inner["future_field"] == {"kept": [1, "two"]}
    assert list(inner) == list(seeded["42"])  # key order kept, nothing added or dropped
    for key, value in seeded["42"].items():
        if key not in ("current_phase", "last_updated"):
            assert inner[key] == value, key
    assert inner["last_updated"] != "2026-04-10T13:06:54.627Z"
    assert after["lastActivity"] == inner["last_updated"]

    shown = st("pipeline", "show", "42", "--format", "json", cwd=repo)
    assert json.loads(shown.stdout)["extra"] == {"future_field": {"kept": [1, "two"]}}


def test_set_creates_a_missing_file_in_the_wrapper_shape(repo):
    result = st("pipeline", "set", "#0042", "pr_number", "57", cwd=repo)
    assert result.returncode == 0, result
    data = read_json(pipeline_file(repo, 42))
    assert list(data) == ["42", "lastActivity"]
    assert data["42"]["pr_number"] == "57"
    assert data["42"]["last_updated"] == data["lastActivity"]
    assert len(data["lastActivity"]) == len("2026-04-10T13:06:54.627Z") and data["lastActivity"].endswith("Z")


def test_values_are_stored_in_the_seed_string_form(repo):
    for args in (
        ("pr_number", "0057"),
        ("plan_iterations", "3"),
        ("review_passed", "True"),
        ("--json", "qa_passed", "false"),
        ("--json", "review_fix_count", "2"),
        ("--json", "sub_issues", "[43, 44]"),
        ("--json", "steps", '{"plan": {"architect": {"status": "completed"}}}'),
        ("heartbeat_pid", "4242"),
        ("active_agent", ""),
    ):
        flags = [a for a in args if a == "--json"]
        rest = [a for a in args if a != "--json"]
        result = st("pipeline", "set", *flags, "42", *rest, cwd=repo)
        assert result.returncode == 0, result
    data = read_json(pipeline_file(repo, 42))
    inner = data["42"]
    assert inner["pr_number"] == "57"
    assert inner["plan_iterations"] == "3"
    assert inner["review_passed"] == "true" and inner["qa_passed"] == "false"
    assert inner["review_fix_count"] == "2"
    assert inner["sub_issues"] == [43, 44]
    assert inner["steps"] == {"plan": {"architect": {"status": "completed"}}}
    assert inner["active_agent"] == ""
    assert data["heartbeat_pid"] == 4242 and "heartbeat_pid" not in inner

    view = json.loads(st("pipeline", "show", "42", "--format", "json", "--internal", cwd=repo).stdout)
    assert (view["pr_number"], view["plan_iterations"], view["review_fix_count"]) == (57, 3, 2)
    assert (view["review_passed"], view["qa_passed"], view["verdict"]) == (True, False, "FAIL")
    assert view["active_agent"] is None


@pytest.mark.parametrize(
    "args",
    [
        ("42", "pr_number", "abc"),
        ("42", "pr_number", "0"),
        ("42", "plan_iterations", "-1"),
        ("42", "qa_passed", "maybe"),
        ("42", "sub_issues", "43,44"),
        ("--json", "42", "sub_issues", '["x"]'),
        ("--json", "42", "steps", "[]"),
        ("--json", "42", "pr_number", "null"),
        ("--json", "42", "current_phase", "{bad"),
        ("42", "verdict", "PASS"),
        ("42", "branch", "main"),
        ("42", "bad/field", "x"),
        ("42", "heartbeat_pid", "pid"),
        ("../42", "pr_number", "57"),
        ("4 2", "pr_number", "57"),
        ("0", "pr_number", "57"),
    ],
)
def test_rejected_input_exits_2_and_writes_nothing(repo, args):
    path = write_file(repo, 42, SEED_EXAMPLE)
    result = st("pipeline", "set", *args, cwd=repo)
    assert result.returncode == 2, result
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert path.read_text() == SEED_EXAMPLE
    assert sorted(p.name for p in path.parent.iterdir()) == ["42.json"]


def test_get_prints_the_stored_value(repo):
    write_file(repo, 42, SEED_EXAMPLE)
    assert st("pipeline", "get", "42", "pr_number", cwd=repo).stdout == "42\n"
    assert st("pipeline", "get", "42", "pr_number", "--json", cwd=repo).stdout == '"42"\n'
    assert st("pipeline", "get", "42", "sub_issues", cwd=repo).stdout == "[43,44]\n"
    assert st("pipeline", "get", "42", "heartbeat_pid", cwd=repo).stdout == "47281\n"
    assert st("pipeline", "get", "42", "lastActivity", cwd=repo).stdout == "2026-04-10T13:06:54.627Z\n"
    missing = st("pipeline", "get", "42", "no_such_field", cwd=repo)
    assert missing.returncode == 1 and missing.stdout == "" and "no_such_field" in missing.stderr
    no_file = st("pipeline", "get", "43", "pr_number", cwd=repo)
    assert no_file.returncode == 1 and no_file.stdout == ""


def test_unset_removes_a_field_and_refreshes_the_timestamps(repo):
    path = write_file(repo, 42, SEED_EXAMPLE)
    assert st("pipeline", "unset", "42", "pr_number", cwd=repo).returncode == 0
    data = read_json(path)
    assert "pr_number" not in data["42"] and data["lastActivity"] != "2026-04-10T13:06:54.627Z"
    again = st("pipeline", "unset", "42", "pr_number", cwd=repo)
    assert again.returncode == 1
    assert st("pipeline", "unset", "42", "heartbeat_pid", cwd=repo).returncode == 0
    assert "heartbeat_pid" not in read_json(path)


def test_eight_processes_setting_different_fields_at_once_all_land(repo):
    """Real processes, started together, twice: on a missing file, then on an existing one."""
    path = pipeline_file(repo, 42)
    for round_no in range(2):
        procs = [
            subprocess.Popen(
                ["git-st", "pipeline", "set", "42", f"field_{round_no}_{i}", f"value-{i}"],
                cwd=repo,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for i in range(8)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        inner = read_json(path)["42"]
        for i in range(8):
            assert inner[f"field_{round_no}_{i}"] == f"value-{i}"
    data = read_json(path)
    assert list(data) == ["42", "lastActivity"]
    assert len(data["42"]) == 16 + 1  # every field of both rounds, plus last_updated
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


# --- files that are not what they should be ----------------------------------------------


def test_broken_file_is_reported_with_its_location_and_never_rewritten(repo):
    bad = write_file(repo, 7, '{"7": {"current_phase": "x",}}')
    write_file(repo, 42, SEED_EXAMPLE)
    shown = st("pipeline", "show", "7", cwd=repo)
    assert shown.returncode == 1
    assert "state/pipeline/7.json:1:" in shown.stderr and "Traceback" not in shown.stderr

    listed = st("pipeline", "list", "--format", "json", cwd=repo)
    assert listed.returncode == 1
    assert [v["issue"] for v in json.loads(listed.stdout)] == [42]
    assert "state/pipeline/7.json:1:" in listed.stderr and "error[JSON]" in listed.stderr

    refused = st("pipeline", "set", "7", "current_phase", "y", cwd=repo)
    assert refused.returncode == 1
    assert bad.read_text() == '{"7": {"current_phase": "x",}}'


def test_a_file_holding_another_issue_is_refused(repo):
    path = write_file(repo, 42, json.dumps({"43": {"current_phase": "x"}}))
    shown = st("pipeline", "show", "42", cwd=repo)
    assert shown.returncode == 1 and "issue 43" in shown.stderr
    assert st("pipeline", "set", "42", "current_phase", "y", cwd=repo).returncode == 1
    assert read_json(path) == {"43": {"current_phase": "x"}}


def test_symlinked_pipeline_file_is_refused(repo, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(SEED_EXAMPLE)
    link = pipeline_file(repo, 42)
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    result = st("pipeline", "set", "42", "current_phase", "y", cwd=repo)
    assert result.returncode == 2 and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert outside.read_text() == SEED_EXAMPLE

    link.unlink()
    sidecar = link.with_name("42.json.lock")
    sidecar.symlink_to(outside)  # the lock must not follow it
    result = st("pipeline", "set", "42", "current_phase", "y", cwd=repo)
    assert result.returncode == 2 and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert outside.read_text() == SEED_EXAMPLE


def test_state_dir_follows_st_state_dir_and_linked_worktrees_share_it(repo, tmp_path):
    from tests.support import git

    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), cwd=repo)
    assert st("pipeline", "set", "42", "pr_number", "57", cwd=tmp_path / "side").returncode == 0
    assert read_json(pipeline_file(repo, 42))["42"]["pr_number"] == "57"

    elsewhere = tmp_path / "elsewhere"
    result = st("pipeline", "set", "42", "pr_number", "58", cwd=repo, env={"ST_STATE_DIR": str(elsewhere)})
    assert result.returncode == 0, result
    assert read_json(elsewhere / "pipeline" / "42.json")["42"]["pr_number"] == "58"
    assert read_json(pipeline_file(repo, 42))["42"]["pr_number"] == "57"


def test_first_pipeline_write_makes_git_ignore_the_state_dir(repo):
    from tests.support import git, st

    result = st("pipeline", "set", "42", "current_phase", "building", cwd=repo)
    assert result.returncode == 0, result
    assert (repo / "state" / "pipeline" / "42.json").is_file()
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""
    assert git("check-ignore", "state/pipeline/42.json", cwd=repo) == "state/pipeline/42.json"


def test_a_mistyped_seed_field_is_refused_with_the_field_it_may_mean(repo):
    """`pipeline set 12 status …` would have landed under extra, where no reader of the
    seed's current_phase looks: refused (exit 2, nothing written) with the field it may
    mean; --new-field stores a field of your own anyway."""
    for field, meant in (("status", "current_phase"), ("pr_numbr", "pr_number"), ("Review_Passed", "review_passed")):
        result = st("pipeline", "set", "12", field, "done", cwd=repo)
        assert result.returncode == 2, result
        assert f"error: '{field}' is not a pipeline field; did you mean {meant}?" in result.stderr
        assert f"fix: git st pipeline set 12 {meant} done" in result.stderr
        assert not (repo / "state" / "pipeline" / "12.json").exists()
    assert st("pipeline", "set", "12", "future_field", "x", cwd=repo).returncode == 0  # nothing like a seed field
    assert st("pipeline", "set", "12", "status", "done", "--new-field", cwd=repo).returncode == 0
    extra = json.loads(st("pipeline", "show", "12", "--format", "json", cwd=repo).stdout)["extra"]
    assert extra == {"future_field": "x", "status": "done"}
