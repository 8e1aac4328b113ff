"""Worktree lifecycle a user can live with: gitst's own copies are not your work, `clean`
removes what is finished and ownerless, `--delete-branch`, an interrupted add is finished
by the next command, and ownership is read from the worktree itself."""

from __future__ import annotations

import json
import os
import textwrap

from tests.support import dead_pid, git, read_json, session_env, st


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def listed_paths(repo) -> set[str]:
    out = git("worktree", "list", "--porcelain", cwd=repo)
    return {line[len("worktree ") :] for line in out.splitlines() if line.startswith("worktree ")} - {str(repo)}


def registered_paths(repo) -> set[str]:
    folder = repo / "state" / "active-worktrees"
    return {read_json(p)["path"] for p in folder.glob("*.json")} if folder.exists() else set()


def commit_in(path, name: str, text: str = "work\n") -> str:
    (path / name).write_text(text)
    git("add", name, cwd=path)
    git("commit", "-qm", f"add {name}", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def test_remove_does_not_count_gitsts_own_unchanged_copies_as_work(repo):
    (repo / ".gitignore").write_text(".env\n")
    git("add", ".gitignore", cwd=repo)
    git("commit", "-qm", "ignore .env", cwd=repo)
    (repo / ".env").write_text("SECRET=1\n")  # ignored: never counted anyway
    (repo / "config.local.json").write_text('{"port": 1}\n')  # untracked and NOT ignored
    os.symlink("config.local.json", repo / "config.link")
    for pattern in (".env", "config.local.json", "config.link"):
        git("config", "--add", "st.worktree.copy", pattern, cwd=repo)
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    path = wt_path(repo, 7)
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert sorted(entry["setup"]["copied_sha256"]) == [".env", "config.link", "config.local.json"]
    assert git("status", "--porcelain", cwd=path) != ""  # git does see them as untracked files

    removed = st("worktree", "remove", "7", cwd=repo, env=session_env("A"))
    assert removed.returncode == 0, removed
    assert not path.exists() and not (repo / "state" / "active-worktrees" / "7.json").exists()

    # A copy the user changed is the user's work again; so is a file of their own.
    assert st("worktree", "add", "8", cwd=repo, env=session_env("A")).returncode == 0
    path8 = wt_path(repo, 8)
    (path8 / "config.local.json").write_text('{"port": 2}\n')
    (path8 / "mine.txt").write_text("mine\n")
    refused = st("worktree", "remove", "8", cwd=repo, env=session_env("A"))
    assert refused.returncode == 1, refused
    assert "2 uncommitted change(s)" in refused.stderr
    assert "config.local.json" in refused.stderr and "mine.txt" in refused.stderr
    assert "config.link" not in refused.stderr  # still unchanged: gitst's copy
    assert path8.exists()


def test_remove_delete_branch_only_when_merged_unless_forced(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    path = wt_path(repo, 7)
    commit_in(path, "feature.txt")
    git("push", "-q", ".", "st/issue-7:refs/heads/backup-7", cwd=path)  # not lost, but not merged either
    refused = st("worktree", "remove", "7", "--delete-branch", cwd=repo, env=session_env("A"))
    assert refused.returncode == 1, refused
    assert "branch st/issue-7 is not merged into main" in refused.stderr
    assert path.exists() and "st/issue-7" in git("branch", "--list", "st/issue-7", cwd=repo)

    git("merge", "-q", "--no-ff", "-m", "merge 7", "st/issue-7", cwd=repo)
    done = st("worktree", "remove", "7", "--delete-branch", cwd=repo, env=session_env("A"))
    assert done.returncode == 0, done
    assert "deleted branch st/issue-7" in done.stdout
    assert git("branch", "--list", "st/issue-7", cwd=repo) == "" and not path.exists()

    assert st("worktree", "add", "8", cwd=repo, env=session_env("A")).returncode == 0
    commit_in(wt_path(repo, 8), "lost.txt")
    forced = st("worktree", "remove", "8", "--delete-branch", "--force", cwd=repo, env=session_env("A"))
    assert forced.returncode == 0, forced
    assert git("branch", "--list", "st/issue-8", cwd=repo) == ""


def test_clean_merged_removes_exactly_the_merged_ownerless_worktrees(repo):
    gone = dead_pid()
    assert st("worktree", "add", "1", cwd=repo, env=session_env("dead-1", pid=gone)).returncode == 0
    assert st("worktree", "add", "2", cwd=repo, env=session_env("live-2")).returncode == 0
    assert st("worktree", "add", "3", cwd=repo, env=session_env("dead-3", pid=gone)).returncode == 0
    for issue in ("1", "2"):  # merged
        commit_in(wt_path(repo, issue), f"done-{issue}.txt")
        git("merge", "-q", "--no-ff", "-m", f"merge {issue}", f"st/issue-{issue}", cwd=repo)
    commit_in(wt_path(repo, 3), "unmerged.txt")  # not merged anywhere
    before = (listed_paths(repo), registered_paths(repo))

    dry = st("worktree", "clean", "--merged", "--dry-run", cwd=repo, env=session_env("janitor"))
    assert dry.returncode == 0, dry
    assert f"would remove issue 1: {wt_path(repo, 1)}" in dry.stdout
    assert (listed_paths(repo), registered_paths(repo)) == before

    cleaned = st("worktree", "clean", "--merged", "--format", "json", cwd=repo, env=session_env("janitor"))
    assert cleaned.returncode == 0, cleaned
    report = json.loads(cleaned.stdout)
    assert [r["issue"] for r in report["removed"]] == ["1"]
    kept = {k["issue"]: k["why"] for k in report["kept"]}
    assert kept == {"2": "claimed by live session live-2", "3": "its branch is not merged into main"}
    assert not wt_path(repo, 1).exists() and wt_path(repo, 2).exists() and wt_path(repo, 3).exists()
    assert listed_paths(repo) == registered_paths(repo) == {str(wt_path(repo, 2)), str(wt_path(repo, 3))}
    assert read_json(repo / "state" / "locks" / "issue-1.json")["owner"] is None
    assert git("branch", "--list", "st/issue-1", cwd=repo) != ""  # branches are kept without --delete-branch

    text = st("worktree", "clean", "--merged", cwd=repo, env=session_env("janitor"))
    assert "kept issue 2:" in text.stdout and "(claimed by live session live-2)" in text.stdout
    assert "kept issue 3:" in text.stdout and "removed" not in text.stdout


def test_clean_never_removes_dirty_work_without_force_and_can_delete_merged_branches(repo):
    gone = dead_pid()
    assert st("worktree", "add", "4", cwd=repo, env=session_env("dead", pid=gone)).returncode == 0
    (wt_path(repo, 4) / "scratch.txt").write_text("half a thought\n")
    kept = st("worktree", "clean", "--merged", cwd=repo, env=session_env("janitor"))
    assert "kept issue 4" in kept.stdout
    assert "1 uncommitted change(s): scratch.txt (--force removes them)" in kept.stdout
    assert wt_path(repo, 4).exists()
    forced = st("worktree", "clean", "--merged", "--force", "--delete-branch", cwd=repo, env=session_env("janitor"))
    assert forced.returncode == 0, forced
    assert "removed issue 4" in forced.stdout and "deleted branch st/issue-4" in forced.stdout
    assert not wt_path(repo, 4).exists() and git("branch", "--list", "st/issue-4", cwd=repo) == ""


def test_clean_without_merged_keeps_commits_found_only_there(repo):
    gone = dead_pid()
    assert st("worktree", "add", "5", cwd=repo, env=session_env("dead", pid=gone)).returncode == 0
    assert st("worktree", "add", "6", cwd=repo, env=session_env("dead", pid=gone)).returncode == 0
    commit_in(wt_path(repo, 6), "only-here.txt")
    report = json.loads(st("worktree", "clean", "--format", "json", cwd=repo, env=session_env("janitor")).stdout)
    assert [r["issue"] for r in report["removed"]] == ["5"]
    assert report["kept"] == [
        {"issue": "6", "path": str(wt_path(repo, 6)), "branch": "st/issue-6", "why": "1 commit(s) found only here"}
    ]


KILLER_HOOK = textwrap.dedent("""\
    #!/bin/sh
    # Kill `git st worktree add` right after `git worktree add` finished its checkout, before
    # gitst could lock and register the worktree: once (a marker file says it was done).
    [ -e "{marker}" ] && exit 0
    : > "{marker}"
    gitst=$(awk '{{print $4}}' /proc/$PPID/stat)
    kill -9 "$gitst"
    """)


def install_killer(repo):
    marker = repo.parent / "killed-once"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(KILLER_HOOK.format(marker=marker))
    hook.chmod(0o755)
    return marker


def test_sigkill_between_git_worktree_add_and_the_registry_write_is_finished_by_the_next_add(repo):
    marker = install_killer(repo)
    killed = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert killed.returncode == -9, killed
    assert marker.exists()
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert entry["pending"]["op"] == "add"  # the entry was written before git was touched
    assert str(wt_path(repo, 7)) in listed_paths(repo)

    again = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert again.returncode == 0, again
    assert "resumed the interrupted add of issue 7" in again.stdout
    assert again.stdout.splitlines()[-1] == str(wt_path(repo, 7))
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert "pending" not in entry and entry["session"] == "A" and entry["setup"]["command"] == {"status": "absent"}
    assert listed_paths(repo) == registered_paths(repo) == {str(wt_path(repo, 7))}
    locked = git("worktree", "list", "--porcelain", cwd=repo)
    assert "locked gitst: issue 7 claimed by session A" in locked


def test_sigkill_between_git_worktree_add_and_the_registry_write_is_finished_by_prune(repo):
    install_killer(repo)
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == -9
    pruned = st("worktree", "prune", cwd=repo)
    assert pruned.returncode == 0, pruned
    assert f"finished the interrupted add of issue 7 ({wt_path(repo, 7)})" in pruned.stdout
    assert "pending" not in read_json(repo / "state" / "active-worktrees" / "7.json")
    removed = st("worktree", "remove", "7", cwd=repo, env=session_env("A"))
    assert removed.returncode == 0, removed  # not "has no registered worktree"
    assert listed_paths(repo) == registered_paths(repo) == set()


def test_add_adopts_an_unregistered_worktree_on_the_issues_branch(repo):
    """What an older gitst, or a hand-made `git worktree add` without the hook, leaves."""
    git("worktree", "add", "-q", "-b", "st/issue-7", str(wt_path(repo, 7)), cwd=repo)
    note = st("worktree", "prune", cwd=repo)
    assert "`git st worktree add 7` adopts it" in note.stdout
    adopted = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert adopted.returncode == 0, adopted
    assert "adopted the worktree" in adopted.stdout
    entry = read_json(repo / "state" / "active-worktrees" / "7.json")
    assert entry["created_by"] == "adopted" and entry["path"] == str(wt_path(repo, 7))
    assert listed_paths(repo) == registered_paths(repo)


def test_add_recreates_a_worktree_whose_directory_was_deleted(repo):
    import shutil

    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    tip = commit_in(wt_path(repo, 7), "kept-in-branch.txt")
    shutil.rmtree(wt_path(repo, 7))
    again = st("worktree", "add", "7", cwd=repo, env=session_env("A"))
    assert again.returncode == 0, again
    assert "was gone; created it again from branch st/issue-7" in again.stdout
    assert git("rev-parse", "HEAD", cwd=wt_path(repo, 7)) == tip
    assert listed_paths(repo) == registered_paths(repo) == {str(wt_path(repo, 7))}


def test_remove_force_does_not_delete_another_live_sessions_worktree_a_registry_entry_points_at(repo):
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    (wt_path(repo, 7) / "precious.txt").write_text("A's work\n")
    assert st("worktree", "add", "9", cwd=repo, env=session_env("B", pid=dead_pid())).returncode == 0
    entry9 = repo / "state" / "active-worktrees" / "9.json"
    record = read_json(entry9)
    record["path"] = str(wt_path(repo, 7))  # a bad (or hostile) entry: dead B's issue 9 points at A's worktree
    entry9.write_text(json.dumps(record))
    for who in ("B", "C"):
        refused = st("worktree", "remove", "9", "--force", cwd=repo, env=session_env(who))
        assert refused.returncode == 3, refused
        assert f"{wt_path(repo, 7)} is the worktree of issue 7, claimed by session A" in refused.stderr
    assert (wt_path(repo, 7) / "precious.txt").read_text() == "A's work\n"
    cleaned = st("worktree", "clean", "--force", cwd=repo, env=session_env("C"))
    assert (wt_path(repo, 7) / "precious.txt").exists(), cleaned


def test_remove_refuses_the_main_worktree_and_foreign_directories(repo, tmp_path):
    assert st("worktree", "add", "9", cwd=repo, env=session_env("B")).returncode == 0
    entry9 = repo / "state" / "active-worktrees" / "9.json"
    record = read_json(entry9)
    for target, code, words in ((repo, 2, "is the main worktree"), (tmp_path / "home", 2, "not a worktree of this")):
        target.mkdir(exist_ok=True)
        (target / "keep.txt").write_text("keep\n")
        entry9.write_text(json.dumps({**record, "path": str(target)}))
        refused = st("worktree", "remove", "9", "--force", cwd=repo, env=session_env("B"))
        assert refused.returncode == code and words in refused.stderr, refused
        assert (target / "keep.txt").exists()


def test_a_second_add_of_the_same_issue_is_refused_at_once_while_the_first_still_runs(repo):
    import subprocess
    import time

    # The first add holds the issue until the test says so (an event, not a time: a fixed
    # sleep could end before the second add has even started on a loaded machine).
    release = repo.parent / "release-setup"
    (repo / ".gitst").mkdir()
    (repo / ".gitst" / "worktree-setup").write_text(
        f"i=0; while [ ! -e '{release}' ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done\n"
    )
    git("add", ".gitst", cwd=repo)
    git("commit", "-qm", "slow setup", cwd=repo)
    assert st("trust", cwd=repo).returncode == 0
    first = subprocess.Popen(
        ["git-st", "worktree", "add", "7"],
        cwd=repo,
        env={**os.environ, **session_env("A")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        lock = repo / "state" / "locks" / "issue-7.json"
        deadline = time.monotonic() + 300
        while not (lock.exists() and (read_json(lock).get("owner") or {}).get("session") == "A"):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.02)
        second = st("worktree", "add", "7", cwd=repo, env=session_env("B"))
        assert second.returncode == 3 and "issue 7 is claimed by session A" in second.stderr, second
        assert first.poll() is None  # answered while the first add was still at work: it did not wait
    finally:
        release.touch()
        first.communicate(timeout=600)
    assert first.returncode == 0
