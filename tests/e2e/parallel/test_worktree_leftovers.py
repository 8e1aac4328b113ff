"""Crash leftovers are found, not committed (issue 20, point 7).

An agent killed during a merge (what `git st sync` runs) leaves git's `index.lock` and the
merge driver's `.merge_file_*` temp files in its worktree. The kill here is real and
deterministic: the merge driver signals that it runs, then the test SIGKILLs the merge's
whole process group. The next owner's `worktree add` (a takeover) names and removes them,
`git st status` names them, and the pre-commit hook refuses a `.merge_file_*`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

from tests.support import dead_pid, git, read_json, session_env, st


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def wait_for(path, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


@contextlib.contextmanager
def git_running(args: list[str], cwd, started) -> Iterator[None]:
    """Run ``git ARGS`` in its own process group until ``started`` appears; SIGKILL the whole
    group when the block ends (nothing of it outlives the test)."""
    proc = subprocess.Popen(
        ["git", *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(started)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def kill_during_merge(repo, worktree, tmp_path) -> None:
    """Both sides change notes.txt; the merge driver (which git runs with `.merge_file_*`
    temp files at the worktree's top, holding index.lock) is killed with its merge."""
    (repo / "notes.txt").write_text("base\n")
    git("add", "notes.txt", cwd=repo)
    git("commit", "-qm", "notes", cwd=repo)
    git("branch", "other", cwd=repo)
    git("merge", "-q", "--ff-only", "main", cwd=worktree)
    (worktree / "notes.txt").write_text("ours\n")
    git("commit", "-qam", "ours", cwd=worktree)
    git("checkout", "-q", "other", cwd=repo)
    (repo / "notes.txt").write_text("theirs\n")
    git("commit", "-qam", "theirs", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("notes.txt merge=slow\n")
    running = tmp_path / "driver-running"
    driver = f"touch {running}; sleep 120"
    with git_running(["-c", f"merge.slow.driver={driver}", "merge", "-q", "-m", "sync", "other"], worktree, running):
        pass  # the merge is killed in its driver


def test_a_takeover_names_and_clears_what_a_killed_merge_left(repo, tmp_path):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A", pid=dead_pid())).returncode == 0
    path = wt_path(repo, 7)
    kill_during_merge(repo, path, tmp_path)
    admin = git("rev-parse", "--absolute-git-dir", cwd=path)
    lock = os.path.join(admin, "index.lock")
    temps = sorted(p.name for p in path.iterdir() if p.name.startswith(".merge_file_"))
    assert os.path.exists(lock) and temps, (os.listdir(admin), temps)  # what the kill left

    shown = st("status", "--format", "json", cwd=repo, env=session_env("B"))
    [row] = [w for w in json.loads(shown.stdout)["worktrees"] if w["issue"] == "7"]
    kinds = sorted(item["kind"] for item in row["leftovers"])
    assert kinds == ["index.lock"] + ["merge-temp"] * len(temps), row
    text = st("status", cwd=repo, env=session_env("B"))
    assert "warning: issue 7: a killed command left" in text.stdout and "index.lock" in text.stdout, text

    took = st("worktree", "add", "7", cwd=repo, env=session_env("B"))
    assert took.returncode == 0, took
    assert "took over worktree" in took.stdout
    assert "removed what a killed command left in the worktree" in took.stdout and lock in took.stdout, took
    assert not os.path.exists(lock)
    assert not [p for p in path.iterdir() if p.name.startswith(".merge_file_")]
    # the new owner can work: no commit fails on the lock
    git("merge", "--abort", cwd=path, check=False)
    git("reset", "-q", "--hard", cwd=path)
    (path / "new.txt").write_text("B's work\n")
    git("add", "-A", cwd=path)
    git("commit", "-qm", "B's work", cwd=path)
    assert read_json(repo / "state" / "active-worktrees" / "7.json")["session"] == "B"


def test_leftovers_a_live_git_process_still_works_on_are_kept(repo, tmp_path):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A", pid=dead_pid())).returncode == 0
    path = wt_path(repo, 7)
    temp = path / ".merge_file_Zz9yX8"
    temp.write_text("maybe the live merge's\n")
    # a live git in the worktree: a `git commit` waiting for its editor
    editing = tmp_path / "editing"
    with git_running(["-c", f"core.editor=touch {editing}; sleep 120 #", "commit", "--allow-empty"], path, editing):
        took = st("worktree", "add", "7", cwd=repo, env=session_env("B"))
        assert took.returncode == 0, took
        assert "kept, because git process(es)" in took.stdout and str(temp) in took.stdout, took
        assert temp.exists()


def test_the_pre_commit_hook_refuses_a_merge_temp_file(repo):
    hook = st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo)
    assert hook.returncode == 0, hook
    (repo / ".merge_file_a1B2c3").write_text("half a merge\n")
    (repo / "fine.txt").write_text("fine\n")
    git("add", "-A", cwd=repo)
    refused = subprocess.run(["git", "commit", "-qm", "all"], cwd=repo, capture_output=True, text=True, check=False)
    assert refused.returncode != 0
    assert ".merge_file_a1B2c3: error[HOOK_MERGE_TEMP_STAGED]" in refused.stderr, refused.stderr
    git("rm", "-q", "--cached", ".merge_file_a1B2c3", cwd=repo)
    git("commit", "-qm", "fine", cwd=repo)
