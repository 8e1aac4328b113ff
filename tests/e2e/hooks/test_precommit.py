"""The pre-commit hook in real repositories: staged blobs (never the working tree),
append-only plans, lock sidecars and state files refused, the fast path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, env_without_coverage, git, mutate, ok, run, st

PLAN = Path(".step") / "st-plan.jsonl"


def commit(repo: Path, *args: str, message: str = "change"):
    return run(["git", "commit", "-q", "-m", message, *args], cwd=repo)


@pytest.fixture
def plan_repo(repo):
    """gitst's pre-commit hook installed, and a committed plan with two items."""
    ok(st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo))
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    mutate(repo, "add", "--id", "st-002", "--step", "second")
    git("add", "-A", cwd=repo)
    ok(commit(repo, message="plan"))
    return repo


def head_plan(repo: Path) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{PLAN.as_posix()}"], cwd=repo, capture_output=True, check=True).stdout


BROKEN_RECORD = b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":"nine","lane":"event","op":"set_status"}\n'


# -- must show 1: the index is what is checked -----------------------------------------------


def test_valid_working_tree_but_invalid_index_is_refused(plan_repo):
    repo = plan_repo
    good = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(good + BROKEN_RECORD)
    git("add", PLAN.as_posix(), cwd=repo)
    (repo / PLAN).write_bytes(good)  # the working tree is valid again, the index is not
    head = git("rev-parse", "HEAD", cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert f"{PLAN.as_posix()}:4:" in result.stderr  # the bad record's line in the staged blob
    assert "commit refused" in result.stderr
    assert git("rev-parse", "HEAD", cwd=repo) == head
    assert (repo / PLAN).read_bytes() == good  # nothing stashed or touched


def test_valid_index_but_invalid_working_tree_is_accepted(plan_repo):
    repo = plan_repo
    mutate(repo, "set-status", "st-001", "in_progress")
    git("add", PLAN.as_posix(), cwd=repo)
    staged = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(b"garbage that is not JSON\n")
    result = commit(repo)
    assert result.returncode == 0, result
    assert head_plan(repo) == staged
    assert (repo / PLAN).read_bytes() == b"garbage that is not JSON\n"


def test_commit_all_checks_what_git_will_commit(plan_repo):
    """`git commit -a` hands the hook a temporary index: the rewrite in it is seen."""
    repo = plan_repo
    data = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(data.replace(b'"first"', b'"FIRST"'))
    result = commit(repo, "-a")
    assert result.returncode != 0, result
    assert f"{PLAN.as_posix()}:2:" in result.stderr


# -- must show 2: append-only --------------------------------------------------------------------


def test_editing_an_earlier_plan_line_is_refused_naming_it(plan_repo):
    repo = plan_repo
    lines = (repo / PLAN).read_bytes().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if b'"first"' in line)
    lines[number - 1] = lines[number - 1].replace(b'"first"', b'"first, edited"')
    (repo / PLAN).write_bytes(b"".join(lines))
    git("add", PLAN.as_posix(), cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert f"{PLAN.as_posix()}:{number}:" in result.stderr
    assert "append-only" in result.stderr


def test_removing_the_last_line_is_refused(plan_repo):
    repo = plan_repo
    data = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1])
    git("add", PLAN.as_posix(), cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    last = data.count(b"\n")
    assert f"{PLAN.as_posix()}:{last}:" in result.stderr


def test_a_pure_append_passes(plan_repo):
    repo = plan_repo
    before = (repo / PLAN).read_bytes()
    mutate(repo, "add-comment", "st-002", "looks good")
    mutate(repo, "set-status", "st-002", "completed")
    git("add", PLAN.as_posix(), cwd=repo)
    result = commit(repo)
    assert result.returncode == 0, result
    assert result.stderr == ""
    assert head_plan(repo).startswith(before)


def test_a_new_plan_and_a_deleted_plan_pass(plan_repo):
    repo = plan_repo
    mutate(repo, "init", "--file", "sub/.step/other.jsonl")
    git("add", "-A", cwd=repo)
    ok(commit(repo, message="second plan"))
    git("rm", "-q", PLAN.as_posix(), cwd=repo)
    ok(commit(repo, message="plan done"))


# -- what a commit that extends the plan is checked for: what it appends ---------------------------


def _large_plan(records: int) -> tuple[bytes, int]:
    """A valid plan of ``records`` records (events on 20 items, a checkpoint every 50), and
    its watermark."""
    from gitst.plan.reducer import PlanState
    from gitst.plan.store import build_checkpoint, build_event, encode_record

    ts = "2026-02-09T20:00:00Z"
    state, out, seq = PlanState(), [], 0
    while len(out) < records:
        seq += 1
        if seq <= 20:
            item = {
                "id": f"st-{seq:03d}",
                "step": f"step {seq}",
                "status": "pending",
                "deps": [],
                "notes": "",
                "comments": [],
            }
            event = build_event("upsert", seq, {"item": item}, ts=ts)
        else:
            event = build_event("set_notes", seq, {"id": f"st-{seq % 20 + 1:03d}", "notes": f"note {seq}"}, ts=ts)
        state.apply_event(event)
        out.append(encode_record(event))
        if seq % 50 == 0 and len(out) < records:
            out.append(encode_record(build_checkpoint(state.items(), seq, ts=ts)))
    return b"".join(out), seq


def _event_line(seq: int, op: str, **fields) -> bytes:
    from gitst.plan.store import build_event, encode_record

    return encode_record(build_event(op, seq, fields, ts="2026-02-09T21:00:00Z"))


def test_appending_to_a_large_committed_plan_checks_the_appended_lines(repo):
    ok(st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo))
    mutate(repo, "init")
    data, high = _large_plan(20_000)
    (repo / PLAN).write_bytes(data)
    git("add", "-A", cwd=repo)
    ok(commit(repo, message="a 20,000-record plan"))  # new file: the full scan
    assert data.count(b"\n") == 20_000

    broken = (
        data
        + _event_line(high + 1, "set_notes", id="st-001", notes="fine")
        + _event_line(high + 2, "set_status", id="st-404", status="completed")
    )
    (repo / PLAN).write_bytes(broken)
    git("add", PLAN.as_posix(), cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo)
    refused = commit(repo)
    assert refused.returncode != 0, refused
    assert (
        f"{PLAN.as_posix()}:20002: error[ST_REPLAY_UNKNOWN_ID]: set_status references unknown id 'st-404'"
        in refused.stderr
    )
    assert f"{PLAN.as_posix()}:20001:" not in refused.stderr
    assert git("rev-parse", "HEAD", cwd=repo) == head

    valid = (
        data
        + _event_line(high + 1, "set_notes", id="st-001", notes="fine")
        + _event_line(high + 2, "set_status", id="st-002", status="in_progress")
    )
    (repo / PLAN).write_bytes(valid)
    git("add", PLAN.as_posix(), cwd=repo)
    accepted = commit(repo)
    assert accepted.returncode == 0, accepted
    assert head_plan(repo) == valid


