"""Fault injection for every plan and state write: the command runs under a file-size
limit (``RLIMIT_FSIZE``: a write past it fails with EFBIG, as on a full disk - no root, no
loop device, no LD_PRELOAD). Each case asserts exit 4 with ``error:``, no traceback, nothing
half-written (every file as it was; no temp file, no empty torn copy; at most an empty lock
sidecar), and that the same command then succeeds once there is room.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support import git, mutate, ok, plan_path, session_env, snapshot, st

pytestmark = pytest.mark.usefixtures("nothing_written_outside")

ME = session_env("me")
EVENT = '{"v":3,"ts":"2026-01-01T00:00:00Z","seq":2,"lane":"event","op":"set_notes","id":"st-001","notes":"again"}\n'


def _plan(repo):
    mutate(repo, "init")
    mutate(repo, "add", "First")


def _plan_torn(repo):
    _plan(repo)
    plan = plan_path(repo)
    plan.write_bytes(plan.read_bytes() + b'{"v":3,"ts":"2026-01-0')  # a writer killed mid-line


def _plan_concatenated(repo):
    _plan(repo)
    plan = plan_path(repo)
    plan.write_bytes(plan.read_bytes() + EVENT.encode())  # seq 2 twice: doctor --repair-seq seals it


def _snapshot_file(repo):
    _plan(repo)
    (repo.parent / "items.json").write_text(json.dumps([{"id": "i1", "step": "Imported"}]))


def _state(repo):
    ok(st("lock", "acquire", "other", cwd=repo, env=ME))  # the state dir exists, with a record


def _locked(repo):
    ok(st("lock", "acquire", "res", cwd=repo, env=ME))


def _claimed(repo):
    ok(st("claim", "7", cwd=repo, env=ME))


def _dead_owner(repo):
    from tests.support import dead_pid

    ok(st("lock", "acquire", "res", cwd=repo, env=session_env("gone", pid=dead_pid())))


def _pipeline(repo):
    ok(st("pipeline", "set", "7", "current_phase", "build", cwd=repo))


def _nothing(repo):
    pass


def _plan_size(repo) -> int:
    return plan_path(repo).stat().st_size + 7  # room for a few bytes: the write is cut short


# name: (setup, args, env, file size limit: a number, or a function of the repo)
CASES = {
    "init": (_nothing, ["init"], {}, 0),
    "add": (_plan, ["add", "Second"], {}, _plan_size),
    "add with its checkpoint": (_plan, ["add", "Second"], {"ST_CHECKPOINT_INTERVAL": "1"}, _plan_size),
    "add setting a torn tail aside": (_plan_torn, ["add", "Second"], {}, 0),
    "import-plan": (_snapshot_file, ["import-plan", "../items.json"], {}, _plan_size),
    "doctor --repair-seq sealing": (_plan_concatenated, ["doctor", "--repair-seq"], {}, _plan_size),
    "doctor --repair-seq setting a torn tail aside": (_plan_torn, ["doctor", "--repair-seq"], {}, 0),
    "export --output": (_plan, ["export", "--output", "../out.json"], {}, 0),
    "state dir creation": (_nothing, ["lock", "acquire", "res"], ME, 0),
    "lock acquire": (_state, ["lock", "acquire", "res"], ME, 0),
    "lock renew": (_locked, ["lock", "renew", "res"], ME, 0),
    "lock release": (_locked, ["lock", "release", "res"], ME, 0),
    "lock reclaim (record and log)": (_dead_owner, ["lock", "acquire", "res"], ME, 0),
    "claim": (_state, ["claim", "7"], ME, 0),
    "release": (_claimed, ["release", "7"], ME, 0),
    "heartbeat": (_claimed, ["heartbeat"], ME, 0),
    "pipeline set": (_pipeline, ["pipeline", "set", "7", "current_phase", "qa"], {}, 0),
    "pipeline unset": (_pipeline, ["pipeline", "unset", "7", "current_phase"], {}, 0),
}


def _files(repo) -> dict[str, bytes]:
    return {path: data for path, data in snapshot(repo).items() if not path.startswith(".git/") and path != ".git"}


@pytest.mark.parametrize("case", list(CASES))
def test_a_full_disk_is_exit_4_and_nothing_half_written(repo, case):
    setup, args, env, limit = CASES[case]
    setup(repo)
    before = _files(repo)
    outside = {p.name for p in repo.parent.iterdir()}
    result = st(*args, cwd=repo, env=env, file_size_limit=limit(repo) if callable(limit) else limit)
    assert result.returncode == 4, result
    assert "error:" in result.stderr and "Traceback" not in result.stderr, result
    assert "  fix: " in result.stderr, result  # what to do about a full disk
    after = _files(repo)
    for path, data in before.items():
        assert after.get(path) == data, f"{case}: {path} changed"
    for path in set(after) - set(before):
        assert path.endswith(".lock") and after[path] == b"", f"{case}: {path} left behind"
    assert {p.name for p in repo.parent.iterdir()} == outside, case  # no temp file next to ../out.json
    assert ok(st(*args, cwd=repo, env=env)).returncode == 0  # room again: the same command goes through


def test_a_full_disk_during_worktree_add_leaves_no_branch_claim_or_entry(repo):
    result = st("worktree", "add", "7", cwd=repo, env=ME, file_size_limit=0)
    assert result.returncode == 4 and "error:" in result.stderr and "Traceback" not in result.stderr, result
    assert "  fix: " in result.stderr, result
    assert git("branch", "--list", "st/*", cwd=repo) == ""
    assert not (repo / "state" / "active-worktrees" / "7.json").exists()
    assert (
        not os.path.exists(repo / "state" / "locks" / "issue-7.json")
        or json.loads((repo / "state" / "locks" / "issue-7.json").read_text())["owner"] is None
    )
    ok(st("worktree", "add", "7", cwd=repo, env=ME))
