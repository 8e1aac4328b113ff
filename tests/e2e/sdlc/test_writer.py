"""`git st sdlc`: seed 003's state.json written through its own rules — a whole run from
BOOTSTRAP to COMPLETED that validates (with `--against` the previous commit) at every step,
and every illegal move refused with exit 2 and nothing written."""

from __future__ import annotations

import json
import multiprocessing
import os
import re

import pytest

from gitst.core import timestamps
from tests.e2e.test_diagnostic_codes import documented_codes
from tests.support import git, read_json, st, st_quick

IN_TEXT = re.compile(r"error\[([A-Z_]+)\]")

RUN = [
    ["init", "checkout-v2", "--prd-url", "https://www.notion.so/acme/Checkout-v2-PRD"],
    ["bootstrap", "checkout-api", "--language", "go", "--docs", "acme/checkout-api#12"],
    ["bootstrap", "checkout-web", "--language", "typescript"],
    ["phase", "next"],
    ["artifact", "scoping_doc", "https://www.notion.so/acme/Checkout-v2-Scoping"],
    ["phase-status", "awaiting_approval"],
    ["phase", "PLANNING"],
    ["artifact", "pert", "https://www.notion.so/acme/Checkout-v2-PERT"],
    ["phase-status", "awaiting_approval", "--phase", "PLANNING"],
    ["phase", "next"],
    ["issue", "add", "ENG-101", "--repo", "checkout-api", "--title", "Payment intents endpoint"],
    ["issue", "add", "ENG-102", "--repo", "checkout-web", "--title", "Pay button", "--blocked-by", "ENG-101"],
    ["issue", "add", "ENG-103", "--repo", "checkout-web", "--title", "Receipt page", "--blocked-by", "ENG-101,ENG-102"],
    ["phase", "next"],
    ["issue", "set", "ENG-101", "--status", "implementing"],
    ["invocation", "implementer", "--model", "sonnet", "--repo", "checkout-api", "--issue", "ENG-101",
     "--duration-s", "840.5", "--tokens-in", "182000", "--tokens-out", "12400"],
    ["issue", "set", "ENG-101", "--status", "reviewing", "--pr", "acme/checkout-api#31", "--review-iteration"],
    ["invocation", "reviewer", "--model", "opus", "--duration-s", "120",
     "--tokens-in", "40000", "--tokens-out", "2100"],
    ["issue", "set", "ENG-101", "--status", "implementing"],  # REQUEST_CHANGES: re-implement
    ["issue", "set", "ENG-101", "--status", "reviewing", "--review-iteration"],
    ["issue", "set", "ENG-101", "--status", "awaiting_human"],
    ["issue", "set", "ENG-101", "--status", "done", "--human-iteration"],  # ENG-102 -> ready; ENG-103 still blocked
    ["issue", "set", "ENG-102", "--status", "implementing"],
    ["issue", "set", "ENG-102", "--status", "reviewing", "--pr", "acme/checkout-web#7"],
    ["issue", "set", "ENG-102", "--status", "awaiting_human"],
    ["issue", "set", "ENG-102", "--status", "done"],  # ENG-103 -> ready
    ["issue", "set", "ENG-103", "--status", "implementing"],
    ["issue", "set", "ENG-103", "--status", "failed"],
    ["phase", "next"],
]  # fmt: skip


