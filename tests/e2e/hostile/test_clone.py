"""A cloned repository is untrusted input (docs/security.md): each case below is a real
``git clone`` of a repository that commits what an attacker would (symbolic links where the
plan, its directory, its ignore file or the state dir belong; state files with fake owners
and PR numbers). Every test asserts the documented exit code, ``error:`` with a fix, no
traceback, a sentinel directory outside the clone left byte for byte as it was, and nothing
inside the clone lost.

Covered elsewhere, by issue 11 (tests/e2e/parallel/): a ``worktree add`` killed between
``git worktree add`` and the registry write, and ``worktree remove N --force`` aimed at another
live session's worktree through a registry entry.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support import (
    assert_refused,
    clone_of,
    git,
    make_sentinel,
    ok,
    session_env,
    snapshot,
    st,
)

PLAN_COMMANDS = [
    ["add", "x"],
    ["set-status", "st-001", "done"],
    ["add-comment", "st-001", "hi"],
    ["remove", "st-001"],
    ["show"],
    ["ready"],
    ["export"],
    ["emit-update-plan"],
    ["doctor"],
    ["doctor", "--repair-seq"],
]


@pytest.fixture
def outside(tmp_path):
    return make_sentinel(tmp_path / "outside")


def unchanged(clone) -> None:
    """Nothing the clone tracks was changed, removed or replaced (no data lost inside)."""
    assert git("status", "--porcelain", "--untracked-files=no", cwd=clone) == ""


def test_init_never_copies_a_linked_gitignore_into_the_repository(tmp_path, outside):
    def build(origin):
        (origin / ".step").mkdir()
        (origin / ".step" / ".gitignore").symlink_to(outside / "secret")

    clone = clone_of(tmp_path, "clone", build)
    before = snapshot(outside)
    result = st("init", cwd=clone)
    assert_refused(result, 2)
    assert ".step/.gitignore" in result.stderr and "symbolic link" in result.stderr
    assert (clone / ".step" / ".gitignore").is_symlink()  # not replaced by a copy of the secret
    assert not (clone / ".step" / "st-plan.jsonl").exists()
    assert "SENTINEL-SECRET" not in result.stdout + result.stderr
    assert snapshot(outside) == before
    unchanged(clone)


def test_a_plan_linked_outside_is_never_written_read_or_set_aside(tmp_path, outside):
    def build(origin):
        (origin / ".step").mkdir()
        (origin / ".step" / ".gitignore").write_text("/st-plan.jsonl.lock\n/st-plan.jsonl.torn-*\n")
        (origin / ".step" / "st-plan.jsonl").symlink_to(outside / "no-newline")

    clone = clone_of(tmp_path, "clone", build)
    before = snapshot(outside)
    for args in [["init"], *PLAN_COMMANDS]:
        result = st(*args, cwd=clone)
        assert_refused(result, 2)
        assert "refusing to use .step/st-plan.jsonl" in result.stderr, result
    assert snapshot(outside) == before  # not truncated, its bytes copied nowhere
    assert sorted(os.listdir(clone / ".step")) == [".gitignore", "st-plan.jsonl"]  # no .torn-*, no .lock
    unchanged(clone)


def test_a_linked_plan_directory_is_refused_before_the_sidecar_check(tmp_path, outside):
    def build(origin):
        (origin / ".step").symlink_to(outside / "empty-dir")

    clone = clone_of(tmp_path, "clone", build)
    before = snapshot(outside)
    for args in [["init"], ["add", "x"], ["show"], ["doctor"]]:
        result = st(*args, cwd=clone)
        assert_refused(result, 2)
        assert ".step is a symbolic link" in result.stderr, result
    assert snapshot(outside) == before and not os.listdir(outside / "empty-dir")
    unchanged(clone)


def test_a_plan_linked_to_dev_zero_never_exhausts_memory(tmp_path, outside):
    def build(origin):
        (origin / ".step").mkdir()
        (origin / ".step" / "st-plan.jsonl").symlink_to("/dev/zero")

    clone = clone_of(tmp_path, "clone", build)
    for args in (["doctor"], ["show"], ["export"]):
        assert_refused(st(*args, cwd=clone, timeout=30), 2)
    result = st("validate", cwd=clone, timeout=30)
    assert result.returncode == 1 and "error[SYMLINK]" in result.stderr and "Traceback" not in result.stderr, result
    assert "fix: " in result.stderr
    unchanged(clone)


def test_post_merge_does_not_follow_a_plan_link_a_pull_brings(tmp_path, outside):
    clone = clone_of(tmp_path, "clone", lambda o: (o / "README").write_text("v1\n"))
    origin = tmp_path / "clone-origin"
    before = snapshot(outside)
    ok(st("hooks", "install", cwd=clone))
    (origin / ".step").mkdir()
    (origin / ".step" / "st-plan.jsonl").symlink_to("/dev/zero")
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "link the plan to /dev/zero", cwd=origin)
    pulled = subprocess_git(["pull", "-q", "--no-rebase"], clone)
    assert pulled.returncode == 0, pulled  # git's own pull succeeded; the hook reported, quickly
    assert "refusing to use .step/st-plan.jsonl" in pulled.stderr and "Traceback" not in pulled.stderr
    assert "fix: " in pulled.stderr
    assert snapshot(outside) == before


def subprocess_git(args, cwd):
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_pre_commit_refuses_a_plan_staged_as_a_symbolic_link(repo, outside):
    ok(st("hooks", "install", cwd=repo))
    (repo / ".step").mkdir()
    (repo / ".step" / "st-plan.jsonl").symlink_to(outside / "no-newline")
    git("add", ".step/st-plan.jsonl", cwd=repo)
    commit = subprocess_git(["commit", "-q", "-m", "a linked plan"], repo)
    assert commit.returncode != 0, commit
    assert "error[SYMLINK]" in commit.stderr and "Traceback" not in commit.stderr
    assert git("rev-list", "--count", "HEAD", cwd=repo) == "1"  # nothing committed


def test_validate_never_reads_through_a_tracked_link(tmp_path, outside):
    def build(origin):
        (origin / "state.json").symlink_to(outside / "secret")
        (origin / ".step").mkdir()
        (origin / ".step" / "leak.jsonl").symlink_to(outside / "no-newline")

    clone = clone_of(tmp_path, "clone", build)
    result = st("validate", cwd=clone)
    assert result.returncode == 1, result
    assert result.stderr.count("error[SYMLINK]") == 2 and "Traceback" not in result.stderr
    assert "SENTINEL-SECRET" not in result.stdout + result.stderr
    assert "outside data" not in result.stdout + result.stderr
    as_json = st("validate", "--format", "json", cwd=clone)
    codes = {d["code"] for f in json.loads(as_json.stdout)["files"] for d in f["diagnostics"]}
    assert codes == {"SYMLINK"}


def test_committed_pipeline_state_is_never_a_pr_number(tmp_path):
    def build(origin):
        (origin / "state" / "pipeline").mkdir(parents=True)
        (origin / "state" / "pipeline" / "42.json").write_text(json.dumps({"42": {"pr_number": "999"}}))

    clone = clone_of(tmp_path, "clone", build)
    resolved = st("pr", "resolve", "42", "--offline", cwd=clone)
    assert resolved.returncode == 1 and "999" not in resolved.stdout, resolved
    assert "warning: ignoring" in resolved.stderr and "tracked by git" in resolved.stderr
    assert "Traceback" not in resolved.stderr
    assert_refused(st("pipeline", "set", "42", "pr_number", "57", cwd=clone), 2)
    validated = st("validate", cwd=clone)
    assert validated.returncode == 1 and "error[STATE_TRACKED]" in validated.stderr, validated
    unchanged(clone)
    git("rm", "-q", "state/pipeline/42.json", cwd=clone)  # the fix it names
    ok(st("pipeline", "set", "42", "pr_number", "57", cwd=clone))
    assert st("pr", "resolve", "42", "--offline", cwd=clone).stdout.strip() == "57"


def test_a_committed_lock_from_another_host_never_blocks_a_claim(tmp_path):
    fake = {
        "version": 1,
        "resource": "issue-7",
        "token": 41,
        "owner": {"session": "attacker", "pid": 1, "host": "elsewhere", "actor": "mallory"},
        "acquired_at": "2026-01-01T00:00:00.000Z",
        "renewed_at": "2026-01-01T00:00:00.000Z",
        "expires_at": "2999-01-01T00:00:00.000Z",
        "ttl": 999999999,
    }

    def build(origin):
        (origin / "state" / "locks").mkdir(parents=True)
        (origin / "state" / "locks" / "issue-7.json").write_text(json.dumps(fake))

    clone = clone_of(tmp_path, "clone", build)
    me = session_env("me")
    checked = st("check-issue", "7", cwd=clone, env=me)
    assert checked.returncode == 0 and "attacker" not in checked.stdout, checked  # free: the copy is ignored
    listed = st("lock", "list", cwd=clone)
    assert listed.returncode == 0 and "attacker" not in listed.stdout and "tracked by git" in listed.stderr
    claim = st("claim", "7", cwd=clone, env=me)
    assert_refused(claim, 2)  # refuses to overwrite a committed file, says how to untrack it
    assert "state/locks/issue-7.json" in claim.stderr and "git rm" in claim.stderr
    validated = st("validate", cwd=clone)
    assert validated.returncode == 1 and "error[STATE_TRACKED]" in validated.stderr
    unchanged(clone)
    git("rm", "-q", "state/locks/issue-7.json", cwd=clone)
    claimed = ok(st("claim", "7", "--format", "json", cwd=clone, env=me))
    assert json.loads(claimed.stdout)["lock"]["token"] == 1  # a fresh lock: the fake token means nothing


def test_a_linked_state_dir_is_refused(tmp_path, outside):
    def build(origin):
        (origin / "state").symlink_to(outside / "empty-dir")

    clone = clone_of(tmp_path, "clone", build)
    before = snapshot(outside)
    for args in (["lock", "acquire", "x"], ["claim", "7"], ["pipeline", "set", "42", "pr_number", "5"]):
        result = st(*args, cwd=clone, env=session_env("me"))
        assert_refused(result, 2)
        assert "state is a symbolic link" in result.stderr or "refusing to use" in result.stderr, result
    assert snapshot(outside) == before and not os.listdir(outside / "empty-dir")
    unchanged(clone)
