"""`git st status`: every session, what it holds, its worktrees and PRs in one view."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.support import dead_pid, git, run_on_pty, session_env, st


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def registered(repo, issue) -> dict:
    """The registry entry ``worktree add`` wrote for ``issue``."""
    return json.loads((repo / "state" / "active-worktrees" / f"{issue}.json").read_text())


def build(repo):
    """Two live sessions (A: this process, B: a `sleep`), one dead (C), three worktrees."""
    git("config", "st.worktree.ports", "42000-42999/10", cwd=repo)
    other = subprocess.Popen(["sleep", "300"])
    env_a, env_b, env_c = session_env("A"), session_env("B", pid=other.pid), session_env("C", pid=dead_pid())
    assert st("worktree", "add", "1", cwd=repo, env=env_a).returncode == 0
    assert st("worktree", "add", "2", cwd=repo, env=env_b).returncode == 0
    assert st("worktree", "add", "3", cwd=repo, env=env_c).returncode == 0
    assert st("lock", "acquire", "deploy", cwd=repo, env=env_b).returncode == 0
    one = wt_path(repo, 1)
    (one / "feature.txt").write_text("f\n")
    git("add", "feature.txt", cwd=one)
    git("commit", "-qm", "feature", cwd=one)
    (one / "notes.txt").write_text("untracked\n")
    (one / "README").write_text("changed\n")
    (wt_path(repo, 2) / "two.txt").write_text("2\n")
    git("add", "two.txt", cwd=wt_path(repo, 2))
    git("commit", "-qm", "two", cwd=wt_path(repo, 2))  # its own tip, for its PR head below
    (repo / "later.txt").write_text("main moved on\n")
    git("add", "later.txt", cwd=repo)
    git("commit", "-qm", "later", cwd=repo)
    assert st("pipeline", "set", "1", "pr_number", "42", cwd=repo).returncode == 0
    git("update-ref", "refs/pull/7/head", "st/issue-2", cwd=repo)  # a fetched PR head at issue 2's tip
    return other


def test_status_json_shows_sessions_holds_worktrees_and_prs(repo):
    other = build(repo)
    try:
        result = st("status", "--format", "json", cwd=repo, env=session_env("A"))
        assert result.returncode == 0, result
        view = json.loads(result.stdout)
    finally:
        other.kill()
        other.wait()
    assert view["session"] == "A" and view["state_dir"] == str(repo / "state") and view["generated_at"]
    sessions = {s["session"]: s for s in view["sessions"]}
    assert {name: s["state"] for name, s in sessions.items()} == {"A": "live", "B": "live", "C": "dead"}
    assert sessions["A"]["current"] is True and sessions["B"]["current"] is False
    assert sessions["B"]["pid"] == other.pid and sessions["A"]["host"] == os.uname().nodename
    assert sessions["A"]["heartbeat_at"] and sessions["A"]["liveness"] == "pid"
    [hold_a] = sessions["A"]["holds"]
    assert hold_a["issue"] == "1" and hold_a["lock"] == "issue-1" and hold_a["branch"] == "st/issue-1"
    assert hold_a["lease"]["state"] == "live" and hold_a["lease"]["token"] == 1 and hold_a["lease"]["expires_at"]
    assert hold_a["worktree"] == str(wt_path(repo, 1))
    assert sorted((h["lock"], h["issue"], h["lease"]["state"]) for h in sessions["B"]["holds"]) == [
        ("deploy", None, "live"),
        ("issue-2", "2", "live"),
    ]
    assert [(h["issue"], h["lease"]["state"]) for h in sessions["C"]["holds"]] == [("3", "dead")]

    worktrees = {w["issue"]: w for w in view["worktrees"]}
    assert set(worktrees) == {"1", "2", "3"}
    one = worktrees["1"]
    assert one["state"] == "active" and one["session"] == "A" and one["path"] == str(wt_path(repo, 1))
    assert one["branch"] == "st/issue-1" and one["base_branch"] == "main"
    assert one["changes"] == {"staged": 0, "unstaged": 1, "untracked": 1, "total": 2}
    assert (one["ahead"], one["behind"]) == (1, 1)
    assert one["pr"] == {"number": 42, "source": "pipeline"}
    # The lowest free blocks: 42000-42009 and 42010-42019 unless something else (another test's
    # server) listens on one of their ports, which add skips. Status shows what add recorded.
    assert one["ports"] == registered(repo, 1)["ports"] and one["ports"]["count"] == 10
    assert one["ports"]["start"] >= 42000 and one["ports"]["end"] == one["ports"]["start"] + 9 <= 42999
    two = worktrees["2"]
    assert two["pr"] == {"number": 7, "source": "pull-refs"} and (two["ahead"], two["behind"]) == (1, 1)
    assert two["changes"]["total"] == 0 and two["ports"] == registered(repo, 2)["ports"]
    assert two["ports"]["start"] > one["ports"]["end"]
    three = worktrees["3"]
    assert three["state"] == "stale" and three["reason"] == "the owner's process is gone" and three["pr"] is None
    assert set(one) == {
        "issue",
        "state",
        "reason",
        "session",
        "path",
        "branch",
        "base_branch",
        "head",
        "pending",
        "changes",
        "ahead",
        "behind",
        "ports",
        "pr",
        "errors",
        "leftovers",
    }
    assert one["leftovers"] == []  # nothing a killed command left


def test_status_text_fits_the_terminal(repo):
    other = build(repo)
    try:
        piped = st("status", cwd=repo, env=session_env("A"))
        assert piped.returncode == 0, piped
        assert f"../{repo.name}.worktrees/issue-3" in piped.stdout  # paths relative to where you stand
        assert "…" not in piped.stdout  # a pipe is never cut
        for columns in (80, 120):
            text = run_on_pty(["git-st", "status"], repo, session_env("A"), columns=columns)
            lines = text.splitlines()
            assert all(len(line) <= columns for line in lines), [line for line in lines if len(line) > columns]
            assert any(line.startswith("A *") and "live" in line for line in lines)
            assert any(line.startswith("C ") and "dead" in line for line in lines)
            [one] = [line for line in lines if line.startswith("1 ")]
            assert "#42" in one and "~1 ?1" in one and "+1 -1" in one, one
    finally:
        other.kill()
        other.wait()


def test_status_watch_redraws_until_interrupted(repo):
    assert st("worktree", "add", "1", cwd=repo, env=session_env("A")).returncode == 0
    # Ctrl-C as a terminal delivers it: a suite started in the background (`cmd &` in a
    # non-interactive shell) inherits SIGINT ignored, and git-st would never see it; a default
    # disposition survives exec
    default_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp('git-st', sys.argv[1:])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", default_sigint, "git-st", "status", "--watch", "--interval", "0.2", "--format", "json"],
        cwd=repo,
        env={**os.environ, **session_env("A")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        frames = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert st("release", "1", cwd=repo, env=session_env("A")).returncode == 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # a later frame shows the change
            frame = json.loads(proc.stdout.readline())
            if not frame["sessions"]:
                break
        else:
            raise AssertionError("the released claim never showed")
        assert frames[0]["sessions"][0]["holds"][0]["issue"] == "1"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def _registry_copies(repo, issues) -> None:
    """Registry entries for ``issues`` made from issue 1's (worktrees long gone: orphaned rows)."""
    entry = registered(repo, 1)
    for issue in issues:
        copy = dict(entry, issue=str(issue), branch=f"st/issue-{issue}", path=str(wt_path(repo, issue)))
        (repo / "state" / "active-worktrees" / f"{issue}.json").write_text(json.dumps(copy))