@pytest.mark.slow  # 29 writes, each validated against the one before: starts first (tests/conftest.py)
def test_a_run_driven_only_by_git_st_sdlc_validates_at_every_step_and_between_commits(repo):
    state = repo / "state.json"
    stamps = []
    phases_seen = []
    for step, args in enumerate(RUN):
        done = st("sdlc", *args, cwd=repo)
        assert done.returncode == 0, (args, done)
        assert done.stderr == "", (args, done.stderr)  # not even a warning
        checked = st("validate", "--strict", "--against", "HEAD", "state.json", cwd=repo)
        assert checked.returncode == 0, (args, checked)
        git("add", "state.json", cwd=repo)
        git("commit", "-q", "-m", f"sdlc step {step}: {' '.join(args[:2])}", cwd=repo)
        written = read_json(state)
        stamps.append(timestamps.parse(written["updated_at"]))
        phases_seen.append(written["phase"])
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # refreshed on every write
    assert list(dict.fromkeys(phases_seen)) == ["BOOTSTRAP", "DESIGN", "PLANNING", "TRACKING", "EXECUTING", "COMPLETED"]
    assert len(git("rev-list", "HEAD", cwd=repo).splitlines()) == len(RUN) + 1  # one commit per write
    final = read_json(state)
    assert final["phase"] == "COMPLETED" and final["phase_status"] == "completed"
    assert final["run_id"].endswith("-checkout-v2") and re.match(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}-", final["run_id"])
    assert {k: v["status"] for k, v in final["issues"].items()} == {
        "ENG-101": "done",
        "ENG-102": "done",
        "ENG-103": "failed",
    }
    assert final["issues"]["ENG-101"]["pr_number"] == 31 and final["issues"]["ENG-101"]["review_iterations"] == 2
    assert (
        final["artifacts"]["pert"].endswith("PERT") and final["bootstrap"]["languages"]["checkout-web"] == "typescript"
    )
    phases = final["metrics"]["phases"]
    assert list(phases) == ["BOOTSTRAP", "DESIGN", "PLANNING", "TRACKING", "EXECUTING", "COMPLETED"]
    assert all(entry["ended_at"] is not None and entry["duration_s"] is not None for entry in phases.values())
    totals = final["metrics"]["totals"]
    assert totals["agent_spawns"] == 2 and totals["issues_created"] == 3
    assert totals["prs_created"] == 2 and totals["prs_merged"] == 2
    assert totals["review_iterations"] == {"agent": 2, "human": 1}
    started = timestamps.parse(final["metrics"]["started_at"])
    assert abs(totals["duration_s"] - (timestamps.parse(phases["COMPLETED"]["started_at"]) - started)) < 0.002
    [implementer, _] = final["metrics"]["agent_invocations"]
    assert implementer["tokens"] == {"input": 182000, "output": 12400} and implementer["duration_s"] == 840.5


@pytest.fixture
def running(repo):
    """A run in EXECUTING with ENG-1 done (PR #5), ENG-2 ready, ENG-3 implementing, ENG-4 blocked by ENG-3.

    Set up through the CLI's own entry point in this process (no interpreter start per write);
    what the tests check runs as the real `git-st`."""
    for args in (
        ["init", "2026-03-02-run"],
        *[["phase", "next"]] * 4,
        ["issue", "add", "ENG-1", "--repo", "api", "--title", "one", "--pr", "acme/api#5"],
        ["issue", "add", "ENG-2", "--repo", "api", "--title", "two"],
        ["issue", "add", "ENG-3", "--repo", "api", "--title", "three"],
        ["issue", "add", "ENG-4", "--repo", "api", "--title", "four", "--blocked-by", "ENG-3"],
        *[["issue", "set", "ENG-1", "--status", s] for s in ("implementing", "reviewing", "awaiting_human", "done")],
        ["issue", "set", "ENG-3", "--status", "implementing"],
    ):
        st_quick("sdlc", *args, cwd=repo)
    return repo


