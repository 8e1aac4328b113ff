"""Crash safety of `worktree add` and `remove`, end to end: SIGKILL at random moments.

After every kill the next command for the issue must succeed, and `git worktree list` must
agree with the registry. Half the kills hit the whole process group (git dies mid-checkout
or mid-delete too), half only gitst (its git child runs on, holding the issue's operation
lock it inherited, so the next command waits for it instead of racing it).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time

import pytest

from tests.support import git, read_json, session_env, st

ROUNDS_MAX = 45
KILLS_WANTED = 15  # of add and of remove each: 30 kills in all


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def git_view(repo) -> dict[str, str | None]:
    """Linked worktrees git lists: path -> lock reason (None when unlocked)."""
    out, current, view = git("worktree", "list", "--porcelain", cwd=repo), None, {}
    for line in out.splitlines():
        if line.startswith("worktree "):
            current = line[len("worktree ") :]
            view[current] = None
        elif line.startswith("locked") and current is not None:
            view[current] = line[len("locked ") :] if line.startswith("locked ") else ""
    view.pop(str(repo), None)
    return view


def registry(repo) -> dict[str, dict]:
    folder = repo / "state" / "active-worktrees"
    return {p.stem: read_json(p) for p in folder.glob("*.json")} if folder.exists() else {}


def launch_and_kill(args: list[str], cwd, env: dict, delay: float, whole_group: bool) -> bool:
    """Start the real CLI, SIGKILL it after ``delay`` s; True when it was still running."""
    full = {**os.environ, **env}
    proc = subprocess.Popen(
        args, cwd=cwd, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    time.sleep(delay)
    running = proc.poll() is None
    if running:
        if whole_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    if whole_group:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the group may outlive the test
    return running


def timed(args, cwd, env) -> float:
    started = time.monotonic()
    result = st(*args, cwd=cwd, env=env)
    assert result.returncode == 0, result
    return time.monotonic() - started


def assert_added(repo):
    path = str(wt_path(repo, 7))
    entries = registry(repo)
    assert set(entries) == {"7"} and "pending" not in entries["7"], entries
    assert entries["7"]["path"] == path and entries["7"]["session"] == "A"
    view = git_view(repo)
    assert set(view) == {path}, view  # git agrees with the registry
    assert (view[path] or "").startswith("gitst: issue 7 claimed by session A"), view
    assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"]["session"] == "A"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "st/issue-7"
    assert git("status", "--porcelain", cwd=path) == ""  # a complete checkout, nothing half-written


def assert_removed(repo):
    assert registry(repo) == {} and git_view(repo) == {}
    assert not wt_path(repo, 7).exists()
    assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"] is None


@pytest.mark.slow(35)  # starts first (tests/conftest.py)
def test_sigkill_at_random_moments_of_add_and_remove_is_always_repaired(repo):
    seed = int(os.environ.get("GITST_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    env = session_env("A")  # the session (this test process) lives on; only its commands die
    (repo / "src").mkdir()
    for number in range(60):  # a checkout that takes git a moment, so kills land inside it
        (repo / "src" / f"f{number}.txt").write_text(f"{number}\n" * 200)
    git("add", "src", cwd=repo)
    git("commit", "-qm", "files", cwd=repo)
    took = {"add": timed(["worktree", "add", "7"], repo, env), "remove": timed(["worktree", "remove", "7"], repo, env)}
    cli = ["git-st", "worktree"]
    kills = {"add": 0, "remove": 0}
    for round_number in range(ROUNDS_MAX):
        if min(kills.values()) >= KILLS_WANTED:
            break
        where = f"seed {seed}, round {round_number}"
        group = rng.random() < 0.5
        running = launch_and_kill([*cli, "add", "7"], repo, env, rng.uniform(0.3, 0.95) * took["add"], group)
        kills["add"] += running
        took["add"] *= 1.0 if running else 0.85  # it was done already: aim earlier
        after = st("worktree", "add", "7", cwd=repo, env=env)
        assert after.returncode == 0, (where, after)
        assert after.stdout.splitlines()[-1] == str(wt_path(repo, 7)), (where, after)
        assert_added(repo)

        group = rng.random() < 0.5
        delay = rng.uniform(0.3, 0.95) * took["remove"]
        running = launch_and_kill([*cli, "remove", "7"], repo, env, delay, group)
        kills["remove"] += running
        took["remove"] *= 1.0 if running else 0.85
        entry_left = bool(registry(repo))
        after = st("worktree", "remove", "7", cwd=repo, env=env)
        if entry_left:  # the killed remove had not finished: the next one does
            assert after.returncode == 0, (where, after)
        else:  # it had finished (its last step drops the entry): nothing is left to remove
            assert after.returncode == 2 and "has no registered worktree" in after.stderr, (where, after)
        assert_removed(repo)
    assert min(kills.values()) >= KILLS_WANTED, (seed, kills)  # >= 30 kills, each one landed mid-command