def _git_processes(repo, tmp_path) -> tuple[list[str], dict]:
    """Every git command one `git st status --format json` runs (a `git` first on PATH logs
    its arguments, then runs the real one), and the view."""
    import shutil

    bindir, log = tmp_path / "counting-bin", tmp_path / "git-calls.log"
    bindir.mkdir(exist_ok=True)
    real = shutil.which("git")
    (bindir / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (bindir / "git").chmod(0o755)
    log.unlink(missing_ok=True)
    env = {**session_env("A"), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    result = st("status", "--format", "json", cwd=repo, env=env)
    assert result.returncode == 0, result
    return log.read_text().splitlines(), json.loads(result.stdout)


def test_status_runs_the_same_git_processes_for_5_registry_entries_as_for_200(repo, tmp_path):
    """The PR of each row comes from one listing of refs, PR heads and pipeline files, and
    every setting from one `git config --list`: no git process per registry entry."""
    assert st("worktree", "add", "1", cwd=repo, env=session_env("A")).returncode == 0
    assert st("pipeline", "set", "1", "pr_number", "42", cwd=repo).returncode == 0
    git("branch", "st/issue-9", cwd=repo)
    git("update-ref", "refs/pull/7/head", "st/issue-9", cwd=repo)  # issue 9's PR, found offline
    _registry_copies(repo, [2, 3, 9, 10])
    few, small = _git_processes(repo, tmp_path)
    _registry_copies(repo, range(11, 207))
    many, large = _git_processes(repo, tmp_path)
    assert len(small["worktrees"]) == 5 and len(large["worktrees"]) == 201
    prs = {w["issue"]: w["pr"] for w in large["worktrees"] if w["pr"]}
    assert prs == {"1": {"number": 42, "source": "pipeline"}, "9": {"number": 7, "source": "pull-refs"}}
    assert len(many) == len(few), "\n".join(many)
    assert sum(line.startswith("config") for line in many) <= 2, [line for line in many if line.startswith("config")]
