"""A kill during `worktree add` never takes the clone offline (issue 20, point 5).

git writes the null id into a new worktree's HEAD before it points HEAD at the branch; a
`worktree add` killed in between leaves a worktree that makes every `git fetch` of the clone
fail (`fatal: bad object worktrees/<name>/HEAD`). The kill is made deterministic: the
killed command runs git with an exec path whose `git` SIGKILLs gitst and its `git worktree
add` the moment git starts `git symbolic-ref HEAD` in the new worktree (every other git
command passes through to the real git). Then each command that reaches the remote must
undo the half-made worktree first and work.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.remote.conftest import clone
from tests.support import git, read_json, session_env, st

KILLER = """#!/bin/sh
# git's children find `git` here first (GIT_EXEC_PATH): kill gitst and its `git worktree add`
# when the new worktree's HEAD is about to be pointed at the branch.
if [ "$1" = "symbolic-ref" ] && [ "$2" = "HEAD" ] && [ ! -e "{marker}" ]; then
    : > "{marker}"
    parent=$PPID
    gitst=$(cut -d' ' -f4 /proc/$parent/stat)
    kill -9 "$gitst" "$parent"
    exit 1
fi
GIT_EXEC_PATH="{real}" exec "{real}/git" "$@"
"""


def killing_exec_path(tmp_path, marker) -> dict:
    """An exec path: every program of git's own, but `git` itself is KILLER."""
    real = git("--exec-path", cwd=tmp_path)
    fake = tmp_path / "exec-path"
    fake.mkdir()
    for name in os.listdir(real):
        if name != "git":
            os.symlink(os.path.join(real, name), fake / name)
    script = fake / "git"
    script.write_text(KILLER.format(marker=marker, real=real))
    script.chmod(0o755)
    return {"GIT_EXEC_PATH": str(fake)}


@pytest.fixture
def killed_add(tmp_path, bare):
    """A clone with st.remote set whose `worktree add 7` was SIGKILLed inside git's add."""
    work = clone(bare.as_uri(), tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    marker = tmp_path / "killed"
    env = session_env("A", **killing_exec_path(tmp_path, marker))
    killed = st("worktree", "add", "7", cwd=work, env=env)
    assert killed.returncode == -9 and marker.exists(), killed
    broken = subprocess.run(["git", "fetch", "origin"], cwd=work, capture_output=True, text=True, check=False)
    assert broken.returncode != 0 and "bad object worktrees/issue-7/HEAD" in broken.stderr, broken.stderr
    assert read_json(work / "state" / "active-worktrees" / "7.json")["pending"]["op"] == "add"
    return work


def wt_path(work, issue):
    return work.parent / f"{work.name}.worktrees" / f"issue-{issue}"


@pytest.mark.parametrize(
    "command",
    [["heartbeat"], ["sessions", "--remote"], ["claim", "8"], ["worktree", "add", "7"], ["status"]],
    ids=" ".join,
)
def test_every_command_that_reaches_the_remote_undoes_a_half_made_worktree_first(killed_add, command):
    work = killed_add
    result = st(*command, cwd=work, env=session_env("A"))
    assert result.returncode == 0, result
    assert "cannot reach the remote" not in result.stderr
    assert "undid the half-made worktree of issue 7" in result.stdout + result.stderr, result
    git("fetch", "origin", cwd=work)  # the clone fetches again
    if command[:2] != ["worktree", "add"]:
        again = st("worktree", "add", "7", cwd=work, env=session_env("A"))
        assert again.returncode == 0, again  # the add the kill interrupted is finished
    entry = read_json(work / "state" / "active-worktrees" / "7.json")
    assert "pending" not in entry and entry["session"] == "A"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=wt_path(work, 7)) == "st/issue-7"
    assert git("status", "--porcelain", cwd=wt_path(work, 7)) == ""
