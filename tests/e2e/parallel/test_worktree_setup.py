"""Worktree setup: copying untracked files (st.worktree.copy) and the trusted setup script."""

from __future__ import annotations

import json
import os
import stat

from tests.support import git, read_json, session_env, st

SCRIPT = ".gitst/worktree-setup"


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def commit_script(repo, body: str, message: str = "setup script"):
    (repo / ".gitst").mkdir(exist_ok=True)
    (repo / SCRIPT).write_text(body)
    git("add", SCRIPT, cwd=repo)
    git("commit", "-qm", message, cwd=repo)


MARKER_SCRIPT = 'printf "%s %s %s\\n" "$ST_ISSUE" "$ST_BRANCH" "$ST_SESSION_ID" > setup-ran.txt\necho "setup says hi"\n'


def test_copies_untracked_files_matching_every_pattern(repo):
    (repo / ".gitignore").write_text(".env*\n*.local\nsetup-ran.txt\n")
    git("add", ".gitignore", cwd=repo)
    git("commit", "-qm", "ignore", cwd=repo)
    (repo / ".env").write_text("SECRET=1\n")
    os.chmod(repo / ".env", 0o600)
    (repo / ".env.local").write_text("LOCAL=1\n")
    (repo / "config").mkdir()
    (repo / "config" / "app.local").write_text("app\n")
    (repo / "config" / "deep").mkdir()
    (repo / "config" / "deep" / "x.local").write_text("deep\n")
    (repo / "other.txt").write_text("not matched\n")
    git("config", "--add", "st.worktree.copy", ".env*", cwd=repo)
    git("config", "--add", "st.worktree.copy", "config/*.local", cwd=repo)
    result = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert result.returncode == 0, result
    path = wt_path(repo, 7)
    assert (path / ".env").read_text() == "SECRET=1\n"
    assert stat.S_IMODE(os.stat(path / ".env").st_mode) == 0o600
    assert (path / ".env.local").exists() and (path / "config" / "app.local").exists()
    assert not (path / "config" / "deep" / "x.local").exists()  # `*` stays in one directory
    assert not (path / "other.txt").exists()
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert entry["setup"]["copied"] == [".env", ".env.local", "config/app.local"]
    assert entry["setup"]["command"] == {"status": "absent"}
    assert git("status", "--porcelain", cwd=path) == ""  # copies are ignored there too


def test_untrusted_then_trusted_then_changed_setup_script(repo):
    commit_script(repo, MARKER_SCRIPT)
    first = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert first.returncode == 0, first
    path7 = wt_path(repo, 7)
    assert "skipped the setup script .gitst/worktree-setup" in first.stdout and "not been trusted" in first.stdout
    assert f"git -C {path7} st trust" in first.stdout and "git st worktree setup 7" in first.stdout
    assert not (path7 / "setup-ran.txt").exists()
    assert read_json(repo / "state" / "active-worktrees" / "7.json")["setup"]["command"]["status"] == "untrusted"
    assert st("trust", "--show", cwd=repo).returncode == 1

    trusted = st("trust", cwd=repo)
    assert trusted.returncode == 0, trusted
    sha = json.loads(st("trust", "--show", "--format", "json", cwd=repo).stdout)["sha256"]
    assert git("config", "--get-all", "st.worktree.trusted", cwd=repo) == f"sha256:{sha}"
    assert st("trust", "--show", cwd=repo).returncode == 0

    rerun = st("worktree", "setup", "7", cwd=repo, env=session_env("A"))
    assert rerun.returncode == 0, rerun
    assert (path7 / "setup-ran.txt").read_text() == "7 st/issue-7 A\n"
    assert "setup says hi" in rerun.stderr  # the script's output goes to stderr

    second = st("worktree", "add", "8", "--print-path", cwd=repo, env=session_env("A"))
    assert second.returncode == 0, second
    assert second.stdout == f"{wt_path(repo, 8)}\n"  # nothing but the path, even though setup printed
    assert (wt_path(repo, 8) / "setup-ran.txt").read_text() == "8 st/issue-8 A\n"
    command = read_json(repo / "state" / "active-worktrees" / "8.json")["setup"]["command"]
    assert command["status"] == "ran" and command["sha256"] == sha and command["exit_code"] == 0

    commit_script(repo, MARKER_SCRIPT + "echo changed > changed.txt\n", "change the setup")
    third = st("worktree", "add", "9", cwd=repo, env=session_env("A"))
    assert third.returncode == 0, third
    assert "changed since you last trusted it" in third.stdout
    assert not (wt_path(repo, 9) / "setup-ran.txt").exists() and not (wt_path(repo, 9) / "changed.txt").exists()
    assert read_json(repo / "state" / "active-worktrees" / "9.json")["setup"]["command"]["status"] == "changed"
    show = json.loads(st("trust", "--show", "--format", "json", cwd=repo).stdout)
    assert show["state"] == "changed" and show["trusted"] == [sha]


def test_revoke_makes_it_untrusted_again(repo):
    commit_script(repo, MARKER_SCRIPT)
    assert st("trust", cwd=repo).returncode == 0
    assert "already trusted" in st("trust", cwd=repo).stdout
    revoked = st("trust", "--revoke", cwd=repo)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert git("config", "--get-all", "st.worktree.trusted", cwd=repo, check=False) == ""
    result = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert not (wt_path(repo, 7) / "setup-ran.txt").exists() and "not been trusted" in result.stdout


def test_a_failing_trusted_script_exits_1_but_keeps_the_worktree(repo):
    commit_script(repo, "echo broken >&2\nexit 7\n")
    st("trust", cwd=repo)
    result = st("worktree", "add", "7", "--print-path", cwd=repo, env=session_env("A"))
    assert result.returncode == 1, result
    assert result.stdout == f"{wt_path(repo, 7)}\n"
    assert "setup script failed" in result.stderr and "git st worktree setup 7" in result.stderr
    command = read_json(repo / "state" / "active-worktrees" / "7.json")["setup"]["command"]
    assert command == {**command, "status": "failed", "exit_code": 7}


def test_a_locally_modified_script_is_not_run(repo):
    commit_script(repo, MARKER_SCRIPT)
    st("trust", cwd=repo)
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    path = wt_path(repo, 7)
    (path / "setup-ran.txt").unlink()
    (path / SCRIPT).write_text("touch evil\n")
    result = st("worktree", "setup", "7", cwd=repo, env=session_env("A"))
    assert "differs from the committed, trusted" in result.stdout
    assert not (path / "evil").exists() and not (path / "setup-ran.txt").exists()


def test_trust_without_a_committed_script_is_a_usage_error(repo):
    (repo / ".gitst").mkdir()
    (repo / SCRIPT).write_text("echo not committed\n")
    result = st("trust", cwd=repo)
    assert result.returncode == 2 and "no .gitst/worktree-setup committed at HEAD" in result.stderr
    assert git("config", "--get-all", "st.worktree.trusted", cwd=repo, check=False) == ""
