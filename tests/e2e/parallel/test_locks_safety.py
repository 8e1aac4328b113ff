"""Identifiers that become paths, and symlinks in the state dir: refused with exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import dead_pid, git, session_env, snapshot, st

BAD_IDS = ["../x", "a/b", "..", ".", "x" * 65, "a b", "a..b", "/etc/passwd", "x\ny", "é"]


def branches(repo):
    return git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=repo).splitlines()


def _commands(bad: str) -> list[list[str]]:
    return [
        ["lock", "acquire", bad],
        ["claim", bad],
        ["check-issue", bad],
        ["worktree", "add", bad],
        ["release", bad],
        ["claim", "7", "--session", bad],
        ["lock", "acquire", "ok", "--session", bad],
        ["worktree", "add", "7", "--session", bad],
    ]


@pytest.mark.parametrize("bad", ["../x", "a/b"])
def test_traversal_is_refused_by_every_command_with_exit_2_and_writes_nothing(repo, bad):
    for args in _commands(bad):
        result = st(*args, cwd=repo, env=session_env("A"))
        assert result.returncode == 2, (args, result)
        assert "invalid" in result.stderr and "Traceback" not in result.stderr
    assert not (repo / "state").exists()
    assert branches(repo) == ["main"]
    assert not (repo.parent / f"{repo.name}.worktrees").exists()


def test_other_bad_identifiers_are_refused_with_exit_2_and_write_nothing(repo):
    others = [b for b in BAD_IDS if b not in ("../x", "a/b")]
    for index, bad in enumerate(others):
        args = _commands(bad)[index % 8]
        result = st(*args, cwd=repo, env=session_env("A"))
        assert result.returncode == 2, (args, result)
        assert "Traceback" not in result.stderr
    assert not (repo / "state").exists()
    assert branches(repo) == ["main"]
    assert not (repo.parent / f"{repo.name}.worktrees").exists()


def _outside(tmp_path) -> Path:
    target = tmp_path / "outside"
    target.mkdir()
    (target / "victim.json").write_text('{"keep": true}\n')
    return target


def _state_with(repo, sub: str) -> Path:
    """Create the state dir (and its .gitignore) through the CLI, then return state/<sub>'s parent."""
    assert st("lock", "acquire", "warmup", cwd=repo, env=session_env("Z")).returncode == 0
    path = repo / "state" / sub
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize(
    "relpath, args",
    [
        ("locks", ["lock", "acquire", "x"]),
        ("active-chats", ["claim", "7"]),
        ("active-worktrees", ["worktree", "add", "7"]),
        ("active-chats/A.json", ["claim", "7"]),
        ("locks/x.json", ["lock", "acquire", "x"]),
        ("locks/x.json.lock", ["lock", "acquire", "x"]),
        ("active-worktrees/7.json", ["worktree", "add", "7"]),
    ],
)
def test_a_symlink_in_the_state_dir_is_refused_and_nothing_is_written(repo, tmp_path, relpath, args):
    """A symlinked directory or file: exit 2, the state dir and the link's target unchanged."""
    outside = _outside(tmp_path)
    link = _state_with(repo, relpath)
    if link.exists():  # a directory the warm-up created
        os.rename(link, link.with_name(link.name + ".real"))
    is_dir = "." not in relpath
    link.symlink_to(outside if is_dir else outside / "victim.json", target_is_directory=is_dir)
    before_state, before_outside = snapshot(repo / "state"), snapshot(outside)
    result = st(*args, cwd=repo, env=session_env("A"))
    assert result.returncode == 2, result
    assert "symbolic link" in result.stderr
    assert snapshot(repo / "state") == before_state and snapshot(outside) == before_outside
    assert branches(repo) == ["main"]
    assert not (repo / "state" / "locks" / "issue-7.json").exists()


def test_a_symlinked_reclaim_log_is_never_written_through(repo, tmp_path):
    outside = _outside(tmp_path)
    assert st("lock", "acquire", "x", cwd=repo, env=session_env("gone", pid=dead_pid())).returncode == 0
    (repo / "state" / "locks" / "reclaims.jsonl").symlink_to(outside / "victim.json")
    before_state, before_outside = snapshot(repo / "state"), snapshot(outside)
    for args in (["lock", "gc"], ["lock", "acquire", "x"]):
        result = st(*args, cwd=repo, env=session_env("A"))
        assert result.returncode == 2 and "symbolic link" in result.stderr, result
    assert snapshot(repo / "state") == before_state and snapshot(outside) == before_outside


def test_a_state_dir_that_is_a_symlink_is_refused(repo, tmp_path):
    outside = _outside(tmp_path)
    link = tmp_path / "state-link"
    link.symlink_to(outside, target_is_directory=True)
    result = st("claim", "7", cwd=repo, env=session_env("A", ST_STATE_DIR=str(link)))
    assert result.returncode == 2 and "symbolic link" in result.stderr
    assert sorted(os.listdir(outside)) == ["victim.json"]