def test_the_commit_check_covers_what_the_commit_adds_and_doctor_the_whole_history(plan_repo):
    """A broken line already committed (past the hook with --no-verify) does not block the
    next commit that only appends valid records; `git st doctor` still names it."""
    repo = plan_repo
    (repo / PLAN).write_bytes(b"not json\n" + (repo / PLAN).read_bytes())
    assert st("doctor", "--repair-seq", cwd=repo).returncode == 1  # appends a checkpoint; line 1 stays bad
    git("add", PLAN.as_posix(), cwd=repo)
    ok(commit(repo, "--no-verify", message="bypassed"))
    mutate(repo, "set-status", "st-001", "in_progress")
    git("add", PLAN.as_posix(), cwd=repo)
    ok(commit(repo))
    doctor = st("doctor", cwd=repo)
    assert doctor.returncode == 1
    assert f"{PLAN.as_posix()}:1: error[JSON]" in doctor.stderr


# -- SDLC state.json: transitions from HEAD's version ----------------------------------------------


def test_sdlc_state_transitions_are_checked_against_head(plan_repo):
    from gitst.schemas.catalog import load

    repo = plan_repo
    state = load("sdlc-state")["examples"][0]
    (repo / "state.json").write_text(json.dumps(state, indent=2) + "\n")
    git("add", "state.json", cwd=repo)
    ok(commit(repo, message="sdlc run"))

    legal = json.loads(json.dumps(state))
    legal["issues"]["ENG-102"]["status"] = "reviewing"
    legal["updated_at"] = "2026-03-04T17:00:00Z"
    (repo / "state.json").write_text(json.dumps(legal, indent=2) + "\n")
    git("add", "state.json", cwd=repo)
    ok(commit(repo, message="ENG-102 in review"))

    illegal = json.loads(json.dumps(legal))
    illegal["issues"]["ENG-101"]["status"] = "implementing"  # done -> implementing
    illegal["updated_at"] = "2026-03-04T18:00:00Z"
    (repo / "state.json").write_text(json.dumps(illegal, indent=2) + "\n")
    git("add", "state.json", cwd=repo)
    result = commit(repo, message="reopen ENG-101")
    assert result.returncode != 0, result
    assert "SDLC_STATUS_TRANSITION" in result.stderr and "ENG-101" in result.stderr


# -- must show 5: sidecars and state files ---------------------------------------------------------


