"""Worktrees that never take another's work with them, and that can be made again
(issue 21 point 2 and its LOW items on worktrees; issue 20 point 9): real git, the real CLI."""

from __future__ import annotations

import json
import os

from tests.e2e.parallel.test_worktree_lifecycle import listed_paths, wt_path
from tests.support import dead_pid, git, read_json, session_env, st


def branches(repo) -> set[str]:
    return set(git("for-each-ref", "--format=%(refname:short)", "refs/heads/", cwd=repo).splitlines())


# --- 21.2: never inside another, never deleted with another --------------------------------------


def test_a_worktree_is_never_created_inside_another(repo):
    assert st("worktree", "add", "31", cwd=repo, env=session_env("A")).returncode == 0
    inner = wt_path(repo, 31) / "nested"
    refused = st("worktree", "add", "30", "--path", str(inner), cwd=repo, env=session_env("B"))
    assert refused.returncode == 2, refused
    assert "a worktree is never made inside another" in refused.stderr
    assert not inner.exists() and not (repo / "state" / "active-worktrees" / "30.json").exists()
    lock = repo / "state" / "locks" / "issue-30.json"
    assert not lock.exists() or read_json(lock)["owner"] is None  # nothing claimed
    for inside_state in (repo / "state" / "wt", repo / ".git" / "wt"):
        refused = st("worktree", "add", "30", "--path", str(inside_state), cwd=repo, env=session_env("B"))
        assert refused.returncode == 2, refused


def test_the_post_checkout_hook_never_registers_a_worktree_made_inside_another(repo):
    from tests.e2e.parallel.test_worktree import install_post_checkout
    from tests.support import run

    install_post_checkout(repo)
    assert st("worktree", "add", "31", cwd=repo, env=session_env("A")).returncode == 0
    inner = wt_path(repo, 31) / "nested"
    made = run(["git", "worktree", "add", "-b", "st/issue-30", str(inner)], cwd=repo, env=session_env("B"))
    assert made.returncode == 0, made  # the hook never fails git's checkout
    assert "not registering" in made.stderr and "never made inside another" in made.stderr, made
    assert not (repo / "state" / "active-worktrees" / "30.json").exists()


def nested_worktree_of_b(repo) -> tuple:
    """A's worktree of issue 31 holding B's worktree of issue 30 (made by hand: git allows it,
    and an older gitst accepted `--path` there), with B's uncommitted work in it."""
    assert st("worktree", "add", "31", cwd=repo, env=session_env("A")).returncode == 0
    inner = wt_path(repo, 31) / "nested"
    git("worktree", "add", "-q", "-b", "b-work", str(inner), cwd=repo)
    (inner / "unsaved.txt").write_text("B's uncommitted work\n")
    return inner


def test_remove_force_never_deletes_a_worktree_nested_inside(repo):
    inner = nested_worktree_of_b(repo)
    refused = st("worktree", "remove", "31", "--force", cwd=repo, env=session_env("A"))
    assert refused.returncode == 3, refused
    assert "holds another worktree" in refused.stderr and str(inner) in refused.stderr
    assert (inner / "unsaved.txt").read_text() == "B's uncommitted work\n"
    assert str(inner) in listed_paths(repo)
    entry = read_json(repo / "state" / "active-worktrees" / "31.json")
    assert "pending" not in entry  # refused before anything was marked


def test_clean_force_keeps_a_worktree_holding_another(repo):
    inner = nested_worktree_of_b(repo)
    # A dies: its worktree is now clean's to take, but not with B's inside it
    entry = read_json(repo / "state" / "locks" / "issue-31.json")
    entry["owner"]["pid"] = dead_pid()
    (repo / "state" / "locks" / "issue-31.json").write_text(json.dumps(entry))
    cleaned = st("worktree", "clean", "--force", cwd=repo, env=session_env("C"))
    assert cleaned.returncode == 0, cleaned
    assert "kept issue 31" in cleaned.stdout and "holds another worktree" in cleaned.stdout, cleaned
    assert (inner / "unsaved.txt").exists()


# --- 20.9: a forced removal leaves a worktree that can be made again ------------------------------


def test_add_with_base_after_a_forced_remove_starts_a_new_branch(repo):
    env = session_env("A")
    assert st("worktree", "add", "7", cwd=repo, env=env).returncode == 0
    (wt_path(repo, 7) / "abandoned.txt").write_text("x\n")
    git("add", "abandoned.txt", cwd=wt_path(repo, 7))
    git("commit", "-qm", "abandoned work", cwd=wt_path(repo, 7))
    abandoned = git("rev-parse", "st/issue-7", cwd=repo)
    assert st("worktree", "remove", "7", "--force", cwd=repo, env=env).returncode == 0
    assert "st/issue-7" in branches(repo)  # the work is kept on its branch

    again = st("worktree", "add", "7", "--base", "main", cwd=repo, env=env)
    assert again.returncode == 0, again
    assert "new branch st/issue-7-2" in again.stdout, again
    path = wt_path(repo, 7)
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "st/issue-7-2"
    assert git("rev-parse", "HEAD", cwd=path) == git("rev-parse", "main", cwd=repo)
    assert git("rev-parse", "st/issue-7", cwd=repo) == abandoned  # never moved, never checked out
    assert read_json(repo / "state" / "active-worktrees" / "7.json")["branch"] == "st/issue-7-2"
    assert read_json(repo / "state" / "active-chats" / "A.json")["claims"][0]["branch"] == "st/issue-7-2"
    # and once more: the next free name
    assert st("worktree", "remove", "7", "--force", cwd=repo, env=env).returncode == 0
    third = st("worktree", "add", "7", "--base", "main", cwd=repo, env=env)
    assert third.returncode == 0 and "new branch st/issue-7-3" in third.stdout, third


