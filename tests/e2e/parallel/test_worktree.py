"""`git st worktree add | list | remove | prune` and the post-checkout registration, with real git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

from tests.support import REPO_ROOT, assert_valid, dead_pid, env_without_coverage, git, read_json, run, session_env, st


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def git_worktrees(repo) -> list[dict]:
    out = git("worktree", "list", "--porcelain", cwd=repo)
    items, current = [], {}
    for line in [*out.splitlines(), ""]:
        if not line:
            if current:
                items.append(current)
            current = {}
            continue
        key, _, value = line.partition(" ")
        current[key] = value
    return items


def branches(repo) -> list[str]:
    return git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=repo).splitlines()


def test_add_claims_creates_registers_locks_and_prints_the_path(repo):
    result = st("worktree", "add", "7", "--print-path", "--desc", "login bug", cwd=repo, env=session_env("A"))
    assert result.returncode == 0, result
    path = wt_path(repo, 7)
    assert result.stdout == f"{path}\n"
    assert (path / "README").exists()
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "st/issue-7"
    assert git("rev-parse", "st/issue-7", cwd=repo) == git("rev-parse", "main", cwd=repo)
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert_valid(entry, "state-active-worktree")
    assert entry["issue"] == "7" and entry["branch"] == "st/issue-7" and entry["path"] == str(path)
    assert entry["session"] == "A" and entry["created_by"] == "worktree-add"
    assert entry["base"] == git("rev-parse", "main", cwd=repo)
    [linked] = [w for w in git_worktrees(repo) if w["worktree"] == str(path)]
    assert "session A" in linked["locked"] and "issue 7" in linked["locked"]
    [claim] = read_json(repo / "state" / "active-chats" / "A.json")["claims"]
    assert claim["issue"] == "7" and claim["worktree"] == str(path) and claim["branch"] == "st/issue-7"
    assert claim["description"] == "login bug"
    assert git("status", "--porcelain", cwd=repo) == ""  # the state dir stays ignored

    again = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert again.returncode == 0, again
    assert again.stdout.splitlines()[-1] == str(path)
    assert "already has its worktree" in again.stdout
    assert len(git_worktrees(repo)) == 2


def test_second_session_is_refused_before_anything_is_created(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    before = (git_worktrees(repo), branches(repo), sorted(os.listdir(repo / "state" / "active-worktrees")))
    other_path = repo.parent / "elsewhere"
    for extra in ([], ["--branch", "b-7", "--path", str(other_path)]):
        refused = st("worktree", "add", "7", *extra, cwd=repo, env=session_env("B"))
        assert refused.returncode == 3, refused
        assert "issue 7 is claimed by session A (branch st/issue-7" in refused.stderr
        assert (git_worktrees(repo), branches(repo), sorted(os.listdir(repo / "state" / "active-worktrees"))) == before
        assert not other_path.exists()
    assert not (repo / "state" / "active-chats" / "B.json").exists()


def test_add_with_branch_base_and_path(repo):
    first = git("rev-parse", "HEAD", cwd=repo)
    (repo / "more").write_text("x\n")
    git("add", "more", cwd=repo)
    git("commit", "-qm", "more", cwd=repo)
    target = repo.parent / "custom"
    result = st(
        "worktree",
        "add",
        "8",
        "--branch",
        "fix/eight",
        "--base",
        first,
        "--path",
        str(target),
        "--print-path",
        cwd=repo,
        env=session_env("A"),
    )
    assert result.returncode == 0, result
    assert result.stdout.strip() == str(target)
    assert git("rev-parse", "HEAD", cwd=target) == first
    assert read_json(repo / "state" / "active-worktrees" / "8.json")["branch"] == "fix/eight"


def test_add_rejects_bad_input_without_claiming(repo):
    (repo.parent / "occupied").mkdir()
    (repo.parent / "occupied" / "file").write_text("mine\n")
    cases = [
        ["--branch", "bad..name"],
        ["--base", "no-such-rev"],
        ["--path", str(repo.parent / "occupied")],
    ]
    for extra in cases:
        result = st("worktree", "add", "9", *extra, cwd=repo, env=session_env("A"))
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr
    assert not (repo / "state" / "locks" / "issue-9.json").exists()
    assert branches(repo) == ["main"] and len(git_worktrees(repo)) == 1


def test_remove_refuses_dirty_and_unpushed_and_force_works(repo, tmp_path):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    path = wt_path(repo, 7)
    (path / "notes.txt").write_text("work in progress\n")
    dirty = st("worktree", "remove", "7", cwd=repo, env=session_env("A"))
    assert dirty.returncode == 1, dirty
    assert "uncommitted change" in dirty.stderr and "notes.txt" in dirty.stderr and "--force" in dirty.stderr
    assert path.exists() and (repo / "state" / "active-worktrees" / "7.json").exists()

    git("add", "notes.txt", cwd=path)
    git("commit", "-qm", "wip", cwd=path)
    unpushed = st("worktree", "remove", "7", cwd=repo, env=session_env("A"))
    assert unpushed.returncode == 1, unpushed
    assert "1 commit(s) on no other branch or remote" in unpushed.stderr
    assert path.exists()

    # Pushed to a remote: nothing would be lost, so it goes without --force.
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=repo)
    git("push", "-q", "origin", "st/issue-7", cwd=path)
    removed = st("worktree", "remove", "7", cwd=repo, env=session_env("A"))
    assert removed.returncode == 0, removed
    assert not path.exists()
    assert not (repo / "state" / "active-worktrees" / "7.json").exists()
    assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"] is None
    assert "st/issue-7" in branches(repo)  # the branch is kept

    assert st("worktree", "add", "8", cwd=repo, env=session_env("A")).returncode == 0
    path8 = wt_path(repo, 8)
    (path8 / "README").write_text("changed\n")
    (path8 / "scratch").write_text("x\n")
    forced = st("worktree", "remove", "8", "--force", cwd=repo, env=session_env("A"))
    assert forced.returncode == 0, forced
    assert not path8.exists() and len(git_worktrees(repo)) == 1
    assert not (repo / "state" / "active-chats" / "A.json").exists()


def test_remove_of_another_live_sessions_worktree_is_a_conflict_even_forced(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    result = st("worktree", "remove", "7", "--force", cwd=repo, env=session_env("B"))
    assert result.returncode == 3 and "claimed by session A" in result.stderr
    assert wt_path(repo, 7).exists()


def test_deleted_directory_is_orphaned_and_prune_cleans_it(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    shutil.rmtree(wt_path(repo, 7))
    listed = st("worktree", "list", cwd=repo)
    assert listed.returncode == 0
    row = next(line for line in listed.stdout.splitlines() if line.startswith("7 "))
    assert row.split()[1] == "orphaned"
    data = json.loads(st("worktree", "list", "--format", "json", cwd=repo).stdout)
    assert data["worktrees"][0]["state"] == "orphaned" and data["worktrees"][0]["reason"] == "the directory is gone"

    dry = st("worktree", "prune", "--dry-run", cwd=repo)
    assert "would drop the entry of issue 7" in dry.stdout
    assert (repo / "state" / "active-worktrees" / "7.json").exists()

    pruned = st("worktree", "prune", cwd=repo)
    assert pruned.returncode == 0, pruned
    assert "dropped the entry of issue 7" in pruned.stdout  # what it did, in the past tense
    assert not (repo / "state" / "active-worktrees" / "7.json").exists()
    assert len(git_worktrees(repo)) == 1
    assert json.loads(st("worktree", "list", "--format", "json", cwd=repo).stdout) == {"worktrees": []}


def test_prune_never_touches_a_directory_and_releases_dead_claims(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("gone", pid=dead_pid())).returncode == 0
    (wt_path(repo, 7) / "precious").write_text("unsaved\n")
    assert st("worktree", "prune", cwd=repo).returncode == 0
    assert (wt_path(repo, 7) / "precious").read_text() == "unsaved\n"
    assert read_json(repo / "state" / "locks" / "issue-7.json")["owner"] is None
    assert (repo / "state" / "active-worktrees" / "7.json").exists()  # still a worktree with work in it


def test_list_shows_active_stale_and_unregistered(repo):
    assert st("worktree", "add", "1", cwd=repo, env=session_env("A")).returncode == 0
    assert st("worktree", "add", "2", cwd=repo, env=session_env("crashed", pid=dead_pid())).returncode == 0
    git("worktree", "add", "-q", "-b", "experiment", str(repo.parent / "by-hand"), cwd=repo)
    data = json.loads(st("worktree", "list", "--format", "json", cwd=repo, env=session_env("A")).stdout)
    by = {(w["issue"], w["path"]): w for w in data["worktrees"]}
    active = by[("1", str(wt_path(repo, 1)))]
    assert active["state"] == "active" and active["current"] is True and active["claim"]["owner"]["session"] == "A"
    assert active["git"]["branch"] == "st/issue-1" and "session A" in active["git"]["locked"]
    stale = by[("2", str(wt_path(repo, 2)))]
    assert stale["state"] == "stale" and stale["reason"] == "the owner's process is gone"
    hand = by[(None, str(repo.parent / "by-hand"))]
    assert hand["state"] == "unregistered" and hand["branch"] == "experiment"
    assert set(active) == {
        "issue",
        "state",
        "reason",
        "branch",
        "path",
        "session",
        "current",
        "claim",
        "git",
        "setup",
        "errors",
    }


def test_a_dead_sessions_worktree_is_taken_over(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("crashed", pid=dead_pid())).returncode == 0
    took = st("worktree", "add", "7", cwd=repo, env=session_env("B"))
    assert took.returncode == 0, took
    assert "took over worktree" in took.stdout and took.stdout.splitlines()[-1] == str(wt_path(repo, 7))
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert entry["session"] == "B"
    [linked] = [w for w in git_worktrees(repo) if w["worktree"] == str(wt_path(repo, 7))]
    assert "session B" in linked["locked"]
    assert read_json(repo / "state" / "locks" / "issue-7.json")["token"] == 2


HOOK = textwrap.dedent("""\
    #!{python}
    import os, sys
    sys.path.insert(0, {root!r})
    from gitst.worktrees.hook import post_checkout
    sys.exit(post_checkout(sys.argv[1:], os.getcwd()))
    """)


def install_post_checkout(repo):
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(HOOK.format(python=sys.executable, root=str(REPO_ROOT)))
    hook.chmod(0o755)


def test_post_checkout_registers_a_hand_made_worktree_on_the_template_branch(repo):
    install_post_checkout(repo)
    (repo / ".env").write_text("TOKEN=1\n")
    git("config", "st.worktree.copy", ".env*", cwd=repo)
    env = session_env("C")
    made = run(["git", "worktree", "add", "-b", "st/issue-12", str(repo.parent / "twelve")], cwd=repo, env=env)
    assert made.returncode == 0, made
    assert "registered worktree" in made.stderr
    entry = read_json(repo / "state" / "active-worktrees" / "12.json")
    assert_valid(entry, "state-active-worktree")
    assert entry["created_by"] == "post-checkout" and entry["session"] == "C" and entry["branch"] == "st/issue-12"
    assert entry["setup"]["copied"] == [".env"]
    assert (repo.parent / "twelve" / ".env").read_text() == "TOKEN=1\n"
    assert read_json(repo / "state" / "locks" / "issue-12.json")["owner"]["session"] == "C"
    [linked] = [w for w in git_worktrees(repo) if w["worktree"] == str(repo.parent / "twelve")]
    assert "session C" in linked["locked"]

    other = run(["git", "worktree", "add", "-b", "topic", str(repo.parent / "topic")], cwd=repo, env=env)
    assert other.returncode == 0 and "gitst" not in other.stderr
    assert sorted(p.name for p in (repo / "state" / "active-worktrees").glob("*.json")) == ["12.json"]


def test_post_checkout_never_fails_the_checkout_for_a_contested_issue(repo):
    install_post_checkout(repo)
    assert st("claim", "13", cwd=repo, env=session_env("A")).returncode == 0
    made = run(
        ["git", "worktree", "add", "-b", "st/issue-13", str(repo.parent / "thirteen")], cwd=repo, env=session_env("C")
    )
    assert made.returncode == 0, made
    assert "not registering" in made.stderr and "claimed by session A" in made.stderr
    assert not (repo / "state" / "active-worktrees" / "13.json").exists()


def test_worktree_add_with_the_hook_installed_registers_once(repo):
    install_post_checkout(repo)
    result = st("worktree", "add", "14", cwd=repo, env=session_env("A"))
    assert result.returncode == 0, result
    assert "registered worktree" not in result.stderr
    assert read_json(repo / "state" / "active-worktrees" / "14.json")["created_by"] == "worktree-add"


def test_post_checkout_is_importable_without_click_and_returns_at_once(tmp_path):
    code = textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO_ROOT)!r})
        start = time.perf_counter()
        from gitst.worktrees.hook import post_checkout
        assert post_checkout(["abc", "def", "1"], {str(tmp_path)!r}) == 0   # not a new worktree
        assert post_checkout(["0" * 40, "def", "0"], {str(tmp_path)!r}) == 0  # a file checkout
        assert post_checkout([], {str(tmp_path)!r}) == 0
        assert "click" not in sys.modules and "jsonschema_rs" not in sys.modules, sorted(sys.modules)
        assert "subprocess" not in sys.modules, "the git runner must not need subprocess"
        print(time.perf_counter() - start)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env_without_coverage()
    )
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) < 0.5


def test_registry_readers_used_by_the_pr_cascade(repo):
    from gitst.sessions.registry import branch_of_issue, issue_for_branch, read_worktree_entry

    assert branch_of_issue("7", repo) == "st/issue-7"  # the template
    assert st("worktree", "add", "7", "--branch", "login-fix", cwd=repo, env=session_env("A")).returncode == 0
    assert branch_of_issue("7", repo) == "login-fix"  # the registry
    assert read_worktree_entry("7", repo)["session"] == "A"
    (repo / "state" / "active-worktrees" / "8.json").write_text("{broken")
    assert read_worktree_entry("8", repo) is None and branch_of_issue("8", repo) == "st/issue-8"
    assert issue_for_branch("st/issue-12", repo) == "12" and issue_for_branch("st/issue-../x", repo) is None
    assert issue_for_branch("main", repo) is None