REFUSALS = [
    (["phase", "DESIGN"], "SDLC_PHASE_BACKWARDS"),
    (["issue", "set", "ENG-1", "--status", "implementing"], "SDLC_STATUS_TRANSITION"),
    (["issue", "set", "ENG-2", "--status", "reviewing"], "SDLC_STATUS_STEP"),
    (["issue", "set", "ENG-4", "--status", "ready"], "SDLC_BLOCKER_NOT_DONE"),
    (["issue", "set", "ENG-2", "--status", "blocked"], "SDLC_STATUS_TRANSITION"),
    (["issue", "set", "ENG-2", "--blocked-by", "ENG-3"], "SDLC_BLOCKER_NOT_DONE"),
    (["issue", "set", "ENG-3", "--blocked-by", "ENG-4"], "SDLC_BLOCKED_CYCLE"),
    (["issue", "add", "ENG-5", "--repo", "api", "--title", "x", "--blocked-by", "ENG-99"], "SDLC_BLOCKED_BY"),
    (["issue", "add", "eng-5", "--repo", "api", "--title", "x"], "SDLC_ISSUE_ID"),
    (["issue", "set", "ENG-2", "--pr", "https://github.com/acme/api/pull/9"], "SDLC_PR"),
    (["issue", "set", "ENG-2", "--status", "shipped"], "SDLC_ENUM"),
    (["phase-status", "paused"], "SDLC_ENUM"),
    (["bootstrap", "api", "--language", "rust"], "SDLC_ENUM"),
    (["invocation", "x", "--started-at", "March 3rd"], "TIMESTAMP"),
]


@pytest.mark.parametrize("args, code", REFUSALS, ids=[f"{code}:{' '.join(args[:3])}" for args, code in REFUSALS])
def test_an_illegal_write_is_refused_with_exit_2_and_nothing_written(running, args, code):
    state = running / "state.json"
    before = state.read_bytes()
    refused = st("sdlc", *args, cwd=running)
    assert refused.returncode == 2, refused
    assert code in IN_TEXT.findall(refused.stderr), refused.stderr
    assert "error: nothing written to state.json" in refused.stderr and "Traceback" not in refused.stderr
    assert refused.stdout == ""
    assert state.read_bytes() == before
    assert sorted(p.name for p in running.iterdir()) == [".git", "README", "state.json"]  # no temp file left
    assert set(IN_TEXT.findall(refused.stderr)) <= set(documented_codes())


def test_phases_move_one_step_and_statuses_one_edge(running):
    skip = st("sdlc", "phase", "COMPLETED", cwd=running)
    assert skip.returncode == 0  # EXECUTING -> COMPLETED is the next phase
    fresh = running / "other.json"
    assert st("sdlc", "init", "2026-03-02-other", "--file", "other.json", cwd=running).returncode == 0
    jump = st("sdlc", "phase", "TRACKING", "--file", "other.json", cwd=running)
    assert jump.returncode == 2 and "error[SDLC_PHASE_SKIP]: phase BOOTSTRAP is followed by DESIGN" in jump.stderr
    assert "fix: git st sdlc phase DESIGN" in jump.stderr
    assert read_json(fresh)["phase"] == "BOOTSTRAP"
    done = st("sdlc", "phase", "next", cwd=running)
    assert done.returncode == 2 and "there is no next phase" in done.stderr


def test_blocked_becomes_ready_in_the_write_that_finishes_the_last_blocker(running):
    for status in ("reviewing", "awaiting_human"):
        assert st("sdlc", "issue", "set", "ENG-3", "--status", status, cwd=running).returncode == 0
    assert read_json(running / "state.json")["issues"]["ENG-4"]["status"] == "blocked"
    done = st("sdlc", "issue", "set", "ENG-3", "--status", "done", cwd=running)
    assert done.stdout.splitlines() == [
        "ENG-3: awaiting_human -> done",
        "ENG-4: blocked -> ready (every blocker is done)",
    ]
    assert read_json(running / "state.json")["issues"]["ENG-4"]["status"] == "ready"


def test_unknown_fields_survive_every_write_and_json_output_is_the_file(running):
    state = running / "state.json"
    document = json.loads(state.read_text())
    document["x-orchestrator"] = {"host": "ci-3"}
    document["issues"]["ENG-2"]["labels"] = ["frontend"]
    state.write_text(json.dumps(document))
    assert st("sdlc", "issue", "set", "ENG-2", "--status", "implementing", cwd=running).returncode == 0
    written = read_json(state)
    assert written["x-orchestrator"] == {"host": "ci-3"} and written["issues"]["ENG-2"]["labels"] == ["frontend"]
    shown = st("sdlc", "show", "--format", "json", cwd=running)
    assert json.loads(shown.stdout) == written
    text = st("sdlc", "show", cwd=running).stdout
    assert "phase EXECUTING (in_progress)" in text and "ready: -" in text
    assert re.search(r"^ENG-4 +blocked +api +- +ENG-3 +four$", text, re.M), text
    again = st("sdlc", "issue", "set", "ENG-2", "--status", "implementing", "--format", "json", cwd=running)
    assert json.loads(again.stdout)["changed"] is False and read_json(state) == written  # nothing to change


