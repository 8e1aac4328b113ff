"""Messages a person reads from checks: a `state.json` that is not an SDLC run is left alone
(also by the real pre-commit hook), enum errors name every value and the nearest one, the
append-only error shows where two lines differ, diagnostics come in reading order, no
Python type name reaches a user, and every `--format json` is one style."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import git, git_st, mutate, ok, run, st

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"
SDLC_GOOD = (SEEDS / "003" / "state.json").read_bytes()


def _commit(repo: Path, message: str):
    return run(["git", "commit", "-q", "-m", message], cwd=repo)


def test_an_unrelated_state_json_passes_the_pre_commit_hook(repo):
    ok(st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo))
    store = repo / "web" / "src" / "store"
    store.mkdir(parents=True)
    (store / "state.json").write_text('{"todos": [], "filter": "all"}\n')
    (repo / "config").mkdir()
    (repo / "config" / "state.json").write_text("[1, 2, 3]\n")  # not even an object
    git("add", "-A", cwd=repo)
    committed = _commit(repo, "a web app's store")
    assert committed.returncode == 0, committed
    assert "run_id" not in committed.stderr
    checked = git_st("validate", cwd=repo)
    assert checked.returncode == 0, checked
    assert "web/src/store/state.json  (matches the sdlc-state path pattern" in checked.stdout
    assert "`PATH st-kind=sdlc-state` in .gitattributes" in checked.stdout
    # a real SDLC run next to it is still checked, and by attribute the store is checked too
    (repo / "runs").mkdir()
    (repo / "runs" / "state.json").write_bytes(SDLC_GOOD)
    (repo / ".gitattributes").write_text("web/src/store/state.json st-kind=sdlc-state\n")
    git("add", "-A", cwd=repo)  # with no path, validate checks the tracked files
    claimed = git_st("validate", cwd=repo)
    assert claimed.returncode == 1
    assert "ok    sdlc-state  runs/state.json" in claimed.stdout
    assert "web/src/store/state.json:1:1: error[SCHEMA]" in claimed.stderr


def test_a_state_json_that_may_not_be_an_sdlc_run_says_how_to_opt_out(repo):
    (repo / "app").mkdir()
    (repo / "app" / "state.json").write_text('{"phase": "loading", "user": null}\n')
    result = git_st("validate", "app/state.json", cwd=repo)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[1] == (
        "  fix: not kind sdlc-state? `app/state.json -st-kind` in .gitattributes stops gitst checking it"
    )
    assert result.stderr.count("-st-kind") == 1  # said once, not per finding
    (repo / ".gitattributes").write_text("app/state.json -st-kind\n")
    assert git_st("validate", "app/state.json", cwd=repo).returncode == 0


def test_enum_errors_list_every_value_and_the_nearest_one(repo):
    data = json.loads(SDLC_GOOD)
    first = next(iter(data["issues"]))
    data["issues"][first]["status"] = "doen"
    (repo / "state.json").write_text(json.dumps(data, indent=2))
    result = git_st("validate", "state.json", cwd=repo)
    assert result.returncode == 1
    assert (
        f'/issues/{first}/status: "doen" is not one of "blocked", "ready", "implementing", "reviewing", '
        '"awaiting_human", "done", "failed"; did you mean "done"?'
    ) in result.stderr


def test_the_append_only_error_shows_where_the_two_lines_differ(repo):
    ok(st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo))
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-001", "--step", "Write the first draft of the design")
    git("add", "-A", cwd=repo)
    assert _commit(repo, "plan").returncode == 0
    plan = repo / ".step" / "st-plan.jsonl"
    line = plan.read_bytes().splitlines()[1]
    column = line.index(b"first") + 1
    plan.write_bytes(plan.read_bytes().replace(b"the first draft", b"the final draft"))
    git("add", "-A", cwd=repo)
    refused = _commit(repo, "rewrite")
    assert refused.returncode != 0
    report = refused.stderr
    assert f".step/st-plan.jsonl:2:{column + 2}: error[ST_NOT_APPEND_ONLY]: line 2 differs" in report
    assert f"at column {column + 2}" in report
    assert "(was: …" in report and "the first draft" in report and "now: …" in report and "the final draft" in report


def test_diagnostics_come_in_reading_order_and_name_json_types(repo):
    mutate(repo, "init")
    mutate(repo, "add", "--step", "a")
    plan = repo / ".step" / "st-plan.jsonl"
    plan.write_bytes(
        plan.read_bytes()
        + b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":4,"lane":"event","op":"set_notes","id":"st-001","notes":5}\n'
        + b"[1]\n"
        + b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":3,"lane":"event","op":"set_notes","id":"st-001","notes":null}\n'
    )
    result = git_st("validate", ".step/st-plan.jsonl", cwd=repo)
    assert result.returncode == 1
    positions = [tuple(int(n) for n in line.split(":")[1:3] if n.isdigit()) for line in result.stderr.splitlines()]
    assert positions == sorted(positions) and len(positions) >= 3
    assert "NoneType" not in result.stderr and " int" not in result.stderr and " list" not in result.stderr
    imported = repo / "items.json"
    imported.write_text('[{"id": "st-9", "step": null}]')
    refused = git_st("import-plan", str(imported), cwd=repo)
    assert refused.returncode == 2
    assert "got null" in refused.stderr and "NoneType" not in refused.stderr


def test_every_format_json_is_one_line_in_a_pipe_and_pipeline_get_takes_format_json(repo):
    mutate(repo, "init")
    commands = [
        ("show", "--format", "json"),
        ("ready", "--format", "json"),
        ("doctor", "--format", "json"),
        ("validate", "--format", "json"),
        ("schema", "list", "--format", "json"),
        ("hooks", "status", "--format", "json"),
        ("lock", "list", "--format", "json"),
        ("sessions", "--format", "json"),
        ("pipeline", "list", "--format", "json"),
    ]
    for args in commands:
        result = git_st(*args, cwd=repo)
        assert result.returncode in (0, 1), (args, result)
        assert result.stdout.count("\n") == 1, (args, result.stdout[:200])
        json.loads(result.stdout)
    assert git_st("pipeline", "set", "7", "steps", '{"a":1}', "--json", cwd=repo).returncode == 0
    assert git_st("pipeline", "get", "7", "steps", "--format", "json", cwd=repo).stdout == '{"a":1}\n'
    assert git_st("pipeline", "get", "7", "current_phase", cwd=repo).returncode == 1
    assert git_st("pipeline", "set", "7", "current_phase", "design", cwd=repo).returncode == 0
    assert git_st("pipeline", "get", "7", "current_phase", cwd=repo).stdout == "design\n"
    assert git_st("pipeline", "get", "7", "current_phase", "--format", "json", cwd=repo).stdout == '"design"\n'
    assert git_st("pipeline", "get", "7", "current_phase", "--json", cwd=repo).stdout == '"design"\n'  # old spelling
    assert "--json" not in git_st("pipeline", "get", "-h", cwd=repo).stdout


def test_schema_errors_are_in_gitsts_words_and_a_oneof_names_its_deepest_branch(repo):
    """No schema text leaks: a `oneOf` none of whose branches matched is reported as the
    error of the branch that got furthest (check-jsonschema's "best deep match"); a `not`
    that only a wrong type passed adds nothing to the type error."""
    locks, circuits = repo / "state" / "locks", repo / "state" / "circuit"
    locks.mkdir(parents=True)
    circuits.mkdir(parents=True)
    owner = {"session": "s1", "pid": "x", "host": "h", "actor": "me"}
    lock = {"version": 1, "resource": "deploy", "token": 1, "owner": owner, "acquired_at": "2026-04-10T13:00:00.000Z"}
    lock |= {"expires_at": "2026-04-10T13:30:00.000Z", "ttl": 1800}
    (locks / "deploy.json").write_text(json.dumps(lock))
    (circuits / "svc.json").write_text(json.dumps({"version": 1, "service": 12.5, "state": "closed", "failures": 0}))
    (circuits / "two.json").write_text(json.dumps({"version": 1, "service": "a..b", "state": "closed", "failures": 0}))
    result = st("validate", "state/locks/deploy.json", "state/circuit/svc.json", "state/circuit/two.json", cwd=repo)
    assert result.returncode == 1, result
    lines = [line for line in result.stderr.splitlines() if "error[" in line]
    assert lines == [
        'state/locks/deploy.json:1:84: error[SCHEMA]: /owner/pid: "x" is not an integer',
        "state/circuit/svc.json:1:27: error[SCHEMA]: /service: 12.5 is not a string",
        'state/circuit/two.json:1:27: error[SCHEMA]: /service: "a..b" must not match the pattern \\.\\.',
    ], result.stderr
    assert "oneOf" not in result.stderr and "is not allowed for" not in result.stderr