def test_a_staged_lock_sidecar_is_refused(plan_repo):
    repo = plan_repo
    (repo / ".step" / "st-plan.jsonl.lock").write_text("")
    git("add", "-f", ".step/st-plan.jsonl.lock", cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert ".step/st-plan.jsonl.lock: error[HOOK_LOCK_SIDECAR_STAGED]" in result.stderr
    assert "fix: git rm --cached -- .step/st-plan.jsonl.lock" in result.stderr


def test_an_unrelated_lock_file_is_fine(plan_repo):
    repo = plan_repo
    (repo / "Cargo.lock").write_text("# not ours\n")
    (repo / "poetry.lock").write_text("# not ours\n")
    git("add", "Cargo.lock", "poetry.lock", cwd=repo)
    ok(commit(repo))


def test_a_staged_state_file_is_refused(plan_repo):
    repo = plan_repo
    target = repo / "state" / "pipeline" / "4.json"
    target.parent.mkdir(parents=True)
    target.write_text('{"4": {"current_phase": "building"}}\n')
    (repo / "state" / "notes.txt").write_text("runtime\n")
    git("add", "state", cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert "state/pipeline/4.json: error[HOOK_STATE_FILE_STAGED]" in result.stderr
    assert "state/notes.txt: error[HOOK_STATE_FILE_STAGED]" in result.stderr
    assert "git rm --cached -- state/pipeline/4.json" in result.stderr


def test_a_configured_state_dir_is_refused_too(plan_repo):
    repo = plan_repo
    git("config", "st.stateDir", "var/run-state", cwd=repo)
    (repo / "var" / "run-state").mkdir(parents=True)
    (repo / "var" / "run-state" / "x.json").write_text("{}\n")
    (repo / "state").mkdir()
    (repo / "state" / "not-the-state-dir.txt").write_text("plain file\n")
    git("add", "var", "state", cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert "var/run-state/x.json: error[HOOK_STATE_FILE_STAGED]" in result.stderr
    assert "not-the-state-dir" not in result.stderr


def test_a_plan_whose_sidecar_is_not_ignored_is_refused_with_the_fix(plan_repo):
    from gitst.plan.store import build_event, encode_record, watermark

    repo = plan_repo
    git("rm", "-q", ".step/.gitignore", cwd=repo)  # the ignore rule goes away
    data = (repo / PLAN).read_bytes()
    high = watermark(json.loads(x) for x in data.splitlines())
    (repo / PLAN).write_bytes(data + encode_record(build_event("set_notes", high + 1, {"id": "st-001", "notes": "n"})))
    git("add", PLAN.as_posix(), cwd=repo)
    result = commit(repo)
    assert result.returncode != 0, result
    assert f"{PLAN.as_posix()}: error[HOOK_SIDECAR_NOT_IGNORED]" in result.stderr
    assert "fix: git st init --file .step/st-plan.jsonl" in result.stderr


# -- must show 3 (part): a linked worktree's commit runs the hooks --------------------------------


def test_a_commit_in_a_linked_worktree_runs_the_hook(plan_repo, tmp_path):
    repo = plan_repo
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=repo)
    data = (wt / PLAN).read_bytes()
    (wt / PLAN).write_bytes(data.replace(b'"second"', b'"2nd"'))
    git("add", PLAN.as_posix(), cwd=wt)
    result = commit(wt)
    assert result.returncode != 0, result
    assert "append-only" in result.stderr
    git("reset", "-q", "--hard", cwd=wt)
    mutate(wt, "add-comment", "st-001", "from the worktree")
    git("add", PLAN.as_posix(), cwd=wt)
    ok(commit(wt))


# -- the fast path ------------------------------------------------------------------------------

HEAVY = (
    "click",
    "pygit2",
    "jsonschema",
    "jsonschema_rs",
    "filelock",
    "orjson",
    "subprocess",
    "dataclasses",
    "gitst.git.objects",
    "gitst.validate.files",
    "gitst.plan",
    "gitst.hooks.checks",
)

PROBE = f"""
import sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from gitst.cli.main import main
code = main(["hook", "pre-commit"])
print(code, [m for m in {HEAVY!r} if m in sys.modules])
"""


def test_nothing_relevant_staged_returns_before_any_heavy_import(plan_repo):
    repo = plan_repo
    (repo / "README").write_text("edited\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.json").write_text("{}\n")
    git("add", "-A", cwd=repo)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=repo, capture_output=True, text=True, check=True, env=env_without_coverage()
    ).stdout
    assert out.strip() == "0 []"
    # and with nothing staged at all
    git("commit", "-q", "--no-verify", "-m", "x", cwd=repo)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=repo, capture_output=True, text=True, check=True, env=env_without_coverage()
    ).stdout
    assert out.strip() == "0 []"


def test_the_hook_by_hand_from_a_subdirectory(plan_repo):
    repo = plan_repo
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / PLAN).write_bytes((repo / PLAN).read_bytes().replace(b'"second"', b'"zweite"'))
    git("add", PLAN.as_posix(), cwd=repo)
    result = st("hook", "pre-commit", cwd=repo / "deep" / "er")
    assert result.returncode == 1, result
    assert f"{PLAN.as_posix()}:" in result.stderr


def test_unknown_hook_is_a_usage_error(repo):
    result = st("hook", "pre-comit", cwd=repo)
    assert result.returncode == 2, result
    assert "unknown hook 'pre-comit'" in result.stderr
    assert "Traceback" not in result.stderr