def test_the_lock_lives_in_the_git_dir_and_nothing_but_state_json_shows_in_git_status(running):
    assert git("status", "--porcelain", cwd=running).split() == ["??", "state.json"]
    assert list((running / ".git" / "gitst").glob("sdlc-*.lock"))


def test_a_broken_or_hostile_file_is_refused(running, tmp_path):
    state = running / "state.json"
    state.write_text('{"run_id": ')
    broken = st("sdlc", "phase-status", "awaiting_human", cwd=running)
    assert broken.returncode == 1 and "state.json:1:" in broken.stderr and "error[JSON]" in broken.stderr
    assert st("sdlc", "show", cwd=running).returncode == 1
    state.unlink()
    missing = st("sdlc", "show", cwd=running)
    assert missing.returncode == 1 and "no SDLC state at state.json" in missing.stderr
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    state.symlink_to(target)
    linked = st("sdlc", "init", "run", cwd=running)
    assert linked.returncode == 2 and "is a symbolic link" in linked.stderr
    assert target.read_text() == "{}"
    state.unlink()
    assert st("sdlc", "init", "Bad Run", cwd=running).returncode == 2  # SDLC_RUN_ID: not created
    assert not state.exists()
    assert st("sdlc", "init", "run", cwd=running).returncode == 0
    assert st("sdlc", "init", "run", cwd=running).returncode == 2  # one file, one run


def test_the_file_comes_from_the_settings(repo):
    git("config", "st.sdlcState", "sdlc/state.json", cwd=repo)
    (repo / "sub").mkdir()
    assert st("sdlc", "init", "r", cwd=repo / "sub").returncode == 0
    assert (repo / "sdlc" / "state.json").exists()
    env = {"ST_SDLC_STATE": "elsewhere.json"}
    assert st("sdlc", "init", "r", cwd=repo, env=env).returncode == 0
    assert (repo / "elsewhere.json").exists()


def _spawn(args) -> None:
    path, worker = args
    from gitst.sdlc import writer

    for index in range(5):
        writer.record_invocation(path, f"agent-{worker}", model="opus", duration_s=index)


def test_eight_processes_writing_at_once_lose_no_write_and_every_version_is_valid(running):
    path = running / "state.json"
    with multiprocessing.get_context("fork").Pool(8) as pool:
        pool.map(_spawn, [(path, worker) for worker in range(8)])
    final = read_json(path)
    invocations = final["metrics"]["agent_invocations"]
    assert len(invocations) == 40 and final["metrics"]["totals"]["agent_spawns"] == 40
    assert {i["agent"] for i in invocations} == {f"agent-{w}" for w in range(8)}
    assert st("validate", "--strict", "state.json", cwd=running).returncode == 0
    assert not [p for p in os.listdir(running) if p.startswith(".state.json")]


def test_a_backward_phase_is_one_error_with_its_fix(running):
    """Moving EXECUTING back to DESIGN also leaves metrics of phases "after" DESIGN; those
    follow from the move and are not reported as problems of their own."""
    before = (running / "state.json").read_bytes()
    refused = st("sdlc", "phase", "DESIGN", cwd=running)
    assert refused.returncode == 2, refused
    assert IN_TEXT.findall(refused.stderr) == ["SDLC_PHASE_BACKWARDS"], refused.stderr
    assert "phase moved back from EXECUTING to DESIGN; phases only move forward" in refused.stderr
    assert "fix: record more work in EXECUTING" in refused.stderr
    assert "the change breaks 1 rule of seed 003" in refused.stderr
    assert (running / "state.json").read_bytes() == before