def test_another_sessions_abandoned_branch_is_not_checked_out_by_the_next_claim(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    assert st("worktree", "remove", "7", "--force", cwd=repo, env=session_env("A")).returncode == 0
    taken = st("worktree", "add", "7", cwd=repo, env=session_env("B"))
    assert taken.returncode == 0, taken
    assert "branch st/issue-7 holds the abandoned work of session A" in taken.stdout, taken
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=wt_path(repo, 7)) == "st/issue-7-2"


def test_your_own_or_a_hand_made_branch_is_still_checked_out(repo):
    git("branch", "st/issue-5", cwd=repo)  # made by hand, never claimed
    made = st("worktree", "add", "5", cwd=repo, env=session_env("A"))
    assert made.returncode == 0 and "existing branch st/issue-5" in made.stdout, made
    assert st("worktree", "remove", "5", cwd=repo, env=session_env("A")).returncode == 0
    mine = st("worktree", "add", "5", cwd=repo, env=session_env("A"))  # A's own branch: continued
    assert mine.returncode == 0 and "existing branch st/issue-5" in mine.stdout, mine


def test_a_branch_of_that_name_on_the_remote_is_another_claims(repo, tmp_path):
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    git("push", "-q", "origin", "main", "main:st/issue-17", cwd=repo)  # a failed agent's, elsewhere
    git("fetch", "-q", "origin", cwd=repo)
    made = st("worktree", "add", "17", cwd=repo, env=session_env("A"))
    assert made.returncode == 0, made
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=wt_path(repo, 17)) == "st/issue-17-2"
    git("push", "-q", "origin", "st/issue-17-2", cwd=wt_path(repo, 17))  # no clash with the other claim's


# --- LOW: the path echoed, copy globs checked first, /bin/sh, setup's own files --------------------


def test_add_path_with_control_characters_is_shown_escaped(repo, tmp_path):
    odd = tmp_path / "wt\x1b[31mred"
    made = st("worktree", "add", "4", "--path", str(odd), cwd=repo, env=session_env("A"))
    assert made.returncode == 0, made
    assert "\x1b" not in made.stdout and "\x1b" not in made.stderr, made
    assert "wt\\x1b[31mred" in made.stdout.splitlines()[-1]


def test_a_copy_glob_outside_the_repository_is_refused_before_anything(repo):
    git("config", "--add", "st.worktree.copy", "../secrets/*", cwd=repo)
    refused = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert refused.returncode == 2, refused
    assert "st.worktree.copy" in refused.stderr
    assert not wt_path(repo, 7).exists() and listed_paths(repo) == set()
    assert "st/issue-7" not in branches(repo)
    state = repo / "state"
    assert not (state / "active-worktrees" / "7.json").exists()
    assert (
        not (state / "locks" / "issue-7.json").exists() or read_json(state / "locks" / "issue-7.json")["owner"] is None
    )


def commit_setup(repo, body: str) -> None:
    (repo / ".gitst").mkdir(exist_ok=True)
    (repo / ".gitst" / "worktree-setup").write_text(body)
    git("add", ".gitst/worktree-setup", cwd=repo)
    git("commit", "-qm", "setup script", cwd=repo)
    assert st("trust", cwd=repo).returncode == 0


def test_the_setup_script_runs_with_bin_sh_not_an_sh_on_path(repo, tmp_path):
    commit_setup(repo, "echo ran > ran-by-setup.txt\n")
    trap = tmp_path / "trap"
    trap.mkdir()
    (trap / "sh").write_text(f"#!/bin/sh\necho trapped > {tmp_path}/trapped\nexit 0\n")
    (trap / "sh").chmod(0o755)
    env = session_env("A", PATH=f"{trap}{os.pathsep}{os.environ['PATH']}")
    made = st("worktree", "add", "7", cwd=repo, env=env)
    assert made.returncode == 0, made
    assert not (tmp_path / "trapped").exists()
    assert (wt_path(repo, 7) / "ran-by-setup.txt").read_text() == "ran\n"


def test_files_the_trusted_setup_script_creates_do_not_block_remove(repo):
    commit_setup(repo, "mkdir -p generated && echo x > generated/config.txt && echo y > local.env\n")
    env = session_env("A")
    assert st("worktree", "add", "7", cwd=repo, env=env).returncode == 0
    path = wt_path(repo, 7)
    assert (path / "generated" / "config.txt").exists()
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert sorted(entry["setup"]["created_sha256"]) == ["generated/config.txt", "local.env"]
    removed = st("worktree", "remove", "7", cwd=repo, env=env)
    assert removed.returncode == 0, removed
    # one the user changed is the user's work again
    assert st("worktree", "add", "8", cwd=repo, env=env).returncode == 0
    (wt_path(repo, 8) / "local.env").write_text("changed by me\n")
    refused = st("worktree", "remove", "8", cwd=repo, env=env)
    assert refused.returncode == 1 and "local.env" in refused.stderr, refused
